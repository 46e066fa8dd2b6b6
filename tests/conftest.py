"""Shared fixtures: a migrated database with the demo study, and the app launched the way
the README launches it (a subprocess on a free loopback port)."""
from __future__ import annotations

import atexit
import csv
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The bundled demo study (assets/demo_study): its human translations are references
# (references.csv), so its receivers only ever get real senders' recordings.
DEMO_ASSETS = ROOT / "assets" / "demo_study"
HUMAN_SYSTEM = """
[[systems]]
id = "human-reference"
label = "Human reference translation (demo content)"
kind = "human"
assign = false
"""


def demo_with_exchanges(dest: Path, keep_references: bool = False) -> Path:
    """A copy of the demo study at dest (study id "demo") whose 12 human translations are
    imported exchanges of a listed `human` system "human-reference" (exchanges.csv), as a
    designer who lists human translation as a system would have it: receivers and validators
    have work before any sender has recorded. Without keep_references the translations are
    only that (no references.csv), as the demo was before references had a file of their own."""
    shutil.copytree(DEMO_ASSETS, dest)
    with open(dest / "references.csv", encoding="utf-8", newline="") as f:
        refs = list(csv.DictReader(f))
    with open(dest / "exchanges.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["starter_id", "system", "translation"])
        w.writerows([r["starter_id"], "human-reference", r["translation"]] for r in refs)
    toml = (dest / "study.toml").read_text(encoding="utf-8")
    key = 'references = "references.csv"\n'
    assert key in toml and "\n[da]\n" in toml, "assets/demo_study/study.toml changed: update demo_with_exchanges"
    exchanges = 'exchanges = "exchanges.csv"\n'
    toml = toml.replace(key, exchanges + key if keep_references else exchanges)
    toml = toml.replace("\n[da]\n", HUMAN_SYSTEM + "\n[da]\n", 1)
    # a rater takes a whole sender's share (the paper's): the demo's 2 is for playing it alone
    toml = toml.replace("\nitems_per_rater = 2\n", "\n", 1)
    (dest / "study.toml").write_text(toml, encoding="utf-8")
    if not keep_references:
        (dest / "references.csv").unlink()
    return dest


# DEMO: the demo study with pre-translated exchanges, which most tests build on (a receiver or
# validator with work at once); made once per test process, removed at exit.
_DEMO_TMP = Path(tempfile.mkdtemp(prefix="tradlab-test-demo-"))
atexit.register(shutil.rmtree, _DEMO_TMP, True)
DEMO = demo_with_exchanges(_DEMO_TMP / "demo_study")
# PNG copies of figures start a browser (seconds): only tests/test_figure_files.py asks for them
os.environ.setdefault("TRADLAB_FIGURE_PNG", "0")
# The passwordless admin's secret (the admin link /?admin=SECRET the server prints at start): one
# for the whole run, so every app the tests start (RunningApp copies this environment) and every
# team page built in process open the admin with it (admin_session, RunningApp.admin_url)
ADMIN_SECRET = os.environ.setdefault("TRADLAB_ADMIN_SECRET", "test-admin-secret-" + os.urandom(12).hex())


@pytest.fixture
def no_network(monkeypatch):
    """The model hub off, and any connection to a non-loopback address fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family == socket.AF_UNIX or host in ("127.0.0.1", "::1", "localhost"):
            return real_connect(self, address)
        raise AssertionError(f"a test tried the network: {address}")

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def llm_env(monkeypatch, qa_server):
    """The LLM settings pointing at the module's `qa_server` (tests/openai_server.py with the
    module's deterministic responder), under the model name "qa-llm"."""
    for var in ("TRADLAB_LLM_BACKEND", "TRADLAB_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TRADLAB_LLM_MODEL", "qa-llm")
    monkeypatch.setenv("TRADLAB_LLM_BASE_URL", qa_server.base_url)
    return qa_server


@pytest.fixture
def without_pyav(monkeypatch):
    """`import av` fails, as on a machine without PyAV (the ffmpeg program is the fallback)."""
    import builtins

    real_import = builtins.__import__

    def no_av(name, *a, **k):
        if name == "av":
            raise ImportError("No module named 'av'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_av)


@pytest.fixture
def database(tmp_path):
    from storage import open_database

    return open_database(tmp_path / "test.db")


@pytest.fixture
def demo_db(database):
    from services.setup.importer import import_study

    import_study(database, DEMO)
    return database


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python app.py ARGS` run in this process (cli.main): env, when given, is the whole
    environment during the call (as a subprocess's env would be); returns what the process would
    have (returncode, stdout, stderr). The working directory, environment and umask are restored."""
    import contextlib
    import io

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
            except SystemExit as e:          # argparse's errors (2) and commands that exit
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
    def __init__(self, tmp: Path, env_extra: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tmp
        self.env = {**os.environ, "TRADLAB_DB": str(tmp / "app.db"), "TRADLAB_MEDIA": str(tmp / "media"),
                    "TRADLAB_PUBLIC_URL": self.url, "TRADLAB_PORT": str(self.port),
                    "GRADIO_ANALYTICS_ENABLED": "False",
                    # the tests' one address stands for many participants and the admin (web.uploads.UploadBudget)
                    "TRADLAB_UPLOADS_PER_MINUTE": "1000", **(env_extra or {})}
        self.proc = None

    @property
    def admin_url(self) -> str:
        """The team page as the admin link opens it (no password set: the printed /?admin=SECRET)."""
        return f"{self.url}/?admin={self.env.get('TRADLAB_ADMIN_SECRET', ADMIN_SECRET)}"

    def cli(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "app.py", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=120)

    def start(self, *args):
        self.log = open(self.tmp / "server.log", "w")
        self.proc = subprocess.Popen([sys.executable, "app.py", *args], cwd=ROOT, env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("app exited: " + (self.tmp / "server.log").read_text())
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
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
        res = self.cli("links", "--study", "demo")
        assert res.returncode == 0, res.stderr
        for line in res.stdout.splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) == 6 and parts[5].startswith("http"):
                out.setdefault(parts[1], []).append(parts[5])
        return out


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    """The demo app, with two participants per role, launched like `make run` does."""
    app = RunningApp(tmp_path_factory.mktemp("app"))
    assert app.cli("import", str(DEMO)).returncode == 0
    for role in ("receiver", "validator", "rater", "da", "sd"):
        res = app.cli("participants", "add", "--study", "demo", "--role", role, "--count", "2")
        assert res.returncode == 0, res.stderr
    res = app.cli("participants", "add", "--study", "demo", "--role", "sender", "--group", "USW",
                  "--gender", "Woman", "--count", "2")
    assert res.returncode == 0, res.stderr
    app.start()
    yield app
    app.stop()


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models: a second torch thread only adds sync overhead on a busy 2-core machine
    (a module that runs them uses it: pytestmark = pytest.mark.usefixtures("one_torch_thread"))."""
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class AppClient:
    """A gradio_client session on the app as a browser has it: each call goes to the page that
    serves it (app.page_of_api: a role's submit on /<role>/, the team's calls and the
    participant calls on "/"), one Client per page, made when first needed."""

    def __init__(self, url: str, **kwargs):
        self.url, self.kwargs, self.pages = url.rstrip("/"), {"verbose": False, **kwargs}, {}

    def page(self, name: str = ""):
        from gradio_client import Client

        if name not in self.pages:
            self.pages[name] = Client(f"{self.url}/{name}/" if name else self.url, **self.kwargs)
        return self.pages[name]

    def predict(self, *args, api_name: str):
        from web.site import page_of_api

        return self.page(page_of_api(api_name)).predict(*args, api_name=api_name)

    def submit(self, *args, api_name: str):
        from web.site import page_of_api

        return self.page(page_of_api(api_name)).submit(*args, api_name=api_name)


def admin_session(client, secret: str = ADMIN_SECRET) -> str:
    """An admin session from the login event: with no password set its value is the admin link's
    secret (the tests' local, passwordless admin)."""
    return client.predict(secret, api_name="/admin_login")[0]


def token_of(url: str) -> str:
    return url.split("?t=", 1)[1]
