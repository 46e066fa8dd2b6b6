"""The rows of the usability study's exported tables (services/usability/export_tables.py), as
storage/exports.py's: each row carries the internal ids of the participants it involves in
columns ending in `__pid`, which services/study/export.py swaps for pseudonyms; nothing here
filters by consent, so these queries must never be handed out as they are."""

from __future__ import annotations

from storage.db import Database


def exchange_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT e.id AS exchange_id, e.starter_id, e.system_id AS system, e.sender_id AS sender__pid, "
        "e.created_at, t.text AS translation, t.transcript AS translation_transcript, t.meta AS translation_meta, "
        "t.created_at AS translated_at FROM exchanges e LEFT JOIN translations t ON t.exchange_id = e.id "
        "WHERE e.study_id = ? ORDER BY e.id",
        [study_id],
    )


def recording_rows(database: Database, study_id: str) -> list[dict]:
    """Recordings with the stored 16 kHz file's path (the service copies it into the export)."""
    return database.query(
        "SELECT r.id AS recording_id, r.exchange_id, e.sender_id AS sender__pid, r.path_16k, r.duration_s, "
        "r.qc_status, r.reviewed_at, r.review_reason, r.transcript AS qc_transcript, r.wer, r.qc_flags, r.created_at "
        "FROM recordings r JOIN exchanges e ON e.id = r.exchange_id WHERE e.study_id = ? ORDER BY r.id",
        [study_id],
    )


def answer_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT an.id AS answer_id, an.assignment_id AS answer_set, an.exchange_id, a.participant_id AS receiver__pid, "
        "e.sender_id AS sender__pid, an.question_idx, an.text, an.unanswerable, "
        "COALESCE(json_extract(a.meta, '$.repeat_starter'), 0) AS repeat_starter, an.created_at FROM answers an "
        "JOIN assignments a ON a.id = an.assignment_id JOIN exchanges e ON e.id = an.exchange_id "
        "WHERE e.study_id = ? ORDER BY an.id",
        [study_id],
    )


def validation_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT v.id AS validation_id, v.assignment_id, v.exchange_id, va.participant_id AS validator__pid, "
        "v.receive_assignment_id AS answer_set, ra.participant_id AS receiver__pid, e.sender_id AS sender__pid, "
        "v.translation_score, v.qa_score, v.created_at FROM validations v "
        "JOIN assignments va ON va.id = v.assignment_id JOIN assignments ra ON ra.id = v.receive_assignment_id "
        "JOIN exchanges e ON e.id = v.exchange_id WHERE e.study_id = ? ORDER BY v.id",
        [study_id],
    )


def validation_mark_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT m.validation_id, v.exchange_id, va.participant_id AS validator__pid, "
        "ra.participant_id AS receiver__pid, "
        "e.sender_id AS sender__pid, m.question_idx, m.correct FROM validation_marks m "
        "JOIN validations v ON v.id = m.validation_id JOIN assignments va ON va.id = v.assignment_id "
        "JOIN assignments ra ON ra.id = v.receive_assignment_id JOIN exchanges e ON e.id = v.exchange_id "
        "WHERE e.study_id = ? ORDER BY m.validation_id, m.question_idx",
        [study_id],
    )


def survey_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT s.id AS survey_id, s.assignment_id, s.exchange_id, a.participant_id AS respondent__pid, "
        "e.sender_id AS sender__pid, s.stage, s.perspective, s.satisfaction, s.trust, s.reliance, s.created_at "
        "FROM surveys s JOIN assignments a ON a.id = s.assignment_id JOIN exchanges e ON e.id = s.exchange_id "
        "WHERE e.study_id = ? ORDER BY s.id",
        [study_id],
    )


def exchange_metric_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT m.exchange_id, e.sender_id AS sender__pid, m.metric, m.version, m.model, m.score, m.created_at "
        "FROM exchange_metrics m JOIN exchanges e ON e.id = m.exchange_id WHERE e.study_id = ? "
        "ORDER BY m.exchange_id, m.metric",
        [study_id],
    )


def system_rows(database: Database, study_id: str) -> list[dict]:
    # not the config: a remote system's settings (URLs, model paths) are the lab's, not the data's
    return database.query("SELECT id AS system, label, kind FROM systems WHERE study_id = ? ORDER BY id", [study_id])


def starter_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT id AS starter_id, domain, source, corpus, text, key_spans FROM starters WHERE study_id = ? ORDER BY id",
        [study_id],
    )


def reference_translation_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT starter_id, idx AS reference_idx, NULLIF(translator, '') AS translator, "
        "text AS translation FROM reference_translations WHERE study_id = ? "
        "ORDER BY starter_id, idx",
        [study_id],
    )


def question_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT starter_id, idx AS question_idx, en, pt FROM questions WHERE study_id = ? ORDER BY starter_id, idx",
        [study_id],
    )


def question_draft_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT id AS draft_id, starter_id, position, en, pt, answer_en, status, origin, model, "
        "created_at, updated_at FROM question_drafts WHERE study_id = ? "
        "ORDER BY starter_id, position, id",
        [study_id],
    )
