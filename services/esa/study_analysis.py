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
from services.esa import attention, prefill_store, results
from services.esa.answers import segment_rows
from services.esa.corpus import ANSWERS, ESA, NAME, SEGMENTS
from services.esa.prefill import OUTCOMES
from services.study import export_reader
from storage import studies

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
    """The study's answers the analysis reads (attention.analysed: no attention or practice item,
    no failed HIT's unless keep_failed) as the export has them (the annotator by internal id,
    ESA-AI's outcome columns), each with its segment's target."""
    target = {s["segment_row"]: s["target"] for s in segment_rows(database, study_id)}
    rows = [
        {**r, "participant": r["participant__pid"], "target": target.get(r["segment_row"])}
        for r in prefill_store.answer_rows(database, study_id)
    ]
    return attention.analysed(rows)


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
    return attention.analysed(rows)


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
    note = None
    if args.study:
        database = open_database()
        rows = stored_rows(database, args.study)
        study = studies.get_study(database, args.study)
        note = attention.qc_note(database, ESA, args.study, study["config"][NAME]) if study else None
    elif args.export:
        rows = export_rows(args.export)
    else:
        raise ValueError(f"analyze {NAME} needs an export (folder or its {ANSWERS} file) or --study STUDY_ID")
    summary = analyse(rows, Path(args.out), alpha=args.alpha, by=args.by)
    return summary + (f"\n{note}" if note else "") + prefill_summary(rows, Path(args.out))


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


def prefill_line(table: pd.DataFrame) -> str:
    """ESA-AI's line of the summary from prefill_outcomes' table (not empty), as the CLI, the
    Analysis tab and the report say it."""
    a = table[table["system"] == "all"].iloc[0]
    n = int(a["n_prefilled"])
    parts = ", ".join(f"{o} {int(a[f'prefill_{o}'])}" + (f" ({a[f'share_{o}']:.0%})" if n else "") for o in OUTCOMES)
    return (
        f"ESA-AI: {n} pre-filled spans in {int(a['answers'])} answers: {parts}; "
        f"{int(a['n_added'])} spans added by annotators (per system: prefill.csv)"
    )


def prefill_summary(rows: list[dict], out: Path) -> str:
    """The ESA-AI lines of the summary, prefill.csv written; "" for plain ESA."""
    table = prefill_outcomes(rows)
    if table.empty:
        return ""
    write_tables(out, {"prefill.csv": table})
    return "\n" + prefill_line(table)
