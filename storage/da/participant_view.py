"""A DA rater's items for the team's participant page (services/admin/participant_view.py),
from assignments.participant_id (index assignments_queue) through assignment_id keys."""

from __future__ import annotations

from storage.db import Database


def da_items(database: Database, participant_id: int) -> list[dict]:
    """A DA rater's HIT items (what each one was) with the score when given."""
    return database.query(
        "SELECT a.id AS assignment_id, h.idx AS hit, i.pos, i.type, s.segment_id, s.system, j.score, j.modality "
        "FROM assignments a JOIN da_hit_items i ON i.id = CAST(a.item_id AS INTEGER) "
        "JOIN da_hits h ON h.id = i.hit_id JOIN da_segments s ON s.id = i.segment_row "
        "LEFT JOIN da_judgments j ON j.assignment_id = a.id WHERE a.participant_id = ? AND a.phase = 'da'",
        [participant_id],
    )
