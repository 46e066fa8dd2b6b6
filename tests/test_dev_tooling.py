"""The tooling a newcomer runs: `make test-fast` selects by markers pytest.ini registers, the
markers follow what a test starts (tests/helpers/markers.py), and the pre-commit config runs
what `make lint` runs."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest
import yaml

from harness.app import RunningApp
from harness.load_app import prepared_app
from tests.helpers.browser import chromium
from tests.helpers.markers import markers_for, reaches

ROOT = Path(__file__).resolve().parents[1]


def _launches(tmp):
    return RunningApp(tmp).start()


def _through_a_helper(tmp):
    return _launches(tmp)


def _load_study(tmp):
    return prepared_app(tmp, raters=1)


def _own_chromium():
    from playwright.sync_api import sync_playwright

    return sync_playwright


def _shared_chromium():
    with chromium() as b:
        return b


def _in_a_lambda(tmp):
    return (lambda: RunningApp(tmp))()


def _plain(tmp):
    return sorted(tmp.iterdir())


@pytest.mark.parametrize(
    "fn, expected",
    [
        (_launches, {"app"}),
        (_through_a_helper, {"app"}),
        (_load_study, {"app"}),
        (_in_a_lambda, {"app"}),
        (_own_chromium, {"browser"}),
        (_shared_chromium, {"browser"}),
        (_plain, set()),
    ],
)
def test_a_function_earns_the_markers_of_what_it_starts(fn, expected):
    assert reaches(fn) == expected


def test_this_module_is_in_the_fast_set(request):
    """Naming RunningApp at module level marks nothing: only what a test and its fixtures call."""
    assert markers_for(request.node) == set()
    assert not {"app", "browser", "slow"} & {m.name for m in request.node.iter_markers()}


def test_make_test_fast_deselects_registered_markers():
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    registered = {line.split(":")[0].strip() for line in ini["pytest"]["markers"].strip().splitlines()}
    assert {"browser", "app", "slow"} <= registered
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test-fast:.*\n\t(.+)$", make, flags=re.M).group(1)
    expr = re.search(r'-m "([^"]+)"', recipe).group(1)
    assert expr == "not browser and not app and not slow" and "--durations=15" in recipe
    # CI's: the whole suite, in parallel, its 15 slowest tests printed
    assert re.search(
        r"^test: .*\n\t\$\(BIN\)/python -m pytest -q \$\(PYTEST_PARALLEL\) --durations=15$", make, flags=re.M
    )
    # files in the order the workers collect them (heaviest first: tests/helpers/session.py), not by their test counts
    assert re.search(
        r"^PYTEST_PARALLEL = -n \$\(TEST_WORKERS\) --dist loadfile --no-loadscope-reorder$", make, flags=re.M
    )


def test_the_pre_commit_config_runs_the_lint_checks_and_the_fixers():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert {"trailing-whitespace", "end-of-file-fixer", "ruff", "lint-imports"} <= set(hooks)
    for hook in ("ruff", "lint-imports"):
        assert hooks[hook]["language"] == "system"
        program = hooks[hook]["entry"].split()[0]
        assert program.startswith(".venv/bin/") and (ROOT / program).exists(), program
    assert hooks["lint-imports"]["pass_filenames"] is False
    remote = [r for r in config["repos"] if r["repo"] != "local"]
    assert all(re.fullmatch(r"v\d+\.\d+\.\d+", r["rev"]) for r in remote)
