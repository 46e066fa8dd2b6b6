"""Marginal means of a fitted linear model and their Holm-corrected pairwise contrasts
(paper 000 section 4.2: "a significant gap (p<0.05 if computing pairwise differences, after
Holm correction)"; section 4.3 and Figure 3b for the validator's score).

A marginal mean is a linear combination L @ beta of the fixed effects (L: the mean of the
design rows of a reference grid, as emmeans builds it); its Wald SE, z, p and CI come from the
fit's own covariance (statsmodels' t_test on L). A pairwise contrast is L_a - L_b, tested the
same way; the p-values of one family (every pair of cells of one model) are adjusted with
Holm's step-down method (statsmodels.stats.multitest.multipletests). statsmodels has no
emmeans, so only the grid and the differences are built here; every statistic is
statsmodels'.

Pure functions; no gradio.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

CONTRAST_COLUMNS = ["outcome", "a", "b", "estimate", "std_error", "z", "p_value", "p_holm", "ci_low", "ci_high",
                    "test"]
WALD_Z = "Wald z (statsmodels MixedLM, REML; normal reference)"


def wald(result, L: np.ndarray, alpha: float = 0.05) -> pd.DataFrame:
    """Each row of L (k x p, over the fit's fixed effects) as estimate, std_error, z, p_value,
    ci_low, ci_high: statsmodels' t_test (a Wald z test for MixedLM)."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    tt = result.t_test(L)
    ci = np.asarray(tt.conf_int(alpha=alpha), dtype=float).reshape(-1, 2)
    return pd.DataFrame({"estimate": np.atleast_1d(np.asarray(tt.effect, dtype=float)).ravel(),
                         "std_error": np.atleast_1d(np.asarray(tt.sd, dtype=float)).ravel(),
                         "z": np.atleast_1d(np.asarray(tt.tvalue, dtype=float)).ravel(),
                         "p_value": np.atleast_1d(np.asarray(tt.pvalue, dtype=float)).ravel(),
                         "ci_low": ci[:, 0], "ci_high": ci[:, 1]})


def pairwise(result, L: np.ndarray, labels: list[str], outcome: str, test: str = WALD_Z,
             alpha: float = 0.05) -> pd.DataFrame:
    """Every pair (a, b) of the rows of L, a before b in the given order: the difference
    a - b with Wald SE, z, p and an unadjusted 95% CI, and p_holm, Holm's adjustment over the
    whole family (multipletests). Empty with fewer than two rows."""
    L = np.atleast_2d(np.asarray(L, dtype=float))
    pairs = list(itertools.combinations(range(len(labels)), 2))
    if not pairs:
        return pd.DataFrame(columns=CONTRAST_COLUMNS)
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.stats.multitest import multipletests

    diff = np.vstack([L[i] - L[j] for i, j in pairs])
    out = wald(result, diff, alpha)
    out["p_holm"] = multipletests(out["p_value"].to_numpy(), method="holm")[1]
    out.insert(0, "b", [labels[j] for _, j in pairs])
    out.insert(0, "a", [labels[i] for i, _ in pairs])
    out.insert(0, "outcome", outcome)
    out["test"] = test + "; p_holm: Holm over the family's " + str(len(pairs)) + " pairs"
    return out[CONTRAST_COLUMNS]
