"""Persistent background jobs: the rows the worker (services/common/jobs_worker.py) claims and runs."""

from __future__ import annotations

import datetime as dt
import json

from storage.db import Database, now

# Jobs nobody waits for (metrics for the analysis) run after those a participant's next step
# depends on (a recording's QC and translation, a HIT's audio).
BACKGROUND_KINDS = ("score_exchange", "study_maintenance")


def enqueue(
    db, kind: str, payload: dict, dedupe_key: str | None = None, max_attempts: int = 3, run_after: str | None = None
) -> int | None:
    cur = db.execute(
        "INSERT OR IGNORE INTO jobs (kind, payload, dedupe_key, max_attempts, run_after, created_at, "
        "updated_at) VALUES (?,?,?,?,?,?,?)",
        [kind, json.dumps(payload), dedupe_key, max_attempts, run_after, now(), now()],
    )
    return cur.lastrowid if cur.rowcount else None


def get(database: Database, job_id: int) -> dict | None:
    row = database.one("SELECT * FROM jobs WHERE id = ?", [job_id])
    if row:
        row["payload"] = json.loads(row["payload"])
    return row


def claim_next(database: Database, kinds: list[str]) -> dict | None:
    """Take the oldest runnable job (pending, its backoff over) and mark it running."""
    marks = ",".join("?" * len(kinds))
    with database.write() as db:
        row = database.one(
            f"SELECT id FROM jobs WHERE status = 'pending' AND kind IN ({marks}) "
            "AND (run_after IS NULL OR run_after <= ?) "
            f"ORDER BY kind IN ({','.join('?' * len(BACKGROUND_KINDS))}), id LIMIT 1",
            [*kinds, now(), *BACKGROUND_KINDS],
        )
        if row is None:
            return None
        db.execute(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = ?, updated_at = ? WHERE id = ?",
            [now(), now(), row["id"]],
        )
    return get(database, row["id"])


def finish(database: Database, job_id: int) -> None:
    with database.write() as db:
        db.execute(
            "UPDATE jobs SET status = 'done', last_error = NULL, finished_at = ?, updated_at = ? WHERE id = ?",
            [now(), now(), job_id],
        )
        database.log("worker", "job_done", "jobs", job_id)


def fail(database: Database, job_id: int, error: str, retry_in_s: float | None) -> str:
    """Record the error; back to pending after retry_in_s, or failed for good when None."""
    with database.write() as db:
        database.log("worker", "job_error", "jobs", job_id, {"error": error[:500], "retry_in_s": retry_in_s})
        if retry_in_s is None:
            db.execute(
                "UPDATE jobs SET status = 'failed', last_error = ?, finished_at = ?, updated_at = ? WHERE id = ?",
                [error, now(), now(), job_id],
            )
            return "failed"
        after = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=retry_in_s)).isoformat(timespec="milliseconds")
        db.execute(
            "UPDATE jobs SET status = 'pending', last_error = ?, run_after = ?, updated_at = ? WHERE id = ?",
            [error, after, now(), job_id],
        )
        return "pending"


def reset_interrupted(database: Database) -> int:
    """Jobs left 'running' by a process that died go back to pending (their attempt counts)."""
    with database.write() as db:
        cur = db.execute(
            "UPDATE jobs SET status = 'pending', run_after = NULL, updated_at = ?, "
            "last_error = COALESCE(last_error, 'interrupted by a restart') "
            "WHERE status = 'running'",
            [now()],
        )
        return cur.rowcount


def retry(database: Database, job_id: int) -> bool:
    """An admin's retry of a failed job: a fresh set of attempts."""
    with database.write() as db:
        cur = db.execute(
            "UPDATE jobs SET status = 'pending', attempts = 0, run_after = NULL, updated_at = ? "
            "WHERE id = ? AND status = 'failed'",
            [now(), job_id],
        )
        return cur.rowcount == 1


def status_counts(database: Database) -> dict[str, int]:
    return {r["status"]: r["n"] for r in database.query("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status")}


def page(database: Database, limit: int, offset: int) -> list[dict]:
    """One page of the admin's jobs table: failed jobs first, then the newest."""
    return database.query(
        "SELECT * FROM jobs ORDER BY status = 'failed' DESC, id DESC LIMIT ? OFFSET ?", [limit, offset]
    )


def count(database: Database) -> int:
    return database.scalar("SELECT COUNT(*) FROM jobs")


def pending_with_key_prefix(database: Database, prefix: str) -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'running') AND dedupe_key LIKE ?",
        [prefix.replace("%", "") + "%"],
    )


def by_key_prefix(database: Database, prefix: str) -> dict[str, dict]:
    """{dedupe_key: {status, last_error}} of the jobs whose key starts with prefix (e.g. a study's
    "score_exchange:" jobs, for the metrics report)."""
    rows = database.query(
        "SELECT dedupe_key, status, last_error FROM jobs WHERE dedupe_key LIKE ? ESCAPE '\\'",
        [prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"],
    )
    return {r["dedupe_key"]: r for r in rows}
