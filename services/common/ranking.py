"""Ranking systems by their scores and grouping them into significance clusters (WMT's way).

Systems come ranked best first, each with its scores (one value per judgment or per segment,
whichever unit the caller tests on). Every ordered pair (a, b) gets a one-sided rank-sum test
that a's scores are higher than b's; a cluster boundary falls after rank i when every system
ranked <= i beats every system ranked > i with p < alpha (WMT's findings papers; paper 001's DA
analysis). The test is scipy's:

* "mannwhitneyu": scipy.stats.mannwhitneyu (the Wilcoxon rank-sum test with a tie correction,
  exact for small samples without ties); the default.
* "ranksums": scipy.stats.ranksums (the normal approximation without tie correction), which the
  scripts behind Kocmi et al. (2024) call for their clusters.

Where lower is better (an error count, an MQM penalty), pass the negated scores, or
higher_is_better=False.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

TESTS = ("mannwhitneyu", "ranksums")
PAIR_COLUMNS = ["system_a", "system_b", "diff", "p_value", "n_a", "n_b"]


def rank_sum_p(x, y, alternative: str = "greater", test: str = "mannwhitneyu") -> float:
    """One-sided (or two-sided) p-value that x's values are greater than y's ("greater"), less
    ("less") or differ ("two-sided"); NaN when either side is empty."""
    if test not in TESTS:
        raise ValueError(f"unknown rank-sum test {test!r}: one of {', '.join(TESTS)}")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) == 0 or len(y) == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "ranksums":
            return float(stats.ranksums(x, y, alternative=alternative).pvalue)
        return float(stats.mannwhitneyu(x, y, alternative=alternative).pvalue)


def pairwise(
    order: Sequence[str],
    values: Mapping[str, Sequence[float]],
    means: Mapping[str, float],
    *,
    test: str = "mannwhitneyu",
    higher_is_better: bool = True,
) -> pd.DataFrame:
    """Every ordered pair of systems in `order`: diff = means[a] - means[b], p_value = the one-sided
    test that a is better than b (a's values greater; less when higher_is_better is False), and
    the number of values on each side. Columns PAIR_COLUMNS, rows in order (a outer, b inner)."""
    alternative = "greater" if higher_is_better else "less"
    rows = []
    for a in order:
        for b in order:
            if a == b:
                continue
            va, vb = values[a], values[b]
            p = rank_sum_p(va, vb, alternative, test)
            rows.append((a, b, means[a] - means[b], p, len(va), len(vb)))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def clusters(order: Sequence[str], pairs: pd.DataFrame, alpha: float) -> list[int]:
    """Cluster numbers (1, 2, ...) in rank order: a boundary after rank i when every system ranked
    <= i beats every system ranked > i with p < alpha (pairs: columns system_a, system_b, p_value;
    a NaN p-value never separates)."""
    sig = {(a, b): p < alpha for a, b, p in zip(pairs["system_a"], pairs["system_b"], pairs["p_value"])}
    out, current = [], 1
    names = list(order)
    for i in range(len(names)):
        out.append(current)
        if i < len(names) - 1 and all(sig[(a, b)] for a in names[: i + 1] for b in names[i + 1 :]):
            current += 1
    return out
