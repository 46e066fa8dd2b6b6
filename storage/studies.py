"""Studies: their row, settings and systems, written at import; each protocol's corpus is stored
and read by its own storage module (storage/<protocol>/)."""

from __future__ import annotations

import json
from typing import Iterable, cast

from storage.db import Database, now
from storage.rows import StudyRow
from storage.schema import study_rows

# the study content the core holds, deleted on re-import (each protocol clears its own corpus)
CONTENT_TABLES = ("systems",)


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
    """Write a validated StudyBundle's study row and systems, replacing earlier content of the
    same study; corpus_hash: its corpus parts' hashes (services/study/lifecycle.corpus_hashes,
    JSON); protocol_tables: the registered protocols' own tables, whose rows of the study go too.
    Each protocol's corpus is its store_corpus's to clear (before this) and write (after this):
    services/setup/importer.py. Called inside a write transaction."""
    sid = bundle.id
    if db.execute("SELECT 1 FROM studies WHERE id = ?", [sid]).fetchone():
        delete_study_rows(db, sid, protocol_tables)
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


def update_settings(db, study_id: str, name: str, config: dict, content_hash: str) -> None:
    """A study's settings changed in place: its content and collected data stay as they are."""
    db.execute(
        "UPDATE studies SET name = ?, config = ?, content_hash = ? WHERE id = ?",
        [name, json.dumps(config), content_hash, study_id],
    )


def systems(database: Database, study_id: str) -> list[dict]:
    rows = database.query("SELECT * FROM systems WHERE study_id = ? ORDER BY id", [study_id])
    for r in rows:
        r["config"] = json.loads(r["config"])
    return rows


def set_archived(db, study_id: str, when: str | None) -> None:
    """Archived (when: the time) or back in the dropdowns (None); its data stays."""
    db.execute("UPDATE studies SET archived_at = ? WHERE id = ?", [when, study_id])


def collected_count(database: Database, study_id: str) -> int:
    """Items participants have submitted in the study: what deleting it loses."""
    return database.scalar("SELECT COUNT(*) FROM assignments WHERE study_id = ? AND status = 'done'", [study_id])


def participant_count(database: Database, study_id: str) -> int:
    return database.scalar("SELECT COUNT(*) FROM participants WHERE study_id = ?", [study_id])


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
    """Every row of the study, in every table that holds its id (each protocol's Protocol.forget
    first deletes what it keeps otherwise), then the study: {table: rows deleted}. The audit
    log (events) stays: it is the record of what was done, the deletion included. Called inside
    a write transaction."""
    where, order = study_rows(db)
    # tables keyed by (study_id, id) pairs go in any order: their keys are checked at commit
    db.execute("PRAGMA defer_foreign_keys = ON")
    counts = {}
    # the jobs of the study (what a protocol's jobs name otherwise is its Protocol.forget's)
    counts["jobs"] = db.execute(
        "DELETE FROM jobs WHERE json_extract(payload, '$.study_id') = :sid", {"sid": study_id}
    ).rowcount
    for t in order:
        counts[t] = db.execute(f"DELETE FROM {t} WHERE {where[t]}", {"sid": study_id}).rowcount
    counts["studies"] = db.execute("DELETE FROM studies WHERE id = ?", [study_id]).rowcount
    return {t: n for t, n in counts.items() if n}
