"""Comprehension-question drafts (m008) and the accepted copies in `questions`."""

from __future__ import annotations

from storage.db import Database, now

STATUSES = ("draft", "accepted", "rejected")
ORIGINS = ("generated", "imported", "edited")


def insert(
    db,
    study_id: str,
    starter_id: str,
    en: str,
    pt: str,
    answer_en: str | None,
    origin: str,
    model: str | None = None,
    status: str = "draft",
) -> int:
    """A new draft at the end of its starter's list; returns its id."""
    pos = db.execute(
        "SELECT COALESCE(MAX(position), 0) + 1 FROM question_drafts WHERE study_id = ? AND starter_id = ?",
        [study_id, starter_id],
    ).fetchone()[0]
    t = now()
    return (
        db["question_drafts"]
        .insert(
            {
                "study_id": study_id,
                "starter_id": starter_id,
                "position": pos,
                "en": en,
                "pt": pt,
                "answer_en": answer_en,
                "status": status,
                "origin": origin,
                "model": model,
                "created_at": t,
                "updated_at": t,
            }
        )
        .last_pk
    )


def update(db, draft_id: int, **fields) -> None:
    allowed = {"en", "pt", "answer_en", "status", "origin", "model"}
    bad = set(fields) - allowed
    if bad:
        raise ValueError(f"not draft fields: {', '.join(sorted(bad))}")
    if not fields:
        return
    cols = ", ".join(f"{k} = ?" for k in fields)
    db.execute(f"UPDATE question_drafts SET {cols}, updated_at = ? WHERE id = ?", [*fields.values(), now(), draft_id])


def order_accepted(db, study_id: str, starter_id: str, ids: list[int]) -> None:
    """The drafts `ids` (the accepted ones) take, in this order, the positions they hold between
    them; the other drafts keep theirs."""
    if not ids:
        return
    marks = ",".join("?" * len(ids))
    slots = sorted(
        r[0]
        for r in db.execute(
            f"SELECT position FROM question_drafts WHERE study_id = ? AND starter_id = ? AND id IN ({marks})",
            [study_id, starter_id, *ids],
        ).fetchall()
    )
    for draft_id, pos in zip(ids, slots):
        db.execute("UPDATE question_drafts SET position = ? WHERE id = ?", [pos, draft_id])


def get(database: Database, draft_id: int) -> dict | None:
    return database.one("SELECT * FROM question_drafts WHERE id = ?", [draft_id])


def for_starter(database: Database, study_id: str, starter_id: str) -> list[dict]:
    return database.query(
        "SELECT * FROM question_drafts WHERE study_id = ? AND starter_id = ? ORDER BY position, id",
        [study_id, starter_id],
    )


def reference_answers(database: Database, study_id: str, starter_id: str) -> dict[int, str]:
    """Question number -> its reference answer (answer_en) where the accepted draft has one: the
    starter's questions are its accepted drafts numbered 1..n in draft order (services/questions/review.py)."""
    accepted = database.query(
        "SELECT answer_en FROM question_drafts WHERE study_id = ? AND starter_id = ? "
        "AND status = 'accepted' ORDER BY position, id",
        [study_id, starter_id],
    )
    return {
        i: r["answer_en"].strip() for i, r in enumerate(accepted, start=1) if r["answer_en"] and r["answer_en"].strip()
    }


def for_study(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT * FROM question_drafts WHERE study_id = ? ORDER BY starter_id, position, id", [study_id]
    )


def counts(database: Database, study_id: str) -> dict[str, dict[str, int]]:
    """starter id -> {status: count of drafts}."""
    out: dict[str, dict[str, int]] = {}
    for r in database.query(
        "SELECT starter_id, status, COUNT(*) AS n FROM question_drafts WHERE study_id = ? GROUP BY starter_id, status",
        [study_id],
    ):
        out.setdefault(r["starter_id"], {})[r["status"]] = r["n"]
    return out


def question_counts(database: Database, study_id: str) -> dict[str, int]:
    """starter id -> number of questions in use (the `questions` table)."""
    return {
        r["starter_id"]: r["n"]
        for r in database.query(
            "SELECT starter_id, COUNT(*) AS n FROM questions WHERE study_id = ? GROUP BY starter_id", [study_id]
        )
    }


def replace_questions(db, study_id: str, starter_id: str, rows: list[dict]) -> None:
    """The starter's questions become `rows` (dicts with en, pt), numbered 1..n in order."""
    db.execute("DELETE FROM questions WHERE study_id = ? AND starter_id = ?", [study_id, starter_id])
    db["questions"].insert_all(
        {"study_id": study_id, "starter_id": starter_id, "idx": i, "en": r["en"], "pt": r["pt"]}
        for i, r in enumerate(rows, start=1)
    )


def accepted_origins(database: Database, study_id: str) -> list[dict]:
    """The accepted drafts by origin (generated, imported, edited) and model: [{origin, model, n}],
    for the report's note on where the questions in use came from."""
    return database.query(
        "SELECT origin, COALESCE(model, '') AS model, COUNT(*) AS n FROM question_drafts "
        "WHERE study_id = ? AND status = 'accepted' GROUP BY origin, model ORDER BY origin, model",
        [study_id],
    )
