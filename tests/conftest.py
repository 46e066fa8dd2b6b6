"""Shared fixtures: a migrated database with the demo study, and the app launched the way
the README launches it (a subprocess on a free loopback port). The session's own temporary
folder, the check that it left the checkout as it found it and its wall-time budget on CI are
set up here too (tests/helpers/session.py)."""

from __future__ import annotations

import os
import socket
import time

import pytest

from tests.helpers import session as test_session

# Before anything else reads the environment or tempfile: the app's database and media, temporary
# files and Gradio's upload cache go under the session's own folder, never into the checkout.
SESSION_DIR, OWN_SESSION_DIR = test_session.isolate()
test_session.share_the_cores()

from web.gradio_import import leave_stubs_alone  # noqa: E402

leave_stubs_alone()  # the tests' own import of gradio made as light as the app's (web/gradio_import.py)

from harness.app import ROOT, RunningApp  # noqa: E402  (after isolate: harness reads the environment)
from harness.demo import DEMO  # noqa: E402
from tests.helpers.browser import chromium  # noqa: E402
from tests.helpers.markers import markers_for  # noqa: E402

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
    app.prepare(("import", str(DEMO)))
    for role in ("receiver", "validator", "rater", "da", "sd"):
        app.add_participants(role, 2)
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
    """Headless Chromium, one per test module (a test that takes it is marked `browser`). Not one
    per session: Playwright's sync API keeps an event loop running in the thread while a browser is
    open, and the tests that call asyncio.run() or start their own Playwright fail beside it."""
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
    if os.environ.get("PYTEST_XDIST_WORKER"):
        test_session.heaviest_files_first(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        test_session.settle_the_heap()


_STARTED = pytest.StashKey[float]()
_CHECKOUT = pytest.StashKey["set[str] | None"]()
_PROBLEMS = pytest.StashKey["list[str]"]()


def _controller(config) -> bool:
    """The process that runs the session as a whole: pytest itself, or xdist's controller (not
    one of its workers)."""
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    session.config.stash[_STARTED] = time.monotonic()
    if _controller(session.config):
        session.config.stash[_CHECKOUT] = test_session.checkout_entries(ROOT)


def pytest_sessionfinish(session, exitstatus):
    """Fail the session when it wrote into the checkout or ran past its budget on CI; remove the
    session's folder when nothing failed (a failed run keeps it for a look: its path is printed)."""
    config, problems = session.config, []
    if _controller(config):
        wall = time.monotonic() - config.stash[_STARTED]
        before, after = config.stash.get(_CHECKOUT, None), test_session.checkout_entries(ROOT)
        if before is not None and after is not None:
            new = test_session.new_in_checkout(before, after)
            if new:
                problems.append(
                    "the suite wrote into the checkout (git status --porcelain --ignored shows it now, "
                    "not before): " + ", ".join(e[3:] for e in new)
                )
        budget = test_session.budget_s()
        late = test_session.over_budget(wall, budget)
        if late:
            problems.append(late)
        config.stash[_PROBLEMS] = problems
        config.stash[_STARTED] = wall
        if problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if OWN_SESSION_DIR and session.exitstatus == pytest.ExitCode.OK:
        test_session.remove(SESSION_DIR)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _controller(config) or _PROBLEMS not in config.stash:
        return
    budget = test_session.budget_s()
    wall = config.stash[_STARTED]
    terminalreporter.write_line(
        f"suite wall time {wall:.0f} s" + (f" of a {budget:.0f} s budget on CI" if budget else "")
    )
    if OWN_SESSION_DIR and SESSION_DIR.exists():
        terminalreporter.write_line(f"the session's data and temporary files are kept in {SESSION_DIR}")
    for problem in config.stash[_PROBLEMS]:
        terminalreporter.write_line("FAILED (session): " + problem, red=True, bold=True)
