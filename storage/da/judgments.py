"""What DA raters give: a judgment per item, their analysis's rows, a rater's feedback."""

from __future__ import annotations

from storage.db import Database, insert_row, now


def insert_da_judgment(
    db, assignment_id: int, segment_row: int, score: float, hit_item_id: int | None = None, modality: str | None = None
) -> int:
    return insert_row(
        db,
        "da_judgments",
        {
            "assignment_id": assignment_id,
            "segment_row": segment_row,
            "score": score,
            "hit_item_id": hit_item_id,
            "modality": modality,
            "created_at": now(),
        },
    )


def da_judgment(database: Database, assignment_id: int) -> dict | None:
    return database.one("SELECT * FROM da_judgments WHERE assignment_id = ?", [assignment_id])


def da_judgment_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT a.participant_id AS worker_id, h.idx AS hit_id, j.modality, s.system, s.segment_id, "
        "i.type AS item_type, j.score, COALESCE(json_extract(a.meta, '$.run'), 1) AS run, "
        "a.active_seconds AS duration_s, i.tts_engine, i.tts_voice FROM da_judgments j "
        "JOIN assignments a ON a.id = j.assignment_id JOIN da_hit_items i ON i.id = j.hit_item_id "
        "JOIN da_hits h ON h.id = i.hit_id JOIN da_segments s ON s.id = i.segment_row "
        "WHERE a.study_id = ? ORDER BY j.id",
        [study_id],
    )


def da_rater_judgment_rows(database: Database, participant_id: int) -> list[dict]:
    """One rater's judgments (their HIT, about 100 rows) in the analysis's columns."""
    return database.query(
        "SELECT a.participant_id AS worker_id, h.idx AS hit_id, j.modality, s.system, s.segment_id, "
        "i.type AS item_type, j.score, COALESCE(json_extract(a.meta, '$.run'), 1) AS run, "
        "a.active_seconds AS duration_s FROM assignments a JOIN da_judgments j ON j.assignment_id = a.id "
        "JOIN da_hit_items i ON i.id = j.hit_item_id JOIN da_hits h ON h.id = i.hit_id "
        "JOIN da_segments s ON s.id = i.segment_row WHERE a.participant_id = ? AND a.phase = 'da' ORDER BY j.id",
        [participant_id],
    )


def da_feedback(database: Database, participant_id: int) -> dict | None:
    return database.one("SELECT * FROM da_feedback WHERE participant_id = ?", [participant_id])


def save_da_feedback(db, participant_id: int, text: str) -> bool:
    """A DA rater's one feedback text: a later save replaces it. Whether it changed anything: the
    same text again writes nothing (its audit row goes with a change only)."""
    cur = db.execute(
        "INSERT INTO da_feedback (participant_id, text, updated_at) VALUES (?,?,?) "
        "ON CONFLICT (participant_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at "
        "WHERE da_feedback.text IS NOT excluded.text",
        [participant_id, text, now()],
    )
    return cur.rowcount > 0


def collected_counts(database: Database, study_id: str) -> dict[str, int]:
    """The study's DA judgments (the team's progress tab, Collected)."""
    n = database.scalar(
        "SELECT COUNT(*) FROM da_judgments j JOIN da_segments s ON s.id = j.segment_row WHERE s.study_id = ?",
        [study_id],
    )
    return {"DA judgments": n}
