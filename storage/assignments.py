"""Assignments: who has which item in which phase, and its state; the team's progress tables.

No protocol's phase or role is named here (tests/test_storage_names_no_phase.py): a query that
needs one takes it from the caller, and a protocol's own queries are in storage/<protocol>/."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from storage.db import Database, now
from storage.rows import AssignmentRecord, AssignmentRow

# {phase: item ids} that are instructions, not items (services/participation/progress.py says which)
Skip = Mapping[str, Sequence[str]]


def not_skipped_clause(skip: Skip | None, alias: str = "") -> tuple[str, list]:
    """The " AND ..." that leaves out the instruction items, and its parameters."""
    col = f"{alias}." if alias else ""
    sql, params = "", []
    for phase, items in (skip or {}).items():
        if items:
            sql += f" AND NOT ({col}phase = ? AND {col}item_id IN ({','.join('?' * len(items))}))"
            params += [phase, *items]
    return sql, params


def insert_assignment(
    db,
    study_id: str,
    participant_id: int,
    phase: str,
    item_id,
    position: float,
    exchange_id: int | None = None,
    meta: dict | None = None,
) -> int | None:
    """Adds an assignment; None when the participant already has this item in this phase."""
    cur = db.execute(
        "INSERT OR IGNORE INTO assignments (study_id, participant_id, phase, item_id, exchange_id, "
        "position, meta, created_at) VALUES (?,?,?,?,?,?,?,?)",
        [
            study_id,
            participant_id,
            phase,
            str(item_id),
            exchange_id,
            position,
            json.dumps(meta) if meta is not None else None,
            now(),
        ],
    )
    return cur.lastrowid if cur.rowcount else None


def _decode(row: dict | None) -> AssignmentRow | None:
    """The row with its meta parsed (SELECT * FROM assignments)."""
    if row and row.get("meta"):
        row["meta"] = json.loads(row["meta"])
    return cast("AssignmentRow | None", row)


def assignment(database: Database, assignment_id: int) -> AssignmentRow | None:
    return _decode(database.one("SELECT * FROM assignments WHERE id = ?", [assignment_id]))


def find_assignment(database: Database, participant_id: int, phase: str, item_id) -> AssignmentRow | None:
    return _decode(
        database.one(
            "SELECT * FROM assignments WHERE participant_id = ? AND phase = ? AND item_id = ? "
            "AND status != 'withdrawn'",
            [participant_id, phase, str(item_id)],
        )
    )


def next_open(
    database: Database, participant_id: int, phases: tuple[str, ...], last: tuple[str, ...]
) -> AssignmentRow | None:
    """The participant's next open item of the phases: those of the `last` phases after all the
    others (services/common/protocols.py served_last), otherwise the random position decides."""
    marks = ",".join("?" * len(phases))
    # the CASE stays when `last` is empty (IN (NULL) is never true): one statement, one plan
    last_marks = ",".join("?" * len(last)) or "NULL"
    return _decode(
        database.one(
            f"SELECT * FROM assignments WHERE participant_id = ? AND status = 'open' AND phase IN ({marks}) "
            f"ORDER BY CASE WHEN phase IN ({last_marks}) THEN 1 ELSE 0 END, position, id LIMIT 1",
            [participant_id, *phases, *last],
        )
    )


def counts(database: Database, participant_id: int, phases: tuple[str, ...], skip: Skip | None = None) -> dict:
    """Open and done assignments; skip: the items that are not counted (the semantic
    differential's instruction pages are not progress)."""
    marks = ",".join("?" * len(phases))
    not_skipped, skipped = not_skipped_clause(skip)
    rows = database.query(
        f"SELECT status, COUNT(*) AS n FROM assignments WHERE participant_id = ? AND phase IN ({marks}){not_skipped} "
        "GROUP BY status",
        [participant_id, *phases, *skipped],
    )
    c = {r["status"]: r["n"] for r in rows}
    return {"open": c.get("open", 0), "done": c.get("done", 0)}


def mark_shown(db, assignment_id: int) -> None:
    db.execute(
        "UPDATE assignments SET first_shown_at = COALESCE(first_shown_at, ?) WHERE id = ?", [now(), assignment_id]
    )


def mark_done(db, assignment_id: int, active_seconds: float | None) -> None:
    db.execute(
        "UPDATE assignments SET status = 'done', submitted_at = ?, active_seconds = ? WHERE id = ? AND status = 'open'",
        [now(), active_seconds, assignment_id],
    )


def segment_use(database: Database, study_id: str, phase: str) -> dict[str, int]:
    rows = database.query(
        "SELECT item_id, COUNT(*) AS n FROM assignments WHERE study_id = ? AND phase = ? "
        "AND status != 'withdrawn' GROUP BY item_id",
        [study_id, phase],
    )
    return {r["item_id"]: r["n"] for r in rows}


def study_progress(database: Database, study_id: str, skip: Skip | None = None) -> list[dict]:
    not_skipped, skipped = not_skipped_clause(skip, "a")
    return database.query(
        "SELECT p.role, a.phase, a.status, COUNT(*) AS n FROM assignments a "
        f"JOIN participants p ON p.id = a.participant_id WHERE a.study_id = ?{not_skipped} "
        "GROUP BY p.role, a.phase, a.status ORDER BY p.role, a.phase, a.status",
        [study_id, *skipped],
    )


# a participant's status in the admin tab: exactly one of these holds (services/admin/participants.status_of)
_STAYED = "p.excluded_at IS NULL AND p.dropped_out_at IS NULL"
PARTICIPANT_STATUS = {
    "excluded": "p.excluded_at IS NOT NULL",  # by the team or QC: left out of the analyses
    "dropped out": "p.excluded_at IS NULL AND p.dropped_out_at IS NOT NULL",  # what they answered stays in
    "deactivated": f"p.active = 0 AND {_STAYED}",
    "completed": f"p.active = 1 AND p.completed_at IS NOT NULL AND {_STAYED}",
    "active": f"p.active = 1 AND p.completed_at IS NULL AND {_STAYED}",
}


def _participant_filter(study_id: str, role: str | None, status: str | None) -> tuple[str, list]:
    sql, params = "p.study_id = ?", [study_id]
    if role:
        sql += " AND p.role = ?"
        params.append(role)
    if status:
        sql += f" AND {PARTICIPANT_STATUS[status]}"  # KeyError on an unknown status: callers check
    return sql, params


def participant_progress(
    database: Database,
    study_id: str,
    limit: int = 200,
    offset: int = 0,
    role: str | None = None,
    status: str | None = None,
    skip: Skip | None = None,
) -> list[dict]:
    # the page of participants is chosen first; counts are per row (index on participant_id)
    where, params = _participant_filter(study_id, role, status)
    not_skipped, skipped = not_skipped_clause(skip, "a")
    return database.query(
        f"""SELECT p.id, p.token, p.role, p.grp, p.gender, p.external_id, p.prolific_pid, p.active, p.last_seen_at,
                  p.completed_at, p.excluded_at, p.dropped_out_at,
                  (SELECT COUNT(*) FROM assignments a WHERE a.participant_id = p.id AND a.status = 'done'{not_skipped})
                    AS done,
                  (SELECT COUNT(*) FROM assignments a WHERE a.participant_id = p.id AND a.status = 'open'{not_skipped})
                    AS open,
                  (SELECT MAX(a.submitted_at) FROM assignments a WHERE a.participant_id = p.id) AS last_submitted
           FROM participants p WHERE {where} ORDER BY p.role, p.id LIMIT ? OFFSET ?""",
        [*skipped, *skipped, *params, limit, offset],
    )


def participant_count(database: Database, study_id: str, role: str | None = None, status: str | None = None) -> int:
    where, params = _participant_filter(study_id, role, status)
    return database.scalar(f"SELECT COUNT(*) FROM participants p WHERE {where}", params)


def put_first(db, assignment_id: int) -> None:
    """The item comes before the participant's others (positions are 0..1)."""
    db.execute("UPDATE assignments SET position = -1 WHERE id = ?", [assignment_id])


def open_assignments(database: Database, participant_id: int) -> list[AssignmentRecord]:
    """The participant's open items, their meta as stored (JSON text)."""
    return cast(
        "list[AssignmentRecord]",
        database.query(
            "SELECT * FROM assignments WHERE participant_id = ? AND status = 'open' ORDER BY id", [participant_id]
        ),
    )


def withdraw(db, assignment_id: int) -> None:
    db.execute("UPDATE assignments SET status = 'withdrawn' WHERE id = ? AND status = 'open'", [assignment_id])


def done_count(database: Database, study_id: str, phase: str) -> int:
    """The study's submitted items of one phase."""
    return database.scalar(
        "SELECT COUNT(*) FROM assignments WHERE study_id = ? AND phase = ? AND status = 'done'", [study_id, phase]
    )
