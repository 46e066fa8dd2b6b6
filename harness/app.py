"""The app launched the way the README launches it: `python app.py` as a subprocess on a free
loopback port, on its own database and media folder (RunningApp), and waiting for a server."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The passwordless admin's secret (the admin link /?admin=SECRET the server prints at start): one
# for the whole run, so every app the tests start (RunningApp copies this environment) and every
# team page built in process open the admin with it (admin_session, RunningApp.admin_url)
ADMIN_SECRET = os.environ.setdefault("TRADLAB_ADMIN_SECRET", "test-admin-secret-" + os.urandom(12).hex())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python app.py ARGS` run in this process (cli.main): env, when given, is the whole
    environment during the call (as a subprocess's env would be); returns what the process would
    have (returncode, stdout, stderr). The working directory, environment and umask are restored."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import cli

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as e:  # argparse's errors (2) and commands that exit
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int) and e.code is not None:
                    print(e.code, file=sys.stderr)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        os.umask(saved_umask)
    return subprocess.CompletedProcess(["app.py", *map(str, args)], code or 0, out.getvalue(), err.getvalue())


class RunningApp:
    def __init__(self, tmp: Path, env_extra: dict | None = None, root: Path | None = None):
        """root: another checkout of the app to run instead of this one (a benchmark's before)."""
        self.root = Path(root) if root else ROOT
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tmp
        self.env = {
            **os.environ,
            "TRADLAB_DB": str(tmp / "app.db"),
            "TRADLAB_MEDIA": str(tmp / "media"),
            "TRADLAB_PUBLIC_URL": self.url,
            "TRADLAB_PORT": str(self.port),
            "GRADIO_ANALYTICS_ENABLED": "False",
            # the tests' one address stands for many participants and the admin (web.uploads.UploadBudget,
            # the per-client share of connections: web.guard.Guard, web.gradio_patches.timed_protocol)
            "TRADLAB_UPLOADS_PER_MINUTE": "1000",
            "TRADLAB_CONNECTIONS_PER_CLIENT": "1000",
            "TRADLAB_STRANGER_REQUESTS_PER_MINUTE": "0",  # web.sessions.Callers: tests of it set it
            "TRADLAB_REFUSAL_PAUSE_MS": "0",  # web.guard.Guard's pause before a pacing 429: likewise
            **(env_extra or {}),
        }
        self.proc = None

    @property
    def admin_url(self) -> str:
        """The team page as the admin link opens it (no password set: the printed /?admin=SECRET)."""
        return f"{self.url}/?admin={self.env.get('TRADLAB_ADMIN_SECRET', ADMIN_SECRET)}"

    def cli(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "app.py", *args], cwd=self.root, env=self.env, capture_output=True, text=True, timeout=120
        )

    def setup_cli(self, *args) -> subprocess.CompletedProcess:
        """A command that sets the app's data up (import, participants add, links), run in this
        process (run_cli) on the app's environment: the same database and output as `cli`, without
        an interpreter start and the services' imports per call (2-4 s each on a 2-core machine).
        An app of another checkout (root) runs its own CLI, as `cli`."""
        if self.root != ROOT:
            return self.cli(*args)
        return run_cli(*args, env=self.env)

    def prepare(self, *commands: tuple) -> None:
        """setup_cli for each command (a tuple of arguments), failing on the first non-zero exit
        with what the CLI printed."""
        for args in commands:
            res = self.setup_cli(*args)
            assert res.returncode == 0, f"app.py {' '.join(map(str, args))}: {res.stderr}"

    def add_participants(self, role: str, count: int, group: str = "", gender: str = "", study: str = "demo") -> None:
        """`app.py participants add` for `count` participants of `role` (a sender with its group and
        gender); fails on a non-zero exit with what the CLI printed."""
        args = ["participants", "add", "--study", study, "--role", role, "--count", str(count)]
        if group:
            args += ["--group", group, "--gender", gender]
        self.prepare(tuple(args))

    def start(self, *args):
        self.log = open(self.tmp / "server.log", "w")
        self.proc = subprocess.Popen(
            [sys.executable, "app.py", *args], cwd=self.root, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
        )
        # `--demo` records and translates its dropped-out sender's starters before it serves:
        # 60-90 s on two cores busy with other tests (a 90 s wait once ran out in a full run)
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("app exited: " + (self.tmp / "server.log").read_text())
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
        self.stop()  # a fixture that fails never calls stop: the server had lived on past the suite
        raise RuntimeError("app did not start: " + (self.tmp / "server.log").read_text())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.proc:
            self.log.close()

    def rows(self, sql: str, params=()) -> list[tuple]:
        """Query the app's database directly (the tests' view of what the server stored)."""
        con = sqlite3.connect(self.env["TRADLAB_DB"], timeout=30)
        try:
            with con:
                return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def links(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        res = self.setup_cli("links", "--study", "demo")
        assert res.returncode == 0, res.stderr
        for line in res.stdout.splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) == 6 and parts[5].startswith("http"):
                out.setdefault(parts[1], []).append(parts[5])
        return out


def wait_until_up(url: str, seconds: float = 90) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return True
        except OSError:
            time.sleep(0.25)
    return False
