"""`app.py analyze sxs`: the side-by-side analysis (services/compare/analysis.py) of a stored
study or of its export (the spec's analyze hook)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.compare import analysis
from services.compare.corpus import ANSWERS, NAME, RATINGS
from services.compare.protocol import answer_rows, rating_rows
from services.study import export_reader

ANSWER_COLUMNS = ("assignment_id", "participant", "item_id", "mode", "shown", "preferred", "best", "worst")
RATING_COLUMNS = ("assignment_id", "participant", "system", "position", "score", "rank")


def add_analyze(asub) -> None:
    p = asub.add_parser(
        "sxs", help="side by side: Bradley-Terry with bootstrap intervals, TrueSkill, win rates, position bias"
    )
    p.add_argument("export", nargs="?", help="a study's export (`app.py export`: its folder)")
    p.add_argument("--study", help="analyse this imported study's answers instead of an export")
    p.add_argument("--out", required=True, help="folder for the CSV tables")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples of whole items (1000)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's and TrueSkill's seed")
    p.set_defaults(analyze=run)


def stored_frames(database, study_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored answers in the export's shape (the annotator by internal id)."""
    answers = pd.DataFrame([{**r, "participant": r["participant__pid"]} for r in answer_rows(database, study_id)])
    ratings = pd.DataFrame([{**r, "participant": r["participant__pid"]} for r in rating_rows(database, study_id)])
    if answers.empty:
        answers = pd.DataFrame(columns=list(ANSWER_COLUMNS))
    if ratings.empty:
        ratings = pd.DataFrame(columns=list(RATING_COLUMNS))
    return answers, ratings


def export_frames(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The export's sxs_answers and sxs_ratings (any format the export writes), numbers read back."""
    export = export_reader.require(path)
    answers = export_reader.read_table(export, ANSWERS, ANSWER_COLUMNS)
    if "x" not in answers:  # an export made before abx mode
        answers["x"] = ""
    ratings = export_reader.read_table(export, RATINGS, RATING_COLUMNS)
    for c in ("assignment_id",):
        answers[c] = pd.to_numeric(answers[c])
    for c in ("assignment_id", "position"):
        ratings[c] = pd.to_numeric(ratings[c])
    for c in ("score", "rank"):
        ratings[c] = pd.to_numeric(ratings[c], errors="coerce")
    return answers, ratings


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        answers, ratings = stored_frames(open_database(), args.study)
    elif args.export:
        answers, ratings = export_frames(args.export)
    else:
        raise ValueError(f"analyze {NAME} needs an export (its folder) or --study STUDY_ID")
    res = analysis.results(answers, ratings, n_boot=args.boot, seed=args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(out, res.tables())
    first, *rest = res.lines()
    return "\n".join([f"{first}; tables in {out}", *rest])
