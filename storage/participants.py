"""Participants: slots, tokens, Prolific identities."""
from __future__ import annotations

from storage.db import Database, now


def insert(db, row: dict) -> int:
    return db["participants"].insert({**row, "created_at": now()}).last_pk


def get(database: Database, participant_id: int) -> dict | None:
    return database.one("SELECT * FROM participants WHERE id = ?", [participant_id])


def by_token(database: Database, token: str) -> dict | None:
    return database.one("SELECT * FROM participants WHERE token = ?", [token])


def by_prolific(database: Database, study_id: str, role: str, pid: str) -> dict | None:
    return database.one("SELECT * FROM participants WHERE study_id = ? AND role = ? AND prolific_pid = ?",
                        [study_id, role, pid])


def list_for_study(database: Database, study_id: str, role: str | None = None) -> list[dict]:
    if role:
        return database.query("SELECT * FROM participants WHERE study_id = ? AND role = ? ORDER BY id",
                              [study_id, role])
    return database.query("SELECT * FROM participants WHERE study_id = ? ORDER BY role, id", [study_id])


def next_design_index(db, study_id: str, grp: str | None, gender: str | None) -> int:
    row = db.execute(
        "SELECT COALESCE(MAX(design_index) + 1, 0) FROM participants "
        "WHERE study_id = ? AND role = 'sender' AND grp IS ? AND gender IS ?",
        [study_id, grp, gender]).fetchone()
    return row[0]


def open_slot(db, study_id: str, role: str, grp: str | None, gender: str | None) -> dict | None:
    """The oldest slot nobody has used: unclaimed, no external id, never opened."""
    sql = ("SELECT * FROM participants p WHERE study_id = ? AND role = ? AND active = 1 "
           "AND prolific_pid IS NULL AND external_id IS NULL AND claimed_at IS NULL "
           "AND last_seen_at IS NULL")
    params: list = [study_id, role]
    if grp:
        sql += " AND grp = ?"
        params.append(grp)
    if gender:
        sql += " AND gender = ?"
        params.append(gender)
    rows = list(db.query(sql + " ORDER BY id LIMIT 1", params))
    return rows[0] if rows else None


def claim(db, participant_id: int, pid: str, prolific_study: str | None, session: str | None) -> None:
    db.execute("UPDATE participants SET prolific_pid = ?, prolific_study_id = ?, prolific_session_id = ?, "
               "claimed_at = ? WHERE id = ?", [pid, prolific_study, session, now(), participant_id])


def update_session(db, participant_id: int, session: str) -> None:
    db.execute("UPDATE participants SET prolific_session_id = ? WHERE id = ?", [session, participant_id])


def touch(db, participant_id: int) -> None:
    db.execute("UPDATE participants SET last_seen_at = ? WHERE id = ?", [now(), participant_id])


def identities(database: Database, participant_ids: list[int]) -> dict[int, frozenset]:
    """Identity keys of people: their id, and their external / Prolific id when known,
    so one person enrolled under two roles is still recognised."""
    if not participant_ids:
        return {}
    marks = ",".join("?" * len(participant_ids))
    rows = database.query(f"SELECT id, external_id, prolific_pid FROM participants WHERE id IN ({marks})",
                          participant_ids)
    out = {}
    for r in rows:
        keys = {f"id:{r['id']}"}
        if r["external_id"]:
            keys.add(f"ext:{r['external_id']}")
        if r["prolific_pid"]:
            keys.add(f"ext:{r['prolific_pid']}")
        out[r["id"]] = frozenset(keys)
    return out


def exclude(db, participant_id: int, reason: str) -> None:
    db.execute("UPDATE participants SET active = 0, excluded_at = ?, excluded_reason = ? WHERE id = ?",
               [now(), reason, participant_id])
