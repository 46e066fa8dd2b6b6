"""MQM's results of one study (Freitag et al. 2021), computed once here so that `app.py analyze
mqm`, the Analysis tab's MQM panel and the study report's MQM part (services/report/mqm.py) give
the same figures: per system the MQM score (the mean over its segments of the segment's mean over
annotators; lower is better) ranked with significance clusters (services/esa/mqm.py ranked,
services/common/ranking.py), z-scores per annotator, a category x severity breakdown
(services/esa/analysis.py category_breakdown) and the agreement between annotators where segments
have several (services/esa/results.py agreement: character-level F1 of the spans without and
with severities and categories, Krippendorff's alpha, interval level, on the segments' MQM
scores), or the sentence saying that no segment has two annotators.

The weights: a stored study's own taxonomy (read in at import); for an export, --taxonomy (a file
of the form of assets/mqm_taxonomy.toml; default that file). Each answer's MQM score is computed
again from its spans and must equal the score stored with it: a difference means other weights
than the study's, and is refused naming the first answers that differ."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.analysis_output import write_tables
from services.common.vocabulary import count
from services.esa import analysis, attention, mqm, results
from services.esa.mqm_protocol import CORPUS, NAME, SCORE, answer_rows, segment_rows, taxonomy_of
from services.esa.taxonomy import Taxonomy, load_taxonomy
from services.study import export_reader
from storage import studies
from storage.db import required

NEEDED = ("participant", "system", "doc_id", "segment_id", SCORE, "spans")
SYSTEM_COLUMNS = [*mqm.SYSTEM_COLUMNS[:4], "z_mean", *mqm.SYSTEM_COLUMNS[4:]]
SCORES = "segments' MQM scores"  # what the agreement's alpha is computed on, as it names it


def add_analyze(asub) -> None:
    p = asub.add_parser("mqm", help="MQM (Freitag et al. 2021): system scores, z-scores, clusters, categories")
    p.add_argument("export", nargs="?", help="a study's export (`app.py export`: its folder or its mqm_answers file)")
    p.add_argument("--study", help="analyse this imported study's answers instead of an export")
    p.add_argument("--out", required=True, help="folder for the CSV tables")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the clusters (WMT: 0.05)")
    p.add_argument("--taxonomy", help="the study's taxonomy file, for an export (default: assets/mqm_taxonomy.toml)")
    p.set_defaults(analyze=run)


@dataclass
class MQMResults:
    judgments: pd.DataFrame  # annotator, system, segment_id, stored, spans, length, mqm, z
    systems: pd.DataFrame  # SYSTEM_COLUMNS, best (lowest MQM) first
    segments: pd.DataFrame  # mqm.SEGMENT_COLUMNS
    head_to_head: pd.DataFrame  # ranking.PAIR_COLUMNS: the tests behind the clusters
    annotators: pd.DataFrame  # annotator, n_judgments, mean, std (their z's mean and sd)
    categories: pd.DataFrame  # per system and category: errors per severity, n_errors, penalty_per_judgment
    agreement: results.Agreement
    taxonomy: Taxonomy
    alpha: float

    def lines(self) -> list[str]:
        """The summary: judgments, each system ranked with its cluster, the annotators, the errors by
        category and severity, the agreement (last)."""
        j = self.judgments
        out = [
            f"MQM: {count(len(j), 'judgment')} by {count(j['annotator'].nunique(), 'annotator')}, "
            f"{count(len(self.systems), 'system')} "
            f"(lower is better; clusters at p < {self.alpha:g}; weights {self.taxonomy.where})"
        ]
        for r in self.systems.itertuples():
            z = "" if pd.isna(r.z_mean) else f", z {r.z_mean:+.3f}"
            out.append(f"  {r.rank}. {r.system}: {r.mqm:.2f}{z} (cluster {r.cluster}, {r.n_segments} segments)")
        out.append("annotators (MQM mean, sd):")
        for a in self.annotators.itertuples():
            sd = "" if pd.isna(a.std) else f", sd {a.std:.2f}"
            out.append(f"  {a.annotator}: {a.mean:.2f}{sd} ({a.n_judgments} judgments)")
        if not self.categories.empty:
            out.append("errors by category and severity (all systems):")
            sev = self.severities()
            total = self.categories.groupby("category")[sev].sum()
            for cat, row in total.iterrows():
                out.append(f"  {cat}: " + ", ".join(f"{s} {int(row[s])}" for s in sev))
        out.append(self.agreement.line())
        return out

    def severities(self) -> list[str]:
        """The breakdown's severity columns: the taxonomy's, in its order, then any other found."""
        fixed = {"system", "category", "n_errors", "penalty_per_judgment"}
        return [c for c in self.categories.columns if c not in fixed]


def judgments_of_rows(rows: list[dict]) -> pd.DataFrame:
    """The analysis's input (annotator, system, segment_id, stored, spans, length) from the answers
    as the export writes them (services/esa/results.py judgments_of_rows, the score the stored
    MQM): a segment is its document and id (two documents may reuse an id)."""
    j = results.judgments_of_rows(rows, score=SCORE).rename(columns={"score": "stored"})
    j["stored"] = pd.to_numeric(j["stored"], errors="coerce").astype(float)
    return j


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


def category_table(j: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    """analysis.category_breakdown with a column for each of the taxonomy's severities (0 where
    none was marked), in the taxonomy's order."""
    out = analysis.category_breakdown(j, taxonomy.weights)
    found = [c for c in out.columns if c not in ("system", "category", "n_errors", "penalty_per_judgment")]
    sev = list(taxonomy.severities) + [s for s in found if s not in taxonomy.severities]
    for s in sev:
        out[s] = out[s].astype(int) if s in out else 0
    return out[["system", "category", *sev, "n_errors", "penalty_per_judgment"]]


def mqm_results(rows: list[dict], taxonomy: Taxonomy, alpha: float = 0.05) -> MQMResults:
    """The study's results from its answers' rows (the export's mqm_answers columns, optionally
    target: the output, for the span agreement's length); a ValueError when there are none."""
    if not rows:
        raise ValueError("there are no MQM answers to analyse")
    if not 0 < alpha <= 0.5:
        raise ValueError(f"the significance level (alpha) must be above 0 and at most 0.5, not {alpha!r}")
    judgments = judgments_of_rows(rows)
    j = scored(judgments, taxonomy)
    systems, pairs = mqm.ranked(judgments, taxonomy.weights, alpha=alpha)
    seg_z = j.groupby(["system", "segment_id"])["z"].mean().groupby("system").mean()
    systems["z_mean"] = systems["system"].map(seg_z).astype(float)
    return MQMResults(
        judgments=j,
        systems=systems[SYSTEM_COLUMNS],
        segments=mqm.segment_scores(judgments, taxonomy.weights),
        head_to_head=pairs,
        annotators=annotator_table(j),
        categories=category_table(j, taxonomy),
        agreement=results.agreement(j.assign(score=j["mqm"]), categories=True, scores=SCORES),
        taxonomy=taxonomy,
        alpha=alpha,
    )


def tables(res: MQMResults) -> dict:
    """The analysis's CSV files by name."""
    return {
        "systems.csv": res.systems,
        "segments.csv": res.segments,
        "head_to_head.csv": res.head_to_head,
        "annotators.csv": res.annotators,
        "judgments.csv": res.judgments[["annotator", "system", "segment_id", "mqm", "z"]],
        "categories.csv": res.categories,
        "agreement.csv": res.agreement.table(),
        "agreement_pairs.csv": res.agreement.pairs,
    }


def analyse(rows: list[dict], taxonomy: Taxonomy, out: Path, alpha: float = 0.05) -> str:
    """The tables written to out (tables()) and the summary MQMResults.lines says, which the
    Analysis tab and the report show too."""
    res = mqm_results(rows, taxonomy, alpha)
    out.mkdir(parents=True, exist_ok=True)
    write_tables(out, tables(res))
    first, *rest = res.lines()
    return "\n".join([f"{first}; tables in {out}", *rest])


def stored_rows(database, study_id: str) -> list[dict]:
    """The study's answers as the export has them (the annotator by internal id), each with its
    segment's target."""
    target = {s["segment_row"]: s["target"] for s in segment_rows(database, study_id)}
    rows = [
        {**r, "participant": r["participant__pid"], "target": target.get(r["segment_row"])}
        for r in answer_rows(database, study_id)
    ]
    return attention.analysed(rows)  # no attention or practice item, no failed HIT (keep_failed aside)


def export_rows(path) -> list[dict]:
    """The answers of an export (its folder or its mqm_answers file), each with its segment's
    target where the export has mqm_segments (the span agreement's output length; without it the
    spans bound the length, which gives the same F1)."""
    export = export_reader.require(path)
    frame = export_reader.read_table(export, CORPUS.answers, NEEDED)
    rows = frame.to_dict("records")
    if export.has(CORPUS.segments) and "segment_row" in frame:
        segs = export_reader.read_table(export, CORPUS.segments, ("segment_row", "target"))
        target = dict(zip(segs["segment_row"], segs["target"]))
        for r in rows:
            if r["segment_row"] in target:
                r["target"] = target[r["segment_row"]]
    return attention.analysed(rows)


def run(args: argparse.Namespace, open_database: Callable) -> str:
    if args.study:
        database = open_database()
        taxonomy = taxonomy_of(required(studies.get_study(database, args.study), "study")["config"])
        rows = stored_rows(database, args.study)
    elif args.export:
        taxonomy = load_taxonomy(getattr(args, "taxonomy", None))
        rows = export_rows(args.export)
    else:
        raise ValueError(f"analyze {NAME} needs an export (folder or its {CORPUS.answers} file) or --study STUDY_ID")
    return analyse(rows, taxonomy, Path(args.out), alpha=args.alpha)
