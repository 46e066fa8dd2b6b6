"""Online backup: a consistent copy of the live database while the app keeps writing.

sqlite3's backup API copies pages under a read lock, a few at a time, restarting when a
writer changes a page it already copied; the copy is written to a temporary file beside the
target, checked (PRAGMA integrity_check) and then renamed into place, so a failed or
interrupted backup never leaves a half file under the target's name.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from pathlib import Path


def backup(source: str | Path, target: str | Path, pages_per_step: int = 1024, replace: bool = False) -> dict:
    """Copy the database at source to target: a file path, or a folder (one that exists, or a
    path ending in a slash, made if missing) that gets tradlab-backup-<UTC time>.db inside, a new
    name each time. An existing file is not overwritten unless replace. Returns {"path", "bytes",
    "pages", "tables"}."""
    source, given = Path(source), str(target)
    target = Path(target)
    if not source.exists():
        raise FileNotFoundError(f"no database at {source}")
    if target.resolve() == source.resolve():
        raise ValueError("the backup target is the database itself: choose another path")
    if target.is_dir() or given.endswith(("/", os.sep)):
        target = _new_name(target)
    elif target.exists() and not replace:
        raise FileExistsError(
            f"{target} exists: give a new file name, or a folder (ending in /) for a time-stamped copy"
        )
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    tmp.unlink(missing_ok=True)
    # the copy holds everything the app keeps: readable by this user only, whatever the umask
    # (sqlite keeps the mode of a file that exists)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    dst = sqlite3.connect(str(tmp))
    try:
        src.execute("PRAGMA busy_timeout = 30000")
        src.backup(dst, pages=pages_per_step)
        dst.execute("PRAGMA journal_mode = DELETE")  # a self-contained single file
        check = dst.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise RuntimeError(f"the backup copy failed its integrity check: {check}")
        pages = dst.execute("PRAGMA page_count").fetchone()[0]
        tables = dst.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    except BaseException:
        dst.close()
        tmp.unlink(missing_ok=True)
        raise
    finally:
        src.close()
    dst.close()
    os.chmod(tmp, 0o600)
    os.replace(tmp, target)
    return {"path": str(target), "bytes": target.stat().st_size, "pages": int(pages), "tables": int(tables)}


def _new_name(folder: Path) -> Path:
    """tradlab-backup-YYYYmmdd-HHMMSS.db in folder (-2, -3, ... when taken within the second)."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    path, n = folder / f"tradlab-backup-{stamp}.db", 1
    while path.exists():
        n += 1
        path = folder / f"tradlab-backup-{stamp}-{n}.db"
    return path
