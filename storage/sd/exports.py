"""The rows of the semantic differential's exported tables (services/sd/export_tables.py), as
storage/exports.py's: internal participant ids in `__pid` columns, for
services/study/export.py to swap for pseudonyms; never handed out as they are."""

from __future__ import annotations

from storage.db import Database


def sd_rating_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT r.assignment_id, a.participant_id AS participant__pid, json_extract(a.meta, '$.sentence_id') AS "
        "sentence_id, json_extract(a.meta, '$.page') AS page, r.pair_id, r.is_repeat, r.value, r.positive_left, "
        "r.created_at FROM sd_ratings r JOIN assignments a ON a.id = r.assignment_id WHERE a.study_id = ? "
        "ORDER BY r.assignment_id, r.pair_id, r.is_repeat",
        [study_id],
    )


def sd_suitability_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT s.assignment_id, a.participant_id AS participant__pid, s.pair_id, s.suitability, s.created_at "
        "FROM sd_suitability s JOIN assignments a ON a.id = s.assignment_id WHERE a.study_id = ? "
        "ORDER BY s.assignment_id, s.pair_id",
        [study_id],
    )


def sd_suggestion_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT s.assignment_id, a.participant_id AS participant__pid, s.text, s.created_at FROM sd_suggestions s "
        "JOIN assignments a ON a.id = s.assignment_id WHERE a.study_id = ? ORDER BY s.assignment_id",
        [study_id],
    )


def sd_sentence_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT id AS sentence_id, text, source FROM sd_sentences WHERE study_id = ? ORDER BY id", [study_id]
    )


def sd_pair_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT id AS pair_id, language, positive, negative, note FROM sd_pairs "
        "WHERE study_id = ? ORDER BY id, language",
        [study_id],
    )
