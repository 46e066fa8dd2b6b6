"""Metric scores memoised by input hash (services.metrics.registry.score_cached): the only SQL on the
metric_scores table (created by migration m005_metric_cache).

A row is keyed by (metric name, metric version, model id, sha256 of the inputs), so a new
package version, another model or another metric never reads a stale or foreign score.
A NULL score is a stored "cannot score this" (e.g. no reference), not a miss.
"""

from __future__ import annotations

from typing import Iterable

from storage.db import Database, now

_CHUNK = 500  # input hashes per IN (...) query, well under SQLite's variable limit


def get_many(
    database: Database, metric: str, version: str, model: str, input_hashes: Iterable[str]
) -> dict[str, float | None]:
    """The stored scores among input_hashes: {input_hash: score}; misses are absent."""
    hashes = list(dict.fromkeys(input_hashes))
    found: dict[str, float | None] = {}
    for i in range(0, len(hashes), _CHUNK):
        chunk = hashes[i : i + _CHUNK]
        rows = database.query(
            f"SELECT input_hash, score FROM metric_scores WHERE metric = ? AND version = ? AND model = ? "
            f"AND input_hash IN ({','.join('?' * len(chunk))})",
            [metric, version, model, *chunk],
        )
        found.update((r["input_hash"], r["score"]) for r in rows)
    return found


def put_many(database: Database, metric: str, version: str, model: str, scores: dict[str, float | None]) -> int:
    """Store {input_hash: score} (replacing a row with the same key); returns rows written."""
    if not scores:
        return 0
    ts = now()
    with database.write() as db:
        db.conn.executemany(
            "INSERT OR REPLACE INTO metric_scores (metric, version, model, input_hash, score, created_at) "
            "VALUES (?,?,?,?,?,?)",
            [(metric, version, model, h, None if s is None else float(s), ts) for h, s in scores.items()],
        )
    return len(scores)


def count(database: Database, metric: str | None = None) -> int:
    if metric is None:
        return database.scalar("SELECT COUNT(*) FROM metric_scores")
    return database.scalar("SELECT COUNT(*) FROM metric_scores WHERE metric = ?", [metric])


def clear(database: Database, metric: str | None = None) -> int:
    """Forget stored scores (all, or one metric's); returns rows deleted."""
    with database.write() as db:
        if metric is None:
            return db.execute("DELETE FROM metric_scores").rowcount
        return db.execute("DELETE FROM metric_scores WHERE metric = ?", [metric]).rowcount
