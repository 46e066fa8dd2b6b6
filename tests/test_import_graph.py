"""tools/import_graph.py (run by `make lint`): a cycle between services' packages fails it, even
when no two modules import each other; an import that the layers contract in pyproject.toml
ignores is no edge; the imports against the contract's layer order are counted."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "import_graph.py"

CONTRACT = """
[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
containers = ["services"]
layers = ["top", "low"]
ignore_imports = [{ignored}]
"""


def tree(tmp_path: Path, files: dict[str, str], ignored: str = "") -> Path:
    for name, text in {"services/__init__.py": "", "storage/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(CONTRACT.format(ignored=ignored), encoding="utf-8")
    return tmp_path


def run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), "--root", str(root)], capture_output=True, text=True, timeout=60)


# top.a -> low.b and low.c -> top.d: no module cycle, but the packages reach each other
TWO_WAY = {
    "services/top/__init__.py": "",
    "services/top/a.py": "from services.low import b\n",
    "services/top/d.py": "X = 1\n",
    "services/low/__init__.py": "",
    "services/low/b.py": "Y = 2\n",
    "services/low/c.py": "from services.top.d import X\n",
}


def test_this_repository_has_no_cycle_between_services_packages():
    done = run(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "package cycles: 0" in done.stdout


def test_a_new_cycle_between_packages_fails(tmp_path):
    done = run(tree(tmp_path, TWO_WAY))
    assert done.returncode == 1
    assert "import cycles, module level: 0" in done.stdout
    assert "package cycle: services.low <-> services.top" in done.stdout
    assert "services.low.c -> services.top.d" in done.stdout
    assert "imports against the layer order of services' packages: 1 (ignored in the contract: 0)" in done.stdout
    assert "services.low.c -> services.top.d (up)" in done.stdout


def test_an_import_the_contract_ignores_makes_no_cycle(tmp_path):
    done = run(tree(tmp_path, TWO_WAY, ignored='"services.low.c -> services.top.d"'))
    assert done.returncode == 0, done.stdout
    assert "package cycles: 0" in done.stdout
    assert "imports against the layer order of services' packages: 1 (ignored in the contract: 1)" in done.stdout


def test_a_function_local_import_still_makes_the_cycle(tmp_path):
    files = {**TWO_WAY, "services/low/c.py": "def f():\n    from services.top.d import X\n    return X\n"}
    done = run(tree(tmp_path, files))
    assert done.returncode == 1
    assert "package cycle: services.low <-> services.top" in done.stdout
