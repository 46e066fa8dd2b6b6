"""The load study (harness/load-study: 20-item text DA HITs) on an app that keeps one log
across restarts and can be killed with SIGKILL and started again on the same database."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from harness.app import RunningApp

STUDY = Path(__file__).resolve().parent / "load-study"
STUDY_ID = "load"
ITEMS_PER_RATER = 20  # the study's hit_size


# -- the app -----------------------------------------------------------------------------------
class LoadApp(RunningApp):
    """RunningApp that keeps one log across restarts and can be killed with SIGKILL."""

    def start(self, *args):
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.log = open(self.tmp / "server.log", "a")
        self.log.write(f"\n=== start {time.strftime('%H:%M:%S')} ===\n")
        self.log.flush()
        self.proc = subprocess.Popen(
            [sys.executable, "app.py", *args], cwd=self.root, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("app exited: " + (self.tmp / "server.log").read_text()[-4000:])
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return self
            except OSError:
                time.sleep(0.25)
        self.stop()
        raise RuntimeError("app did not start: " + (self.tmp / "server.log").read_text()[-4000:])

    def kill9(self) -> None:
        """SIGKILL: no shutdown handler, no finally block, no flush runs in the server."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def db(self, sql: str, params=()) -> list[tuple]:
        con = sqlite3.connect(self.env["TRADLAB_DB"], timeout=30)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def db_write(self, sql: str, params=()) -> None:
        con = sqlite3.connect(self.env["TRADLAB_DB"], timeout=30)
        try:
            with con:
                con.execute(sql, params)
        finally:
            con.close()

    def tokens(self, role: str) -> list[str]:
        return [
            r[0]
            for r in self.db(
                "SELECT token FROM participants WHERE study_id = ? AND role = ? ORDER BY id", (STUDY_ID, role)
            )
        ]


def prepared_app(tmp: Path, raters: int, extra_roles: bool = False, env_extra: dict | None = None) -> LoadApp:
    """The load study imported through the CLI, `raters` DA raters (and two of every other role
    when extra_roles), not started yet."""
    app = LoadApp(tmp, env_extra)
    add = ("participants", "add", "--study", STUDY_ID)
    app.prepare(("import", str(STUDY)), (*add, "--role", "da", "--count", str(raters)))
    if extra_roles:
        app.prepare(*((*add, "--role", role, "--count", "2") for role in ("receiver", "validator", "rater", "sd")))
        app.prepare((*add, "--role", "sender", "--group", "USW", "--gender", "Woman", "--count", "2"))
    return app
