"""python app.py backup: a consistent copy while the app writes."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from storage import backup, open_database
from tests.helpers.app import run_cli


def _count(path, table="events"):
    with sqlite3.connect(str(path)) as c:
        return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_backup_while_writing_is_consistent(tmp_path):
    db = open_database(tmp_path / "live.db")
    stop = threading.Event()
    written = []

    def writer():
        i = 0
        while not stop.is_set() and i < 5000:
            with db.write():
                db.log("test", "write", "thing", i, {"i": i})
            written.append(i)
            i += 1
        db.close()

    t = threading.Thread(target=writer)
    t.start()
    try:
        while len(written) < 200:
            pass
        (tmp_path / "copies").mkdir()
        info = backup.backup(tmp_path / "live.db", tmp_path / "copies")
    finally:
        stop.set()
        t.join()
    [copy] = (tmp_path / "copies").glob("tradlab-backup-*.db")
    assert info["path"] == str(copy) and info["bytes"] == copy.stat().st_size and info["tables"] > 5
    n = _count(copy)
    assert 200 <= n <= len(written)  # a prefix of the writes, none half-done
    with sqlite3.connect(str(copy)) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        ids = [int(r[0]) for r in c.execute("SELECT entity_id FROM events WHERE action = 'write' ORDER BY id")]
    assert ids == list(range(len(ids)))
    assert not list((tmp_path / "copies").glob("*.partial"))


def test_backup_refuses_bad_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="no database"):
        backup.backup(tmp_path / "missing.db", tmp_path / "out.db")
    open_database(tmp_path / "live.db")
    with pytest.raises(ValueError, match="itself"):
        backup.backup(tmp_path / "live.db", tmp_path / "live.db")


def test_backup_command(tmp_path):
    env = {"TRADLAB_DB": str(tmp_path / "live.db"), "PATH": "/usr/bin:/bin"}
    open_database(tmp_path / "live.db")
    r = run_cli("backup", tmp_path / "b.db", env=env)
    assert r.returncode == 0, r.stderr
    assert "b.db" in r.stdout and (tmp_path / "b.db").exists()
    r = run_cli("backup", tmp_path / "b.db", env={**env, "TRADLAB_DB": str(tmp_path / "nope.db")})
    assert r.returncode == 2 and "no database" in r.stderr


def test_a_folder_gets_a_new_copy_each_time_and_a_file_is_not_overwritten(tmp_path):
    """Issue 51, point 11: `backup backups/` made a file named backups when the folder was
    missing, and a second backup overwrote the first."""
    open_database(tmp_path / "live.db")
    first = backup.backup(tmp_path / "live.db", str(tmp_path / "backups") + "/")  # missing: made
    second = backup.backup(tmp_path / "live.db", tmp_path / "backups")  # now a folder
    assert (tmp_path / "backups").is_dir() and first["path"] != second["path"]
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == sorted(
        Path(x["path"]).name for x in (first, second)
    )
    backup.backup(tmp_path / "live.db", tmp_path / "one.db")
    with pytest.raises(FileExistsError, match="one.db exists"):
        backup.backup(tmp_path / "live.db", tmp_path / "one.db")
    assert backup.backup(tmp_path / "live.db", tmp_path / "one.db", replace=True)["path"] == str(tmp_path / "one.db")
