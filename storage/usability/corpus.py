"""The usability study's corpus as imported: its starters, their comprehension questions and
reference translations (and the imported exchanges, storage/usability/exchanges.py), written
at import by the protocol's store_corpus (services/usability/corpus.py) and read here."""

from __future__ import annotations

import json

from storage.db import Database

# deleted in this order (the first two refer to starters)
TABLES = ("reference_translations", "questions", "starters")


def clear(db, study_id: str) -> None:
    """The study's imported exchanges (with what refers to them: a re-import has no participants,
    so their pool items and scores are rebuilt by the import's workflow refresh and jobs), then
    its references, questions and starters. Called inside a write transaction."""
    for t in ("work_pool", "exchange_metrics", "translations"):
        db.execute(
            f"DELETE FROM {t} WHERE exchange_id IN (SELECT id FROM exchanges WHERE study_id = ? AND sender_id IS NULL)",
            [study_id],
        )
    db.execute("DELETE FROM exchanges WHERE study_id = ? AND sender_id IS NULL", [study_id])
    for t in TABLES:
        db.execute(f"DELETE FROM {t} WHERE study_id = ?", [study_id])


def insert(db, study_id: str, starters: list[dict], questions: list[dict], references: list[dict]) -> None:
    """The checked starters, questions and references (services/usability/corpus.py load)."""
    db["starters"].insert_all(
        {
            "study_id": study_id,
            **{k: s[k] for k in ("id", "domain", "source", "corpus", "text")},
            "key_spans": json.dumps(s["key_spans"], ensure_ascii=False),
        }
        for s in starters
    )
    db["questions"].insert_all({"study_id": study_id, **q} for q in questions)
    numbered: dict[str, int] = {}
    for r in references:  # idx: the starter's references in file order, from 1
        numbered[r["starter_id"]] = numbered.get(r["starter_id"], 0) + 1
        db["reference_translations"].insert(
            {
                "study_id": study_id,
                "starter_id": r["starter_id"],
                "idx": numbered[r["starter_id"]],
                "translator": r["translator"],
                "text": r["translation"],
            }
        )


def counts(database: Database, study_id: str) -> dict[str, int]:
    """The import summary's counts: starters, questions, imported exchanges, references."""
    row = database.one_row(
        "SELECT (SELECT COUNT(*) FROM starters WHERE study_id = :s) AS starters, "
        "(SELECT COUNT(*) FROM questions WHERE study_id = :s) AS questions, "
        "(SELECT COUNT(*) FROM exchanges WHERE study_id = :s AND sender_id IS NULL) AS exchanges, "
        "(SELECT COUNT(*) FROM reference_translations WHERE study_id = :s) AS refs",
        {"s": study_id},
    )
    return {
        "starters": row["starters"],
        "questions": row["questions"],
        "exchanges": row["exchanges"],
        "references": row["refs"],
    }


def starters(database: Database, study_id: str) -> list[dict]:
    rows = database.query("SELECT * FROM starters WHERE study_id = ? ORDER BY id", [study_id])
    for r in rows:
        r["key_spans"] = json.loads(r["key_spans"])
    return rows


def starter(database: Database, study_id: str, starter_id: str) -> dict | None:
    r = database.one("SELECT * FROM starters WHERE study_id = ? AND id = ?", [study_id, starter_id])
    if r:
        r["key_spans"] = json.loads(r["key_spans"])
    return r


def questions(database: Database, study_id: str, starter_id: str) -> list[dict]:
    return database.query(
        "SELECT idx, en, pt FROM questions WHERE study_id = ? AND starter_id = ? ORDER BY idx", [study_id, starter_id]
    )


def reference_translations(database: Database, study_id: str) -> list[dict]:
    """The study's human reference translations (references.csv), per starter in file order."""
    return database.query(
        "SELECT starter_id, idx, translator, text FROM reference_translations "
        "WHERE study_id = ? ORDER BY starter_id, idx",
        [study_id],
    )


def question_counts(database: Database, study_id: str) -> list[dict]:
    """Questions in use per starter (starters without any have no row): paper 000's Table 3."""
    return database.query(
        "SELECT starter_id, COUNT(*) AS questions FROM questions WHERE study_id = ? "
        "GROUP BY starter_id ORDER BY starter_id",
        [study_id],
    )
