"""`app.py analyze listening`: the listening test's MOS per condition (services/listening/analysis.py)
of a stored study or of its export (the spec's analyze hook)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.listening import analysis
from services.listening.protocol import answer_rows, outcome_rows
from services.listening.stimuli import ANSWERS, METHODS, NAME, OUTCOMES
from services.study import export_reader
from storage.studies import get_study

ANSWER_COLUMNS = ("assignment_id", "participant", "kind", "condition", "method", "score")
OUTCOME_COLUMNS = ("participant", "check", "passed", "right", "total")


def add_analyze(asub) -> None:
    p = asub.add_parser("listening", help="listening test: MOS (DMOS, CMOS) per condition with 95% intervals (P.808)")
    p.add_argument("export", nargs="?", help="a study's export (`app.py export`: its folder)")
    p.add_argument("--study", help="analyse this imported study's answers instead of an export")
    p.add_argument("--out", required=True, help="folder for the CSV tables")
    p.add_argument(
        "--keep-failed", action="store_true", help="keep the listeners who failed a check (left out by default)"
    )
    p.set_defaults(analyze=run)


def _frame(rows: list[dict], columns) -> pd.DataFrame:
    out = pd.DataFrame([{**r, "participant": r["participant__pid"]} for r in rows])
    return out if not out.empty else pd.DataFrame(columns=list(columns))


def stored_frames(database, study_id: str) -> tuple[pd.DataFrame, pd.DataFrame, str, bool]:
    """The stored answers and outcomes in the export's shape, the method and exclude_failed."""
    study = get_study(database, study_id)
    if study is None or NAME not in study["config"]:
        raise ValueError(f"study {study_id!r} has no listening test")
    section = study["config"][NAME]
    answers = _frame(answer_rows(database, study_id), ANSWER_COLUMNS)
    outcomes = _frame(outcome_rows(database, study_id), OUTCOME_COLUMNS)
    return answers, outcomes, section["method"], bool(section["exclude_failed"])


def export_frames(path) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The export's listening_answers and listening_outcomes (any format the export writes)."""
    export = export_reader.require(path)
    answers = export_reader.read_table(export, ANSWERS, ANSWER_COLUMNS)
    outcomes = export_reader.read_table(export, OUTCOMES, OUTCOME_COLUMNS)
    answers["score"] = pd.to_numeric(answers["score"], errors="coerce")
    for c in ("passed", "right", "total"):
        outcomes[c] = pd.to_numeric(outcomes[c])
    methods = sorted({m for m in answers["method"] if isinstance(m, str) and m in METHODS})
    if len(methods) > 1:
        raise ValueError(f"the export's listening answers are on several scales: {', '.join(methods)}")
    return answers, outcomes, methods[0] if methods else "acr"


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        answers, outcomes, method, exclude = stored_frames(open_database(), args.study)
    elif args.export:
        answers, outcomes, method = export_frames(args.export)
        exclude = True
    else:
        raise ValueError(f"analyze {NAME} needs an export (its folder) or --study STUDY_ID")
    res = analysis.results(answers, outcomes, method, keep_failed=args.keep_failed or not exclude)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(out, res.tables())
    first, *rest = res.lines()
    return "\n".join([f"{first}; tables in {out}", *rest])
