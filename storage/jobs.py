"""Persistent background jobs (the worker that runs them lives in services)."""
from __future__ import annotations

import json

from storage.db import Database, now


def enqueue(db, kind: str, payload: dict, dedupe_key: str | None = None, max_attempts: int = 3) -> int | None:
    cur = db.execute("INSERT OR IGNORE INTO jobs (kind, payload, dedupe_key, max_attempts, created_at, "
                     "updated_at) VALUES (?,?,?,?,?,?)",
                     [kind, json.dumps(payload), dedupe_key, max_attempts, now(), now()])
    return cur.lastrowid if cur.rowcount else None


def list_jobs(database: Database, limit: int = 100) -> list[dict]:
    return database.query("SELECT * FROM jobs ORDER BY id DESC LIMIT ?", [limit])


def status_counts(database: Database) -> dict[str, int]:
    return {r["status"]: r["n"] for r in database.query("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status")}
