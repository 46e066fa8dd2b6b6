"""ESA's results of one study, from plain rows: what the Analysis tab's panel shows, the study
report's part holds and `app.py analyze esa` prints, computed once here so the three agree.

Input: one dict per answer, as the export's esa_answers has them (participant, system, doc_id,
segment_id, score, spans as a list or its JSON) and, optionally, target (the output, from
esa_segments); the stored study's rows come from services/esa/answers.py. Nothing here reads
ESA's tables, so a protocol with the same span record passes its own rows: MQM's
(services/esa/mqm_analysis.py) name their score column (judgments_of_rows' score) and ask the
agreement for its categories too (agreement's categories, scores).

* systems: services/esa/analysis.py (per-annotator z as WMT's, mean over segments of the
  segment's mean, rank, significance clusters of services/common/ranking.py).
* severities: spans per severity and system (analysis.severity_breakdown).
* agreement, over the (system, segment) pairs that two or more annotators judged: span
  agreement as character-level F1 (services/esa/agreement.char_f1, without and with severities,
  and, for MQM, with categories; on an output's audio the same F1 of the seconds marked,
  agreement.time_f1), its mean over every pair of annotators of a segment, spans
  marked in the source (MQM's Source error) left out; score agreement as Krippendorff's alpha,
  interval level, on the scores (ESA's 0-100, MQM's segment scores; services/common/agreement.py),
  a unit being a (system, segment). Where no segment has two annotators, each says so instead of
  a number.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import combinations

import pandas as pd

from services.common.agreement import krippendorff_alpha
from services.common.vocabulary import count
from services.esa import analysis
from services.esa.agreement import PAIR_COLUMNS, pair_f1
from services.esa.spans import Span, TimeSpan, span_of_record

NO_SHARED = (
    "No segment has two annotators yet: agreement needs segments judged by two or more annotators "
    "(more annotators than HITs, so that a HIT is annotated twice)."
)
AGREEMENT_COLUMNS = ["measure", "value", "segments", "pairs"]


@dataclass
class Agreement:
    shared_segments: int  # (system, segment) judged by two or more annotators
    pairs: pd.DataFrame  # PAIR_COLUMNS: one row per pair of annotators of a segment
    f1: float  # mean char F1 over the pairs (NaN without pairs)
    f1_severity: float
    alpha: float  # Krippendorff's alpha, interval, on the scores (NaN when not estimable)
    why: str = ""  # why there is no agreement to report ("" when there is)
    f1_category: float = math.nan  # mean char F1 with categories (categories=True only)
    categories: bool = False  # whether the spans carry categories (MQM): the F1 with them is reported
    scores: str = "0-100 scores"  # what alpha is computed on, as the table and the line name it
    timed: bool = False  # some outputs are audio, their spans in seconds: their F1 is of the seconds marked

    @property
    def f1_name(self) -> str:
        return "character-level F1 (seconds-level on audio outputs)" if self.timed else "character-level F1"

    def table(self) -> pd.DataFrame:
        """AGREEMENT_COLUMNS: the figures as the panel and the report show them, each with the
        segments (two or more annotators) and the pairs of annotators it rests on."""
        n, pairs = self.shared_segments, len(self.pairs)
        rows = [
            (f"span agreement: {self.f1_name}, mean over pairs", self.f1, n, pairs),
            (f"span agreement: {self.f1_name} with severities, mean over pairs", self.f1_severity, n, pairs),
        ]
        if self.categories:
            measure = f"span agreement: {self.f1_name} with categories, mean over pairs"
            rows.append((measure, self.f1_category, n, pairs))
        rows.append((f"score agreement: Krippendorff's alpha (interval, {self.scores})", self.alpha, n, pairs))
        return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)

    def line(self) -> str:
        if self.why:
            return f"Agreement: {self.why[0].lower()}{self.why[1:]}"
        alpha = "not estimable (no variation in the scores)" if math.isnan(self.alpha) else f"{self.alpha:.3f}"
        labelled = f"with severities {self.f1_severity:.3f}"
        if self.categories:
            labelled += f", with categories {self.f1_category:.3f}"
        return (
            f"Agreement: {self.shared_segments} segment(s) with two or more annotators, {len(self.pairs)} pair(s): "
            f"{'character F1 (seconds on audio)' if self.timed else 'character F1'} {self.f1:.3f} ({labelled}); "
            f"Krippendorff's alpha ({self.scores}, interval) {alpha}"
        )


@dataclass
class Results:
    judgments: pd.DataFrame  # annotator, system, segment_id, score, spans, length
    result: analysis.ESAResult
    severities: pd.DataFrame
    agreement: Agreement
    notes: list[str] = field(default_factory=list)

    @property
    def systems(self) -> pd.DataFrame:
        return self.result.systems

    @property
    def head_to_head(self) -> pd.DataFrame:
        """The tests behind the clusters, as MQM's results name them (the panels read both alike)."""
        return self.result.head_to_head

    def lines(self) -> list[str]:
        """The summary: judgments, each system ranked with its cluster, the agreement."""
        j, by = self.judgments, self.result.by
        out = [
            f"ESA: {count(len(j), 'judgment')} by {count(j['annotator'].nunique(), 'annotator')}, "
            f"{count(self.systems.shape[0], 'system')} "
            f"(ranked by {'mean score' if by == 'mean' else 'mean z'}, clusters at p < {self.result.alpha:g})"
        ]
        for r in self.systems.itertuples():
            z = "" if pd.isna(r.z_mean) else f", z {r.z_mean:+.3f}"
            out.append(f"  {r.rank}. {r.system}: {r.mean:.1f}{z} (cluster {r.cluster}, {r.n_segments} segments)")
        out.append(self.agreement.line())
        return out + self.notes  # e.g. ESA-AI's line (services/report/esa.py)


def _spans(value) -> list[Span | TimeSpan]:
    found = json.loads(value) if isinstance(value, str) else (value or [])
    return [s if isinstance(s, (Span, TimeSpan)) else span_of_record(s) for s in found]


def _length(row: dict, spans: list[Span | TimeSpan]) -> int:
    """The output's length in characters: the target's where the row has it, else the least length
    the spans allow (an omission's start is the output's length; without one, F1 never reads past
    the last span's end, so the figure is the same)."""
    target = row.get("target")
    if isinstance(target, str):
        return len(target)
    return max(
        [s.start if s.missing else s.end for s in spans if isinstance(s, Span) and s.side == "target"], default=0
    )


def judgments_of_rows(rows: list[dict], score: str = "score") -> pd.DataFrame:
    """annotator, system, segment_id (its document and id: two documents may reuse an id),
    score (the rows' `score` column: ESA's score, MQM's mqm), spans (Span), length (the output's
    characters) from the answers' rows."""
    spans = [_spans(r["spans"]) for r in rows]
    return pd.DataFrame(
        {
            "annotator": [str(r["participant"]) for r in rows],
            "system": [str(r["system"]) for r in rows],
            "segment_id": [f"{r['doc_id']}/{r['segment_id']}" for r in rows],
            "score": [r[score] for r in rows],
            "spans": spans,
            "length": [_length(r, s) for r, s in zip(rows, spans)],
        },
        columns=["annotator", "system", "segment_id", "score", "spans", "length"],
    )


def agreement(judgments: pd.DataFrame, *, categories: bool = False, scores: str = "0-100 scores") -> Agreement:
    """Char F1 per pair of annotators of a (system, segment) (with categories too where
    `categories`: a pairs column f1_category), and alpha on the scores (`scores` names them)."""
    rows = []
    shared = 0
    for (system, segment), g in judgments.groupby(["system", "segment_id"], sort=True):
        if g["annotator"].nunique() < 2:
            continue
        shared += 1
        length = int(g["length"].max())  # the same output: the larger bound where lengths came from spans
        # the output's only (a time span is always the output's audio)
        marked = [[s for s in spans if getattr(s, "side", "target") == "target"] for spans in g["spans"]]
        for (a, sa), (b, sb) in combinations(zip(g["annotator"], marked), 2):
            row = [system, segment, a, b, pair_f1(sa, sb, length), pair_f1(sa, sb, length, severity=True)]
            rows.append(row + [pair_f1(sa, sb, length, category=True)] if categories else row)
    pairs = pd.DataFrame(rows, columns=PAIR_COLUMNS + (["f1_category"] if categories else []))
    if not shared:
        return Agreement(0, pairs, math.nan, math.nan, math.nan, NO_SHARED, categories=categories, scores=scores)
    ratings = pd.DataFrame(
        {
            "unit": judgments["system"] + "\t" + judgments["segment_id"],
            "annotator": judgments["annotator"],
            "value": judgments["score"].astype(float),
        }
    )
    try:
        alpha = krippendorff_alpha(ratings, "interval")
    except (ValueError, ZeroDivisionError):
        alpha = math.nan  # every score the same: no expected disagreement to compare with
    f1_category = float(pairs["f1_category"].mean()) if categories else math.nan
    f1, f1_severity = float(pairs["f1"].mean()), float(pairs["f1_severity"].mean())
    timed = any(isinstance(s, TimeSpan) for spans in judgments["spans"] for s in spans)
    return Agreement(shared, pairs, f1, f1_severity, alpha, "", f1_category, categories, scores, timed)


def results(rows: list[dict], alpha: float = 0.05, by: str = "mean") -> Results:
    """The study's results from its answers' rows; a ValueError when there are none."""
    if not rows:
        raise ValueError("there are no ESA answers to analyse")
    judgments = judgments_of_rows(rows)
    result = analysis.analyze(judgments, alpha=alpha, by=by)
    return Results(judgments, result, analysis.severity_breakdown(judgments), agreement(result.judgments))
