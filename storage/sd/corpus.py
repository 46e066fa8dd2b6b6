"""The semantic differential's corpus as imported: its sentences and adjective pairs."""

from __future__ import annotations

from storage.db import Database


def sd_sentences(database: Database, study_id: str) -> list[dict]:
    return database.query("SELECT * FROM sd_sentences WHERE study_id = ? ORDER BY id", [study_id])


def sd_sentence(database: Database, study_id: str, sentence_id: str) -> dict | None:
    return database.one("SELECT * FROM sd_sentences WHERE study_id = ? AND id = ?", [study_id, sentence_id])


def sd_pairs(database: Database, study_id: str, language: str) -> list[dict]:
    return database.query(
        "SELECT * FROM sd_pairs WHERE study_id = ? AND language = ? ORDER BY id", [study_id, language]
    )


def clear(db, study_id: str) -> None:
    """The study's sentences and adjective pairs. In a write transaction."""
    for t in ("sd_sentences", "sd_pairs"):
        db.execute(f"DELETE FROM {t} WHERE study_id = ?", [study_id])


def insert(db, study_id: str, sentences: list[dict], pairs: list[dict]) -> None:
    db["sd_sentences"].insert_all({"study_id": study_id, **s} for s in sentences)
    db["sd_pairs"].insert_all({"study_id": study_id, **p} for p in pairs)


def counts(database: Database, study_id: str) -> dict[str, int]:
    return database.one_row(
        "SELECT (SELECT COUNT(*) FROM sd_sentences WHERE study_id = :s) AS sentences, "
        "(SELECT COUNT(*) FROM sd_pairs WHERE study_id = :s) AS pairs",
        {"s": study_id},
    )
