"""The rows of a study's data export (services/study/export.py), one query per exported table:
here the common tables; each protocol's are in storage/<protocol>/exports.py, with the same rules.

Each row carries the internal ids of every participant it involves in columns ending in
`__pid` (the author, and the sender of the exchange it is about). The service decides from
those who may be exported, then swaps them for pseudonyms: nothing here filters by consent
or hides identifiers, so these queries must never be handed out as they are.
Participant tokens are never selected.
"""

from __future__ import annotations

from storage.db import Database


def study_exists(database: Database, study_id: str) -> bool:
    return bool(database.scalar("SELECT 1 FROM studies WHERE id = ?", [study_id]))


def study_row(database: Database, study_id: str) -> dict | None:
    """The study's id, name and creation time; not its config (it holds the completion code)."""
    return database.one("SELECT id, name, created_at FROM studies WHERE id = ?", [study_id])


def study_ids(database: Database) -> list[str]:
    return [r["id"] for r in database.query("SELECT id FROM studies ORDER BY id")]


def participant_rows(database: Database, study_id: str) -> list[dict]:
    """Every participant of the study in creation order (the pseudonyms are numbered in it)."""
    return database.query(
        'SELECT id AS participant__pid, role, grp AS "group", gender, design_index, active, excluded_at, '
        "excluded_reason, claimed_at, last_seen_at, created_at, external_id, prolific_pid, prolific_study_id, "
        "prolific_session_id, completed_at, dropped_out_at, dropped_out_reason FROM participants WHERE study_id = ? "
        "ORDER BY id",
        [study_id],
    )


def consent_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT participant_id AS participant__pid, agreed, text_hash, created_at FROM consents "
        "WHERE study_id = ? ORDER BY participant_id",
        [study_id],
    )


def demographic_rows(database: Database, study_id: str) -> list[dict]:
    """One row per participant and field (tidy), in the order the form asked them."""
    return database.query(
        "SELECT d.participant_id AS participant__pid, j.key AS field, CAST(j.value AS TEXT) AS value, "
        "d.created_at FROM demographics d, json_each(d.answers) j WHERE d.study_id = ? "
        "ORDER BY d.participant_id, j.id",
        [study_id],
    )


def assignment_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT a.id AS assignment_id, a.participant_id AS participant__pid, e.sender_id AS sender__pid, a.phase, "
        "a.item_id, a.exchange_id, a.position, a.status, a.meta, a.created_at, a.first_shown_at, a.submitted_at, "
        "a.active_seconds FROM assignments a LEFT JOIN exchanges e ON e.id = a.exchange_id "
        "WHERE a.study_id = ? ORDER BY a.id",
        [study_id],
    )


def event_rows(database: Database, study_id: str, phases: tuple[str, ...]) -> list[dict]:
    """Audit-log events that belong to the study. The events table has no study column, so an
    event belongs through its entity: the study itself, one of its participants, assignments
    (a submit's entity is its phase: `phases`, every registered one), recordings or exchanges.
    Job events (the worker's bookkeeping) belong to no study.
    owner__pid: the participant the entity belongs to; sender__pid: the sender of its exchange."""
    phases = tuple(p for p in phases if p.replace("_", "").isalnum())  # names, quoted into the SQL below
    marks = ",".join(f"'{p}'" for p in phases)
    return database.query(
        f"""SELECT ev.id AS event_id, ev.ts, ev.actor, ev.action, ev.entity, ev.entity_id, ev.detail,
                   COALESCE(p.id, a.participant_id) AS owner__pid,
                   COALESCE(ea.sender_id, er.sender_id, ee.sender_id) AS sender__pid
            FROM events ev
            LEFT JOIN participants p ON ev.entity IN ('participant', 'participants', 'da_feedback')
                 AND p.id = CAST(ev.entity_id AS INTEGER) AND p.study_id = :s
            LEFT JOIN assignments a ON ev.entity IN ({marks}) AND a.id = CAST(ev.entity_id AS INTEGER)
                 AND a.study_id = :s
            LEFT JOIN exchanges ea ON ea.id = a.exchange_id
            LEFT JOIN recordings r ON ev.entity = 'recordings' AND r.id = CAST(ev.entity_id AS INTEGER)
            LEFT JOIN exchanges er ON er.id = r.exchange_id AND er.study_id = :s
            LEFT JOIN exchanges ee ON ev.entity = 'exchanges' AND ee.id = CAST(ev.entity_id AS INTEGER)
                 AND ee.study_id = :s
            WHERE (ev.entity = 'study' AND ev.entity_id = :s) OR p.id IS NOT NULL OR a.id IS NOT NULL
                  OR er.id IS NOT NULL OR ee.id IS NOT NULL
            ORDER BY ev.id""",
        {"s": study_id},
    )
