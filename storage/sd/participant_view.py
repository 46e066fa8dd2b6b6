"""An SD participant's answers for the team's participant page (services/admin/participant_view.py),
from assignments.participant_id (index assignments_queue) through assignment_id keys."""

from __future__ import annotations

from storage.db import Database


def sd_ratings(database: Database, participant_id: int) -> list[dict]:
    """An SD participant's ratings (value: canonical, +3 = the positive pole) and suitability
    answers (value NULL, suitability set), page by page."""
    return database.query(
        "SELECT r.assignment_id, r.pair_id, r.is_repeat, r.value, NULL AS suitability "
        "FROM assignments a JOIN sd_ratings r ON r.assignment_id = a.id WHERE a.participant_id = ? AND a.phase = 'sd' "
        "UNION ALL SELECT u.assignment_id, u.pair_id, 0, NULL, u.suitability "
        "FROM assignments a JOIN sd_suitability u ON u.assignment_id = a.id WHERE a.participant_id = ? "
        "AND a.phase = 'sd' ORDER BY 1, 2, 3",
        [participant_id, participant_id],
    )
