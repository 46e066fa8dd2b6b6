"""How many answers of each kind a study holds, for the team's progress tab. What participants
submit is saved by each protocol's storage (storage/usability/, storage/da/, storage/sd/, or
storage/responses.py for a protocol without tables of its own)."""

from __future__ import annotations

from storage.db import Database


def table_counts(database: Database, study_id: str) -> dict[str, int]:
    q = {
        "recordings": "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id WHERE e.study_id = ?",
        "translations": "SELECT COUNT(*) FROM translations t JOIN exchanges e ON e.id = t.exchange_id "
        "WHERE e.study_id = ?",
        "answer sets": "SELECT COUNT(DISTINCT a.assignment_id) FROM answers a JOIN exchanges e ON e.id = a.exchange_id "
        "WHERE e.study_id = ?",
        "validations": "SELECT COUNT(*) FROM validations v JOIN exchanges e ON e.id = v.exchange_id "
        "WHERE e.study_id = ?",
        "surveys": "SELECT COUNT(*) FROM surveys s JOIN exchanges e ON e.id = s.exchange_id WHERE e.study_id = ?",
        "DA judgments": "SELECT COUNT(*) FROM da_judgments j JOIN da_segments s ON s.id = j.segment_row "
        "WHERE s.study_id = ?",
        "SD ratings": "SELECT COUNT(*) FROM sd_ratings r JOIN assignments a ON a.id = r.assignment_id "
        "WHERE a.study_id = ?",
    }
    return {k: database.scalar(sql, [study_id]) for k, sql in q.items()}
