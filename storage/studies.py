"""Studies and their corpus: written whole at import (DA segments and HITs, SD sentences and
pairs too); read here: starters, questions, reference translations, systems. DA's and SD's
reads are in storage/da/hits.py and storage/sd/corpus.py."""

from __future__ import annotations

import json
from typing import Iterable, cast

from storage.db import Database, now
from storage.rows import StudyRow
from storage.schema import study_rows

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


def get_study(database: Database, study_id: str) -> StudyRow | None:
    row = database.one("SELECT * FROM studies WHERE id = ?", [study_id])
    if row:
        row["config"] = json.loads(row["config"])
    return cast("StudyRow | None", row)


def list_studies(database: Database, archived: bool = False) -> list[StudyRow]:
    """The studies in the dropdowns (archived ones too when asked)."""
    rows = database.query(
        "SELECT * FROM studies" + ("" if archived else " WHERE archived_at IS NULL") + " ORDER BY created_at"
    )
    for r in rows:
        r["config"] = json.loads(r["config"])
    return cast("list[StudyRow]", rows)


def has_participants(database: Database, study_id: str) -> bool:
    return bool(database.scalar("SELECT 1 FROM participants WHERE study_id = ? LIMIT 1", [study_id]))


def replace_study(db, bundle, corpus_hash: str | None = None, protocol_tables: Iterable[str] = ()) -> None:
    """Write a validated StudyBundle, replacing earlier content of the same study; corpus_hash:
    its corpus parts' hashes (services/study/lifecycle.corpus_hashes, JSON); protocol_tables:
    the registered protocols' own tables, whose rows of the study go too (each protocol's
    store_corpus writes its content after this). Called inside a write transaction."""
    sid = bundle.id
    if db.execute("SELECT 1 FROM studies WHERE id = ?", [sid]).fetchone():
        delete_study_rows(db, sid, protocol_tables)
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


def set_archived(db, study_id: str, when: str | None) -> None:
    """Archived (when: the time) or back in the dropdowns (None); its data stays."""
    db.execute("UPDATE studies SET archived_at = ? WHERE id = ?", [when, study_id])


def collected_count(database: Database, study_id: str) -> int:
    """Items participants have submitted in the study: what deleting it loses."""
    return database.scalar("SELECT COUNT(*) FROM assignments WHERE study_id = ? AND status = 'done'", [study_id])


def participant_count(database: Database, study_id: str) -> int:
    return database.scalar("SELECT COUNT(*) FROM participants WHERE study_id = ?", [study_id])


def study_media(database: Database, study_id: str) -> list[str]:
    """The recording files of the study's rows that no other study's row names."""
    rows = database.query(
        "SELECT r.path_original, r.path_16k, r.sha256 FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "WHERE e.study_id = ? AND NOT EXISTS (SELECT 1 FROM recordings o JOIN exchanges oe ON oe.id = o.exchange_id "
        "WHERE o.sha256 = r.sha256 AND oe.study_id != ?)",
        [study_id, study_id],
    )
    return [p for r in rows for p in (r["path_original"], r["path_16k"]) if p]


def delete_study_rows(db, study_id: str, tables: Iterable[str]) -> dict[str, int]:
    """The study's rows in these tables (found as delete_study finds them), children first:
    {table: rows deleted}. Called inside a write transaction."""
    wanted = set(tables)
    if not wanted:
        return {}
    where, order = study_rows(db)
    counts = {
        t: db.execute(f"DELETE FROM {t} WHERE {where[t]}", {"sid": study_id}).rowcount for t in order if t in wanted
    }
    return {t: n for t, n in counts.items() if n}


def delete_study(db, study_id: str) -> dict[str, int]:
    """Every row of the study, in every table, then the study: {table: rows deleted}. The audit
    log (events) stays: it is the record of what was done, the deletion included. Called inside
    a write transaction."""
    where, order = study_rows(db)
    # tables keyed by (study_id, id) pairs go in any order: their keys are checked at commit
    db.execute("PRAGMA defer_foreign_keys = ON")
    counts = {}
    jobs = (
        "json_extract(payload, '$.study_id') = :sid OR json_extract(payload, '$.exchange_id') IN "
        "(SELECT id FROM exchanges WHERE study_id = :sid) OR json_extract(payload, '$.recording_id') IN "
        "(SELECT r.id FROM recordings r JOIN exchanges e ON e.id = r.exchange_id WHERE e.study_id = :sid)"
    )
    counts["jobs"] = db.execute(f"DELETE FROM jobs WHERE {jobs}", {"sid": study_id}).rowcount
    for t in order:
        counts[t] = db.execute(f"DELETE FROM {t} WHERE {where[t]}", {"sid": study_id}).rowcount
    counts["studies"] = db.execute("DELETE FROM studies WHERE id = ?", [study_id]).rowcount
    return {t: n for t, n in counts.items() if n}
