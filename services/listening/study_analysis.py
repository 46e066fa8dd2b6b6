"""`app.py analyze listening`: the listening test's MOS per condition, or MUSHRA's statistics
after BS.1534-3's post-screening (services/listening/analysis.py), of a stored study or of its
export (the spec's analyze hook)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.listening import analysis
from services.listening.protocol import answer_rows, outcome_rows, score_rows
from services.listening.stimuli import ANSWERS, METHODS, NAME, OUTCOMES, SCORES
from services.study import export_reader
from storage.studies import get_study

ANSWER_COLUMNS = ("assignment_id", "participant", "kind", "condition", "method", "score")
OUTCOME_COLUMNS = ("participant", "check", "passed", "right", "total")
SCORE_COLUMNS = ("assignment_id", "participant", "item_id", "condition", "anchor", "position", "score")


def add_analyze(asub) -> None:
    p = asub.add_parser(
        "listening", help="listening test: MOS (DMOS, CMOS) with 95% intervals (P.808), or MUSHRA (BS.1534-3)"
    )
    p.add_argument("export", nargs="?", help="a study's export (`app.py export`: its folder)")
    p.add_argument("--study", help="analyse this imported study's answers instead of an export")
    p.add_argument("--out", required=True, help="folder for the CSV tables")
    p.add_argument(
        "--keep-failed", action="store_true", help="keep the listeners who failed a check (left out by default)"
    )
    p.add_argument("--anchor", default="", help="MUSHRA: the anchor condition post-screened (the first anchor)")
    p.set_defaults(analyze=run)


@dataclass
class Frames:
    answers: pd.DataFrame
    outcomes: pd.DataFrame
    scores: pd.DataFrame
    method: str
    exclude: bool = True
    anchor: str = ""


def _frame(rows: list[dict], columns) -> pd.DataFrame:
    out = pd.DataFrame([{**r, "participant": r["participant__pid"]} for r in rows])
    return out if not out.empty else pd.DataFrame(columns=list(columns))


def stored_frames(database, study_id: str) -> Frames:
    """The stored answers, outcomes and MUSHRA scores in the export's shape, with the section's
    method, exclude_failed and mushra_anchor."""
    study = get_study(database, study_id)
    if study is None or NAME not in study["config"]:
        raise ValueError(f"study {study_id!r} has no listening test")
    section = study["config"][NAME]
    return Frames(
        _frame(answer_rows(database, study_id), ANSWER_COLUMNS),
        _frame(outcome_rows(database, study_id), OUTCOME_COLUMNS),
        _frame(score_rows(database, study_id), SCORE_COLUMNS),
        section["method"],
        bool(section["exclude_failed"]),
        section.get("mushra_anchor", ""),
    )


def export_frames(path) -> Frames:
    """The export's listening_answers, listening_outcomes and listening_scores."""
    export = export_reader.require(path)
    answers = export_reader.read_table(export, ANSWERS, ANSWER_COLUMNS)
    outcomes = export_reader.read_table(export, OUTCOMES, OUTCOME_COLUMNS)
    scores = export_reader.read_table(export, SCORES, SCORE_COLUMNS)
    answers["score"] = pd.to_numeric(answers["score"], errors="coerce")
    for c in ("passed", "right", "total"):
        outcomes[c] = pd.to_numeric(outcomes[c])
    for c in ("anchor", "position", "score"):
        scores[c] = pd.to_numeric(scores[c])
    methods = sorted({m for m in answers["method"] if isinstance(m, str) and m in METHODS})
    if len(methods) > 1:
        raise ValueError(f"the export's listening answers are on several scales: {', '.join(methods)}")
    return Frames(answers, outcomes, scores, methods[0] if methods else "acr")


def results(frames: Frames, keep_failed: bool = False, anchor: str = "") -> analysis.Results:
    keep = keep_failed or not frames.exclude
    if frames.method == "mushra":
        return analysis.mushra_results(frames.scores, frames.outcomes, anchor or frames.anchor, keep_failed=keep)
    return analysis.results(frames.answers, frames.outcomes, frames.method, keep_failed=keep)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        frames = stored_frames(open_database(), args.study)
    elif args.export:
        frames = export_frames(args.export)
    else:
        raise ValueError(f"analyze {NAME} needs an export (its folder) or --study STUDY_ID")
    res = results(frames, args.keep_failed, getattr(args, "anchor", ""))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(out, res.tables())
    first, *rest = res.lines()
    return "\n".join([f"{first}; tables in {out}", *rest])
