"""MQM scoring (Freitag et al., TACL 2021): a segment's score is the weighted sum of its errors
(lower is better; 0 for a segment without errors), a system's the mean over its segments.

Annotation rules from the taxonomy (assets/mqm_taxonomy.toml), checked by check_mqm_spans on top
of the span checks: at most max_errors errors per segment (Freitag et al. 2021: five; raters
choose the five most severe); the whole-segment category (Non-translation) spans the whole
output and stands alone (Anthea: it "overrides any other marked errors ... and labels the full
translated sentence as the error span"); a category's forced severity; a source-side category
(Source error) marked in the source and no other category there.

Judgments: one row per (system, segment_id, annotator) with a ``spans`` column (a list of Span);
a segment without errors has an empty list and scores 0.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from services.common import ranking
from services.esa import spans as S
from services.esa.taxonomy import Taxonomy, Weights

JUDGMENT_KEYS = ["system", "segment_id", "annotator"]
SEGMENT_COLUMNS = ["system", "segment_id", "n_judgments", "mqm"]
SYSTEM_COLUMNS = ["system", "n_segments", "n_judgments", "mqm", "rank", "cluster"]


def check_mqm_spans(
    spans: Iterable[S.Span], output: str, taxonomy: Taxonomy, *, source: str | None = None, audio: bool = False
) -> list[S.Span]:
    """The spans of one segment, or a SpanError naming every problem (check_spans' and MQM's)."""
    spans = list(spans)
    whole = [
        i
        for i, s in enumerate(spans)
        if isinstance(s, S.Span)
        and taxonomy.whole_segment
        and taxonomy.canonical(s.category or "") == taxonomy.whole_segment
    ]
    if whole and len(spans) > 1:  # said first: its span covers the output, so the others overlap it too
        raise S.SpanError([f"span {whole[0]}: {taxonomy.whole_segment} replaces every other error; remove the others"])
    S.check_spans(spans, output, source=source, severities=taxonomy.severities, categories=taxonomy.names(audio=audio))
    problems = []
    if taxonomy.max_errors and len(spans) > taxonomy.max_errors:
        problems.append(
            f"{len(spans)} errors marked; at most {taxonomy.max_errors} per segment (mark the "
            f"{taxonomy.max_errors} most severe)"
        )
    for i, s in enumerate(spans):
        cat = taxonomy.category(s.category or "")
        name = f"span {i} ({s.label()})"
        if cat.severity and s.severity != cat.severity:
            problems.append(f"{name}: {cat.name} is always {cat.severity}, not {s.severity}")
        if cat.side != s.side:
            problems.append(f"{name}: {cat.name} is marked in the {cat.side}, not the {s.side}")
        if taxonomy.whole_segment and taxonomy.canonical(s.category or "") == taxonomy.whole_segment:
            if s.missing or (s.start, s.end) != (0, len(output)):
                problems.append(f"{name}: {taxonomy.whole_segment} spans the whole output (0-{len(output)})")
    if problems:
        raise S.SpanError(problems)
    return spans


def segment_score(spans: Iterable[S.Span], weights: Weights) -> float:
    """The weighted sum of the errors (lower is better)."""
    return float(sum(weights.weight(s.category, s.severity) for s in spans))


def score_judgments(judgments: pd.DataFrame, weights: Weights) -> pd.DataFrame:
    """The judgments with an ``mqm`` column: each one's segment_score."""
    missing = [c for c in JUDGMENT_KEYS + ["spans"] if c not in judgments]
    if missing:
        raise ValueError(f"MQM judgments need the columns {', '.join(missing)}")
    out = judgments.copy()
    out["mqm"] = [segment_score(sp, weights) for sp in out["spans"]]
    return out


def segment_scores(judgments: pd.DataFrame, weights: Weights) -> pd.DataFrame:
    """Per (system, segment_id): the mean MQM score over its annotators."""
    j = score_judgments(judgments, weights)
    g = j.groupby(["system", "segment_id"], sort=True)["mqm"]
    return pd.DataFrame({"n_judgments": g.size(), "mqm": g.mean()}).reset_index()[SEGMENT_COLUMNS]


def system_scores(
    judgments: pd.DataFrame, weights: Weights, alpha: float = 0.05, test: str = "mannwhitneyu"
) -> pd.DataFrame:
    """Per system: the mean over its segments of the segment's mean score (lower is better),
    ranked best (lowest) first, with significance clusters: one-sided rank-sum tests on the
    segment scores that a system's are lower (services/common/ranking.py)."""
    return ranked(judgments, weights, alpha, test)[0]


def ranked(
    judgments: pd.DataFrame, weights: Weights, alpha: float = 0.05, test: str = "mannwhitneyu"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(systems, head_to_head): system_scores and the tests behind its clusters (ranking.PAIR_COLUMNS:
    diff the difference of the MQM scores, p_value that system_a's segment scores are lower)."""
    seg = segment_scores(judgments, weights)
    if seg.empty:
        return pd.DataFrame(columns=SYSTEM_COLUMNS), pd.DataFrame(columns=ranking.PAIR_COLUMNS)
    g = seg.groupby("system", sort=True)
    sy = pd.DataFrame({"n_segments": g.size(), "n_judgments": g["n_judgments"].sum(), "mqm": g["mqm"].mean()})
    sy = sy.reset_index().sort_values(["mqm", "system"], kind="stable").reset_index(drop=True)
    sy["rank"] = np.arange(1, len(sy) + 1)
    order = sy["system"].tolist()
    values = {s: v.to_numpy() for s, v in g["mqm"]}
    pairs = ranking.pairwise(order, values, dict(zip(sy["system"], sy["mqm"])), test=test, higher_is_better=False)
    sy["cluster"] = ranking.clusters(order, pairs, alpha)
    return sy[SYSTEM_COLUMNS], pairs
