"""docs/protocol-map.md names, for every rule of the design's PROTOCOLS.md, the one function
that enforces it (issue 19). These tests keep the map true: every `module:attr` it names
imports and resolves, every test file it names exists, and each of the protocol
sections has rows."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "protocol-map.md"
REF = re.compile(r"`([A-Za-z_][\w.]*):([A-Za-z_][\w.]*)`")
TEST_FILE = re.compile(r"tests/[\w/]+\.py")
# sections 1-4 are the four papers' protocols (each must have rows); later ones the issues' protocols
SECTION = re.compile(r"^## ([1-9])\. ")
# the four papers, ESA, MQM (issue 53), issue 54's statistics, side by side, listening tests
SECTIONS = ("1", "2", "3", "4", "5", "6", "7", "8", "9")


def _cells(line: str) -> list[str]:
    # split on pipes not escaped as \| (a rule may quote "c|s")
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def map_rows() -> list[dict]:
    """One dict per table row: section, line number, rule, refs [(module, attr)], tests."""
    rows, section = [], None
    for n, line in enumerate(MAP.read_text(encoding="utf-8").splitlines(), start=1):
        m = SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        if line.startswith("## "):
            section = None
            continue
        if not line.startswith("|") or set(line.replace("|", "").strip()) <= {"-", " "}:
            continue
        cells = _cells(line)
        if cells[0] == "Rule (short)":
            continue
        assert len(cells) == 3, f"line {n}: a row needs 3 cells (rule, function, test): {line}"
        rows.append(
            {
                "section": section,
                "line": n,
                "rule": cells[0],
                "refs": REF.findall(cells[1]),
                "tests": TEST_FILE.findall(cells[2]),
                "test_cell": cells[2],
            }
        )
    return rows


ROWS = map_rows()


def _row_id(row: dict) -> str:
    return f"line{row['line']}"


def resolve(module: str, attr: str):
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def test_the_map_has_rows_in_every_protocol_section():
    counts = {s: sum(1 for r in ROWS if r["section"] == s) for s in SECTIONS}
    assert all(counts.values()), f"sections without rows: {[s for s, c in counts.items() if not c]}"
    assert not [r for r in ROWS if r["section"] is None], "a table row outside the numbered protocol sections"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_each_row_names_exactly_one_enforcer_that_resolves(row):
    where = f"docs/protocol-map.md line {row['line']} ({row['rule'][:60]!r})"
    assert len(row["refs"]) == 1, f"{where}: needs exactly one `module:attr`, found {row['refs']}"
    module, attr = row["refs"][0]
    try:
        resolve(module, attr)
    except (ImportError, AttributeError) as e:
        pytest.fail(f"{where}: `{module}:{attr}` does not resolve: {type(e).__name__}: {e}")


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_each_rows_test_file_exists(row):
    where = f"docs/protocol-map.md line {row['line']} ({row['rule'][:60]!r})"
    if not row["tests"]:
        assert row["test_cell"].lower() == "none", f"{where}: the Test cell names no tests/*.py and is not 'none'"
        return
    missing = [t for t in row["tests"] if not (ROOT / t).is_file()]
    assert not missing, f"{where}: test file(s) not found: {missing}"


def test_the_parser_reads_the_reference_format():
    assert REF.findall("`services.da.hits:span_length` and `services.models.systems:Direct.translate_audio`") == [
        ("services.da.hits", "span_length"),
        ("services.models.systems", "Direct.translate_audio"),
    ]
    assert _cells(r"| mon = QE(c\|s) | `a.b:c` | none |") == [r"mon = QE(c\|s)", "`a.b:c`", "none"]
