"""Exploratory factor extraction, shared by the semantic-differential EFA (services/sd/analysis.py)
and the usability questionnaire's one-factor check (services/usability/analysis.py): Horn's
parallel analysis, the Kaiser count, maximum-likelihood extraction from several starting points
(statsmodels), its fit statistics, SPSS's order of the unrotated factors and their variance
(factor_analyzer). Rotation, pruning and the reports stay with each analysis."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats

PA_ITERATIONS = 500
SEED = 0
ML_STARTS = 4  # ML fits from this many starting points; the best is kept
_ML_OPTIONS = {"gtol": 1e-9, "ftol": 1e-15}


class EFAError(ValueError):
    """The data cannot support the factor analysis (too few rows or items, bad factor count)."""


def model_dof(p: int, k: int) -> int:
    """Degrees of freedom of a k-factor ML model of p items."""
    return ((p - k) ** 2 - (p + k)) // 2


def max_factors(p: int) -> int:
    """The largest number of factors an ML model of p items can have (dof >= 0)."""
    k = 0
    while k + 1 < p and model_dof(p, k + 1) >= 0:
        k += 1
    return k


def parallel_analysis(
    x: np.ndarray, iterations: int = PA_ITERATIONS, seed: int = SEED, percentile: float | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Horn's parallel analysis: (observed eigenvalues of x's correlation matrix, descending;
    the criterion: the mean, or the given percentile, of the eigenvalues of ``iterations``
    correlation matrices of seeded standard-normal data of x's shape; the number of leading
    observed eigenvalues above the criterion)."""
    x = np.asarray(x, dtype=float)
    n, p = x.shape
    observed = np.linalg.eigvalsh(np.corrcoef(x, rowvar=False))[::-1]
    rng = np.random.default_rng(seed)
    random = np.empty((iterations, p))
    for i in range(iterations):
        z = rng.standard_normal((n, p))
        random[i] = np.linalg.eigvalsh(np.corrcoef(z, rowvar=False))[::-1]
    crit = random.mean(axis=0) if percentile is None else np.percentile(random, percentile, axis=0)
    above = observed > crit
    k = int(np.argmin(above)) if not above.all() else p
    return observed, crit, k


def kaiser_count(x: np.ndarray) -> int:
    """The eigenvalue-above-one rule (Kaiser-Guttman; SPSS's default number of factors): how
    many eigenvalues of x's correlation matrix (columns = items) exceed 1."""
    return int((np.linalg.eigvalsh(np.corrcoef(np.asarray(x, dtype=float), rowvar=False)) > 1).sum())


def ml_fit_statistics(
    corr: np.ndarray, loadings: np.ndarray, uniqueness: np.ndarray, n: int
) -> tuple[float, int, float]:
    """(chi2, dof, p) of an ML factor solution (unrotated or rotated loadings: L L' is the same
    for orthogonal rotations; pass the unrotated ones): Bartlett-corrected
    chi2 = (n - 1 - (2p + 5)/6 - 2k/3) * (tr(S^-1 R) - ln det(S^-1 R) - p), S = L L' + diag(Psi)."""
    r = np.asarray(corr, dtype=float)
    lam = np.asarray(loadings, dtype=float)
    p, k = lam.shape
    sigma = lam @ lam.T + np.diag(np.asarray(uniqueness, dtype=float))
    m = np.linalg.solve(sigma, r)
    sign, logdet = np.linalg.slogdet(m)
    f = float(np.trace(m) - logdet - p)
    chi2 = (n - 1 - (2 * p + 5) / 6 - 2 * k / 3) * f
    dof = model_dof(p, k)
    pval = float(stats.chi2.sf(chi2, dof)) if dof > 0 else math.nan
    return float(chi2), int(dof), pval


def _discrepancy(r: np.ndarray, loadings: np.ndarray, uniqueness: np.ndarray) -> float:
    """The ML discrepancy F = tr(S^-1 R) - ln det(S^-1 R) - p, S = L L' + diag(Psi)."""
    m = np.linalg.solve(loadings @ loadings.T + np.diag(uniqueness), r)
    return float(np.trace(m) - np.linalg.slogdet(m)[1] - len(r))


def _principal_start(r: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic starting values (R factanal's): Psi = (1 - k/2p) / diag(R^-1), loadings
    from the k largest eigenvalues of Psi^-1/2 R Psi^-1/2."""
    p = len(r)
    psi = np.clip((1 - 0.5 * k / p) / np.diag(np.linalg.inv(r)), 0.005, 1)
    sc = 1 / np.sqrt(psi)
    e, v = np.linalg.eigh(r * sc[:, None] * sc[None, :])
    e, v = e[::-1][:k], v[:, ::-1][:, :k]
    return np.sqrt(psi)[:, None] * v * np.sqrt(np.clip(e - 1, 1e-6, None)), psi


def ml_extract(
    r: np.ndarray, k: int, n: int, seed: int = SEED, starts: int = ML_STARTS, notes: list[str] | None = None
):
    """Maximum-likelihood extraction of k factors from the correlation matrix r (n rows) with
    statsmodels' Factor(method="ml"), from ``starts`` starting points (factanal's deterministic
    one, then statsmodels' seeded EM starts with seeds seed, seed + 1, ...): the solution with
    the lowest discrepancy is kept, since misspecified models can have local optima.
    Optimiser: L-BFGS-B (statsmodels' BFGS reaches the same optimum but its dense updates are
    several times slower where BLAS runs multi-threaded on small matrices).
    Returns (unrotated loadings p x k, uniquenesses, discrepancy)."""
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.multivariate.factor import Factor

    best, best_warnings, failures = None, [], []
    for i in range(max(1, starts)):
        start = _principal_start(r, k) if i == 0 else None  # then EM starts seeded seed, seed + 1, ...
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                res = Factor(corr=r, n_factor=k, method="ml", nobs=n).fit(
                    start=start, rng=seed + max(i - 1, 0), opt_method="L-BFGS-B", opt=_ML_OPTIONS
                )
            except (np.linalg.LinAlgError, ValueError) as e:
                failures.append(f"start {i + 1}: {e}")
                continue
        load = np.asarray(res.loadings_no_rot, dtype=float).reshape(len(r), k)
        uniq = np.asarray(res.uniqueness, dtype=float)
        f = _discrepancy(r, load, uniq)
        if np.isfinite(f) and (best is None or f < best[2] - 1e-10):
            best, best_warnings = (load, uniq, f), [str(w.message) for w in caught]
    if best is None:
        raise EFAError(f"the {k}-factor ML fit failed from every starting point ({'; '.join(failures)})")
    if notes is not None:
        for w in best_warnings:
            msg = f"{k}-factor ML fit of {len(r)} items: {w}"
            if msg not in notes:
                notes.append(msg)
    return best


def canonical_order(loadings: np.ndarray, uniqueness: np.ndarray) -> np.ndarray:
    """Unrotated ML loadings in the order SPSS and factanal print them: by the diagonal of
    L' Psi^-1 L (the canonical solution's eigenvalues less 1), largest first; each column
    reflected so that it sums positive."""
    lam = np.asarray(loadings, dtype=float)
    size = np.diag(lam.T @ (lam / np.asarray(uniqueness, dtype=float)[:, None]))
    lam = lam[:, np.argsort(-size, kind="stable")]
    return lam * np.where(lam.sum(axis=0) < 0, -1.0, 1.0)


def extraction_variance(loadings: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sums of squared loadings, share of the items' variance, cumulative share) per factor of
    unrotated loadings: factor_analyzer's get_factor_variance (SPSS's "Extraction Sums of
    Squared Loadings"). factor_analyzer's own fit is not used (broken with scikit-learn 1.9):
    the loadings are set on an unfitted FactorAnalyzer without rotation."""
    # lazy import (factor_analyzer): heavy; needed only when a model is fitted
    from factor_analyzer import FactorAnalyzer

    lam = np.asarray(loadings, dtype=float)
    fa = FactorAnalyzer(n_factors=lam.shape[1], rotation=None, method="ml")
    fa.loadings_ = lam
    ss, share, cumulative = fa.get_factor_variance()
    return np.asarray(ss, dtype=float), np.asarray(share, dtype=float), np.asarray(cumulative, dtype=float)
