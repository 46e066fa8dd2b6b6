"""Marginal means of a fitted linear model and their Holm-corrected pairwise contrasts
(paper 000 section 4.2: "a significant gap (p<0.05 if computing pairwise differences, after
Holm correction)"; section 4.3 and Figure 3b for the validator's score).

A marginal mean is a linear combination L @ beta of the fixed effects (L: the mean of the
design rows of a reference grid, as emmeans builds it); its Wald SE, z, p and CI come from the
fit's own covariance (statsmodels' t_test on L). A pairwise contrast is L_a - L_b, tested the
same way; the p-values of each family are adjusted with Holm's step-down method
(statsmodels.stats.multitest.multipletests), one call per family.

Families (cell_families): by default ("within", the paper's reading) the pairs within each
gender (the group gaps among women, among men: section 4.2's "USW and Hindi" gap among women,
Figure 2c) and within each group (woman vs man), each its own Holm family, as emmeans' ``pairwise
~ group | gender`` and ``pairwise ~ gender | group`` adjust them; pairs differing in both group
and gender are not reported (the paper compares none). "all": the single family of every pair
of cells (15 for 3 groups x 2 genders), the stricter adjustment this module used before. statsmodels has no
emmeans, so only the grid and the differences are built here; every statistic is
statsmodels'.

Pure functions; no gradio.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

CONTRAST_COLUMNS = [
    "outcome",
    "a",
    "b",
    "estimate",
    "std_error",
    "z",
    "p_value",
    "p_holm",
    "ci_low",
    "ci_high",
    "test",
    "family",
]
HOLM_FAMILIES = ("within", "all")
DEFAULT_HOLM_FAMILY = "within"  # paper 000 section 4.2 (see the module docstring)
WALD_Z = "Wald z (statsmodels MixedLM, REML; normal reference)"


def wald(result, L: np.ndarray, alpha: float = 0.05) -> pd.DataFrame:
    """Each row of L (k x p, over the fit's fixed effects) as estimate, std_error, z, p_value,
    ci_low, ci_high: statsmodels' t_test (a Wald z test for MixedLM)."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    tt = result.t_test(L)
    ci = np.asarray(tt.conf_int(alpha=alpha), dtype=float).reshape(-1, 2)
    return pd.DataFrame(
        {
            "estimate": np.atleast_1d(np.asarray(tt.effect, dtype=float)).ravel(),
            "std_error": np.atleast_1d(np.asarray(tt.sd, dtype=float)).ravel(),
            "z": np.atleast_1d(np.asarray(tt.tvalue, dtype=float)).ravel(),
            "p_value": np.atleast_1d(np.asarray(tt.pvalue, dtype=float)).ravel(),
            "ci_low": ci[:, 0],
            "ci_high": ci[:, 1],
        }
    )


def cell_families(cells: list[tuple[str, str]], family: str = DEFAULT_HOLM_FAMILY) -> list[tuple[str, list]]:
    """The Holm families of pairs of (group, gender) cells, each (name, [(i, j), ...]) with i < j
    indexes into ``cells``: "within" (default): per gender the pairs of groups, then per group the
    pair of genders; "all": one family of every pair. Raises ValueError naming the choices."""
    if family not in HOLM_FAMILIES:
        raise ValueError(f"unknown Holm family {family!r} (choices: {', '.join(HOLM_FAMILIES)})")
    pairs = list(itertools.combinations(range(len(cells)), 2))
    if family == "all":
        return [(f"all {len(pairs)} pairs", pairs)] if pairs else []
    out = []
    for k, what in ((1, "gender"), (0, "group")):
        for level in dict.fromkeys(c[k] for c in cells):
            fam = [(i, j) for i, j in pairs if cells[i][k] == level and cells[j][k] == level]
            if fam:
                out.append((f"within {what} {level}", fam))
    return out


def pairwise(
    result,
    L: np.ndarray,
    labels: list[str],
    outcome: str,
    test: str = WALD_Z,
    alpha: float = 0.05,
    families: list[tuple[str, list]] | None = None,
) -> pd.DataFrame:
    """The pairs (a, b) of the rows of L, a before b in the given order: the difference a - b
    with Wald SE, z, p and an unadjusted 95% CI, and p_holm, Holm's adjustment within its family
    (multipletests, one call per family; ``family`` names it). ``families``: (name, [(i, j),
    ...]) as cell_families returns them; None: one family of every pair. Empty with fewer than
    two rows."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    if families is None:
        pairs = list(itertools.combinations(range(len(labels)), 2))
        families = [(f"all {len(pairs)} pairs", pairs)] if pairs else []
    families = [(name, fam) for name, fam in families if fam]
    if not families:
        return pd.DataFrame(columns=CONTRAST_COLUMNS)
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.stats.multitest import multipletests

    frames = []
    for name, pairs in families:
        out = wald(result, np.vstack([L[i] - L[j] for i, j in pairs]), alpha)
        out["p_holm"] = multipletests(out["p_value"].to_numpy(), method="holm")[1]
        out.insert(0, "b", [labels[j] for _, j in pairs])
        out.insert(0, "a", [labels[i] for i, _ in pairs])
        out.insert(0, "outcome", outcome)
        out["test"] = f"{test}; p_holm: Holm over the family's {len(pairs)} pair{'s' if len(pairs) > 1 else ''}"
        out["family"] = name
        frames.append(out)
    return pd.concat(frames, ignore_index=True)[CONTRAST_COLUMNS]
