"""Shared fixtures: a migrated database with the demo study, and the app launched the way
the README launches it (a subprocess on a free loopback port)."""

from __future__ import annotations

import os
import socket

import pytest

from harness.app import RunningApp
from harness.demo import DEMO
from tests.helpers.browser import chromium
from tests.helpers.markers import markers_for

# PNG copies of figures start a browser (seconds): only tests/test_figure_files.py asks for them
os.environ.setdefault("TRADLAB_FIGURE_PNG", "0")


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


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    """The demo app, with two participants per role, launched like `make run` does."""
    app = RunningApp(tmp_path_factory.mktemp("app"))
    assert app.cli("import", str(DEMO)).returncode == 0
    for role in ("receiver", "validator", "rater", "da", "sd"):
        res = app.cli("participants", "add", "--study", "demo", "--role", role, "--count", "2")
        assert res.returncode == 0, res.stderr
    app.add_participants("sender", 2, "USW", "Woman")
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


@pytest.fixture
def mixed_study(demo_db, tmp_path):
    """The demo study with four senders' recordings and every survey, receiver and validator item
    answered (tests/helpers/workflow.py mixed_study says who): (database, senders)."""
    from tests.helpers import workflow  # here, not at the top: .venv-phi4 runs a test file without the app's storage

    return workflow.mixed_study(demo_db, tmp_path)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, one per test module (a test that takes it is marked `browser`)."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def page(browser):
    """One desktop-sized page of the module's browser."""
    yield browser.new_page(viewport={"width": 1200, "height": 1000})


def pytest_collection_modifyitems(config, items):
    """`browser` and `app` on every test whose function or fixtures reach Chromium or the launched
    app (tests/helpers/markers.py), so a new one cannot land in `make test-fast`'s set."""
    for item in items:
        for name in sorted(markers_for(item) - {m.name for m in item.iter_markers()}):
            item.add_marker(name)
