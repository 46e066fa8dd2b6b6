"""One participant as the study team sees them, for a Prolific participant who writes "I finished
but...": found by their id, their link token (or the whole link pasted), or their Prolific /
external id, within the selected study. Their status, consent and demographics state, the
completion code and whether it was shown, and every item they held with its timings and their
answer in words. The actions (new link, deactivate, reactivate, reassign) are the ones of
services/admin/participants.py; this module only reads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import pandas as pd

from services.admin.participants import ParticipantAdminError, short_link, whole_number
from services.common import protocols
from services.study import consent
from storage import assignments, participants, studies
from storage import consent as consent_store
from storage import participant_view as store
from storage.db import required
from storage.rows import ParticipantRow, StudyRow

ITEM_COLUMNS = [
    "Phase",
    "Item",
    "What it was",
    "Status",
    "First shown (UTC)",
    "Submitted (UTC)",
    "Active seconds",
    "Answer",
]
MAX_QUERY = 2000  # a pasted link is well under this; more is not a participant key


@dataclass
class ParticipantView:
    id: int
    study_id: str
    role: str
    group: str | None
    gender: str | None
    external_id: str | None
    prolific_pid: str | None
    status: str  # not started, active, finished, declined consent, deactivated, dropped out,
    # excluded (the first that holds, from the end)
    status_detail: str
    created_at: str
    last_seen_at: str | None
    consent: str  # not asked / not yet / agreed ... / declined ...
    demographics: str  # not asked / not yet / answered ...
    completion_code: str
    completion_shown_at: str | None  # when the page first showed the code (participants.completed_at)
    link: str  # shortened: the whole link is shown by "Show link" only
    found_by: str
    items: list[dict] = field(default_factory=list)
    role_label: str = ""  # the role as the team reads it (Role.label, else its name humanised)

    @property
    def completion_shown(self) -> bool:
        return self.completion_shown_at is not None

    def counts(self) -> dict[str, int]:
        out = {"done": 0, "open": 0, "withdrawn": 0}
        for it in self.items:
            out[it["status"]] += 1
        return out

    def items_table(self) -> pd.DataFrame:
        # an open item has no active time yet: an empty cell, not NaN
        return pd.DataFrame(
            [{c: "" if it[k] is None else it[k] for c, k in zip(ITEM_COLUMNS, _ITEM_KEYS)} for it in self.items],
            columns=ITEM_COLUMNS,
        )


_ITEM_KEYS = ["phase_label", "item_id", "what", "status", "first_shown", "submitted", "active_seconds", "answer"]


# -- finding the participant ------------------------------------------------------------------


def _token_in(query: str) -> str | None:
    """The t= of a pasted private link (any page of the app), else None."""
    if "?" not in query and "://" not in query:
        return None
    tokens = parse_qs(urlsplit(query).query).get("t")
    return tokens[0] if tokens else None


def find(database, study_id: str | None, query) -> tuple[ParticipantRow, str]:
    """The study's participant the query names, and by what (id, link, token, Prolific id).
    Several participants match (e.g. one Prolific id holding two roles): an error listing them."""
    if not study_id or not studies.get_study(database, study_id):
        raise ParticipantAdminError("Pick a study first.")
    q = str(query if query is not None else "").strip()
    if not q:
        raise ParticipantAdminError("Type a participant id, their link (or its token) or their Prolific id.")
    if len(q) > MAX_QUERY:
        raise ParticipantAdminError(f"That is not a participant id, link or Prolific id ({len(q)} characters).")
    found: dict[int, tuple[ParticipantRow, str]] = {}
    elsewhere = []
    token = _token_in(q)
    if token is not None:
        keys: list[tuple[str, ParticipantRow | None]] = [("link", participants.by_token(database, token))]
    else:
        pid = whole_number(q)
        keys = [
            ("id", participants.get(database, pid) if pid is not None else None),
            ("token", participants.by_token(database, q)),
        ]
        keys += [
            ("Prolific id" if p["prolific_pid"] == q else "external id", p)
            for p in participants.holders_of(database.db, study_id, q)
        ]
    for how, p in keys:
        if p is None:
            continue
        if p["study_id"] != study_id:
            elsewhere.append(p)
        elif p["id"] not in found:
            found[p["id"]] = (p, how)
    if len(found) > 1:
        names = "; ".join(f"participant {p['id']} ({p['role']}, by {how})" for p, how in found.values())
        raise ParticipantAdminError(
            f"'{_shown(q)}' matches {len(found)} participants of study '{study_id}': "
            f"{names}. Search by the participant id."
        )
    if found:
        return next(iter(found.values()))
    if elsewhere:
        raise ParticipantAdminError(
            f"'{_shown(q)}' is a participant of study '{elsewhere[0]['study_id']}', "
            f"not of '{study_id}': pick that study first."
        )
    what = "link" if token is not None else "participant id, link token, Prolific or external id"
    raise ParticipantAdminError(f"No participant of study '{study_id}' has the {what} '{_shown(q)}'.")


def _shown(q: str) -> str:
    return q if len(q) <= 80 else q[:77] + "…"


# -- the view -----------------------------------------------------------------------------


def participant_view(database, study_id: str | None, query) -> ParticipantView:
    p, how = find(database, study_id, query)  # a participant of that study, which exists
    study_id = p["study_id"]
    study = required(studies.get_study(database, study_id), "study of a participant")
    status, detail = _status(p)
    if status == "active" and consent.pending_stage(database, p, study) == "declined":
        status, detail = "declined consent", "they declined the consent form, so no item was shown"
    return ParticipantView(
        id=p["id"],
        study_id=study_id,
        role=p["role"],
        group=p["grp"],
        gender=p["gender"],
        external_id=p["external_id"],
        prolific_pid=p["prolific_pid"],
        status=status,
        status_detail=detail,
        created_at=_time(p["created_at"]),
        last_seen_at=_time(p["last_seen_at"]) or None,
        consent=_consent_state(database, study, p),
        demographics=_demographics_state(database, study, p),
        completion_code=study["config"]["study"]["completion_code"],
        completion_shown_at=_time(p["completed_at"]) or None,
        link=short_link(p["token"]),
        found_by=how,
        items=_items(database, p),
        role_label=protocols.role_label(p["role"]),
    )


def _status(p: ParticipantRow) -> tuple[str, str]:
    if p["excluded_at"]:
        return "excluded", f"excluded {_time(p['excluded_at'])}: {p['excluded_reason']}"
    if p["dropped_out_at"]:
        return "dropped out", f"dropped out {_time(p['dropped_out_at'])}: {p['dropped_out_reason']}"
    if not p["active"]:
        return "deactivated", "the study team deactivated the link: it opens nothing"
    if p["completed_at"]:
        return "finished", f"finished every part of the role {_time(p['completed_at'])}"
    if not p["last_seen_at"]:
        return "not started", "the link was never opened"
    return "active", "the link works and items remain"


def _consent_state(database, study: StudyRow, participant: ParticipantRow) -> str:
    row = consent_store.get(database, participant["id"])
    if row is not None:
        return f"{'agreed' if row['agreed'] else 'declined'} {_time(row['created_at'])}"
    return "not yet" if consent.consent_config(study, participant["role"]) else "not asked in this study"


def _demographics_state(database, study: StudyRow, participant: ParticipantRow) -> str:
    row = consent_store.demographics(database, participant["id"])
    if row is not None:
        return f"answered {_time(row['created_at'])}"
    return "not yet" if consent.form_fields(study, participant["role"]) else "not asked in this study"


def _time(iso: str | None) -> str:
    """An ISO UTC time to the second, as the team reads it: 2026-05-01 10:22:03."""
    return iso[:19].replace("T", " ") if iso else ""


def _items(database, participant: ParticipantRow) -> list[dict]:
    rows = [
        {**a, "meta": json.loads(a["meta"]) if a["meta"] else {}}
        for a in store.assignments(database, participant["id"])
    ]
    # each protocol says its own items, in one query per kind of answer (Protocol.participant_items)
    words = (
        protocols.protocol_of_role(participant["role"]).participant_items
        if participant["role"] in protocols.roles()
        else None
    )
    described = words(database, participant, rows) if words is not None else {}
    out = []
    for a in rows:
        what, answer = described.get(a["id"], (f"item {a['item_id']}", ""))
        out.append(
            {
                "assignment_id": a["id"],
                "phase": a["phase"],
                "phase_label": protocols.phase_label(a["phase"]),
                "item_id": a["item_id"],
                "what": what,
                "status": a["status"],
                "first_shown": _time(a["first_shown_at"]),
                "submitted": _time(a["submitted_at"]),
                "active_seconds": None if a["active_seconds"] is None else round(a["active_seconds"], 1),
                "answer": answer or _answer_words(database, a),
            }
        )
    # what they did, in the order they did it; then what is still to come, in their queue's order
    out.sort(key=lambda it: (it["submitted"] == "", it["submitted"] or it["first_shown"] or "~", it["assignment_id"]))
    return out


def _answer_words(database, assignment: dict) -> str:
    """A done item's answer that the queries above do not say (a phase of a protocol other than the
    built-in ones): its phase's answer_words, else its stored answer as compact JSON (nothing when
    it holds nothing: a page that only reads, as the semantic differential's welcome)."""
    if assignment["status"] != "done":
        return ""
    try:
        spec = protocols.phase(assignment["phase"])
    except protocols.UnknownName:
        return ""  # a phase no protocol registers any more: its answer cannot be read
    row = required(assignments.assignment(database, assignment["id"]), "a participant's item")  # as hooks get it
    stored = spec.stored(database, row)
    if spec.answer_words is not None:
        return spec.answer_words(database, row, stored)
    if not any(v not in (None, "", [], {}) for v in stored.values()):
        return ""
    return json.dumps(stored, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)
