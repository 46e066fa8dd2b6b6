"""What semantic-differential participants give: ratings, suitability answers and suggestions;
the analysis's rows made of them."""

from __future__ import annotations

from storage.db import Database, insert_row, insert_rows, now


def insert_sd_ratings(db, assignment_id: int, ratings: list[dict]) -> None:
    at = now()
    insert_rows(
        db,
        "sd_ratings",
        [
            {
                "assignment_id": assignment_id,
                "pair_id": r["pair_id"],
                "is_repeat": int(r.get("is_repeat", 0)),
                "value": r["value"],
                "positive_left": int(r["positive_left"]),
                "created_at": at,
            }
            for r in ratings
        ],
    )


def sd_ratings(database: Database, assignment_id: int) -> list[dict]:
    return database.query(
        "SELECT pair_id, value, positive_left FROM sd_ratings WHERE assignment_id = ? ORDER BY pair_id", [assignment_id]
    )


def insert_sd_suitability(db, assignment_id: int, ratings: list[dict], suggestion: str) -> None:
    at = now()
    insert_rows(
        db,
        "sd_suitability",
        [
            {"assignment_id": assignment_id, "pair_id": r["pair_id"], "suitability": r["suitability"], "created_at": at}
            for r in ratings
        ],
    )
    if suggestion:
        insert_row(db, "sd_suggestions", {"assignment_id": assignment_id, "text": suggestion, "created_at": now()})


def sd_rating_rows(database: Database, study_id: str) -> list[dict]:
    """Ratings in the SD analysis's input columns; duration_s = the participant's total active time."""
    return database.query(
        "SELECT a.participant_id, json_extract(a.meta, '$.sentence_id') AS sentence_id, r.pair_id, r.value, "
        "r.is_repeat, (SELECT COALESCE(SUM(active_seconds), 0) FROM assignments b "
        "WHERE b.participant_id = a.participant_id "
        "AND b.phase = 'sd') AS duration_s FROM sd_ratings r JOIN assignments a ON a.id = r.assignment_id "
        "WHERE a.study_id = ? ORDER BY a.participant_id, a.position, r.rowid",
        [study_id],
    )


def sd_suitability_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT a.participant_id, s.pair_id, s.suitability FROM sd_suitability s "
        "JOIN assignments a ON a.id = s.assignment_id WHERE a.study_id = ? ORDER BY a.participant_id",
        [study_id],
    )


def collected_counts(database: Database, study_id: str) -> dict[str, int]:
    """The study's SD ratings (the team's progress tab, Collected)."""
    n = database.scalar(
        "SELECT COUNT(*) FROM sd_ratings r JOIN assignments a ON a.id = r.assignment_id WHERE a.study_id = ?",
        [study_id],
    )
    return {"SD ratings": n}
