"""Issue 52, point 1: shared code names no protocol, phase, tab or role.

The names come from the registry (every registered protocol's own, its roles', tabs' and phases');
shared code is every module of services/, storage/, tabs/ and web/, cli.py and app.py that no
protocol owns. A protocol owns its packages (the protocol layer of pyproject.toml's
services-layers contract, and storage/<name>/), every module its spec names (a tab's build, its
report section, its analysis panel, any hook), and a module of a shared layer that carries its
name (`services/report/da.py`, `tabs/admin_usability.py`, `services/setup/usability_demo.py`): such
a module names no other protocol's names. A name counts where the code uses it as a value: a
string that is the name, or that quotes it as SQL does ('record'); a docstring does not count.

A string that equals a name but means something else (an English word, a language code) is
listed in WORDS, file by file, with what it is; an entry the code no longer needs fails too.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import tomllib
from collections import Counter
from pathlib import Path

from services.common import protocols

ROOT = Path(__file__).resolve().parent.parent
# storage/migrations.py is history: its steps made the built-in tables as they were, never edited
NOT_CODE = {"storage/migrations.py"}

# a string that equals a name and means something else
WORDS: dict[str, set[str]] = {
    "services/report/da.py": {"rater"},  # "2,000 judgments by 30 raters" (count() pluralises)
    "tabs/analysis_da.py": {"rater"},
    "services/metrics/gemba.py": {"da"},  # Danish, a language code of GEMBA's prompt
}


# a protocol's tables (its own, Protocol.tables, and the export tables it declares) that shared
# code still reads, file by file, with why; the corpus path (study files, import, storage of a
# study and its deletion) is in none of them. "systems" is the study's own (every protocol's
# [[systems]]), never a protocol's.
TABLES_LEFT: dict[str, set[str]] = {
    # the assignments table's exchange_id column predates the registry: the export of assignments,
    # the audit log's entities and the admin's participant page join it for the exchange's study
    "storage/exports.py": {"exchanges", "recordings"},
    "storage/participant_view.py": {"exchanges"},
    # words, not the tables: the study file's [questions] section (question generation), and a
    # consent row's answers column
    "services/study/files.py": {"questions"},
    "storage/consent.py": {"answers"},
}
SQL_TABLE = r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\s+(%s)\b"


def protocol_tables() -> set[str]:
    """Every registered protocol's tables: its own and those its export declares."""
    return {n for p in protocols.protocols() for n in (*p.export_tables, *(t.name for t in p.tables))} - {"systems"}


def tables_named(source: str, tables: set[str]) -> set[str]:
    """The tables `source` reads or writes: in SQL (FROM/JOIN/INTO/UPDATE name) or as db["name"]."""
    sql = re.compile(SQL_TABLE % "|".join(map(re.escape, sorted(tables, key=len, reverse=True))), re.I)
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in tables:
            found.add(node.slice.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(sql.findall(node.value))
    return found


def registry_names() -> set[str]:
    return {n for p in protocols.protocols() for n in own_names(p)}


def _module_of(value) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"[\w.]+:\w+", value):
        return value.split(":")[0]
    module = getattr(value, "__module__", None)
    return module if callable(value) and module else None


def owned_modules() -> set[str]:
    """Every module a registered protocol's spec names, and its packages."""
    owned: set[str] = set()

    def walk(obj) -> None:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                walk(getattr(obj, f.name))
        elif isinstance(obj, (tuple, list)):
            for v in obj:
                walk(v)
        elif isinstance(obj, dict):
            for v in obj.values():
                walk(v)
        else:
            module = _module_of(obj)
            if module:
                owned.add(module)

    for p in protocols.protocols():
        walk(p)
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c.get("id") == "services-layers")["layers"]
    protocol_layer = next(layer for layer in layers if "usability" in layer.split(" | "))
    for package in protocol_layer.split(" | "):
        owned.add(f"services.{package}")
        owned.add(f"storage.{package}")
    return owned


def protocol_in_name(module: str) -> str | None:
    """The protocol a module's own name carries (`da`, `analysis_da`, `usability_demo`), if any."""
    last = module.rsplit(".", 1)[-1]
    for p in protocols.protocols():
        if last == p.name or last.startswith(p.name + "_") or last.endswith("_" + p.name):
            return p.name
    return None


def own_names(protocol: protocols.Protocol) -> set[str]:
    return {protocol.name, *(r.name for r in protocol.roles), *(t.name for t in protocol.tabs)} | {
        ph.name for ph in protocol.phases
    }


def _module(path: Path) -> str:
    return path.relative_to(ROOT).as_posix().removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def shared_files() -> list[Path]:
    owned = owned_modules()
    files = [ROOT / "cli.py", ROOT / "app.py"]
    for top in ("services", "storage", "tabs", "web"):
        files += sorted((ROOT / top).rglob("*.py"))
    out = []
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        module = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        if rel in NOT_CODE or any(module == o or module.startswith(o + ".") for o in owned):
            continue
        if protocol_in_name(module):
            continue
        out.append(f)
    return out


def named(source: str, names: set[str]) -> Counter:
    """The registry's names that `source` uses as values (docstrings left out)."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    quoted = re.compile(r"'(%s)'" % "|".join(map(re.escape, sorted(names, key=len, reverse=True))))
    found: Counter = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if node.value in names:
                found[node.value] += 1
            else:
                found.update(quoted.findall(node.value))
    return found


def test_the_names_come_from_the_registry_and_the_owners_from_the_specs():
    names = registry_names()
    assert {"usability", "da", "sd", "sender", "record", "survey_informed"} <= names
    owned = owned_modules()
    # a tab's build, a report section and an analysis panel, named by string or by function
    assert {"tabs.record", "services.report.da", "tabs.analysis_sd", "services.usability"} <= owned
    shared = {f.relative_to(ROOT).as_posix() for f in shared_files()}
    assert protocol_in_name("tabs.analysis_da") == "da" and protocol_in_name("tabs.admin") is None
    assert "services/participation/submissions.py" in shared and "tabs/item_form.py" in shared
    assert "tabs/record.py" not in shared and "services/da/hits.py" not in shared


def test_a_planted_name_is_found_and_a_docstring_is_not():
    names = registry_names()
    planted = (
        '"""The record phase is named here, in words."""\n'
        "def route(phase, db):\n"
        '    """Its docstring may say survey_informed."""\n'
        '    if phase == "record":\n'
        "        return 1\n"
        "    return db.execute(\"SELECT 1 FROM assignments WHERE phase = 'survey_informed'\")\n"
        'LABELS = {"sender": "a sender"}\n'
    )
    assert named(planted, names) == Counter({"record": 1, "survey_informed": 1, "sender": 1})
    assert named('"""Only words: da, record."""\nX = "recorded"\n', names) == Counter()


def test_shared_code_names_no_protocol_phase_or_role():
    names = registry_names()
    new, stale = [], []
    for f in shared_files():
        rel = f.relative_to(ROOT).as_posix()
        found = set(named(f.read_text(), names))
        words = WORDS.get(rel, set())
        if found - words:
            new.append(f"{rel}: {sorted(found - words)}")
        if words - found:
            stale.append(f"{rel}: {sorted(words - found)}")
    assert not new, "shared code names a protocol, phase or role:\n" + "\n".join(new)
    assert not stale, "WORDS lists strings the code no longer has (remove them):\n" + "\n".join(stale)


def test_a_module_named_for_a_protocol_names_no_other_protocols_names():
    names = registry_names()
    checked, wrong = [], []
    for top in ("services", "storage", "tabs", "web"):
        for f in sorted((ROOT / top).rglob("*.py")):
            owner = protocol_in_name(_module(f))
            if owner is None or f.relative_to(ROOT).as_posix() in NOT_CODE:
                continue
            checked.append(f.relative_to(ROOT).as_posix())
            mine = own_names(protocols.protocol(owner))
            # a name two protocols share (the DA protocol's role "da") counts as the owner's
            words = WORDS.get(f.relative_to(ROOT).as_posix(), set())
            foreign = {n for n in named(f.read_text(), names) if n not in mine and n not in words}
            if foreign:
                wrong.append(f"{f.relative_to(ROOT).as_posix()} ({owner}): {sorted(foreign)}")
    assert {"tabs/admin_usability.py", "services/report/da.py", "services/setup/usability_demo.py"} <= set(checked)
    assert not wrong, "a module named for one protocol names another's:\n" + "\n".join(wrong)


def test_a_planted_table_is_found():
    tables = protocol_tables()
    assert {"da_segments", "starters", "sd_pairs", "esa_answers"} <= tables
    planted = (
        'ROWS = "SELECT s.id FROM studies s JOIN da_segments d ON d.study_id = s.id"\n'
        'def put(db, row):\n    db["sd_pairs"].insert(row)\n'
        'WORDS = "the starters of a study"\n'
    )
    assert tables_named(planted, tables) == {"da_segments", "sd_pairs"}


def test_shared_code_reads_no_protocols_table_but_those_listed():
    tables = protocol_tables()
    new, stale = [], []
    for f in shared_files():
        rel = f.relative_to(ROOT).as_posix()
        found = tables_named(f.read_text(), tables)
        left = TABLES_LEFT.get(rel, set())
        if found - left:
            new.append(f"{rel}: {sorted(found - left)}")
        if left - found:
            stale.append(f"{rel}: {sorted(left - found)}")
    assert not new, "shared code reads a protocol's tables (move it to the protocol's storage):\n" + "\n".join(new)
    assert not stale, "TABLES_LEFT lists tables the code no longer reads (remove them):\n" + "\n".join(stale)
