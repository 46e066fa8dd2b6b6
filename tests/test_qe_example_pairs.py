"""The QE audit's example pairs (docs/qe-audit-en-pt/example-pairs.csv, issue 51: a newcomer had no
file to try `analyze qe-audit` on): the file reads as the audit's input and the command the
README gives runs on it with the offline default metric, writing the tables it promises."""

from __future__ import annotations

import csv
from pathlib import Path

from services.qe.audit import read_pairs
from tests.helpers.app import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "qe-audit-en-pt" / "example-pairs.csv"


def test_the_example_is_a_valid_unambiguous_audit_input():
    pairs = read_pairs(EXAMPLE)
    assert len(pairs) == 12 and set(pairs["lang"]) == {"pt"}
    assert sorted(pairs["gold"].value_counts().items()) == [("F", 6), ("M", 6)]
    assert (pairs["hyp_f"] != pairs["hyp_m"]).all()
    assert "example-pairs.csv" in (EXAMPLE.parent / "README.md").read_text()


def test_the_readmes_command_runs_on_it(tmp_path):
    out = tmp_path / "qe-example"
    res = run_cli("analyze", "qe-audit", EXAMPLE, "--out", out, "--resamples", "50", "--no-cache")
    assert res.returncode == 0, res.stderr
    with open(out / "errors.csv", newline="") as f:
        rows = {r["lang"]: r for r in csv.DictReader(f)}
    assert int(rows["pt"]["n"]) == 12, rows["pt"]
    assert (out / "ratios.csv").exists() and (out / "summary.json").exists()
