"""What the test session keeps to itself and what it measures: a temporary folder of its own for
the app's database, media and temporary files, set before any test module is imported; a check
that the suite left the checkout as it found it (git status, ignored files included); and the
suite's wall-time budget on CI. tests/conftest.py calls these; docs/development.md says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

# What a test run may add to the checkout: pytest's cache, the virtual environments, Python's
# byte-code caches (written by any import, the app's subprocesses' included) and the caches of the
# lint tools, which .ci/run runs beside the suite (a cache, written by the tool, not by a test).
ALLOWED_NAMES = {".pytest_cache", "__pycache__", ".mypy_cache", ".ruff_cache", ".import_linter_cache"}
ALLOWED_PREFIXES = (".venv",)
ROOT_VARIABLE = "TRADLAB_TEST_ROOT"
# Screenshots the browser tests take, kept after the session for a look: outside the checkout, in
# the system's temporary folder unless this variable names another.
ARTIFACTS_VARIABLE = "TRADLAB_TEST_ARTIFACTS"
# The whole suite's wall time on CI, in seconds, past which the session fails (issue 48: CI must
# stay under 25 minutes in all; 30 for the suite leaves room to notice before the hard limit).
BUDGET_S = 1800.0


def isolate(environ=os.environ) -> tuple[Path, bool]:
    """Point the app's database and media, the temporary folder (tempfile, subprocesses, pytest's
    tmp_path) and Gradio's upload cache at a fresh folder, so no test reads or writes a developer's
    data/ or the checkout. An xdist worker takes a subfolder of its controller's folder. Returns
    (folder, whether this process made the shared root and so removes it)."""
    environ.setdefault(ARTIFACTS_VARIABLE, str(Path(tempfile.gettempdir()) / "tradlab-test-artifacts"))
    parent = environ.get(ROOT_VARIABLE)
    if parent and Path(parent).is_dir():
        own = False
        root = Path(parent) / environ.get("PYTEST_XDIST_WORKER", f"pid{os.getpid()}")
        root.mkdir(exist_ok=True)
    else:
        own = True
        root = Path(tempfile.mkdtemp(prefix="tradlab-tests-"))
        environ[ROOT_VARIABLE] = str(root)
    for sub in ("data/media", "tmp", "gradio"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    environ["TRADLAB_DB"] = str(root / "data" / "tradlab.db")
    environ["TRADLAB_MEDIA"] = str(root / "data" / "media")
    environ["TMPDIR"] = str(root / "tmp")
    environ["GRADIO_TEMP_DIR"] = str(root / "gradio")
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    return root, own


def share_the_cores(environ=os.environ) -> None:
    """In a pytest-xdist worker (`make test` runs three on two cores), and the apps it starts: numpy,
    scipy and torch each compute on one thread, and OpenMP's threads wait passively. By default each
    library keeps a thread per core, spinning while it waits for the others, which burns the time
    the other workers need (the statistics tests took 1.5x their CPU time; one torch thread saved
    4.5 CPU-minutes of the suite). The tiny twins are trained on one thread and to a margin that no
    thread count changes. A value set beforehand is kept."""
    if environ.get("PYTEST_XDIST_WORKER"):
        environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        environ.setdefault("OMP_NUM_THREADS", "1")
        environ.setdefault("OMP_WAIT_POLICY", "passive")


def settle_the_heap() -> None:
    """After each test (its fixtures torn down): collect, then freeze what survived (gc.freeze),
    so that the collector's later passes walk only what the next tests make. A worker holds torch,
    Gradio, pandas and the collected tests, and each full pass walked all of it: the usability
    analysis files spent 20.7 of 51.7 s in the collector (2.4 s frozen), `make test-fast` took
    98-106 s and 81 s frozen. Frozen objects are never let go: a cycle that a fixture torn down
    later leaves stays for the worker's life (the largest process's memory was the same, 0.99
    against 1.01 GB); letting them go at each file's end cost more than freezing saved."""
    import gc

    gc.collect()
    gc.freeze()


RANKS = ("browser", "app", "slow")


def heaviest_files_first(items: list) -> None:
    """Order the collected tests so that xdist's workers (`--dist loadfile`: a file to one worker, in
    collection order) take the files with browser tests first, then those that launch the app, then
    the slow ones, and end on the quick files, which fill the gaps instead of one long file running
    alone at the end. A file keeps its own order and its tests stay together."""

    def rank(item) -> int:
        names = {m.name for m in item.iter_markers()}
        return next((i for i, name in enumerate(RANKS) if name in names), len(RANKS))

    file_rank: dict[str, int] = {}
    for item in items:
        path = str(item.path)
        file_rank[path] = min(file_rank.get(path, len(RANKS)), rank(item))
    items.sort(key=lambda item: file_rank[str(item.path)])


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


def checkout_entries(checkout: Path) -> set[str] | None:
    """`git status --porcelain --ignored` of the checkout as a set of lines ("?? path", "!! path/"),
    or None where it is not a git checkout (an installed copy, a Docker image)."""
    try:
        res = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "-z"],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None
    return {entry for entry in res.stdout.split("\0") if entry}


def allowed(entry: str) -> bool:
    path = entry[3:].rstrip("/")
    parts = Path(path).parts
    return bool(parts) and (
        parts[0].startswith(ALLOWED_PREFIXES) or bool(set(parts) & ALLOWED_NAMES) or path.endswith(".pyc")
    )


def new_in_checkout(before: set[str], after: set[str]) -> list[str]:
    """What git shows after the session that it did not show before, less what a run may add."""
    return sorted(e for e in after - before if not allowed(e))


def budget_s(environ=os.environ) -> float | None:
    """The suite's budget in seconds on CI (the CI variable set, as CI services and .ci/run set
    it; TRADLAB_TEST_BUDGET_S overrides 1800), None elsewhere: a loaded laptop is not CI."""
    if not environ.get("CI"):
        return None
    return float(environ.get("TRADLAB_TEST_BUDGET_S") or BUDGET_S)


def over_budget(wall_s: float, budget: float | None) -> str | None:
    if budget is None or wall_s <= budget:
        return None
    return (
        f"the suite took {wall_s:.0f} s, over its budget of {budget:.0f} s on CI: "
        "make the slowest tests above faster (docs/development.md, Running the tests)"
    )
