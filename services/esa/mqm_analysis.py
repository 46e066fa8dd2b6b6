"""`app.py analyze mqm`: the MQM analysis of a stored study or of its export (the MQM spec's
analyze hook): per system the MQM score (the mean over its segments of the segment's mean over
annotators; lower is better) ranked with significance clusters (services/esa/mqm.py,
services/common/ranking.py), z-scores per annotator, and a category x severity breakdown
(services/esa/analysis.py category_breakdown).

The weights: a stored study's own taxonomy (read in at import); for an export, --taxonomy (a file
of the form of assets/mqm_taxonomy.toml; default that file). Each answer's MQM score is computed
again from its spans and must equal the score stored with it: a difference means other weights
than the study's, and is refused naming the first answers that differ."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.esa import analysis, mqm
from services.esa.mqm_protocol import CORPUS, NAME, SCORE, answer_rows, taxonomy_of
from services.esa.spans import span_of_record
from services.esa.taxonomy import Taxonomy, load_taxonomy
from services.study import export_reader
from storage import studies
from storage.db import required

NEEDED = ("participant", "system", "doc_id", "segment_id", SCORE, "spans")


def add_analyze(asub) -> None:
    p = asub.add_parser("mqm", help="MQM (Freitag et al. 2021): system scores, z-scores, clusters, categories")
    p.add_argument("export", nargs="?", help="a study's export (`app.py export`: its folder or its mqm_answers file)")
    p.add_argument("--study", help="analyse this imported study's answers instead of an export")
    p.add_argument("--out", required=True, help="folder for the CSV tables")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the clusters (WMT: 0.05)")
    p.add_argument("--taxonomy", help="the study's taxonomy file, for an export (default: assets/mqm_taxonomy.toml)")
    p.set_defaults(analyze=run)


def judgments_of_rows(rows: list[dict]) -> pd.DataFrame:
    """The analysis's input (annotator, system, segment_id, stored, spans) from the answers as the
    export writes them: a segment is its document and id (two documents may reuse an id)."""
    return pd.DataFrame(
        {
            "annotator": [str(r["participant"]) for r in rows],
            "system": [str(r["system"]) for r in rows],
            "segment_id": [f"{r['doc_id']}/{r['segment_id']}" for r in rows],
            "stored": [float(r[SCORE]) for r in rows],
            "spans": [
                [span_of_record(s) for s in (json.loads(r["spans"]) if isinstance(r["spans"], str) else r["spans"])]
                for r in rows
            ],
        },
        columns=["annotator", "system", "segment_id", "stored", "spans"],
    )


def scored(judgments: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    """The judgments with their MQM score from the spans (``mqm``) and its z over the annotator's
    judgments (``z``: sample sd; NaN for an annotator with one judgment or sd 0), or a ValueError
    where a score differs from the one stored."""
    j = mqm.score_judgments(judgments, taxonomy.weights)
    off = j.index[[not math.isclose(a, b, abs_tol=1e-9) for a, b in zip(j["mqm"], j["stored"])]]
    if len(off):
        shown = ", ".join(f"row {i} (stored {j.at[i, 'stored']:g}, computed {j.at[i, 'mqm']:g})" for i in off[:5])
        raise ValueError(
            f"{len(off)} answers' MQM scores differ from their spans weighted by {taxonomy.where}: {shown}; "
            "give the study's taxonomy file (--taxonomy)"
        )
    j["z"] = analysis.zscores(j.assign(score=j["mqm"]))
    return j


def annotator_table(j: pd.DataFrame) -> pd.DataFrame:
    g = j.groupby("annotator", sort=True)["mqm"]
    return pd.DataFrame({"n_judgments": g.size(), "mean": g.mean(), "std": g.std(ddof=1)}).reset_index()


def analyse(judgments: pd.DataFrame, taxonomy: Taxonomy, out: Path, alpha: float = 0.05) -> str:
    """The tables written to out (systems.csv, segments.csv, annotators.csv, judgments.csv,
    categories.csv) and a summary: systems ranked, annotators, the categories' errors."""
    if judgments.empty:
        raise ValueError("there are no MQM answers to analyse")
    if not 0 < alpha <= 0.5:
        raise ValueError(f"the significance level (alpha) must be above 0 and at most 0.5, not {alpha!r}")
    j = scored(judgments, taxonomy)
    systems = mqm.system_scores(judgments, taxonomy.weights, alpha=alpha)
    seg_z = j.groupby(["system", "segment_id"])["z"].mean().groupby("system").mean()
    systems["z_mean"] = systems["system"].map(seg_z)
    annotators = annotator_table(j)
    categories = analysis.category_breakdown(j, taxonomy.weights)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(
        out,
        {
            "systems.csv": systems,
            "segments.csv": mqm.segment_scores(judgments, taxonomy.weights),
            "annotators.csv": annotators,
            "judgments.csv": j[["annotator", "system", "segment_id", "mqm", "z"]],
            "categories.csv": categories,
        },
    )
    lines = [
        f"MQM: {len(j)} judgments by {j['annotator'].nunique()} annotators, {len(systems)} systems "
        f"(lower is better; clusters at p < {alpha:g}; weights {taxonomy.where}); tables in {out}"
    ]
    for r in systems.itertuples():
        z = "" if pd.isna(r.z_mean) else f", z {r.z_mean:+.3f}"
        lines.append(f"  {r.rank}. {r.system}: {r.mqm:.2f}{z} (cluster {r.cluster}, {r.n_segments} segments)")
    lines.append("annotators (MQM mean, sd):")
    for a in annotators.itertuples():
        sd = "" if pd.isna(a.std) else f", sd {a.std:.2f}"
        lines.append(f"  {a.annotator}: {a.mean:.2f}{sd} ({a.n_judgments} judgments)")
    if not categories.empty:
        lines.append("errors by category and severity (all systems):")
        sev = [s for s in taxonomy.severities if s in categories]
        total = categories.groupby("category")[sev].sum()
        for cat, row in total.iterrows():
            lines.append(f"  {cat}: " + ", ".join(f"{s} {int(row[s])}" for s in sev))
    return "\n".join(lines)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        database = open_database()
        taxonomy = taxonomy_of(required(studies.get_study(database, args.study), "study")["config"])
        rows = [{**r, "participant": r["participant__pid"]} for r in answer_rows(database, args.study)]
    elif args.export:
        taxonomy = load_taxonomy(getattr(args, "taxonomy", None))
        export = export_reader.require(args.export)
        rows = export_reader.read_table(export, CORPUS.answers, NEEDED).to_dict("records")
    else:
        raise ValueError(f"analyze {NAME} needs an export (folder or its {CORPUS.answers} file) or --study STUDY_ID")
    return analyse(judgments_of_rows(rows), taxonomy, Path(args.out), alpha=args.alpha)
