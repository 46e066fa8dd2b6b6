"""The rows of DA's exported tables (services/da/export_tables.py), as storage/exports.py's:
internal participant ids in `__pid` columns, for services/study/export.py to swap for
pseudonyms; never handed out as they are."""

from __future__ import annotations

from storage.db import Database


def da_judgment_rows(database: Database, study_id: str) -> list[dict]:
    # LEFT JOINs: a judgment saved before DA campaigns (m003) has no HIT item
    return database.query(
        "SELECT j.id AS judgment_id, j.assignment_id, a.participant_id AS rater__pid, h.idx AS hit, i.pos, "
        "i.type AS item_type, i.of_pos, j.modality, s.segment_id, s.system, s.doc_id, j.score, a.first_shown_at, "
        "a.submitted_at, a.active_seconds, j.created_at, i.tts_engine, i.tts_voice FROM da_judgments j "
        "JOIN assignments a ON a.id = j.assignment_id "
        "JOIN da_segments s ON s.id = j.segment_row LEFT JOIN da_hit_items i ON i.id = j.hit_item_id "
        "LEFT JOIN da_hits h ON h.id = i.hit_id WHERE a.study_id = ? ORDER BY j.id",
        [study_id],
    )


def da_feedback_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT f.participant_id AS participant__pid, f.text, f.updated_at FROM da_feedback f "
        "JOIN participants p ON p.id = f.participant_id WHERE p.study_id = ? ORDER BY f.participant_id",
        [study_id],
    )


def da_segment_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT segment_id, system, doc_id, position, source, reference, output, domain "
        "FROM da_segments "
        "WHERE study_id = ? ORDER BY doc_id, position, system",
        [study_id],
    )


def da_hit_item_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT h.idx AS hit, i.pos, i.type AS item_type, i.of_pos, s.segment_id, s.system, i.candidate "
        "FROM da_hit_items i JOIN da_hits h ON h.id = i.hit_id JOIN da_segments s ON s.id = i.segment_row "
        "WHERE h.study_id = ? ORDER BY h.idx, i.pos",
        [study_id],
    )
