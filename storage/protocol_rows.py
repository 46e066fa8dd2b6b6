"""A protocol's rows in its own tables (storage/protocol_schema.py): the reads and writes its
hooks make, so that a protocol (a lab's plugin file too) writes no SQL. Table and column names
are the protocol's declared ones, never input."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from storage.db import Database, insert_row, insert_rows, rows

IDENT = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def _ident(*names: str) -> None:
    for n in names:
        if not IDENT.match(n):
            raise ValueError(f"not a table or column name: {n!r}")


def insert(db, table: str, row: Mapping[str, Any]) -> int:
    """One row into a protocol's table (inside the caller's write: tx.db); its rowid."""
    _ident(table, *row)
    return insert_row(db, table, dict(row))


def insert_many(db, table: str, new: Sequence[Mapping[str, Any]]) -> None:
    """Rows that have the same columns into a protocol's table, in one statement."""
    if new:
        _ident(table, *new[0])
        insert_rows(db, table, [dict(r) for r in new])


def _where(where: Mapping[str, Any]) -> tuple[str, list]:
    _ident(*where)
    return (" WHERE " + " AND ".join(f"{k} = ?" for k in where) if where else ""), list(where.values())


def select(
    database: Database, table: str, where: Mapping[str, Any], order_by: Sequence[str] = (), limit: int | None = None
) -> list[dict]:
    """A protocol's rows whose columns equal where's values (each an index's column, on a
    participant's path), in order_by's order."""
    _ident(table, *order_by)
    sql, params = _where(where)
    sql = f"SELECT * FROM {table}{sql}" + (f" ORDER BY {', '.join(order_by)}" if order_by else "")
    return rows(database.db.conn, sql + (f" LIMIT {int(limit)}" if limit is not None else ""), params)


def one(database: Database, table: str, where: Mapping[str, Any]) -> dict | None:
    found = select(database, table, where, limit=1)
    return found[0] if found else None


def count(database: Database, table: str, where: Mapping[str, Any]) -> int:
    _ident(table)
    sql, params = _where(where)
    return database.db.execute(f"SELECT COUNT(*) FROM {table}{sql}", params).fetchone()[0]


def delete(db, table: str, where: Mapping[str, Any]) -> int:
    """Delete a protocol's rows whose columns equal where's values (inside the caller's write:
    tx.db; where may not be empty, so a table is never emptied by mistake); how many went."""
    if not where:
        raise ValueError(f"deleting from {table} needs a condition")
    _ident(table)
    sql, params = _where(where)
    return db.execute(f"DELETE FROM {table}{sql}", params).rowcount


def answer_rows(database: Database, table: str, study_id: str) -> list[dict]:
    """The rows of a protocol's table of answers (an assignment_id column) in the study, with
    their item: participant__pid (the author, which the export swaps for the pseudonym),
    item_id and active_seconds, in saving order."""
    _ident(table)
    return rows(
        database.db.conn,
        f"SELECT t.*, a.participant_id AS participant__pid, a.item_id, a.active_seconds FROM {table} t "
        "JOIN assignments a ON a.id = t.assignment_id WHERE a.study_id = ? ORDER BY t.assignment_id",
        [study_id],
    )
