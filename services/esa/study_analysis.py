"""`app.py analyze esa`: the ESA analysis (services/esa/results.py: z-scores, system scores,
rankings with significance clusters, error breakdowns, agreement) of a stored study or of its
export (the ESA spec's analyze hook), the same figures as the Analysis tab's panel and the
report's part."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.esa import results
from services.esa.answers import answer_rows, segment_rows
from services.esa.corpus import ANSWERS, NAME, SEGMENTS
from services.study import export_reader

NEEDED = ("participant", "system", "doc_id", "segment_id", "score", "spans")


def add_analyze(asub) -> None:
    esa = asub.add_parser("esa", help="error span annotation (ESA, WMT 2024): system scores, z-scores, clusters")
    esa.add_argument("export", nargs="?", help="a study's export (`app.py export`: its folder or its esa_answers file)")
    esa.add_argument("--study", help="analyse this imported study's answers instead of an export")
    esa.add_argument("--out", required=True, help="folder for the CSV tables")
    esa.add_argument("--alpha", type=float, default=0.05, help="significance level of the clusters (WMT: 0.05)")
    esa.add_argument("--by", choices=["mean", "z"], default="mean", help="rank systems by the mean raw score or z")
    esa.set_defaults(analyze=run)


def stored_rows(database, study_id: str) -> list[dict]:
    """The study's answers as the export has them (the annotator by internal id), each with its
    segment's target."""
    target = {s["segment_row"]: s["target"] for s in segment_rows(database, study_id)}
    return [
        {**r, "participant": r["participant__pid"], "target": target.get(r["segment_row"])}
        for r in answer_rows(database, study_id)
    ]


def export_rows(path) -> list[dict]:
    """The answers of an export (its folder or its esa_answers file, any format the export
    writes), each with its segment's target where the export has esa_segments (the span
    agreement's output length)."""
    export = export_reader.require(path)
    frame = export_reader.read_table(export, ANSWERS, NEEDED)
    frame["score"] = pd.to_numeric(frame["score"], errors="coerce")
    rows = frame.to_dict("records")
    if export.has(SEGMENTS) and "segment_row" in frame:
        segs = export_reader.read_table(export, SEGMENTS, ("segment_row", "target"))
        target = dict(zip(segs["segment_row"], segs["target"]))
        for r in rows:
            if r["segment_row"] in target:
                r["target"] = target[r["segment_row"]]
    return rows


def analyse(rows: list[dict], out: Path, alpha: float = 0.05, by: str = "mean") -> str:
    """The tables written to out (systems.csv, segments.csv, head_to_head.csv, severities.csv,
    agreement.csv, agreement_pairs.csv) and the summary services/esa/results.py says, which the
    Analysis tab and the report show too."""
    res = results.results(rows, alpha=alpha, by=by)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(out, tables(res))
    first, *rest = res.lines()
    return "\n".join([f"{first}; tables in {out}", *rest])


def tables(res: results.Results) -> dict:
    """The analysis's CSV files by name."""
    return {
        "systems.csv": res.systems,
        "segments.csv": res.result.segments,
        "head_to_head.csv": res.result.head_to_head,
        "severities.csv": res.severities,
        "agreement.csv": res.agreement.table(),
        "agreement_pairs.csv": res.agreement.pairs,
    }


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        rows = stored_rows(open_database(), args.study)
    elif args.export:
        rows = export_rows(args.export)
    else:
        raise ValueError(f"analyze {NAME} needs an export (folder or its {ANSWERS} file) or --study STUDY_ID")
    return analyse(rows, Path(args.out), alpha=args.alpha, by=args.by)
