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
