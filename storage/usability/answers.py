"""What the usability study's participants answer: receivers' answers, validations with their
marks, surveys; and the analysis's rows made of them. One row set per assignment (UNIQUE
keys make saves idempotent)."""

from __future__ import annotations

from storage.db import Database, insert_row, insert_rows, now


def insert_answers(db, assignment_id: int, exchange_id: int, answers: list[dict]) -> None:
    at = now()
    insert_rows(
        db,
        "answers",
        [
            {
                "assignment_id": assignment_id,
                "exchange_id": exchange_id,
                "question_idx": a["idx"],
                "text": a["text"],
                "unanswerable": int(a["unanswerable"]),
                "created_at": at,
            }
            for a in answers
        ],
    )


def answers(database: Database, assignment_id: int) -> list[dict]:
    return database.query(
        "SELECT question_idx AS idx, text, unanswerable FROM answers WHERE assignment_id = ? ORDER BY question_idx",
        [assignment_id],
    )


def insert_validation(
    db,
    assignment_id: int,
    receive_assignment_id: int,
    exchange_id: int,
    translation_score: float,
    qa_score: float,
    marks: dict[int, bool],
) -> int:
    vid = insert_row(
        db,
        "validations",
        {
            "assignment_id": assignment_id,
            "receive_assignment_id": receive_assignment_id,
            "exchange_id": exchange_id,
            "translation_score": translation_score,
            "qa_score": qa_score,
            "created_at": now(),
        },
    )
    insert_rows(
        db,
        "validation_marks",
        [{"validation_id": vid, "question_idx": i, "correct": int(c)} for i, c in sorted(marks.items())],
    )
    return vid


def validation(database: Database, assignment_id: int) -> dict | None:
    v = database.one("SELECT * FROM validations WHERE assignment_id = ?", [assignment_id])
    if v:
        v["marks"] = {
            r["question_idx"]: bool(r["correct"])
            for r in database.query(
                "SELECT question_idx, correct FROM validation_marks WHERE validation_id = ?", [v["id"]]
            )
        }
    return v


def validations_for_exchange(database: Database, exchange_id: int) -> list[dict]:
    rows = database.query("SELECT * FROM validations WHERE exchange_id = ? ORDER BY id", [exchange_id])
    for v in rows:
        v["marks"] = {
            r["question_idx"]: bool(r["correct"])
            for r in database.query(
                "SELECT question_idx, correct FROM validation_marks WHERE validation_id = ?", [v["id"]]
            )
        }
    return rows


def insert_survey(
    db, assignment_id: int, exchange_id: int, stage: str, perspective: str, satisfaction: int, trust: int, reliance: int
) -> int:
    return insert_row(
        db,
        "surveys",
        {
            "assignment_id": assignment_id,
            "exchange_id": exchange_id,
            "stage": stage,
            "perspective": perspective,
            "satisfaction": satisfaction,
            "trust": trust,
            "reliance": reliance,
            "created_at": now(),
        },
    )


def survey(database: Database, assignment_id: int) -> dict | None:
    return database.one("SELECT * FROM surveys WHERE assignment_id = ?", [assignment_id])


def usability_rows(database: Database, study_id: str) -> list[dict]:
    """One row per validated answer set whose exchange has both surveys by the same person,
    in the usability analysis's input columns. The respondent (the sender, or a third-person
    rater) is `sender_id`; excluded respondents are left out."""
    return database.query(
        """SELECT e.id AS exchange_id, si_a.participant_id AS sender_id, r.participant_id AS receiver_id,
                  va.participant_id AS validator_id, p.grp AS "group", p.gender, e.system_id AS system,
                  st.domain AS topic, st.source AS source, st.corpus AS corpus,
                  si.satisfaction, si.trust, si.reliance,
                  sb.satisfaction AS satisfaction_b, sb.trust AS trust_b, sb.reliance AS reliance_b,
                  v.translation_score, v.qa_score, si.perspective
           FROM validations v
           JOIN assignments va ON va.id = v.assignment_id
           JOIN assignments r ON r.id = v.receive_assignment_id
           JOIN exchanges e ON e.id = v.exchange_id
           JOIN starters st ON st.study_id = e.study_id AND st.id = e.starter_id
           JOIN surveys si ON si.exchange_id = e.id AND si.stage = 'informed'
           JOIN assignments si_a ON si_a.id = si.assignment_id
           JOIN surveys sb ON sb.exchange_id = e.id AND sb.stage = 'baseline'
           JOIN assignments sb_a ON sb_a.id = sb.assignment_id AND sb_a.participant_id = si_a.participant_id
           JOIN participants p ON p.id = si_a.participant_id
           WHERE e.study_id = ? AND p.excluded_at IS NULL
           ORDER BY e.id, v.id""",
        [study_id],
    )
