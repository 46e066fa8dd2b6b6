"""The rows that cross storage -> services on the participant path, typed: each a TypedDict with
every column of its table (storage/migrations.py), as `SELECT *` returns it, so that mypy checks
the keys services read (`make lint`). A column added by a migration goes in its TypedDict too:
tests/test_row_types.py compares each with the table of a freshly migrated database.

JSON columns are typed as storage returns them: a study's config is parsed (get_study), an
assignment's meta is parsed by storage/assignments.py _decode (AssignmentRow) and left as its
text where a query does not decode it (AssignmentRecord)."""

from __future__ import annotations

from typing import Any, TypedDict


class StudyRow(TypedDict):
    """A row of `studies`, its config parsed (storage/studies.get_study)."""

    id: str
    name: str
    config: dict[str, Any]  # the validated study.toml
    content_hash: str
    created_at: str
    corpus_hash: str | None
    archived_at: str | None


class ParticipantRow(TypedDict):
    """A row of `participants` (storage/participants.get)."""

    id: int
    study_id: str
    role: str
    grp: str | None
    gender: str | None
    external_id: str | None
    token: str
    design_index: int | None
    prolific_pid: str | None
    prolific_study_id: str | None
    prolific_session_id: str | None
    claimed_at: str | None
    last_seen_at: str | None
    active: int
    created_at: str
    excluded_at: str | None
    excluded_reason: str | None
    completed_at: str | None
    dropped_out_at: str | None
    dropped_out_reason: str | None
    self_enrol: int
    prolific_return_revoked_at: str | None


class LinkParticipant(ParticipantRow):
    """A participant found by their link (storage/participants.by_token), with whether their
    study is archived."""

    study_archived_at: str | None


class _AssignmentColumns(TypedDict):
    id: int
    study_id: str
    participant_id: int
    phase: str
    item_id: str
    exchange_id: int | None
    position: float
    status: str  # 'open' | 'done' | 'withdrawn'
    created_at: str
    first_shown_at: str | None
    submitted_at: str | None
    active_seconds: float | None


class AssignmentRow(_AssignmentColumns):
    """A row of `assignments`, its meta parsed (storage/assignments.assignment, next_open, ...)."""

    meta: Any  # JSON: a protocol's own, e.g. {"modality": ...} (DA), {"pairs": ...} (SD); None: none


class AssignmentRecord(_AssignmentColumns):
    """A row of `assignments` as stored, its meta the JSON text (storage/assignments.open_assignments)."""

    meta: str | None


class ConsentRow(TypedDict):
    """A row of `consents` (storage/consent.get): the participant's decision."""

    participant_id: int
    study_id: str
    agreed: int
    text_hash: str
    created_at: str


class DemographicsRow(TypedDict):
    """A row of `demographics`, its answers parsed (storage/consent.demographics)."""

    participant_id: int
    study_id: str
    answers: dict[str, Any]
    created_at: str


# {TypedDict: its table}: what tests/test_row_types.py checks against the schema
TABLES: dict[type, str] = {
    StudyRow: "studies",
    ParticipantRow: "participants",
    AssignmentRow: "assignments",
    AssignmentRecord: "assignments",
    ConsentRow: "consents",
    DemographicsRow: "demographics",
}
