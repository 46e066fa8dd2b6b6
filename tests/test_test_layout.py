"""The test tree's layout: a test module imports no other test module (nor conftest: shared
helpers live in tests/helpers/, shared fixtures in tests/conftest.py), tests.helpers is imported
by that one name (a second spelling would load it twice), and neither the benchmarks nor the
harness they share with the tests import anything from tests/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, at any depth; `from a import b` gives a.b
    as well as a (b may be a module)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.lineno, node.module))
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def is_test_module(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def problems(root: Path) -> list[str]:
    """Every import that breaks the layout, as 'file:line: why'."""
    found = []
    for path in sorted((root / "tests").rglob("*.py")):
        for line, module in imported_modules(path):
            where = f"{path.relative_to(root)}:{line}"
            if is_test_module(module):
                found.append(f"{where}: imports the test module {module} (move what it shares to tests/helpers)")
            elif module == "helpers" or module.startswith(("helpers.", "load.")):
                found.append(f"{where}: imports {module}: spell it tests.{module}")
    for folder in ("benchmarks", "harness"):
        for path in sorted((root / folder).rglob("*.py")):
            for line, module in imported_modules(path):
                if (
                    module == "tests"
                    or module.startswith("tests.")
                    or is_test_module(module)
                    or (folder == "harness" and module.split(".")[0] == "benchmarks")
                ):
                    found.append(f"{path.relative_to(root)}:{line}: imports {module} (harness/ is what both share)")
    first = {}  # one problem per import statement
    for problem in found:
        first.setdefault(problem.split(": ", 1)[0], problem)
    return sorted(first.values())


def test_no_module_imports_a_test_module_and_benchmarks_import_no_tests():
    assert problems(ROOT) == []


@pytest.mark.parametrize(
    "folder, source, why",
    [
        ("tests", "from test_submissions import write_wav\n", "test module test_submissions"),
        ("tests", "def f():\n    from tests.test_browser import CHROMIUM\n", "test module tests.test_browser"),
        ("tests", "from tests.load import test_da_page\n", "test module tests.load.test_da_page"),
        ("tests", "from conftest import DEMO\n", "test module conftest"),
        ("tests", "import helpers.audio\n", "spell it tests.helpers.audio"),
        ("benchmarks", "from tests.helpers.raters import Rater\n", "imports tests.helpers.raters"),
        ("benchmarks", "from tests.conftest import DEMO\n", "imports tests.conftest"),
        ("harness", "import benchmarks.common\n", "imports benchmarks.common"),
    ],
)
def test_each_kind_of_bad_import_is_found(tmp_path, folder, source, why):
    for name in ("tests", "benchmarks", "harness"):
        (tmp_path / name).mkdir()
    (tmp_path / "tests" / "test_ok.py").write_text("from tests.helpers.audio import write_wav\nimport harness.app\n")
    (tmp_path / folder / "bad.py").write_text(source)
    [problem] = problems(tmp_path)
    assert problem.startswith(f"{folder}/bad.py:") and why in problem, problem
