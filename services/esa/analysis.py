"""ESA analysis (Kocmi et al., WMT 2024): system scores, annotator z-scores, rankings with
significance clusters, and breakdowns of the marked errors.

Input: one row per judgment with the columns annotator, system, segment_id, score (0-100) and,
for the breakdowns, spans (a list of Span; ESA-AI's pre-filled spans count as the annotator's
once kept).

* z-scores as WMT's: per annotator over all their judgments, z = (score - mean) / sd with the
  sample sd (ddof 1); an annotator with one judgment or sd 0 has no z (NaN), and leaves z_mean.
* systems: per segment the mean over its judgments, per system the mean over its segments (raw
  and z), ranked best first by the mean raw score (by="z": the mean z; ties by the other, then
  by name).
* head_to_head and clusters: services/common/ranking.py, one-sided rank-sum tests on the
  judgments' scores (raw, or z with by="z"), a cluster boundary after rank i when every system
  above beats every system below (p < alpha), as DA's analysis.
* breakdowns: per system, the spans per severity (omissions apart) and per judgment; per system
  and category (MQM), the count per severity and, given weights, the penalty per judgment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from services.common import ranking
from services.esa.spans import Span, TimeSpan
from services.esa.taxonomy import Weights

REQUIRED = ["annotator", "system", "segment_id", "score"]
SCORE_RANGE = (0.0, 100.0)
SYSTEM_COLUMNS = ["system", "n_judgments", "n_segments", "mean", "z_mean", "rank", "cluster"]
PAIR_COLUMNS = ranking.PAIR_COLUMNS


@dataclass
class ESAResult:
    judgments: pd.DataFrame  # the input with z
    segments: pd.DataFrame  # system, segment_id, n_judgments, mean, z_mean
    systems: pd.DataFrame  # SYSTEM_COLUMNS
    head_to_head: pd.DataFrame  # PAIR_COLUMNS
    alpha: float
    by: str


def check_judgments(df: pd.DataFrame) -> pd.DataFrame:
    """The judgments with numeric scores, or a ValueError naming the missing columns or the first
    rows whose score is not a number in 0-100."""
    missing = [c for c in REQUIRED if c not in df]
    if missing:
        raise ValueError(f"ESA judgments need the columns {', '.join(missing)}")
    out = df.copy()
    out["score"] = pd.to_numeric(out["score"], errors="coerce")
    lo, hi = SCORE_RANGE
    bad = out.index[~out["score"].between(lo, hi)]
    if len(bad):
        shown = ", ".join(
            f"row {i} ({v!r})" if isinstance(v, str) else f"row {i} ({v})" for i, v in df.loc[bad[:5], "score"].items()
        )
        raise ValueError(f"scores must be numbers from {lo:g} to {hi:g}: {shown}")
    return out


def zscores(df: pd.DataFrame) -> pd.Series:
    """Each judgment's z over its annotator's judgments (sample sd); NaN where the annotator has
    a single judgment or sd 0."""
    g = df.groupby("annotator")["score"]
    mean, sd = g.transform("mean"), g.transform(lambda s: s.std(ddof=1))
    z = (df["score"] - mean) / sd
    return z.where(sd > 0)


def system_scores(
    df: pd.DataFrame, alpha: float = 0.05, by: str = "mean", test: str = "mannwhitneyu"
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(segments, systems, head_to_head) of judgments that have a ``z`` column (analyze adds it)."""
    if by not in ("mean", "z"):
        raise ValueError(f"by must be 'mean' (raw scores) or 'z', not {by!r}")
    sg = df.groupby(["system", "segment_id"], sort=True)
    segments = pd.DataFrame({"n_judgments": sg.size(), "mean": sg["score"].mean(), "z_mean": sg["z"].mean()})
    segments = segments.reset_index()
    sy = segments.groupby("system", sort=True)
    systems = pd.DataFrame(
        {
            "n_judgments": sy["n_judgments"].sum(),
            "n_segments": sy.size(),
            "mean": sy["mean"].mean(),
            "z_mean": sy["z_mean"].mean(),
        }
    ).reset_index()
    key, other = ("mean", "z_mean") if by == "mean" else ("z_mean", "mean")
    systems = systems.sort_values([key, other, "system"], ascending=[False, False, True], kind="stable")
    systems = systems.reset_index(drop=True)
    systems["rank"] = np.arange(1, len(systems) + 1)
    order = systems["system"].tolist()
    column = "score" if by == "mean" else "z"
    values = {s: v.dropna().to_numpy() for s, v in df.groupby("system")[column]}
    pairs = ranking.pairwise(order, values, dict(zip(systems["system"], systems[key])), test=test)
    systems["cluster"] = ranking.clusters(order, pairs, alpha) if order else []
    return segments, systems[SYSTEM_COLUMNS], pairs


def analyze(df: pd.DataFrame, alpha: float = 0.05, by: str = "mean", test: str = "mannwhitneyu") -> ESAResult:
    """z-scores, segment and system scores, ranking, head-to-head tests and clusters."""
    if not 0 < alpha <= 0.5:
        raise ValueError(f"the significance level (alpha) must be above 0 and at most 0.5, not {alpha!r}")
    j = check_judgments(df)
    j["z"] = zscores(j)
    segments, systems, pairs = system_scores(j, alpha, by, test)
    return ESAResult(j, segments, systems, pairs, alpha, by)


def _spans(df: pd.DataFrame) -> pd.DataFrame:
    """One row per span: system, severity, category, missing (the judgments' spans, exploded)."""
    rows = [
        (system, s.severity, s.category, s.missing)
        for system, spans in zip(df["system"], df["spans"])
        for s in (spans or [])
        if isinstance(s, (Span, TimeSpan))  # a span on the audio counts as one in the text
    ]
    return pd.DataFrame(rows, columns=["system", "severity", "category", "missing"])


def severity_breakdown(df: pd.DataFrame, severities=("minor", "major")) -> pd.DataFrame:
    """Per system: judgments, spans, the spans of each severity (omissions included), the
    omissions ([MISSING]) apart, and spans per judgment."""
    if "spans" not in df:
        raise ValueError("a severity breakdown needs the judgments' spans (column spans)")
    n = df.groupby("system").size().rename("n_judgments")
    sp = _spans(df)
    counts = pd.crosstab(sp["system"], sp["severity"]) if len(sp) else pd.DataFrame(index=pd.Index([], name="system"))
    out = pd.DataFrame(n)
    for sev in list(severities) + sorted(set(sp["severity"]) - set(severities)):
        out[sev] = counts[sev].reindex(out.index).fillna(0).astype(int) if sev in counts else 0
    # astype(bool): with no span at all the column is empty objects, which pandas reads as labels
    out["missing"] = sp[sp["missing"].astype(bool)].groupby("system").size().reindex(out.index).fillna(0).astype(int)
    out["n_spans"] = sp.groupby("system").size().reindex(out.index).fillna(0).astype(int)
    out["spans_per_judgment"] = out["n_spans"] / out["n_judgments"]
    return out.reset_index()


def category_breakdown(df: pd.DataFrame, weights: Weights | None = None) -> pd.DataFrame:
    """Per system and category (MQM): the errors of each severity, their total and, given
    weights, the penalty per judgment (the category's share of the system's mean MQM score)."""
    if "spans" not in df:
        raise ValueError("a category breakdown needs the judgments' spans (column spans)")
    sp = _spans(df)
    n = df.groupby("system").size()
    cols = ["system", "category", "n_errors"]
    if sp.empty:
        return pd.DataFrame(columns=cols + (["penalty_per_judgment"] if weights else []))
    sp["category"] = sp["category"].fillna("(none)")
    out = pd.crosstab([sp["system"], sp["category"]], sp["severity"]).reset_index()
    out.columns.name = None
    sev_cols = [c for c in out.columns if c not in ("system", "category")]
    out["n_errors"] = out[sev_cols].sum(axis=1)
    if weights is not None:
        sp["weight"] = [weights.weight(c if c != "(none)" else None, s) for c, s in zip(sp["category"], sp["severity"])]
        pen = sp.groupby(["system", "category"])["weight"].sum()
        out["penalty_per_judgment"] = [pen[(s, c)] / n[s] for s, c in zip(out["system"], out["category"])]
    return out
