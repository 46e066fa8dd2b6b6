"""`make test-changed` (tools/changed_tests.py): the test files a change selects, read from the
tests' imports (through tests/helpers and harness), and everything for a change to what every
test runs under."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys

from harness.app import ROOT

spec = importlib.util.spec_from_file_location("changed_tests", ROOT / "tools" / "changed_tests.py")
changed_tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(changed_tests)
TESTS = changed_tests.test_files()


def test_a_changed_file_names_its_package():
    assert changed_tests.package_of("services/da/analysis.py") == "services.da"
    assert changed_tests.package_of("services/models/backends/hf.py") == "services.models"
    assert changed_tests.package_of("storage/usability/pool.py") == "storage.usability"
    assert changed_tests.package_of("storage/db.py") == "storage"
    assert changed_tests.package_of("web/guard.py") == "web"
    assert changed_tests.package_of("cli.py") == "cli"
    assert changed_tests.package_of("tests/helpers/audio.py") == "tests.helpers.audio"
    assert changed_tests.package_of("docs/development.md") is None


def test_a_protocols_module_selects_the_tests_that_import_its_package():
    chosen = changed_tests.select({"services/sd/analysis.py"}, TESTS)
    assert "tests/test_sd_analysis.py" in chosen and chosen["tests/test_sd_analysis.py"] == "services.sd"
    assert "tests/test_da_hits.py" not in chosen  # DA's tests import nothing of SD
    assert all(why == "services.sd" for why in chosen.values())


def _own_imports(path) -> set[str]:
    """The modules a file names in its own import statements (no helper followed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_a_helper_selects_the_tests_that_reach_it_through_other_helpers():
    """tests/helpers/workflow.py imports tests/helpers/audio.py: a test module that imports only
    workflow is selected by a change to audio too."""
    chosen = changed_tests.select({"tests/helpers/audio.py"}, TESTS)
    direct = {t for t in TESTS if "tests.helpers.audio" in _own_imports(ROOT / t)}
    assert direct and direct <= set(chosen)
    through = {t for t in chosen if t not in direct}
    assert through and all(
        "tests.helpers.workflow" in _own_imports(ROOT / t) or "tests.helpers.export" in _own_imports(ROOT / t)
        for t in through
    ), through


def test_a_changed_test_file_selects_itself_and_the_suites_frame_selects_all():
    assert list(changed_tests.select({"tests/test_texts.py", "README.md"}, TESTS)) == ["tests/test_texts.py"]
    assert changed_tests.select({"docs/reference.md"}, TESTS) == {}
    assert len(changed_tests.select({"tests/conftest.py"}, TESTS)) == len(TESTS)
    assert len(changed_tests.select({"pytest.ini"}, TESTS)) == len(TESTS)


def test_the_command_against_head_lists_existing_test_files():
    res = subprocess.run(
        [sys.executable, "tools/changed_tests.py", "--base", "HEAD", "--why"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    for line in res.stdout.splitlines():
        path, why = line.split("\t")
        assert (ROOT / path).is_file() and why
