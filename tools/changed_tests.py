"""The test files of the packages a change touches, for `make test-changed`.

    python tools/changed_tests.py                 # against the merge base with origin/main (else HEAD)
    python tools/changed_tests.py --base main~3   # against another commit
    python tools/changed_tests.py --why           # each file with the changed package that selects it

The change is every file that differs from the base, committed or not, untracked files included.
A changed test file is selected itself. A changed module selects every test file that imports a
module of its package (services/da/x.py: services.da; storage/usability/y.py: storage.usability;
web/z.py: web; cli.py: cli), directly or through the tests/helpers and harness modules it imports
(read with ast: nothing is imported). A change to what every test runs under (tests/conftest.py,
pytest.ini, the requirements, the Makefile) selects every test file. Prints paths relative to the
repository, one a line, in order; nothing when no test imports what changed.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = {"tests/conftest.py", "pytest.ini", "Makefile", "requirements.txt", "requirements-test.txt"}
# What the tests import through: their imports count as the importing test file's own.
SHARED = ("tests.helpers", "harness")


def git(*args: str) -> list[str]:
    res = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return res.stdout.splitlines() if res.returncode == 0 else []


def changed_files(base: str | None) -> set[str]:
    if base is None:
        merge = git("merge-base", "HEAD", "origin/main")
        base = merge[0] if merge else "HEAD"
    return set(git("diff", "--name-only", base)) | set(git("ls-files", "--others", "--exclude-standard"))


def module_of(path: str) -> str:
    parts = list(Path(path).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: str) -> str | None:
    """The package a changed file belongs to: its folder as a module path, two levels deep at most
    (services.da, storage.usability, web, tests.helpers.audio for a shared test helper), or the
    module itself at the top (cli, app); None for what is not Python."""
    if not path.endswith(".py"):
        return None
    parts = module_of(path).split(".")
    if parts[0] in ("tests", "harness"):
        return ".".join(parts)  # a helper selects only the tests that use it
    return ".".join(parts[: min(2, max(1, len(parts) - 1))])


@cache
def imports_of(path: Path) -> frozenset[str]:
    """Every module a file imports at any depth (`from a import b` gives a and a.b), and those of
    the shared test modules it imports, followed transitively."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError):
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    for name in list(found):
        if name.startswith(SHARED):
            for candidate in (ROOT / (name.replace(".", "/") + ".py"), ROOT / name.replace(".", "/") / "__init__.py"):
                if candidate.is_file() and candidate != path:
                    found |= imports_of(candidate)
    return frozenset(found)


def test_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py"))


def select(changed: set[str], tests: list[str]) -> dict[str, str]:
    """test file -> the changed file or package that selects it."""
    if changed & EVERYTHING:
        why = sorted(changed & EVERYTHING)[0]
        return {t: why for t in tests}
    out = {t: t for t in tests if t in changed}
    packages = {p for p in map(package_of, changed) if p}
    for t in tests:
        if t in out:
            continue
        for name in sorted(imports_of(ROOT / t)):
            hit = next((p for p in sorted(packages) if name == p or name.startswith(p + ".")), None)
            if hit:
                out[t] = hit
                break
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--base", help="the commit to compare with (default: the merge base with origin/main, else HEAD)"
    )
    parser.add_argument("--why", action="store_true", help="print the changed package that selects each file")
    args = parser.parse_args(argv)
    chosen = select(changed_files(args.base), test_files())
    for test, why in chosen.items():
        print(f"{test}\t{why}" if args.why else test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
