"""The usability study's answers of one participant, for the team's participant page
(services/admin/participant_view.py; storage/participant_view.py holds their assignments).
Each query starts from assignments.participant_id (index assignments_queue) and reaches the
answer tables through their assignment_id keys, so a participant's page never scans a study."""

from __future__ import annotations

from storage.db import Database


def recordings(database: Database, participant_id: int) -> list[dict]:
    return database.query(
        "SELECT r.assignment_id, r.id, r.duration_s, r.qc_status, r.wer, r.qc_flags, r.reviewed_by "
        "FROM assignments a JOIN recordings r ON r.assignment_id = a.id "
        "WHERE a.participant_id = ? AND a.phase = 'record'",
        [participant_id],
    )


def answers(database: Database, participant_id: int) -> list[dict]:
    """A receiver's answers, question by question."""
    return database.query(
        "SELECT an.assignment_id, an.question_idx AS idx, an.text, an.unanswerable "
        "FROM assignments a JOIN answers an ON an.assignment_id = a.id "
        "WHERE a.participant_id = ? AND a.phase = 'receive' ORDER BY an.assignment_id, an.question_idx",
        [participant_id],
    )


def validations(database: Database, participant_id: int) -> list[dict]:
    """A validator's scores, one row per mark (question_idx NULL: a validation without marks)."""
    return database.query(
        "SELECT v.assignment_id, v.receive_assignment_id, v.translation_score, v.qa_score, "
        "m.question_idx, m.correct FROM assignments a JOIN validations v ON v.assignment_id = a.id "
        "LEFT JOIN validation_marks m ON m.validation_id = v.id "
        "WHERE a.participant_id = ? AND a.phase = 'validate' ORDER BY v.assignment_id, m.question_idx",
        [participant_id],
    )


def surveys(database: Database, participant_id: int) -> list[dict]:
    return database.query(
        "SELECT s.assignment_id, s.stage, s.perspective, s.satisfaction, s.trust, s.reliance "
        "FROM assignments a JOIN surveys s ON s.assignment_id = a.id "
        "WHERE a.participant_id = ? AND a.phase IN ('survey_baseline', 'survey_informed')",
        [participant_id],
    )
