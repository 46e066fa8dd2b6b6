"""Studies and their corpus: written whole at import (DA segments and HITs, SD sentences and
pairs too); read here: starters, questions, reference translations, systems. DA's and SD's
reads are in storage/da/hits.py and storage/sd/corpus.py."""

from __future__ import annotations

import json

from storage.db import Database, now

# deleted in this order on re-import (the first two refer to starters)
CONTENT_TABLES = (
    "reference_translations",
    "questions",
    "starters",
    "systems",
    "da_segments",
    "sd_sentences",
    "sd_pairs",
)


def get_study(database: Database, study_id: str) -> dict | None:
    row = database.one("SELECT * FROM studies WHERE id = ?", [study_id])
    if row:
        row["config"] = json.loads(row["config"])
    return row


def list_studies(database: Database) -> list[dict]:
    rows = database.query("SELECT * FROM studies ORDER BY created_at")
    for r in rows:
        r["config"] = json.loads(r["config"])
    return rows


def has_participants(database: Database, study_id: str) -> bool:
    return bool(database.scalar("SELECT 1 FROM participants WHERE study_id = ? LIMIT 1", [study_id]))


def replace_study(db, bundle, corpus_hash: str | None = None) -> None:
    """Write a validated StudyBundle, replacing earlier content of the same study; corpus_hash:
    its corpus parts' hashes (services/study/lifecycle.corpus_hashes, JSON). Called inside a
    write transaction."""
    sid = bundle.id
    if db.execute("SELECT 1 FROM studies WHERE id = ?", [sid]).fetchone():
        # the imported exchanges go, with what refers to them (a re-import has no participants:
        # their pool items and scores are rebuilt by the import's workflow refresh and jobs)
        for t in ("work_pool", "exchange_metrics", "translations"):
            db.execute(
                f"DELETE FROM {t} WHERE exchange_id IN "
                "(SELECT id FROM exchanges WHERE study_id = ? AND sender_id IS NULL)",
                [sid],
            )
        db.execute("DELETE FROM exchanges WHERE study_id = ? AND sender_id IS NULL", [sid])
        db.execute("DELETE FROM da_hit_items WHERE hit_id IN (SELECT id FROM da_hits WHERE study_id = ?)", [sid])
        db.execute("DELETE FROM da_hits WHERE study_id = ?", [sid])
        for t in CONTENT_TABLES:
            db.execute(f"DELETE FROM {t} WHERE study_id = ?", [sid])
        db.execute(
            "UPDATE studies SET name = ?, config = ?, content_hash = ?, corpus_hash = ? WHERE id = ?",
            [bundle.name, json.dumps(bundle.config), bundle.content_hash, corpus_hash, sid],
        )
    else:
        db["studies"].insert(
            {
                "id": sid,
                "name": bundle.name,
                "config": json.dumps(bundle.config),
                "content_hash": bundle.content_hash,
                "corpus_hash": corpus_hash,
                "created_at": now(),
            }
        )
    db["systems"].insert_all(
        {"study_id": sid, "id": s["id"], "label": s["label"], "kind": s["kind"], "config": json.dumps(s)}
        for s in bundle.systems
    )
    db["starters"].insert_all(
        {
            "study_id": sid,
            **{k: s[k] for k in ("id", "domain", "source", "corpus", "text")},
            "key_spans": json.dumps(s["key_spans"], ensure_ascii=False),
        }
        for s in bundle.starters
    )
    db["questions"].insert_all({"study_id": sid, **q} for q in bundle.questions)
    numbered: dict[str, int] = {}
    for r in bundle.references:  # idx: the starter's references in file order, from 1
        numbered[r["starter_id"]] = numbered.get(r["starter_id"], 0) + 1
        db["reference_translations"].insert(
            {
                "study_id": sid,
                "starter_id": r["starter_id"],
                "idx": numbered[r["starter_id"]],
                "translator": r["translator"],
                "text": r["translation"],
            }
        )
    rows = [db["da_segments"].insert({"study_id": sid, **s}).last_pk for s in bundle.da_segments]
    for idx, hit in enumerate(bundle.da_hits, start=1):
        hid = db["da_hits"].insert({"study_id": sid, "idx": idx}).last_pk
        db["da_hit_items"].insert_all(
            {
                "hit_id": hid,
                "pos": it["pos"],
                "type": it["type"],
                "segment_row": rows[it["row"]],
                "of_pos": it["of_pos"],
                "candidate": it["candidate"],
            }
            for it in hit
        )
    db["sd_sentences"].insert_all({"study_id": sid, **s} for s in bundle.sd_sentences)
    db["sd_pairs"].insert_all({"study_id": sid, **p} for p in bundle.sd_pairs)


def update_settings(db, study_id: str, name: str, config: dict, content_hash: str) -> None:
    """A study's settings changed in place: its content and collected data stay as they are."""
    db.execute(
        "UPDATE studies SET name = ?, config = ?, content_hash = ? WHERE id = ?",
        [name, json.dumps(config), content_hash, study_id],
    )


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


def systems(database: Database, study_id: str) -> list[dict]:
    rows = database.query("SELECT * FROM systems WHERE study_id = ? ORDER BY id", [study_id])
    for r in rows:
        r["config"] = json.loads(r["config"])
    return rows


def question_counts(database: Database, study_id: str) -> list[dict]:
    """Questions in use per starter (starters without any have no row): paper 000's Table 3."""
    return database.query(
        "SELECT starter_id, COUNT(*) AS questions FROM questions WHERE study_id = ? "
        "GROUP BY starter_id ORDER BY starter_id",
        [study_id],
    )
