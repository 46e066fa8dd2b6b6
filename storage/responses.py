"""Answers of a registered protocol's phase kept as one JSON document per assignment
(services/common/protocols.py: a protocol without tables of its own saves here)."""

from __future__ import annotations

import json

from storage.db import Database, insert_row, now


def insert_response(db, assignment_id: int, data: dict) -> None:
    insert_row(
        db,
        "responses",
        {
            "assignment_id": assignment_id,
            "data": json.dumps(data, ensure_ascii=False, sort_keys=True),
            "created_at": now(),
        },
    )


def response(database: Database, assignment_id: int) -> dict | None:
    row = database.one("SELECT data FROM responses WHERE assignment_id = ?", [assignment_id])
    return json.loads(row["data"]) if row else None


def response_rows(database: Database, study_id: str, phase: str) -> list[dict]:
    """The phase's answers in the study, in saving order; `data` is the JSON document, as
    stored. participant__pid: the author (services/study/export.py swaps it for the pseudonym)."""
    return database.query(
        "SELECT r.assignment_id, a.participant_id AS participant__pid, a.item_id, r.data, r.created_at, "
        "a.active_seconds FROM responses r JOIN assignments a ON a.id = r.assignment_id "
        "WHERE a.study_id = ? AND a.phase = ? ORDER BY r.assignment_id",
        [study_id, phase],
    )
