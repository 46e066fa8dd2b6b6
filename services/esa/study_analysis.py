"""`app.py analyze esa`: the ESA analysis (services/esa/analysis.py: z-scores, system scores,
rankings with significance clusters, error breakdowns) of a stored study or of its export (the
ESA spec's analyze hook)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.esa import analysis
from services.esa.answers import answer_rows
from services.esa.corpus import ANSWERS, NAME
from services.esa.prefill import OUTCOMES
from services.esa.spans import Span
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


def judgments_of_rows(rows: list[dict]) -> pd.DataFrame:
    """The analysis's input (annotator, system, segment_id, score, spans) from the answers as the
    export writes them: a segment is its document and id (two documents may reuse an id)."""
    return pd.DataFrame(
        {
            "annotator": [str(r["participant"]) for r in rows],
            "system": [str(r["system"]) for r in rows],
            "segment_id": [f"{r['doc_id']}/{r['segment_id']}" for r in rows],
            "score": [r["score"] for r in rows],
            "spans": [
                [Span.from_dict(s) for s in (json.loads(r["spans"]) if isinstance(r["spans"], str) else r["spans"])]
                for r in rows
            ],
        },
        columns=["annotator", "system", "segment_id", "score", "spans"],
    )


def stored_rows(database, study_id: str) -> list[dict]:
    """The study's answers as the export has them (the annotator by internal id)."""
    return [{**r, "participant": r["participant__pid"]} for r in answer_rows(database, study_id)]


def analyse(judgments: pd.DataFrame, out: Path, alpha: float = 0.05, by: str = "mean") -> str:
    """The tables written to out (systems.csv, segments.csv, head_to_head.csv, severities.csv)
    and a summary: systems ranked, with their cluster."""
    if judgments.empty:
        raise ValueError("there are no ESA answers to analyse")
    result = analysis.analyze(judgments, alpha=alpha, by=by)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(
        out,
        {
            "systems.csv": result.systems,
            "segments.csv": result.segments,
            "head_to_head.csv": result.head_to_head,
            "severities.csv": analysis.severity_breakdown(judgments),
        },
    )
    lines = [
        f"ESA: {len(judgments)} judgments by {judgments['annotator'].nunique()} annotators, "
        f"{result.systems.shape[0]} systems (ranked by {'mean score' if by == 'mean' else 'mean z'}, "
        f"clusters at p < {alpha:g}); tables in {out}"
    ]
    for r in result.systems.itertuples():
        z = "" if pd.isna(r.z_mean) else f", z {r.z_mean:+.3f}"
        lines.append(f"  {r.rank}. {r.system}: {r.mean:.1f}{z} (cluster {r.cluster}, {r.n_segments} segments)")
    return "\n".join(lines)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        rows = stored_rows(open_database(), args.study)
    elif args.export:
        export = export_reader.require(args.export)
        frame = export_reader.read_table(export, ANSWERS, NEEDED)
        frame["score"] = pd.to_numeric(frame["score"], errors="coerce")
        rows = frame.to_dict("records")
    else:
        raise ValueError(f"analyze {NAME} needs an export (folder or its {ANSWERS} file) or --study STUDY_ID")
    summary = analyse(judgments_of_rows(rows), Path(args.out), alpha=args.alpha, by=args.by)
    return summary + prefill_summary(rows, Path(args.out))


COUNTS = ("n_prefilled", *(f"prefill_{o}" for o in OUTCOMES), "n_added")


def prefill_outcomes(rows: list[dict]) -> pd.DataFrame:
    """ESA-AI: per system and overall, the pre-filled spans and what became of them (kept,
    severity changed, edited, deleted, each also as a share of the pre-filled spans) and the spans
    the annotators added; empty when no answer had pre-filled spans."""
    frame = pd.DataFrame([{"system": str(r["system"]), **{c: r.get(c) for c in COUNTS}} for r in rows])
    if frame.empty or any(c not in frame for c in COUNTS):
        return pd.DataFrame()
    for c in COUNTS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    frame = frame.dropna(subset=list(COUNTS))
    if frame.empty:
        return pd.DataFrame()
    table = pd.concat([frame.groupby("system")[list(COUNTS)].sum(), frame[list(COUNTS)].sum().to_frame("all").T])
    table.insert(0, "answers", [*frame.groupby("system").size(), len(frame)])
    for o in OUTCOMES:
        total = table["n_prefilled"].where(table["n_prefilled"] > 0)
        table[f"share_{o}"] = table[f"prefill_{o}"] / total
    return table.rename_axis("system").reset_index()


def prefill_summary(rows: list[dict], out: Path) -> str:
    """The ESA-AI lines of the summary, prefill.csv written; "" for plain ESA."""
    table = prefill_outcomes(rows)
    if table.empty:
        return ""
    write_tables(out, {"prefill.csv": table})
    a = table[table["system"] == "all"].iloc[0]
    n = int(a["n_prefilled"])
    parts = ", ".join(f"{o} {int(a[f'prefill_{o}'])}" + (f" ({a[f'share_{o}']:.0%})" if n else "") for o in OUTCOMES)
    return (
        f"\nESA-AI: {n} pre-filled spans in {int(a['answers'])} answers: {parts}; "
        f"{int(a['n_added'])} spans added by annotators (per system: prefill.csv)"
    )
