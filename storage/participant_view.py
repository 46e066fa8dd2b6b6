"""One participant's record for the team's participant page (services/admin/participant_view.py):
their assignments; what they gave, per kind of answer, is each protocol's
(storage/<protocol>/participant_view.py). Every query starts from assignments.participant_id
(index assignments_queue) and reaches the answer tables through their assignment_id keys, so a
participant's page never scans a study."""

from __future__ import annotations

from storage.db import Database


def assignments(database: Database, participant_id: int) -> list[dict]:
    """Every item the participant held (withdrawn ones too), with its exchange's starter and system."""
    return database.query(
        "SELECT a.id, a.phase, a.item_id, a.exchange_id, a.status, a.meta, a.position, a.created_at, "
        "a.first_shown_at, a.submitted_at, a.active_seconds, e.starter_id, e.system_id, e.sender_id "
        "FROM assignments a LEFT JOIN exchanges e ON e.id = a.exchange_id WHERE a.participant_id = ? "
        "ORDER BY a.id",
        [participant_id],
    )
