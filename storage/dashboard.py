"""The admin dashboard's queries (services/admin/dashboard.py): small aggregates the page re-reads
every few seconds, so each one goes through an index (tests/test_admin_dashboard.py checks the
query plans)."""

from __future__ import annotations

from storage.assignments import Skip, not_skipped_clause
from storage.db import Database

# a participant who still owes work: active, not finished, not excluded nor dropped out
_OWES = (
    "p.study_id = ? AND p.active = 1 AND p.completed_at IS NULL AND p.excluded_at IS NULL AND p.dropped_out_at IS NULL"
)
_HAS_OPEN = "EXISTS (SELECT 1 FROM assignments a WHERE a.participant_id = p.id AND a.status = 'open')"

QUERIES = {
    # open items per role, and how many people hold them (seen / never seen); {{skip}}: the
    # instruction pages left out (open_by_role)
    "open_by_role": f"""
        SELECT p.role, COUNT(*) AS people, SUM(p.last_seen_at IS NULL) AS not_started,
               SUM((SELECT COUNT(*) FROM assignments a WHERE a.participant_id = p.id AND a.status = 'open'{{skip}}))
               AS items
        FROM participants p WHERE {_OWES} AND {_HAS_OPEN} GROUP BY p.role ORDER BY p.role""",
    # places in the work pool that no one with room has taken yet
    "pool_waiting": """
        SELECT phase, COUNT(*) AS items, SUM(need) AS places FROM work_pool
        WHERE study_id = ? AND need > 0 GROUP BY phase ORDER BY phase""",
    # jobs by status (the worker's whole table: jobs carry no study column)
    "job_counts": "SELECT status, COUNT(*) AS n FROM jobs GROUP BY status",
    "failed_jobs": """
        SELECT id, kind, attempts, last_error, updated_at FROM jobs WHERE status = 'failed'
        ORDER BY id DESC LIMIT ?""",
    # seen at least once, not seen since the cut-off, still has open items
    "stalled": f"""
        SELECT p.id, p.role, p.last_seen_at,
               (SELECT COUNT(*) FROM assignments a WHERE a.participant_id = p.id AND a.status = 'open') AS open
        FROM participants p WHERE {_OWES} AND p.last_seen_at < ? AND {_HAS_OPEN}
        ORDER BY p.last_seen_at LIMIT ?""",
    "stalled_count": f"""
        SELECT COUNT(*) FROM participants p WHERE {_OWES} AND p.last_seen_at < ? AND {_HAS_OPEN}""",
}


def open_by_role(database: Database, study_id: str, skip: Skip | None = None) -> list[dict]:
    """Open items per role and who holds them; skip: the instruction pages, which are not items
    (services/participation/progress.py), as the progress table counts them."""
    clause, params = not_skipped_clause(skip, "a")
    return database.query(QUERIES["open_by_role"].format(skip=clause), [*params, study_id])


def pool_waiting(database: Database, study_id: str) -> list[dict]:
    return database.query(QUERIES["pool_waiting"], [study_id])


def job_counts(database: Database) -> dict[str, int]:
    return {r["status"]: r["n"] for r in database.query(QUERIES["job_counts"])}


def failed_jobs(database: Database, limit: int) -> list[dict]:
    return database.query(QUERIES["failed_jobs"], [limit])


def stalled(database: Database, study_id: str, before: str, limit: int) -> tuple[list[dict], int]:
    """Who stalled (the longest silent first, at most `limit`) and how many in all."""
    return (
        database.query(QUERIES["stalled"], [study_id, before, limit]),
        database.scalar(QUERIES["stalled_count"], [study_id, before]),
    )


def query_plans(database: Database) -> dict[str, list[str]]:
    """EXPLAIN QUERY PLAN of each query (with placeholder parameters), for the cost check."""
    out = {}
    skip, _ = not_skipped_clause({"phase": ["an instruction page"]}, "a")  # as the dashboard runs it
    for name, sql in QUERIES.items():
        sql = sql.format(skip=skip) if "{skip}" in sql else sql
        params = [None] * sql.count("?")
        out[name] = [r["detail"] for r in database.query("EXPLAIN QUERY PLAN " + sql, params)]
    return out
