"""Schema migrations and connection handling (storage.db, storage.migrations)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

import storage.db
from storage.db import Database, choose_journal_mode, open_database
from storage.migrations import migrate

EXPECTED_TABLES = {
    "studies",
    "systems",
    "starters",
    "questions",
    "participants",
    "exchanges",
    "assignments",
    "recordings",
    "translations",
    "answers",
    "validations",
    "validation_marks",
    "surveys",
    "da_segments",
    "da_judgments",
    "sd_sentences",
    "sd_pairs",
    "sd_ratings",
    "jobs",
    "events",
    "da_hits",
    "da_hit_items",
    "da_feedback",
    "sd_suitability",
    "sd_suggestions",
    "metric_scores",
    "exchange_metrics",
    "responses",
    "protocol_schemas",
}


@pytest.fixture
def database(tmp_path, monkeypatch):
    # (Settings, not storage, resolves auto on a Space; kept local all the same.)
    monkeypatch.delenv("SPACE_ID", raising=False)
    d = open_database(tmp_path / "test.db")
    yield d
    d.close()


def _tables(database) -> set[str]:
    return {r["name"] for r in database.query("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _insert_study(db, sid="s1"):
    db.execute(
        "INSERT INTO studies (id, name, config, content_hash, created_at) VALUES (?, 'n', '{}', 'h', 'now')", [sid]
    )


# -- migrations ------------------------------------------------------------------------


def test_open_database_creates_every_table(database):
    assert EXPECTED_TABLES <= _tables(database)


def test_open_database_creates_the_file_and_its_parent_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    path = tmp_path / "nested" / "deeper" / "app.db"
    d = open_database(path)
    try:
        assert path.is_file()
        assert EXPECTED_TABLES <= _tables(d)
    finally:
        d.close()


def test_migrate_again_applies_nothing(database):
    before = _tables(database)
    assert migrate(database) == []
    assert migrate(database) == []
    assert _tables(database) == before


def test_first_migrate_reports_what_it_applied(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    d = Database(tmp_path / "fresh.db")
    try:
        applied = migrate(d)
        assert applied, "a fresh database must have pending migrations"
        assert "m001_initial_schema" in applied
        assert EXPECTED_TABLES <= _tables(d)
        assert migrate(d) == []
    finally:
        d.close()


def test_reopening_an_existing_database_keeps_its_data(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    path = tmp_path / "keep.db"
    d1 = open_database(path)
    with d1.write() as db:
        _insert_study(db, "kept")
    d1.close()
    d2 = open_database(path)
    try:
        assert migrate(d2) == []
        assert d2.scalar("SELECT COUNT(*) FROM studies WHERE id = 'kept'") == 1
    finally:
        d2.close()


# -- foreign keys, transactions -----------------------------------------------------------


def test_foreign_keys_are_on(database):
    assert database.scalar("PRAGMA foreign_keys") == 1


def test_question_for_missing_starter_is_rejected(database):
    with database.write() as db:
        _insert_study(db)
    with pytest.raises(sqlite3.IntegrityError):
        with database.write() as db:
            db.execute(
                "INSERT INTO questions (study_id, starter_id, idx, en, pt) "
                "VALUES ('s1', 'no-such-starter', 1, 'q', 'p')"
            )
    assert database.scalar("SELECT COUNT(*) FROM questions") == 0
    # the connection is usable after the rolled-back transaction
    assert not database.db.conn.in_transaction
    with database.write() as db:
        db.execute(
            "INSERT INTO starters (study_id, id, domain, source, corpus, text, key_spans) "
            "VALUES ('s1', 'st', 'health', 'natural', 'c', 't', '[]')"
        )
        db.execute("INSERT INTO questions (study_id, starter_id, idx, en, pt) VALUES ('s1', 'st', 1, 'q', 'p')")
    assert database.scalar("SELECT COUNT(*) FROM questions") == 1


def test_failed_write_rolls_back_everything_in_the_transaction(database):
    with pytest.raises(sqlite3.IntegrityError):
        with database.write() as db:
            _insert_study(db, "a")
            db.execute(
                "INSERT INTO systems (study_id, id, label, kind, config) VALUES ('missing', 'x', 'x', 'cascade', '{}')"
            )
    assert database.scalar("SELECT COUNT(*) FROM studies") == 0


def test_check_constraints_are_enforced(database):
    with database.write() as db:
        _insert_study(db)
    with pytest.raises(sqlite3.IntegrityError):
        with database.write() as db:
            db.execute(
                "INSERT INTO starters (study_id, id, domain, source, corpus, text, key_spans) "
                "VALUES ('s1', 'st', 'law', 'natural', 'c', 't', '[]')"
            )


def test_roles_and_phases_are_names_checked_not_listed(database):
    """m016: a registered protocol's role and phase are stored without a migration of their own;
    an empty or over-long name is still refused."""
    with database.write() as db:
        _insert_study(db)
        db.execute(
            "INSERT INTO participants (id, study_id, role, token, created_at) VALUES (1, 's1', 'yesno', 't', 'now')"
        )
        db.execute(
            "INSERT INTO assignments (study_id, participant_id, phase, item_id, position, created_at) "
            "VALUES ('s1', 1, 'yesno', '0', 0.5, 'now')"
        )
    for sql in (
        "INSERT INTO participants (study_id, role, token, created_at) VALUES ('s1', '', 't2', 'now')",
        "INSERT INTO assignments (study_id, participant_id, phase, item_id, position, created_at) "
        f"VALUES ('s1', 1, '{'x' * 33}', '1', 0.5, 'now')",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            with database.write() as db:
                db.execute(sql)
    assert database.query("PRAGMA integrity_check") == [{"integrity_check": "ok"}]


def test_nested_write_is_a_savepoint(database):
    with database.write() as db:
        _insert_study(db, "outer")
        with pytest.raises(RuntimeError):
            with database.write() as inner:
                _insert_study(inner, "inner")
                raise RuntimeError("boom")
    ids = {r["id"] for r in database.query("SELECT id FROM studies")}
    assert ids == {"outer"}


def test_a_transaction_is_the_write_and_its_database(database):
    """transaction() is write() with the Database beside it: it commits, rolls back on an
    error, and a write opened inside it is a savepoint of the same connection."""
    with database.transaction() as tx:
        assert tx.database is database and tx.db is database.db
        assert tx.db.conn.in_transaction
        _insert_study(tx.db, "kept")
        with pytest.raises(RuntimeError):
            with tx.database.write() as inner:
                assert inner is tx.db
                _insert_study(inner, "inner")
                raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        with database.transaction() as tx:
            _insert_study(tx.db, "rolled back")
            raise RuntimeError("boom")
    assert {r["id"] for r in database.query("SELECT id FROM studies")} == {"kept"}
    assert not database.db.conn.in_transaction


# -- journal mode --------------------------------------------------------------------------


def test_journal_mode_is_wal_on_a_local_disk(database, tmp_path):
    fstype = storage.db.filesystem_type(tmp_path)
    if fstype in storage.db.NETWORK_FS or fstype.startswith("fuse"):
        pytest.skip(f"tmp_path is on a {fstype} mount")
    assert database.journal_mode == "wal"
    assert database.scalar("PRAGMA journal_mode") == "wal"


@pytest.mark.parametrize("setting", ["delete", "DELETE", "wal", "WAL"])
def test_explicit_setting_wins(tmp_path, monkeypatch, setting):
    monkeypatch.setattr(storage.db, "filesystem_type", lambda p: "nfs")
    assert choose_journal_mode(tmp_path / "x.db", setting) == setting.lower()


@pytest.mark.parametrize("fstype", ["nfs", "nfs4", "cifs", "9p", "virtiofs", "fuse.s3fs", "fuse"])
def test_auto_uses_delete_on_network_file_systems(tmp_path, monkeypatch, fstype):
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(storage.db, "filesystem_type", lambda p: fstype)
    assert choose_journal_mode(tmp_path / "x.db", "auto") == "delete"
    assert choose_journal_mode(tmp_path / "x.db", "") == "delete"


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs", "tmpfs", "overlay", ""])
def test_auto_uses_wal_on_local_file_systems(tmp_path, monkeypatch, fstype):
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(storage.db, "filesystem_type", lambda p: fstype)
    assert choose_journal_mode(tmp_path / "x.db", "auto") == "wal"


def test_database_on_network_fs_opens_in_delete_mode(tmp_path, monkeypatch):
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.setattr(storage.db, "filesystem_type", lambda p: "fuse.s3fs")
    d = open_database(tmp_path / "net.db")
    try:
        assert d.journal_mode == "delete"
        assert d.scalar("PRAGMA journal_mode") == "delete"
        assert EXPECTED_TABLES <= _tables(d)
    finally:
        d.close()


def test_filesystem_type_of_root_is_known():
    # /proc/mounts always has "/"; an unreadable /proc gives '' rather than an error
    from pathlib import Path

    assert isinstance(storage.db.filesystem_type(Path("/")), str)


# -- per-thread connections ---------------------------------------------------------------


def _in_thread(fn):
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # pragma: no cover - surfaced below
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert not t.is_alive()
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_each_thread_has_its_own_connection(database):
    main = database.db
    assert database.db is main  # cached within a thread
    other = _in_thread(lambda: database.db)
    assert other is not main
    assert other.conn is not main.conn


def test_write_in_one_thread_is_visible_in_another(database):
    def writer():
        with database.write() as db:
            _insert_study(db, "from-thread")
        return True

    _in_thread(writer)
    assert database.scalar("SELECT COUNT(*) FROM studies WHERE id = 'from-thread'") == 1

    with database.write() as db:
        _insert_study(db, "from-main")
    seen = _in_thread(lambda: database.scalar("SELECT COUNT(*) FROM studies"))
    assert seen == 2


def test_close_drops_only_this_threads_connection(database):
    first = database.db
    database.close()
    second = database.db
    assert second is not first
    assert second.execute("SELECT 1").fetchone()[0] == 1


def test_opening_a_migrated_database_does_not_wait_for_a_busy_writer(tmp_path):
    """A command-line call beside a loaded app: with no migration pending, opening the database
    only reads, so a transaction held by the app does not block it (it died with 'database is
    locked' after 30 s when every open took the write lock)."""
    import sqlite3
    import time

    from storage import open_database

    path = tmp_path / "busy.db"
    open_database(path)
    app = sqlite3.connect(path, isolation_level=None)
    app.execute("BEGIN IMMEDIATE")  # the app in the middle of a write
    try:
        t0 = time.monotonic()
        database = open_database(path)
        assert database.scalar("SELECT COUNT(*) FROM studies") == 0
        assert time.monotonic() - t0 < 2
    finally:
        app.execute("ROLLBACK")
        app.close()


def test_a_space_with_its_database_on_persistent_storage_uses_the_rollback_journal():
    """auto on a Space with the database under /data (a network mount) is "delete"; the settings
    resolve it (storage itself reads no environment)."""
    from services.common.settings import Settings

    assert Settings.from_env({"SPACE_ID": "me/app", "TRADLAB_DB": "/data/tradlab.db"}).journal_mode == "delete"
    assert (
        Settings.from_env(
            {"SPACE_ID": "me/app", "TRADLAB_DB": "/data/x.db", "TRADLAB_JOURNAL_MODE": "wal"}
        ).journal_mode
        == "wal"
    )
    assert Settings.from_env({"TRADLAB_DB": "/data/tradlab.db"}).journal_mode == "auto"
