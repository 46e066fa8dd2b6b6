"""The test session keeps to itself (tests/helpers/session.py, tests/conftest.py): the app's
database, media and temporary files point into the session's own folder; a session that writes
into the checkout fails, naming what it wrote; the suite's wall time has a budget on CI."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from harness.app import ROOT
from tests.helpers import session


def test_the_session_points_data_and_temporary_files_away_from_the_checkout():
    from services.common.settings import Settings

    settings = Settings.from_env()
    here = Path(os.environ[session.ROOT_VARIABLE])
    for path in (
        settings.db_path,
        settings.media_dir,
        Path(tempfile.gettempdir()),
        Path(os.environ["GRADIO_TEMP_DIR"]),
    ):
        assert here in path.resolve().parents, path
        assert ROOT not in path.resolve().parents, path
    assert ROOT not in Path(os.environ[session.ARTIFACTS_VARIABLE]).resolve().parents


def test_a_worker_takes_a_folder_inside_its_controllers(tmp_path):
    environ = {session.ROOT_VARIABLE: str(tmp_path), "PYTEST_XDIST_WORKER": "gw3"}
    root, own = session.isolate(environ)
    assert (root, own) == (tmp_path / "gw3", False)
    assert environ["TRADLAB_DB"] == str(tmp_path / "gw3" / "data" / "tradlab.db")
    assert (tmp_path / "gw3" / "tmp").is_dir()
    tempfile.tempdir = None  # isolate() reset it for the environ given, not this process's


def test_what_a_run_may_add_to_the_checkout():
    before = {"!! .venv/", "?? notes.txt"}
    after = before | {
        "!! .pytest_cache/",
        "!! .mypy_cache/",  # lint, which .ci/run runs beside the suite
        "!! .ruff_cache/",
        "!! .import_linter_cache/",
        "!! .venv-phi4/",
        "!! services/__pycache__/",
        "!! tests/helpers/__pycache__/",
        "!! data/",
        "?? test-artifacts/",
        "?? services/x.pyc",
        "?? out.csv",
    }
    assert session.new_in_checkout(before, after) == ["!! data/", "?? out.csv", "?? test-artifacts/"]


def test_the_budget_holds_only_on_ci():
    assert session.budget_s({}) is None
    assert session.budget_s({"CI": "true"}) == 1800
    assert session.budget_s({"CI": "true", "TRADLAB_TEST_BUDGET_S": "60"}) == 60
    assert session.over_budget(3600, None) is None
    assert session.over_budget(1799, 1800) is None
    assert "1801 s, over its budget of 1800 s" in session.over_budget(1801, 1800)


PLANTED = """
from pathlib import Path

def test_writes_into_the_checkout():
    Path({path!r}).write_text("left behind")
"""

QUICK = """
import time

def test_takes_a_moment():
    time.sleep(0.3)
"""


def _inner_session(tmp_path: Path, body: str, env_extra: dict) -> subprocess.CompletedProcess:
    """A pytest session of its own on one test file outside the checkout, with this suite's
    conftest loaded as a plugin (so its session hooks run against the checkout)."""
    test = tmp_path / "test_inner.py"
    test.write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env_extra}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop(session.ROOT_VARIABLE, None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "-c",
            str(ROOT / "pytest.ini"),
            "--rootdir",
            str(tmp_path),
            str(test),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow  # a pytest session of its own: seconds
def test_a_session_that_writes_into_the_checkout_fails_naming_the_file(tmp_path):
    planted = ROOT / f"planted-{uuid.uuid4().hex[:8]}.txt"
    try:
        res = _inner_session(tmp_path, PLANTED.format(path=str(planted)), {"CI": ""})
        out = res.stdout + res.stderr
        assert planted.exists()
        assert res.returncode == 1, out
        assert "1 passed" in out
        said = "the suite wrote into the checkout (git status --porcelain --ignored shows it now, not before): "
        assert said + planted.name in out
    finally:
        planted.unlink(missing_ok=True)


@pytest.mark.slow  # two pytest sessions of their own: seconds
def test_a_session_past_its_budget_on_ci_fails_and_a_clean_one_passes(tmp_path):
    late = _inner_session(tmp_path, QUICK, {"CI": "true", "TRADLAB_TEST_BUDGET_S": "0.1"})
    assert late.returncode == 1, late.stdout + late.stderr
    assert "over its budget of 0 s on CI" in late.stdout
    clean = _inner_session(tmp_path, QUICK, {"CI": "true"})
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "of a 1800 s budget on CI" in clean.stdout and "FAILED (session)" not in clean.stdout


class _Item:
    def __init__(self, path: str, *marks: str):
        self.path, self.marks = Path(path), marks

    def iter_markers(self):
        return [type("Mark", (), {"name": m}) for m in self.marks]


def test_xdist_takes_the_heaviest_files_first_and_a_files_tests_stay_together():
    items = [
        _Item("a.py"),
        _Item("b.py", "slow"),
        _Item("c.py"),
        _Item("c.py", "browser", "app"),
        _Item("d.py", "app"),
        _Item("d.py"),
        _Item("e.py"),
    ]
    order = list(items)
    session.heaviest_files_first(order)
    assert [(str(i.path), i.marks) for i in order] == [
        ("c.py", ()),
        ("c.py", ("browser", "app")),
        ("d.py", ("app",)),
        ("d.py", ()),
        ("b.py", ("slow",)),
        ("a.py", ()),
        ("e.py", ()),
    ]


def test_after_a_test_its_garbage_is_collected_and_what_lives_on_is_frozen():
    """settle_the_heap (run after every test's teardown): a cycle no one holds is freed, not
    frozen for the worker's life; what is still held leaves the collector's later passes."""
    import gc
    import weakref

    class Node:
        pass

    dropped, kept = Node(), Node()
    dropped.me, kept.me = dropped, kept  # cycles: only the collector frees the dropped one
    gone = weakref.ref(dropped)
    del dropped
    frozen = gc.get_freeze_count()
    session.settle_the_heap()
    assert gone() is None
    assert gc.get_freeze_count() > frozen and not any(o is kept for o in gc.get_objects())
