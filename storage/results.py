"""What participants submit: recordings, translations, answers, validations, surveys (DA's
judgments and SD's ratings are in storage/da/ and storage/sd/). One row set per assignment
(UNIQUE keys make saves idempotent)."""

from __future__ import annotations

import json

from storage.db import Database, insert_row, insert_rows, now


def insert_recording(
    db, assignment_id: int, exchange_id: int, sha256: str, path_original: str, path_16k: str, duration_s: float
) -> int:
    return insert_row(
        db,
        "recordings",
        {
            "assignment_id": assignment_id,
            "exchange_id": exchange_id,
            "sha256": sha256,
            "path_original": path_original,
            "path_16k": path_16k,
            "duration_s": duration_s,
            "created_at": now(),
        },
    )


def recording_for_assignment(database: Database, assignment_id: int) -> dict | None:
    return database.one("SELECT * FROM recordings WHERE assignment_id = ?", [assignment_id])


def recording_for_exchange(database: Database, exchange_id: int) -> dict | None:
    return database.one("SELECT * FROM recordings WHERE exchange_id = ? ORDER BY id DESC LIMIT 1", [exchange_id])


def insert_translation(
    db, exchange_id: int, system_id: str, text: str, transcript: str | None = None, meta: str | None = None
) -> int | None:
    cur = db.execute(
        "INSERT OR IGNORE INTO translations (exchange_id, system_id, text, transcript, meta, "
        "created_at) VALUES (?,?,?,?,?,?)",
        [exchange_id, system_id, text, transcript, meta, now()],
    )
    return cur.lastrowid if cur.rowcount else None


def translation(database: Database, exchange_id: int) -> dict | None:
    return database.one("SELECT * FROM translations WHERE exchange_id = ?", [exchange_id])


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


def recording(database: Database, recording_id: int) -> dict | None:
    return database.one("SELECT * FROM recordings WHERE id = ?", [recording_id])


def set_recording_qc(
    db, recording_id: int, status: str, transcript: str, wer: float, flags: list[str], edges: dict | None = None
) -> None:
    db.execute(
        "UPDATE recordings SET qc_status = ?, transcript = ?, wer = ?, qc_flags = ?, qc_edges = ? WHERE id = ?",
        [status, transcript, wer, json.dumps(flags), None if edges is None else json.dumps(edges), recording_id],
    )


def review_recording(db, recording_id: int, status: str, reviewer: str) -> None:
    db.execute(
        "UPDATE recordings SET qc_status = ?, reviewed_by = ?, reviewed_at = ? WHERE id = ?",
        [status, reviewer, now(), recording_id],
    )


def recordings_for_review(
    database: Database, study_id: str | None = None, status: str = "flagged", limit: int = 100, offset: int = 0
) -> list[dict]:
    """Recordings waiting for (or given) a review, with what the reviewer compares."""
    return database.query(
        "SELECT r.id, r.exchange_id, r.path_original, r.path_16k, r.duration_s, r.transcript, r.wer, "
        "r.qc_flags, r.qc_edges, r.qc_status, r.reviewed_by, r.created_at, e.study_id, e.sender_id, e.starter_id, "
        "e.system_id, s.text AS prompt FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        "WHERE r.qc_status = ? AND (? IS NULL OR e.study_id = ?) ORDER BY r.id LIMIT ? OFFSET ?",
        [status, study_id, study_id, limit, offset],
    )


def review_count(database: Database, study_id: str | None = None, status: str = "flagged") -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "WHERE r.qc_status = ? AND (? IS NULL OR e.study_id = ?)",
        [status, study_id, study_id],
    )


def supersede_translation(db, exchange_id: int, recording_id: int) -> None:
    """The exchange's translation (of a rejected recording) moves to superseded_translations."""
    db.execute(
        "INSERT INTO superseded_translations (exchange_id, recording_id, system_id, text, transcript, meta, "
        "created_at, superseded_at) SELECT exchange_id, ?, system_id, text, transcript, meta, created_at, ? "
        "FROM translations WHERE exchange_id = ?",
        [recording_id, now(), exchange_id],
    )
    db.execute("DELETE FROM translations WHERE exchange_id = ?", [exchange_id])


def recording_count(database: Database, exchange_id: int) -> int:
    return database.scalar("SELECT COUNT(*) FROM recordings WHERE exchange_id = ?", [exchange_id])


def rejected_count(database: Database, sender_id: int) -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "WHERE e.sender_id = ? AND r.qc_status = 'rejected'",
        [sender_id],
    )


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


def put_exchange_metric(db, exchange_id: int, metric: str, version: str, model: str, score) -> None:
    db.execute(
        "INSERT OR REPLACE INTO exchange_metrics (exchange_id, metric, version, model, score, created_at) "
        "VALUES (?,?,?,?,?,?)",
        [exchange_id, metric, version, model, score, now()],
    )


def exchange_metric_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT m.exchange_id, m.metric, m.version, m.model, m.score FROM exchange_metrics m "
        "JOIN exchanges e ON e.id = m.exchange_id WHERE e.study_id = ?",
        [study_id],
    )


def reference_translation(database: Database, study_id: str, starter_id: str, system_id: str) -> str | list[str] | None:
    """The human reference of the starter, as a metric's reference cell: the study's reference
    translations (references.csv; a list when there are several), else, for a study without
    any for this starter, the translation of an imported exchange of a `human` system other
    than system_id (a designer who lists human translation as a system); None when neither."""
    refs = [
        r["text"]
        for r in database.query(
            "SELECT text FROM reference_translations WHERE study_id = ? AND starter_id = ? ORDER BY idx",
            [study_id, starter_id],
        )
    ]
    if refs:
        return refs[0] if len(refs) == 1 else refs
    row = database.one(
        "SELECT t.text FROM exchanges e JOIN translations t ON t.exchange_id = e.id JOIN systems s "
        "ON s.study_id = e.study_id AND s.id = e.system_id WHERE e.study_id = ? AND e.starter_id = ? "
        "AND s.kind = 'human' AND e.system_id != ? ORDER BY e.id LIMIT 1",
        [study_id, starter_id, system_id],
    )
    return row["text"] if row else None
