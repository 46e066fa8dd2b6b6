"""The usability study's recordings, their QC and review, and the translations made of them."""

from __future__ import annotations

import json
from pathlib import Path

from storage.db import Database, insert_row, now


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


def content_named(database: Database, sha256: str) -> bool:
    """Whether a recording row names the files of this content (recordings_sha256)."""
    return database.one("SELECT 1 AS x FROM recordings WHERE sha256 = ? LIMIT 1", [sha256]) is not None


def file_names(database: Database) -> set[str]:
    """The names of every file a recording row holds (the media sweep's; not a participant's)."""
    rows = database.query("SELECT path_original, path_16k FROM recordings")
    return {Path(r[k]).name for r in rows for k in ("path_original", "path_16k") if r[k]}


def recording_for_assignment(database: Database, assignment_id: int) -> dict | None:
    return database.one("SELECT * FROM recordings WHERE assignment_id = ?", [assignment_id])


def recording_for_exchange(database: Database, exchange_id: int) -> dict | None:
    return database.one("SELECT * FROM recordings WHERE exchange_id = ? ORDER BY id DESC LIMIT 1", [exchange_id])


def recording(database: Database, recording_id: int) -> dict | None:
    return database.one("SELECT * FROM recordings WHERE id = ?", [recording_id])


def recording_count(database: Database, exchange_id: int) -> int:
    return database.scalar("SELECT COUNT(*) FROM recordings WHERE exchange_id = ?", [exchange_id])


def rejected_count(database: Database, sender_id: int) -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "WHERE e.sender_id = ? AND r.qc_status = 'rejected'",
        [sender_id],
    )


def rejected_counts(database: Database, sender_ids: list[int]) -> dict[int, int]:
    """Rejected recordings per sender, for these senders (one page of a list); 0s left out."""
    if not sender_ids:
        return {}
    found = database.query(
        "SELECT e.sender_id, COUNT(*) AS n FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        f"WHERE e.sender_id IN ({','.join('?' * len(sender_ids))}) AND r.qc_status = 'rejected' GROUP BY e.sender_id",
        list(sender_ids),
    )
    return {r["sender_id"]: r["n"] for r in found}


def set_recording_qc(
    db, recording_id: int, status: str, transcript: str, wer: float, flags: list[str], edges: dict | None = None
) -> None:
    db.execute(
        "UPDATE recordings SET qc_status = ?, transcript = ?, wer = ?, qc_flags = ?, qc_edges = ? WHERE id = ?",
        [status, transcript, wer, json.dumps(flags), None if edges is None else json.dumps(edges), recording_id],
    )


def review_recording(db, recording_id: int, status: str, reviewer: str, reason: str | None = None) -> None:
    db.execute(
        "UPDATE recordings SET qc_status = ?, reviewed_by = ?, reviewed_at = ?, review_reason = ? WHERE id = ?",
        [status, reviewer, now(), reason, recording_id],
    )


def recordings_for_review(
    database: Database, study_id: str | None = None, status: str = "flagged", limit: int = 100, offset: int = 0
) -> list[dict]:
    """Recordings waiting for (or given) a review, with what the reviewer compares."""
    return database.query(
        "SELECT r.id, r.exchange_id, r.path_original, r.path_16k, r.duration_s, r.transcript, r.wer, "
        "r.qc_flags, r.qc_edges, r.qc_status, r.reviewed_by, r.created_at, e.study_id, e.sender_id, e.starter_id, "
        "e.system_id, s.text AS prompt, t.text AS translation FROM recordings r "
        "JOIN exchanges e ON e.id = r.exchange_id "
        "JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        "LEFT JOIN translations t ON t.exchange_id = r.exchange_id "
        "WHERE r.qc_status = ? AND (? IS NULL OR e.study_id = ?) ORDER BY r.id LIMIT ? OFFSET ?",
        [status, study_id, study_id, limit, offset],
    )


def review_count(database: Database, study_id: str | None = None, status: str = "flagged") -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "WHERE r.qc_status = ? AND (? IS NULL OR e.study_id = ?)",
        [status, study_id, study_id],
    )


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


def supersede_translation(db, exchange_id: int, recording_id: int) -> None:
    """The exchange's translation (of a rejected recording) moves to superseded_translations."""
    db.execute(
        "INSERT INTO superseded_translations (exchange_id, recording_id, system_id, text, transcript, meta, "
        "created_at, superseded_at) SELECT exchange_id, ?, system_id, text, transcript, meta, created_at, ? "
        "FROM translations WHERE exchange_id = ?",
        [recording_id, now(), exchange_id],
    )
    db.execute("DELETE FROM translations WHERE exchange_id = ?", [exchange_id])


def system_outputs(database: Database, study_id: str) -> dict[str, dict]:
    """Per system of the study: {"n": translations stored, "cut": those whose meta records a
    cut, "precision": the distinct meta.precision values (JSON text)}, for the report's versions
    (services/usability/outputs.py)."""
    rows = database.query(
        "SELECT t.system_id, COUNT(*) AS n, SUM(json_extract(t.meta, '$.cut') IS NOT NULL) AS cut, "
        "json_group_array(DISTINCT json_extract(t.meta, '$.precision')) AS precision "
        "FROM translations t JOIN exchanges e ON e.id = t.exchange_id WHERE e.study_id = ? GROUP BY t.system_id",
        [study_id],
    )
    return {
        r["system_id"]: {
            "n": int(r["n"]),
            "cut": int(r["cut"] or 0),
            "precision": [p for p in json.loads(r["precision"]) if p is not None],
        }
        for r in rows
    }


def forget_study(db, study_id: str) -> list[str]:
    """Protocol.forget: the jobs that name the study's exchanges or recordings (their payload
    holds no study id) deleted; the study's recording files that no other study's row names
    returned, for removal after the deletion commits. In the deletion's write."""
    rows = db.execute(
        "SELECT r.path_original, r.path_16k FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "WHERE e.study_id = ? AND NOT EXISTS (SELECT 1 FROM recordings o JOIN exchanges oe ON oe.id = o.exchange_id "
        "WHERE o.sha256 = r.sha256 AND oe.study_id != ?)",
        [study_id, study_id],
    ).fetchall()
    db.execute(
        "DELETE FROM jobs WHERE json_extract(payload, '$.exchange_id') IN "
        "(SELECT id FROM exchanges WHERE study_id = :sid) OR json_extract(payload, '$.recording_id') IN "
        "(SELECT r.id FROM recordings r JOIN exchanges e ON e.id = r.exchange_id WHERE e.study_id = :sid)",
        {"sid": study_id},
    )
    return [p for r in rows for p in r if p]


# recordings per QC status that wait on someone: the worker (pending) or the team (flagged); the
# admin dashboard re-reads it every few seconds (tests/test_admin_dashboard.py checks its plan)
RECORDINGS_WAITING = """
    SELECT r.qc_status AS status, COUNT(*) AS n FROM recordings r JOIN exchanges e ON e.id = r.exchange_id
    WHERE r.qc_status IN ('pending', 'flagged') AND e.study_id = ? GROUP BY r.qc_status"""


def recordings_waiting(database: Database, study_id: str) -> dict[str, int]:
    return {r["status"]: r["n"] for r in database.query(RECORDINGS_WAITING, [study_id])}
