"""The shared storage modules (storage/*.py) name no protocol's phase or role in their SQL: a
query that needs one takes it as a parameter, and a protocol's own SQL lives in its package
(storage/usability/, storage/da/, storage/sd/). The names are the registry's, so a protocol
added later is checked too. Migrations are history and keep the names they ran with."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from services.common import protocols

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = {"migrations.py"}


def registered_names() -> set[str]:
    """Every registered phase and role (protocols.phases() loads the built-in protocols)."""
    return set(protocols.phases()) | set(protocols.roles())


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def quoted_names(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, 'name') for each name quoted as an SQL literal in a string of the code (f-strings'
    text too; docstrings are prose, not SQL)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    pattern = re.compile(r"'(" + "|".join(sorted(map(re.escape, names))) + r")'")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found += [(node.lineno, f"'{m.group(1)}'") for m in pattern.finditer(node.value)]
    return sorted(set(found))


def shared_modules() -> list[Path]:
    return [p for p in sorted((ROOT / "storage").glob("*.py")) if p.name not in EXEMPT]


def test_shared_storage_names_no_phase_or_role():
    names = registered_names()
    assert {"record", "survey_informed", "sender", "da", "sd"} <= names  # the built-in ones loaded
    bad = [
        f"storage/{path.name}:{line}: {literal}"
        for path in shared_modules()
        for line, literal in quoted_names(path.read_text(encoding="utf-8"), names)
    ]
    assert bad == [], "a phase or role named in shared storage's SQL (pass it in, or move the query):\n" + "\n".join(
        bad
    )


def test_the_check_itself_finds_a_name():
    """The check can fail: a literal in plain and f-string SQL is found; a docstring, a name
    that only starts like one ('da_hits') and a double-quoted column are not."""
    source = '''
def f(db, marks):
    """Reads a 'record' item."""
    db.query("SELECT 1 FROM assignments WHERE phase = 'record'")
    db.query(f"SELECT 1 FROM participants p WHERE p.role = 'sender' AND p.id IN ({marks})")
    db.query("SELECT 1 FROM events WHERE entity = 'da_hits'")
    db.query('SELECT "sd" FROM t')
'''
    assert quoted_names(source, {"record", "sender", "da", "sd"}) == [(4, "'record'"), (5, "'sender'")]
