"""Connections: one sqlite3 connection per thread, writes serialised.

Gradio runs sync handlers in a threadpool and a sqlite3 connection is bound to the
thread that made it, so each thread gets its own. Writes take a process-wide lock and
BEGIN IMMEDIATE, so a read-then-write transaction never dies on a lock upgrade; other
processes (the CLI while the app runs) wait on busy_timeout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any, Iterable, Iterator, TypeVar

import sqlite_utils
from sqlite_utils.utils import dedupe_keys

from storage import protocol_schema
from storage.migrations import migrate

# File systems on which WAL's shared-memory index is unsafe (WAL needs a local disk).
NETWORK_FS = {
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "ceph",
    "glusterfs",
    "lustre",
    "afs",
    "sshfs",
    "davfs",
    "virtiofs",
}


def rows(conn, sql: str, params: Any = ()) -> list[dict]:
    """A SELECT's rows as dicts, a repeated column name renamed as sqlite-utils' query() renames
    it. conn: a sqlite3 or sqlite-utils connection. Not query() itself: it wraps each SELECT in a
    SAVEPOINT and a RELEASE: three statements, each of which gives up the GIL and waits to
    get it back while other requests run Python, so a participant's submit, holding the write
    lock, spent most of its time waiting (benchmarks/usability/study_sim.py --http)."""
    cur = conn.execute(sql, params)
    if cur.description is None:
        raise ValueError("rows() takes SQL that returns rows: " + sql.split(None, 1)[0])
    keys = dedupe_keys(d[0] for d in cur.description)
    return [dict(zip(keys, r)) for r in cur.fetchall()]


def insert_row(db, table: str, row: dict) -> int:
    """INSERT one row (a participant's answer): its rowid. Plain SQL, not sqlite-utils' insert(),
    which reads sqlite_master three times to check the table before each insert (table: one of
    ours, never input)."""
    cols = list(row)
    return db.execute(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols]
    ).lastrowid


def insert_rows(db, table: str, rows_: list[dict]) -> None:
    """INSERT rows that have the same columns, in one executemany (see insert_row)."""
    rows_ = list(rows_)
    if not rows_:
        return
    cols = list(rows_[0])
    db.conn.executemany(
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
        [[r[c] for c in cols] for r in rows_],
    )


_Row = TypeVar("_Row")


class MissingRow(LookupError):
    """A row that a foreign key or an earlier step of the same request guarantees is not there."""


def required(row: _Row | None, what: str) -> _Row:
    """row, known to exist (the study of a participant, the exchange of an assignment): a clear
    error naming it where it is gone, not a TypeError on None further on."""
    if row is None:
        raise MissingRow(f"no {what}")
    return row


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def filesystem_type(path: Path) -> str:
    """The type of the mount holding path, from /proc/mounts ('' when unknown)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return ""
    target = str(path.resolve())
    best, best_type = "", ""
    for line in mounts:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt, fstype = parts[1], parts[2]
        if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
            best, best_type = mnt, fstype
    return best_type


def choose_journal_mode(path: Path, setting: str = "auto") -> str:
    """WAL on a local disk; the rollback journal on a network mount (a Space's /data)."""
    setting = (setting or "auto").lower()
    if setting in ("wal", "delete"):
        return setting
    fstype = filesystem_type(path.parent)
    if fstype in NETWORK_FS or fstype.startswith("fuse"):
        return "delete"
    return "wal"


def _after_fork(database: Database | None) -> None:
    if database is not None:
        database._after_fork()


@dataclasses.dataclass(frozen=True)
class Transaction:
    """An open write transaction on this thread's connection (Database.transaction()): `db` runs
    the statements, `database` serves the helpers and the storage functions that take a
    Database. A function given one writes inside it; it passes it down rather than opening
    another write, so a request's writes commit or roll back together."""

    db: sqlite_utils.Database
    database: Database


class Database:
    """A SQLite file opened per thread through sqlite-utils."""

    def __init__(self, path: str | Path, journal_mode: str = "auto"):
        self.path = Path(path)
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.journal_mode = choose_journal_mode(self.path, journal_mode)
        self._local = threading.local()
        self._write_lock = threading.RLock()
        # a forked child (ZeroGPU runs each GPU call in one) must not reuse the parent's
        # connections or inherit its lock held by a thread that does not exist there
        ref = weakref.ref(self)  # the hook must not keep every Database alive
        os.register_at_fork(after_in_child=lambda: _after_fork(ref()))

    def _after_fork(self) -> None:
        self._local = threading.local()
        self._write_lock = threading.RLock()

    # -- connections -------------------------------------------------------
    def _connect(self) -> sqlite_utils.Database:
        conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=True)
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA journal_mode = {self.journal_mode}")
        conn.execute("PRAGMA synchronous = NORMAL" if self.journal_mode == "wal" else "PRAGMA synchronous = FULL")
        return sqlite_utils.Database(conn)

    @property
    def db(self) -> sqlite_utils.Database:
        d = getattr(self._local, "db", None)
        if d is None:
            d = self._connect()
            self._local.db = d
        return d

    def close(self) -> None:
        d = getattr(self._local, "db", None)
        if d is not None:
            d.close()
            self._local.db = None

    # -- transactions ------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite_utils.Database]:
        """One atomic write transaction (nested calls become savepoints)."""
        d = self.db
        if d.conn.in_transaction:
            with d.atomic():
                yield d
            return
        with self._write_lock:
            d.conn.execute("BEGIN IMMEDIATE")
            try:
                yield d
            except BaseException:
                if d.conn.in_transaction:
                    d.conn.execute("ROLLBACK")
                raise
            else:
                d.conn.execute("COMMIT")

    def tune_this_thread(self, busy_ms: int, cache_kib: int) -> None:
        """This thread's connection waits at most busy_ms for another process's lock (30 s by
        default) and keeps up to cache_kib of the database's pages (SQLite's default: 2 MiB). The
        event loop's connection, which runs nearly every participant's action and serves everyone,
        waits less and keeps more (web/action_line.py)."""
        if getattr(self._local, "tuned", None) != (busy_ms, cache_kib):
            self.db.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
            self.db.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
            self._local.tuned = (busy_ms, cache_kib)

    @contextlib.contextmanager
    def writes_if_free(self) -> Iterator[bool]:
        """True, holding this process's write lock, when no other thread held it; False (holding
        nothing) when one did: never waits (services/participation/serial.right_away)."""
        got = self._write_lock.acquire(blocking=False)
        try:
            yield got
        finally:
            if got:
                self._write_lock.release()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """write(), its connection and this Database as one handle to pass down."""
        with self.write() as d:
            yield Transaction(d, self)

    # -- helpers used by the storage modules --------------------------------
    def query(self, sql: str, params: Any = ()) -> list[dict]:
        return rows(self.db.conn, sql, params)

    def one(self, sql: str, params: Any = ()) -> dict | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def one_row(self, sql: str, params: Any = ()) -> dict:
        """The row of a SELECT that always returns one (aggregates without GROUP BY, EXISTS)."""
        return required(self.one(sql, params), "row: " + " ".join(sql.split())[:80])

    def scalar(self, sql: str, params: Any = ()):
        row = self.db.execute(sql, params).fetchone()
        return row[0] if row else None

    def log(self, actor: str, action: str, entity: str, entity_id: Any, detail: Any = None) -> None:
        """The audit log: every write records who did what to which row."""
        self.db.execute(
            "INSERT INTO events (ts, actor, action, entity, entity_id, detail) VALUES (?,?,?,?,?,?)",
            (
                now(),
                actor,
                action,
                entity,
                None if entity_id is None else str(entity_id),
                None if detail is None else json.dumps(detail, ensure_ascii=False, default=str),
            ),
        )


def open_database(
    path: str | Path, journal_mode: str = "auto", schemas: Iterable[protocol_schema.Schema] = ()
) -> Database:
    """Open (creating if needed) and migrate the database: the core's tables, then each
    protocol's own (schemas: the registry's, services.common.protocols.schemas())."""
    database = Database(path, journal_mode)
    migrate(database)
    protocol_schema.migrate(database, schemas)
    return database
