"""Participants: slots, tokens, Prolific identities."""

from __future__ import annotations

from typing import cast

from storage.db import Database, now, rows
from storage.rows import LinkParticipant, ParticipantRow


def insert(db, row: dict) -> int:
    return db["participants"].insert({**row, "created_at": now()}).last_pk


def get(database: Database, participant_id: int) -> ParticipantRow | None:
    return cast("ParticipantRow | None", database.one("SELECT * FROM participants WHERE id = ?", [participant_id]))


def by_token(database: Database, token: str) -> LinkParticipant | None:
    """The link's participant, with whether their study is archived (study_archived_at): one
    statement, the study by its primary key."""
    return cast(
        "LinkParticipant | None",
        database.one(
            "SELECT p.*, s.archived_at AS study_archived_at FROM participants p JOIN studies s ON s.id = p.study_id "
            "WHERE p.token = ?",
            [token],
        ),
    )


def holders_of(db, study_id: str, pid: str) -> list[ParticipantRow]:
    """Every slot of the study this Prolific / external id already holds (any role)."""
    return cast(
        "list[ParticipantRow]",
        rows(
            db.conn,
            "SELECT * FROM participants WHERE study_id = ? AND (prolific_pid = ? OR external_id = ?) ORDER BY id",
            [study_id, pid, pid],
        ),
    )


def claims_since(db, study_id: str, since: str) -> int:
    """Self-enrolments (slots claimed from a Prolific URL) in the study from `since` (ISO UTC) on."""
    return db.execute(
        "SELECT COUNT(*) FROM participants WHERE study_id = ? AND claimed_at >= ?", [study_id, since]
    ).fetchone()[0]


def get_secret(database: Database, name: str) -> str | None:
    return database.scalar("SELECT value FROM app_secrets WHERE name = ?", [name])


def ensure_secret(db, name: str) -> str:
    """The named secret (migration m011 makes 'link_secret'); a random one made here if missing."""
    import secrets

    db.execute(
        "INSERT OR IGNORE INTO app_secrets (name, value, created_at) VALUES (?, ?, ?)",
        [name, secrets.token_hex(32), now()],
    )
    return db.execute("SELECT value FROM app_secrets WHERE name = ?", [name]).fetchone()[0]


def _open_slots(study_id: str, role: str, grp: str | None, gender: str | None) -> tuple[str, list]:
    """WHERE clause of the self-enrolment slots nobody has used: unclaimed, no external id,
    never opened (slots made for private links, self_enrol = 0, are never among them)."""
    sql = (
        "study_id = ? AND role = ? AND active = 1 AND self_enrol = 1 AND prolific_pid IS NULL "
        "AND external_id IS NULL AND claimed_at IS NULL AND last_seen_at IS NULL"
    )
    params: list = [study_id, role]
    for column, value in (("grp", grp), ("gender", gender)):
        if value:
            sql += f" AND {column} = ?"
            params.append(value)
    return sql, params


def open_self_enrol_count(database: Database, study_id: str, role: str, grp: str | None, gender: str | None) -> int:
    """How many self-enrolment slots open_slot could still hand out for this role (and cell)."""
    where, params = _open_slots(study_id, role, grp, gender)
    return database.scalar(f"SELECT COUNT(*) FROM participants WHERE {where}", params)


def list_for_study(database: Database, study_id: str, role: str | None = None) -> list[ParticipantRow]:
    if role:
        found = database.query(
            "SELECT * FROM participants WHERE study_id = ? AND role = ? ORDER BY id", [study_id, role]
        )
    else:
        found = database.query("SELECT * FROM participants WHERE study_id = ? ORDER BY role, id", [study_id])
    return cast("list[ParticipantRow]", found)


def next_design_index(db, study_id: str, role: str, grp: str | None, gender: str | None) -> int:
    """The next design cell index of a grouped role (services/common/protocols.py Role.grouped)."""
    row = db.execute(
        "SELECT COALESCE(MAX(design_index) + 1, 0) FROM participants "
        "WHERE study_id = ? AND role = ? AND grp IS ? AND gender IS ?",
        [study_id, role, grp, gender],
    ).fetchone()
    return row[0]


def open_slot(db, study_id: str, role: str, grp: str | None, gender: str | None) -> ParticipantRow | None:
    """The oldest self-enrolment slot nobody has used (_open_slots)."""
    where, params = _open_slots(study_id, role, grp, gender)
    found = rows(db.conn, f"SELECT * FROM participants WHERE {where} ORDER BY id LIMIT 1", params)
    return cast("ParticipantRow", found[0]) if found else None


def claim(db, participant_id: int, pid: str, prolific_study: str | None, session: str | None) -> None:
    db.execute(
        "UPDATE participants SET prolific_pid = ?, prolific_study_id = ?, prolific_session_id = ?, "
        "claimed_at = ? WHERE id = ?",
        [pid, prolific_study, session, now(), participant_id],
    )


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
    rows = database.query(
        f"SELECT id, external_id, prolific_pid FROM participants WHERE id IN ({marks})", participant_ids
    )
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
    db.execute(
        "UPDATE participants SET active = 0, excluded_at = ?, excluded_reason = ? WHERE id = ?",
        [now(), reason, participant_id],
    )


def mark_dropped_out(db, participant_id: int, reason: str) -> None:
    db.execute(
        "UPDATE participants SET active = 0, dropped_out_at = COALESCE(dropped_out_at, ?), "
        "dropped_out_reason = COALESCE(dropped_out_reason, ?) WHERE id = ?",
        [now(), reason, participant_id],
    )


def set_design_index(db, participant_id: int, index: int) -> None:
    """A sender's cell of the usability design (services/participation/assignment.py)."""
    db.execute("UPDATE participants SET design_index = ? WHERE id = ?", [index, participant_id])


def set_active(db, participant_id: int, active: bool) -> None:
    db.execute("UPDATE participants SET active = ? WHERE id = ?", [1 if active else 0, participant_id])


def set_token(db, participant_id: int, token: str) -> None:
    """A new private link: the old token matches nobody from this commit on."""
    db.execute("UPDATE participants SET token = ? WHERE id = ?", [token, participant_id])


def revoke_prolific_return(db, participant_id: int) -> None:
    """A Prolific URL no longer leads back into this slot (its PROLIFIC_PID and SESSION_ID stay, for
    the completion list); set with a new private link."""
    db.execute(
        "UPDATE participants SET prolific_return_revoked_at = ? WHERE id = ? AND prolific_pid IS NOT NULL",
        [now(), participant_id],
    )


def add_refusals(db, counts: dict[tuple[str, str, str, str], int]) -> None:
    """Refused enrolments, (study, role, reason, minute) -> how many more: one row per key."""
    db.conn.executemany(
        "INSERT INTO enrol_refusals (study_id, role, reason, minute, count) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (study_id, role, reason, minute) DO UPDATE SET count = count + excluded.count",
        [(*key, n) for key, n in counts.items()],
    )


def refusal_counts(database: Database, study_id: str | None = None) -> list[dict]:
    """The counted refusals, oldest minute first (study_id None: all, unsigned ones included)."""
    if study_id is None:
        return database.query("SELECT * FROM enrol_refusals ORDER BY minute, study_id, role, reason")
    return database.query("SELECT * FROM enrol_refusals WHERE study_id = ? ORDER BY minute, role, reason", [study_id])


def mark_completed(db, participant_id: int) -> bool:
    """Stamps the first time a participant finished their role; later calls change nothing."""
    cur = db.execute(
        "UPDATE participants SET completed_at = ? WHERE id = ? AND completed_at IS NULL", [now(), participant_id]
    )
    return cur.rowcount == 1


def external_id_roles(database: Database, study_id: str, ids: list[str]) -> dict[str, str]:
    """Which of these external ids already hold a link in the study, and in which role."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = database.query(
        f"SELECT external_id, role FROM participants WHERE study_id = ? AND external_id IN ({marks})",
        [study_id, *ids],
    )
    return {r["external_id"]: r["role"] for r in rows}


def external_ids(database: Database, study_id: str, role: str) -> set[str]:
    rows = database.query(
        "SELECT external_id FROM participants WHERE study_id = ? AND role = ? AND external_id IS NOT NULL",
        [study_id, role],
    )
    return {r["external_id"] for r in rows}


COMPLETED_COLUMNS = (
    "id, role, grp, gender, external_id, prolific_pid, prolific_study_id, prolific_session_id, "
    "completed_at, active, excluded_at, excluded_reason, dropped_out_at"
)


def completed(database: Database, study_id: str, limit: int | None = None, offset: int = 0) -> list[dict]:
    """Participants who finished their role, first finishers first (limit None: all, for the CSV)."""
    return database.query(
        f"SELECT {COMPLETED_COLUMNS} FROM participants WHERE study_id = ? AND completed_at IS NOT NULL "
        "ORDER BY completed_at, id LIMIT ? OFFSET ?",
        [study_id, -1 if limit is None else limit, offset],
    )


def completed_count(database: Database, study_id: str) -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM participants WHERE study_id = ? AND completed_at IS NOT NULL", [study_id]
    )
