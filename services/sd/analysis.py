"""Semantic-differential (SD) analysis: data cleansing and exploratory factor analysis
(paper 002).

Input: one row per rating (REQUIRED columns): ``value`` is the slider position -3..+3 in
canonical polarity, ``is_repeat`` 1 marks the second rating of a (sentence, pair) the
participant has already rated (the test condition), ``duration_s`` is the participant's
total time (the same on all of a participant's rows).

Cleansing (:func:`cleanse`), one row per participant (the paper's three steps):

* too_fast: duration_s <= 40 % of the expected time (default 600 s: 240 s or less).
* straight_liner: every non-repeat value of the participant is the same.
* inconsistency: the project's operationalisation of the Inconsistency Score (IS) of Naderi
  (2018), which the paper uses but does not define: the mean over the participant's repeated
  (sentence, pair) of |first rating - repeat| (several repeats of one pair each count). A study
  can pass another measure: ``inconsistency=`` a name from INCONSISTENCY_MEASURES or a function
  (first, repeat) -> float on the participant's aligned arrays. NaN for a participant without
  repeats (never an outlier).
* outlier: inconsistency above the upper Tukey fence Q3 + 1.5 IQR of all participants'
  inconsistency (quartiles with linear interpolation, numpy's and pandas' default; strictly
  above the fence).
* kept: none of the three.
* the cleansing report (:func:`cleansing_report`, cleansing_summary.csv, the summary): per
  step the raters it flags and their ratings, the total removed, the inconsistency cut-off,
  beside the paper's figure (section 4.1: "The data cleansing removed 6,800 ratings, resulting
  in 14,200 ratings", i.e. 6,800 of 21,000, 32 %), so a lab sees at once when its cleansing is
  far milder or harsher than the paper's. The paper gives no rater count for the cleansing
  (141 took part) and no IS cut-off (it defers the IS to Naderi 2018).

EFA (:func:`efa`) on rows = (kept participant, sentence), columns = pairs (the first rating
when a pair was repeated; rows missing a pair are left out, listwise as SPSS does):

* number of factors K, unless given (``factor_rule``): "kaiser" (the default) the eigenvalue-
  above-one rule, the number of eigenvalues of the analysed items' correlation matrix above 1,
  which SPSS applies unless a number is set (paper 002 ran its EFA in SPSS, section 4.2, and
  names no other rule); "parallel" Horn's parallel analysis: the eigenvalues against the MEAN
  eigenvalues of ``pa_iterations`` correlation matrices of standard-normal data of the same
  shape (seeded; Horn's original criterion; pa_percentile=95 uses Glorfeld's 95th percentile
  instead), K = the number of leading eigenvalues above it. Either way at least 1 and at most
  the largest K with a non-negative chi-square dof. K stays fixed while items are pruned (a
  note says when the eigenvalue rule on the final items would give another K, as an SPSS
  re-run on them would).
* extraction: maximum likelihood (statsmodels' Factor(method="ml") on the correlation
  matrix); rotation: promax with Kaiser normalisation, power 4 (SPSS's default kappa; factor_
  analyzer's Rotator, which follows R's psych::kaiser + stats::promax). statsmodels' own
  "promax" is not used: it has power 2 and no Kaiser normalisation. Rotated factors are
  ordered by variance explained and reflected so that their loadings sum positive.
* loadings: the pattern matrix; communality = 1 - uniqueness of the ML solution (the sum of
  squared unrotated loadings, which rotation does not change).
* variance explained per factor, after rotation: diag(Phi L'L) / p for pattern L and factor
  correlations Phi (psych's "SS loadings" for oblique solutions, = the column sums of pattern x
  structure); they add up to the mean communality, the share of the items' total variance the
  factors explain (SPSS prints no per-factor share for oblique rotations).
* variance explained per factor as SPSS reports it (its "Extraction Sums of Squared Loadings",
  % of Variance and Cumulative %, before rotation; paper 002's Table 1 gives these: "F1 explains
  53.2% of the variance", section 4.2): factor_analyzer's get_factor_variance on the unrotated
  ML loadings (column sums of squares, / p, cumulated). The unrotated factors are statsmodels'
  canonical ML solution (L' Psi^-1 L diagonal, as SPSS's and R factanal's), ordered by that
  diagonal, largest first, and reflected to positive column sums; they are the extraction's
  factors, not the rotated ones (factor i before rotation is not factor i after it).
* pruning (prune=True, the default: paper 002, section 4.2, "Our data contained several
  adjective pairs with low communalities and/or cross-loadings differing by less than 0.2 ...
  we removed those attributes for the sake of interpretability"), one item per step, refitting
  after each: first the item with the lowest communality if any is below 0.3 (the paper gives
  no number for "low communalities": 0.3 is this project's), otherwise the item whose two
  largest absolute pattern loadings differ least if they differ by less than 0.2;
  stops when no item is flagged or when removing one more would leave the K-factor model
  unidentified (negative dof). Every step is reported.
* KMO and Bartlett's test of sphericity: factor_analyzer's calculate_kmo and calculate_
  bartlett_sphericity on the final items.
* goodness of fit: the ML chi-square with Bartlett's correction (Lawley & Maxwell; what SPSS
  and R's factanal report): chi2 = (n - 1 - (2p + 5)/6 - 2K/3) * F,
  F = tr(S^-1 R) - ln det(S^-1 R) - p with S = L L' + Psi (unrotated loadings),
  dof = ((p - K)^2 - (p + K)) / 2, p-value from the chi-square distribution (NaN when dof = 0).

Preliminary study (:func:`suitability_filter`): a pair is kept when its mean suitability
(1-5) is >= 3.2 and its sd (sample, ddof 1) is <= 1.2, i.e. dropped when mean < 3.2 OR
sd > 1.2 (drop_if="both" reads the paper's sentence literally: dropped only when both hold).

Pure functions; ML from statsmodels, rotation, KMO and Bartlett from factor_analyzer (imported
on first use: it pulls in scikit-learn), BLAS thread limits from threadpoolctl, tables from
pandas, figures from plotly.
"""

from __future__ import annotations

import json
import math
import numbers
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from services.common.analysis_input import InputError, Problems
from services.common.analysis_input import cells as _cells
from services.common.analysis_input import numbers as _numbers
from services.common.analysis_input import read_csv_cells as _read_csv
from services.common.factor_extraction import (  # the extraction shared with the usability study's analysis
    PA_ITERATIONS,
    SEED,
    EFAError,
    canonical_order,
    extraction_variance,
    kaiser_count,
    max_factors,
    ml_extract,
    ml_fit_statistics,
    model_dof,
    parallel_analysis,
)
from services.common.figure_files import write_figures
from services.common.vocabulary import count
from services.sd import export_input
from services.study import export_reader

REQUIRED = ["participant_id", "sentence_id", "pair_id", "value", "is_repeat", "duration_s"]
SUITABILITY_REQUIRED = ["participant_id", "pair_id", "suitability"]
CLEANSING_COLUMNS = ["participant_id", "duration_s", "too_fast", "straight_liner", "inconsistency", "outlier", "kept"]
SUITABILITY_COLUMNS = ["pair_id", "n", "mean", "sd", "kept"]
CLEANSING_REPORT_COLUMNS = ["step", "rule", "raters_removed", "ratings_removed", "ratings_removed_share", "paper_002"]
SUMMARY_KEYS = [
    "n_participants",
    "n_kept",
    "kmo",
    "bartlett_chi2",
    "bartlett_p",
    "factors",
    "variance_explained",
    "chi2",
    "dof",
    "p",
    "pruned_items",
]

EXPECTED_SECONDS = 600.0
FAST_SHARE = 0.4  # too fast: duration_s <= FAST_SHARE * expected seconds
FENCE_IQR = 1.5  # outlier: inconsistency > Q3 + FENCE_IQR * IQR
MIN_COMMUNALITY = 0.3  # pruning: communality below this
MIN_LOADING_GAP = 0.2  # pruning: two largest |loadings| differing by less than this
PROMAX_POWER = 4
# how K is chosen when no number is given; "kaiser" is SPSS's default (paper 002, section 4.2)
FACTOR_RULES = {"kaiser": "eigenvalue > 1", "parallel": "parallel analysis"}
FACTOR_RULE = "kaiser"
# paper 002, section 4.1: "The data cleansing removed 6,800 ratings, resulting in 14,200 ratings"
PAPER_RATINGS = 21_000
PAPER_RATINGS_REMOVED = 6_800
PAPER_PARTICIPANTS = 141  # section 3.2: "141 crowdworkers participated"
SUITABILITY_MIN_MEAN = 3.2
SUITABILITY_MAX_SD = 1.2
_EPS = 1e-9  # boundary comparisons: a value equal to the boundary in decimal is on it


def _mean_abs(first: np.ndarray, repeat: np.ndarray) -> float:
    return float(np.mean(np.abs(first - repeat)))


def _rms(first: np.ndarray, repeat: np.ndarray) -> float:
    return float(np.sqrt(np.mean((first - repeat) ** 2)))


INCONSISTENCY_MEASURES: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "mean_abs": _mean_abs,  # the default: mean |first - repeat|
    "rms": _rms,  # root mean square of first - repeat
}


class SDInputError(InputError):
    """Bad ratings input (file, row, column named)."""


@dataclass
class EFAResult:
    items: list[str]  # the items of the final model
    loadings: pd.DataFrame  # pattern matrix: index items, columns factor_1..K
    communality: pd.Series  # 1 - uniqueness, final items
    uniqueness: pd.Series
    factor_correlations: pd.DataFrame  # Phi, K x K
    variance_explained: list[float]  # share of the final items' total variance, per rotated factor
    n_factors: int
    n_factors_source: str  # "given", "eigenvalue > 1" or "parallel analysis" (+ ", capped ...")
    eigenvalues: list[float]  # of the correlation matrix of all analysed items
    pa_eigenvalues: list[float]  # parallel analysis criterion (random mean or percentile)
    pa_percentile: float | None
    pa_iterations: int
    kmo: float
    kmo_per_item: pd.Series
    bartlett_chi2: float
    bartlett_p: float
    chi2: float
    dof: int
    p: float
    n_rows: int  # rows used (complete on every analysed item)
    n_rows_dropped: int  # rows left out for a missing item
    all_items: list[str]  # every column of the input matrix, in order
    pruned: list[dict] = field(default_factory=list)
    seed: int = SEED
    notes: list[str] = field(default_factory=list)
    # before rotation, as SPSS's "Extraction Sums of Squared Loadings": unrotated ML loadings
    # (items x factor_1..K), their column sums of squares, the share of the p items' variance
    # (SS / p) and the cumulative share
    unrotated_loadings: pd.DataFrame | None = None
    extraction_ss: list[float] = field(default_factory=list)
    extraction_variance: list[float] = field(default_factory=list)
    extraction_cumulative: list[float] = field(default_factory=list)
    factor_rule: str = FACTOR_RULE  # the rule that chose K when it was not given
    kaiser_count: int = 0  # eigenvalues > 1 of the correlation matrix of all analysed items
    prune: bool = True
    min_communality: float = MIN_COMMUNALITY
    min_gap: float = MIN_LOADING_GAP


@dataclass
class SDResult:
    cleansing: pd.DataFrame
    efa: EFAResult | None
    n_participants: int
    n_kept: int
    n_ratings: int
    n_ratings_kept: int = 0
    expected_seconds: float = EXPECTED_SECONDS
    inconsistency_fence: float = math.nan
    inconsistency_measure: str = "mean_abs"
    efa_error: str | None = None
    ratings_per_participant: pd.Series | None = None  # index participant_id: the rows (ratings) of each


# ---------------------------------------------------------------------------------------------
# input


def _Problems(columns) -> Problems:
    return Problems(columns, SDInputError)


def normalise(df: pd.DataFrame, source: str = "<DataFrame>") -> pd.DataFrame:
    """Check a ratings table and return it typed: ids as str, value and duration_s float,
    is_repeat int. Raises SDInputError naming source, row (the first data row is row 2, as in a
    CSV with a header) and column: a missing column, an empty id, a value that is not a number
    in -3..3, is_repeat other than 0/1, duration_s not a number >= 0 or different on one
    participant's rows, a second first rating (is_repeat 0) of a (participant, sentence, pair),
    or a repeat without a first rating."""
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise SDInputError(
            source, 1, missing[0], f"missing column (required: {', '.join(REQUIRED)}; missing: {', '.join(missing)})"
        )
    df = df.reset_index(drop=True)
    out = pd.DataFrame(index=df.index)
    problems = _Problems(df.columns)
    for col in ("participant_id", "sentence_id", "pair_id"):
        out[col] = _cells(df[col])
        problems.flag(col, out[col] == "", lambda pos: "empty value")

    raw = df["value"]
    value = _numbers(raw)
    not_number = ~np.isfinite(value)
    problems.flag("value", not_number, lambda pos: f"value {str(raw.iloc[pos])!r} is not a number")
    problems.flag(
        "value", ~not_number & ((value < -3) | (value > 3)), lambda pos: f"value {value.iloc[pos]:g} is outside -3..3"
    )
    out["value"] = value

    raw_rep = df["is_repeat"]
    rep = _numbers(raw_rep)
    bad_rep = ~rep.isin([0.0, 1.0])
    problems.flag("is_repeat", bad_rep, lambda pos: f"is_repeat {str(raw_rep.iloc[pos])!r} is not 0 or 1")
    out["is_repeat"] = rep.where(~bad_rep, 0).astype(int)

    raw_dur = df["duration_s"]
    dur = _numbers(raw_dur)
    bad_dur = ~np.isfinite(dur) | (dur < 0)
    problems.flag("duration_s", bad_dur, lambda pos: f"duration_s {str(raw_dur.iloc[pos])!r} is not a number >= 0")
    out["duration_s"] = dur

    ok = ~(out[["participant_id", "sentence_id", "pair_id"]] == "").any(axis=1) & ~not_number & ~bad_rep & ~bad_dur
    # one duration per participant: the first valid row's
    first_dur = dur.where(ok).groupby(out["participant_id"]).transform("first")
    differs = ok & (dur != first_dur)
    problems.flag(
        "duration_s",
        differs,
        lambda pos: (
            f"duration_s {dur.iloc[pos]:g} differs from {first_dur.iloc[pos]:g} on this "
            f"participant's earlier rows (duration_s is the participant's total)"
        ),
    )
    key = ["participant_id", "sentence_id", "pair_id"]
    firsts = ok & (out["is_repeat"] == 0)
    dup = firsts & out[key].where(firsts).duplicated(keep="first")
    problems.flag(
        "is_repeat",
        dup,
        lambda pos: (
            f"a second first rating (is_repeat 0) of sentence {out.at[pos, 'sentence_id']!r}, "
            f"pair {out.at[pos, 'pair_id']!r} by participant {out.at[pos, 'participant_id']!r}; "
            "mark repeats with is_repeat 1"
        ),
    )
    first_keys = pd.MultiIndex.from_frame(out.loc[firsts, key])
    repeats = ok & (out["is_repeat"] == 1)
    orphan = repeats & ~pd.MultiIndex.from_frame(out[key]).isin(first_keys)
    problems.flag(
        "is_repeat",
        orphan,
        lambda pos: (
            f"a repeat (is_repeat 1) of sentence {out.at[pos, 'sentence_id']!r}, pair "
            f"{out.at[pos, 'pair_id']!r} by participant {out.at[pos, 'participant_id']!r} "
            "without a first rating (is_repeat 0)"
        ),
    )
    problems.raise_first(source)
    return out[REQUIRED]


def read_ratings(path) -> pd.DataFrame:
    """Read a semantic-differential ratings CSV (REQUIRED columns; others are ignored), or a
    study's export (its folder or its sd_ratings table, any of the export's formats)."""
    path = Path(path)
    export = export_reader.find(path)
    if export is not None and export.table in (None, export_input.TABLE):
        path = export.path(export_input.TABLE) if export.has(export_input.TABLE) else export.folder
        df = export_input.ratings(export)
    else:
        df = _read_csv(path, SDInputError)
    out = normalise(df, str(path))
    if out.empty:
        raise SDInputError(path, 2, None, "no ratings (only a header row)")
    return out


# ---------------------------------------------------------------------------------------------
# cleansing


def inconsistency_fence(values) -> float:
    """Upper Tukey fence Q3 + 1.5 IQR of the finite values (NaN when there are none)."""
    v = np.asarray(pd.Series(values, dtype=float).dropna(), dtype=float)
    if len(v) == 0:
        return math.nan
    q1, q3 = np.quantile(v, [0.25, 0.75])
    return float(q3 + FENCE_IQR * (q3 - q1))


def _check_expected(expected_seconds) -> None:
    if (
        isinstance(expected_seconds, bool)
        or not isinstance(expected_seconds, numbers.Real)
        or not math.isfinite(expected_seconds)
        or expected_seconds <= 0
    ):
        raise ValueError(f"expected_seconds must be a number > 0, not {expected_seconds!r}")


def _measure(inconsistency) -> tuple[str, Callable[[np.ndarray, np.ndarray], float]]:
    if callable(inconsistency):
        return getattr(inconsistency, "__name__", "custom"), inconsistency
    if inconsistency not in INCONSISTENCY_MEASURES:
        raise ValueError(
            f"unknown inconsistency measure {inconsistency!r} "
            f"(one of: {', '.join(INCONSISTENCY_MEASURES)}, or a function (first, repeat) -> float)"
        )
    return inconsistency, INCONSISTENCY_MEASURES[inconsistency]


def cleanse(
    df: pd.DataFrame,
    expected_seconds: float = EXPECTED_SECONDS,
    inconsistency="mean_abs",
    *,
    source: str = "<DataFrame>",
) -> pd.DataFrame:
    """One row per participant (sorted by participant_id) with CLEANSING_COLUMNS: the too_fast,
    straight_liner and outlier flags, the inconsistency score and kept (none of the three).
    See the module docstring for the rules; ``inconsistency`` is a name from
    INCONSISTENCY_MEASURES or a function (first, repeat) -> float."""
    _check_expected(expected_seconds)
    _, fn = _measure(inconsistency)
    return _cleanse(normalise(df, source), expected_seconds, fn)


def _cleanse(d: pd.DataFrame, expected_seconds: float, fn) -> pd.DataFrame:
    key = ["participant_id", "sentence_id", "pair_id"]
    firsts = d[d["is_repeat"] == 0]
    g = firsts.groupby("participant_id", sort=True)["value"]
    out = pd.DataFrame({"straight_liner": g.nunique() <= 1})
    out["duration_s"] = d.groupby("participant_id", sort=True)["duration_s"].first()
    out["too_fast"] = out["duration_s"] <= expected_seconds * FAST_SHARE + _EPS * expected_seconds
    pairs = d[d["is_repeat"] == 1].merge(firsts[key + ["value"]], on=key, suffixes=("_repeat", "_first"))
    scores = {
        pid: fn(grp["value_first"].to_numpy(), grp["value_repeat"].to_numpy())
        for pid, grp in pairs.groupby("participant_id", sort=False)
    }
    out["inconsistency"] = pd.Series(scores, dtype=float).reindex(out.index)
    fence = inconsistency_fence(out["inconsistency"])
    out["outlier"] = (out["inconsistency"] > fence).fillna(False).astype(bool) if math.isfinite(fence) else False
    out["kept"] = ~(out["too_fast"] | out["straight_liner"] | out["outlier"])
    out = out.reset_index()
    for c in ("too_fast", "straight_liner", "outlier", "kept"):
        out[c] = out[c].astype(bool)
    return out[CLEANSING_COLUMNS]


def rating_matrix(df: pd.DataFrame, participants=None) -> pd.DataFrame:
    """Rows (participant_id, sentence_id), columns pair_id (sorted), cells the first rating
    (is_repeat 0); NaN where a row lacks a pair. ``participants``: keep only these."""
    d = df[df["is_repeat"] == 0]
    if participants is not None:
        d = d[d["participant_id"].isin(set(participants))]
    m = d.pivot(index=["participant_id", "sentence_id"], columns="pair_id", values="value")
    m.columns.name = None
    return m.sort_index(axis=1)


# ---------------------------------------------------------------------------------------------
# factor analysis


def _check_rule(factor_rule) -> None:
    if factor_rule not in FACTOR_RULES:
        rules = "; ".join(f"{k}: {v}" for k, v in FACTOR_RULES.items())
        raise EFAError(f"factor_rule must be one of {', '.join(FACTOR_RULES)} ({rules}), not {factor_rule!r}")


def _factor_names(k: int) -> list[str]:
    return [f"factor_{i + 1}" for i in range(k)]


def _fit(x: np.ndarray, k: int, seed: int, notes: list[str]) -> dict:
    """ML extraction and promax rotation of x's items: pattern, phi, communality, uniqueness,
    unrotated loadings, correlation matrix, variance explained; factors ordered and reflected."""
    n, p = x.shape
    r = np.corrcoef(x, rowvar=False)
    unrot, uniq, _ = ml_extract(r, k, n, seed, notes=notes)
    unrot = canonical_order(unrot, uniq)
    if k >= 2:
        # lazy import (factor_analyzer): heavy; needed only when a model is fitted
        from factor_analyzer import Rotator

        rot = Rotator(method="promax", normalize=True, power=PROMAX_POWER)
        pattern = np.asarray(rot.fit_transform(unrot), dtype=float)
        phi = np.asarray(rot.phi_, dtype=float)
    else:
        pattern, phi = unrot.copy(), np.eye(1)
    signs = np.where(pattern.sum(axis=0) < 0, -1.0, 1.0)
    pattern = pattern * signs
    phi = phi * np.outer(signs, signs)
    ss = np.diag(phi @ pattern.T @ pattern)
    order = np.argsort(-ss, kind="stable")
    pattern, phi, ss = pattern[:, order], phi[np.ix_(order, order)], ss[order]
    return dict(
        pattern=pattern, phi=phi, uniqueness=uniq, communality=1 - uniq, unrotated=unrot, corr=r, variance=ss / p, n=n
    )


def _prune_candidate(fit: dict, items: list[str], min_communality: float, min_gap: float) -> dict | None:
    h2 = fit["communality"]
    low = np.flatnonzero(h2 < min_communality - _EPS)
    names = _factor_names(fit["pattern"].shape[1])
    if len(low):
        i = int(low[np.argmin(h2[low])])
        return dict(
            item=items[i],
            reason="low_communality",
            communality=float(h2[i]),
            loading_gap=None,
            detail=f"communality {h2[i]:.3f} < {min_communality:g}",
        )
    if fit["pattern"].shape[1] < 2:
        return None
    a = np.abs(fit["pattern"])
    top = np.argsort(-a, axis=1, kind="stable")[:, :2]
    first = a[np.arange(len(a)), top[:, 0]]
    second = a[np.arange(len(a)), top[:, 1]]
    gap = first - second
    cross = np.flatnonzero(gap < min_gap - _EPS)
    if not len(cross):
        return None
    i = int(cross[np.argmin(gap[cross])])
    return dict(
        item=items[i],
        reason="cross_loading",
        communality=float(h2[i]),
        loading_gap=float(gap[i]),
        detail=f"|loadings| {first[i]:.3f} on {names[top[i, 0]]} and {second[i]:.3f} on {names[top[i, 1]]} "
        f"differ by {gap[i]:.3f} < {min_gap:g}",
    )


def efa(
    matrix,
    n_factors: int | None = None,
    prune: bool = True,
    seed: int = SEED,
    *,
    factor_rule: str = FACTOR_RULE,
    pa_iterations: int = PA_ITERATIONS,
    pa_percentile: float | None = None,
    min_communality: float = MIN_COMMUNALITY,
    min_gap: float = MIN_LOADING_GAP,
) -> EFAResult:
    """Exploratory factor analysis of ``matrix`` (rows = observations, columns = items; a
    DataFrame, or an array whose items are named item_1..): ML extraction, promax rotation,
    K by ``factor_rule`` (eigenvalue > 1 by default, or parallel analysis) unless ``n_factors``;
    iterative pruning unless prune=False (paper 002, section 4.2). Rows with a missing
    value are left out; items without variance are removed first (reported as pruned, reason
    zero_variance). Raises EFAError when the data cannot support the analysis.

    BLAS runs single-threaded meanwhile (threadpoolctl; process-wide while it runs): on these
    small matrices thread hand-offs cost far more than they save (about 10x on 2 busy cores)."""
    # lazy import (threadpoolctl): needed only while a model is fitted
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _efa(matrix, n_factors, prune, seed, factor_rule, pa_iterations, pa_percentile, min_communality, min_gap)


def _efa(
    matrix, n_factors, prune, seed, factor_rule, pa_iterations, pa_percentile, min_communality, min_gap
) -> EFAResult:
    # lazy import (factor_analyzer): heavy; needed only when a model is fitted
    from factor_analyzer import calculate_bartlett_sphericity, calculate_kmo

    if isinstance(matrix, pd.DataFrame):
        frame = matrix.copy()
        frame.columns = [str(c) for c in frame.columns]
    else:
        arr = np.asarray(matrix, dtype=float)
        if arr.ndim != 2:
            raise EFAError("the matrix must be 2-dimensional (rows = observations, columns = items)")
        frame = pd.DataFrame(arr, columns=[f"item_{j + 1}" for j in range(arr.shape[1])])
    _check_rule(factor_rule)
    if not isinstance(pa_iterations, (int, np.integer)) or pa_iterations < 1:
        raise EFAError(f"pa_iterations must be a whole number >= 1, not {pa_iterations!r}")
    pa_iterations = int(pa_iterations)  # a numpy integer would not go into summary.json
    all_items = list(frame.columns)
    if len(set(all_items)) != len(all_items):
        raise EFAError("item names must be unique")
    frame = frame.apply(pd.to_numeric, errors="coerce").astype(float)
    complete = frame.dropna()
    n_dropped = len(frame) - len(complete)
    pruned: list[dict] = []
    notes: list[str] = []
    sd = complete.std(ddof=0) if len(complete) else pd.Series(0.0, index=all_items)
    for item in all_items:
        if not sd[item] > 0:
            pruned.append(
                dict(
                    step=0,
                    item=item,
                    reason="zero_variance",
                    communality=None,
                    loading_gap=None,
                    detail="the same value in every row",
                )
            )
    items = [c for c in all_items if sd[c] > 0]
    x = complete[items].to_numpy()
    n, p = x.shape
    if p < 3:
        raise EFAError(f"{p} item(s) with variance: a factor analysis needs at least 3")
    if n <= p:
        raise EFAError(f"{n} complete row(s) for {p} items: a factor analysis needs more rows than items")
    if np.linalg.matrix_rank(np.corrcoef(x, rowvar=False)) < p:
        raise EFAError("the items' correlation matrix is singular (an item is a linear combination of others)")

    eig, crit, k_pa = parallel_analysis(x, pa_iterations, seed, pa_percentile)
    k_kaiser = kaiser_count(x)
    k_max = max_factors(p)
    if n_factors is None:
        k_rule = k_kaiser if factor_rule == "kaiser" else k_pa
        k = max(1, k_rule)
        source = FACTOR_RULES[factor_rule]
        if k > k_max:
            source += f", capped from {k} to {k_max} (the most that {p} items identify)"
            k = k_max
        elif k_rule == 0:
            source += " (no eigenvalue above the criterion: 1 factor)"
    else:
        if isinstance(n_factors, bool) or not isinstance(n_factors, (int, np.integer)) or n_factors < 1:
            raise EFAError(f"n_factors must be a whole number >= 1, not {n_factors!r}")
        k = int(n_factors)
        if k > k_max:
            raise EFAError(f"{k} factors are not identified with {p} items (at most {k_max})")
        source = "given"

    step = 0
    while True:
        fit = _fit(x, k, seed, notes)
        if not prune:
            break
        cand = _prune_candidate(fit, items, min_communality, min_gap)
        if cand is None:
            break
        if model_dof(p - 1, k) < 0 or p - 1 < 3:
            notes.append(
                f"pruning stopped before removing {cand['item']} ({cand['detail']}): "
                f"{p - 1} items cannot identify {k} factors"
            )
            break
        step += 1
        pruned.append(dict(step=step, **cand))
        j = items.index(cand["item"])
        items = items[:j] + items[j + 1 :]
        x = np.delete(x, j, axis=1)
        p -= 1

    if prune and pruned and n_factors is None and factor_rule == "kaiser" and kaiser_count(x) != k:
        notes.append(
            f"eigenvalue > 1 on the {p} pairs left after pruning gives {kaiser_count(x)} factor(s), not "
            f"the {k} kept while pruning (an SPSS re-run on them would extract {kaiser_count(x)}): set "
            "the number of factors to compare"
        )
    heywood = [f"{item} ({u:.4f})" for item, u in zip(items, fit["uniqueness"]) if u < 0.005]
    if heywood:
        notes.append("Heywood case: uniqueness near 0 (communality near 1) for " + ", ".join(heywood))
    names = _factor_names(k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kmo_items, kmo_total = calculate_kmo(pd.DataFrame(x, columns=items))
        bart_chi2, bart_p = calculate_bartlett_sphericity(pd.DataFrame(x, columns=items))
    chi2, dof, pval = ml_fit_statistics(fit["corr"], fit["unrotated"], fit["uniqueness"], n)
    ss, share, cumulative = extraction_variance(fit["unrotated"])
    return EFAResult(
        items=items,
        loadings=pd.DataFrame(fit["pattern"], index=pd.Index(items, name="pair_id"), columns=names),
        communality=pd.Series(fit["communality"], index=items, name="communality"),
        uniqueness=pd.Series(fit["uniqueness"], index=items, name="uniqueness"),
        factor_correlations=pd.DataFrame(fit["phi"], index=names, columns=names),
        variance_explained=[float(v) for v in fit["variance"]],
        n_factors=k,
        n_factors_source=source,
        eigenvalues=[float(v) for v in eig],
        pa_eigenvalues=[float(v) for v in crit],
        pa_percentile=pa_percentile,
        pa_iterations=pa_iterations,
        kmo=float(kmo_total),
        kmo_per_item=pd.Series(np.asarray(kmo_items, dtype=float), index=items, name="kmo"),
        bartlett_chi2=float(bart_chi2),
        bartlett_p=float(bart_p),
        chi2=chi2,
        dof=dof,
        p=pval,
        n_rows=n,
        n_rows_dropped=n_dropped,
        all_items=all_items,
        pruned=pruned,
        seed=seed,
        notes=notes,
        unrotated_loadings=pd.DataFrame(fit["unrotated"], index=pd.Index(items, name="pair_id"), columns=names),
        extraction_ss=[float(v) for v in ss],
        extraction_variance=[float(v) for v in share],
        extraction_cumulative=[float(v) for v in cumulative],
        factor_rule=factor_rule,
        kaiser_count=k_kaiser,
        prune=bool(prune),
        min_communality=float(min_communality),
        min_gap=float(min_gap),
    )


# ---------------------------------------------------------------------------------------------
# the whole analysis


def analyze(
    df: pd.DataFrame,
    expected_seconds: float = EXPECTED_SECONDS,
    n_factors: int | None = None,
    prune: bool = True,
    *,
    factor_rule: str = FACTOR_RULE,
    inconsistency="mean_abs",
    seed: int = SEED,
    source: str = "<DataFrame>",
    **efa_options,
) -> SDResult:
    """Cleansing, then the EFA of the kept participants' first ratings; the defaults are paper
    002's procedure (pruning on, K by eigenvalue > 1 unless given). When the EFA cannot run
    (e.g. every participant dropped) the result has efa None and efa_error saying why."""
    name, fn = _measure(inconsistency)
    _check_expected(expected_seconds)
    _check_rule(factor_rule)
    d = normalise(df, source)
    cl = _cleanse(d, expected_seconds, fn)
    kept = cl.loc[cl["kept"], "participant_id"]
    result = SDResult(
        cleansing=cl,
        efa=None,
        n_participants=len(cl),
        n_kept=int(cl["kept"].sum()),
        n_ratings=len(d),
        n_ratings_kept=int(d["participant_id"].isin(set(kept)).sum()),
        expected_seconds=float(expected_seconds),
        inconsistency_fence=inconsistency_fence(cl["inconsistency"]),
        inconsistency_measure=name,
        ratings_per_participant=d.groupby("participant_id").size(),
    )
    if n_factors is not None and (
        isinstance(n_factors, bool) or not isinstance(n_factors, (int, np.integer)) or n_factors < 1
    ):
        raise ValueError(f"n_factors must be a whole number >= 1, not {n_factors!r}")
    if kept.empty:
        result.efa_error = "no participant passed the cleansing"
        return result
    try:
        result.efa = efa(
            rating_matrix(d, kept), n_factors=n_factors, prune=prune, seed=seed, factor_rule=factor_rule, **efa_options
        )
    except EFAError as e:
        result.efa_error = str(e)
    return result


def suitability_filter(
    df: pd.DataFrame,
    min_mean: float = SUITABILITY_MIN_MEAN,
    max_sd: float = SUITABILITY_MAX_SD,
    drop_if: str = "either",
) -> pd.DataFrame:
    """Preliminary-study filter on suitability ratings (columns participant_id, pair_id,
    suitability 1-5): per pair n, mean, sd (sample, ddof 1; NaN for a single rating, which is
    then not kept) and kept = mean >= min_mean and sd <= max_sd (drop_if="either", the
    default); drop_if="both" drops only pairs with mean < min_mean and sd > max_sd (the paper's
    sentence read literally). Sorted by pair_id. Bad input raises SDInputError (row 2 = the
    first data row)."""
    if drop_if not in ("either", "both"):
        raise ValueError(f"drop_if must be 'either' or 'both', not {drop_if!r}")
    source = "<suitability>"
    missing = [c for c in SUITABILITY_REQUIRED if c not in df.columns]
    if missing:
        raise SDInputError(source, 1, missing[0], f"missing column (required: {', '.join(SUITABILITY_REQUIRED)})")
    df = df.reset_index(drop=True)
    problems = _Problems(df.columns)
    ids = {c: _cells(df[c]) for c in ("participant_id", "pair_id")}
    for c, s in ids.items():
        problems.flag(c, s == "", lambda pos: "empty value")
    raw = df["suitability"]
    v = _numbers(raw)
    problems.flag("suitability", ~np.isfinite(v), lambda pos: f"suitability {str(raw.iloc[pos])!r} is not a number")
    problems.flag(
        "suitability", np.isfinite(v) & ((v < 1) | (v > 5)), lambda pos: f"suitability {v.iloc[pos]:g} is outside 1-5"
    )
    problems.raise_first(source)
    g = pd.DataFrame({"pair_id": ids["pair_id"], "suitability": v}).groupby("pair_id", sort=True)["suitability"]
    out = pd.DataFrame({"n": g.size(), "mean": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    good_mean = out["mean"] >= min_mean - _EPS
    good_sd = (out["sd"] <= max_sd + _EPS).fillna(False)
    out["kept"] = (good_mean & good_sd) if drop_if == "either" else (good_mean | good_sd)
    out["kept"] = out["kept"].astype(bool)
    out["n"] = out["n"].astype(int)
    return out[SUITABILITY_COLUMNS]


# ---------------------------------------------------------------------------------------------
# outputs


def _num(v):
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = float(v)
    return v if math.isfinite(v) else None


def _paper_cleansing() -> str:
    return (
        f"{PAPER_RATINGS_REMOVED:,} of {PAPER_RATINGS:,} ratings removed "
        f"({PAPER_RATINGS_REMOVED / PAPER_RATINGS:.0%}; section 4.1)"
    )


def cleansing_report(result: SDResult) -> pd.DataFrame:
    """cleansing_summary.csv: one row per cleansing step (too_fast, straight_liner,
    inconsistency: the raters it flags, who may be flagged by another step too, and their
    ratings) and a total row (the raters removed and their ratings, each once); the rule each
    applied (the inconsistency cut-off included) and, beside it, paper 002's figure."""
    cl = result.cleansing
    per = result.ratings_per_participant
    if per is None:
        per = pd.Series(0, index=cl["participant_id"])
    n = max(result.n_ratings, 1)

    def row(step, rule, flagged, paper):
        ids = cl.loc[flagged, "participant_id"]
        ratings = int(per.reindex(ids).fillna(0).sum())
        return [step, rule, int(flagged.sum()), ratings, ratings / n if result.n_ratings else math.nan, paper]

    fence = result.inconsistency_fence
    cut = f"{fence:.3f}" if math.isfinite(fence) else "none (no participant has repeats)"
    rows = [
        row(
            "too_fast",
            f"duration_s <= {result.expected_seconds * FAST_SHARE:g} s "
            f"({FAST_SHARE:.0%} of {result.expected_seconds:g} s)",
            cl["too_fast"],
            "240 s or less (40% of the expected 10 minutes)",
        ),
        row(
            "straight_liner",
            "the same value on every pair of every sentence",
            cl["straight_liner"],
            "the same value for every adjective pair for every sentence",
        ),
        row(
            "inconsistency",
            f"inconsistency ({result.inconsistency_measure}) > {cut} (Q3 + {FENCE_IQR:g} IQR of all raters')",
            cl["outlier"],
            "the IS (Naderi 2018); its formula and cut-off are not given",
        ),
        row(
            "total",
            f"{int((~cl['kept']).sum())} of {result.n_participants} raters, {result.n_ratings} ratings",
            ~cl["kept"].astype(bool),
            f"{_paper_cleansing()}; {PAPER_PARTICIPANTS} crowdworkers took part, "
            "the paper gives no rater count removed",
        ),
    ]
    return pd.DataFrame(rows, columns=CLEANSING_REPORT_COLUMNS)


def summary_dict(result: SDResult) -> dict:
    """summary.json: SUMMARY_KEYS (variance_explained: shares 0-1 per factor; pruned_items: the
    pruning steps in order), then details (cleansing counts, parallel analysis, factor
    correlations, notes). Statistics are null when the EFA did not run."""
    cl, e = result.cleansing, result.efa
    out: dict[str, Any] = {"n_participants": result.n_participants, "n_kept": result.n_kept}
    out.update({k: None for k in SUMMARY_KEYS[2:]})
    out["pruned_items"] = []
    if e is not None:
        out.update(
            kmo=_num(e.kmo),
            bartlett_chi2=_num(e.bartlett_chi2),
            bartlett_p=_num(e.bartlett_p),
            factors=e.n_factors,
            variance_explained=[_num(v) for v in e.variance_explained],
            chi2=_num(e.chi2),
            dof=e.dof,
            p=_num(e.p),
            pruned_items=[
                {k: (_num(v) if k in ("communality", "loading_gap", "step") else v) for k, v in step.items()}
                for step in e.pruned
            ],
        )
    out["cleansing"] = {
        "expected_seconds": result.expected_seconds,
        "too_fast_at_or_below_s": result.expected_seconds * FAST_SHARE,
        "too_fast": int(cl["too_fast"].sum()),
        "straight_liner": int(cl["straight_liner"].sum()),
        "outlier": int(cl["outlier"].sum()),
        "inconsistency_measure": result.inconsistency_measure,
        "inconsistency_fence": _num(result.inconsistency_fence),
        "n_ratings": result.n_ratings,
        "n_ratings_kept": result.n_ratings_kept,
        "raters_removed": result.n_participants - result.n_kept,
        "ratings_removed": result.n_ratings - result.n_ratings_kept,
        "ratings_removed_share": _num((result.n_ratings - result.n_ratings_kept) / result.n_ratings)
        if result.n_ratings
        else None,
        # section 4.1: "The data cleansing removed 6,800 ratings, resulting in 14,200 ratings"
        "paper_002": {
            "ratings": PAPER_RATINGS,
            "ratings_removed": PAPER_RATINGS_REMOVED,
            "ratings_removed_share": PAPER_RATINGS_REMOVED / PAPER_RATINGS,
            "participants": PAPER_PARTICIPANTS,
        },
    }
    if e is not None:
        out["efa"] = {
            "n_rows": e.n_rows,
            "n_rows_dropped_incomplete": e.n_rows_dropped,
            "n_items": len(e.all_items),
            "items": e.items,
            "factors_source": e.n_factors_source,
            "factor_rule": e.factor_rule,
            "kaiser_count": e.kaiser_count,
            "pruning": {"on": e.prune, "min_communality": e.min_communality, "min_loading_gap": e.min_gap},
            "variance_explained_total": _num(sum(e.variance_explained)),
            # SPSS's "Extraction Sums of Squared Loadings" (before rotation; paper 002's Table 1)
            "variance_before_rotation": {
                "ss_loadings": [_num(v) for v in e.extraction_ss],
                "share": [_num(v) for v in e.extraction_variance],
                "cumulative": [_num(v) for v in e.extraction_cumulative],
            },
            "extraction": "maximum likelihood (statsmodels)",
            "rotation": f"promax, Kaiser normalisation, power {PROMAX_POWER} (factor_analyzer)",
            "parallel_analysis": {
                "criterion": "mean" if e.pa_percentile is None else f"percentile {e.pa_percentile:g}",
                "iterations": e.pa_iterations,
                "seed": e.seed,
                "eigenvalues": [_num(v) for v in e.eigenvalues],
                "random": [_num(v) for v in e.pa_eigenvalues],
            },
            "factor_correlations": [[_num(v) for v in row] for row in e.factor_correlations.to_numpy()],
            "notes": e.notes,
        }
    else:
        out["efa_error"] = result.efa_error
    return out


def loadings_table(result: SDResult) -> pd.DataFrame:
    """loadings.csv: every analysed pair; factor loadings of the final model (empty for a pruned
    pair), communality (final model; for a pruned pair the one in the step that removed it) and
    kept (in the final model)."""
    e = result.efa
    if e is None:
        return pd.DataFrame(columns=["pair_id", "communality", "kept"])
    names = list(e.loadings.columns)
    removed = {s["item"]: s.get("communality") for s in e.pruned}
    rows = []
    for item in e.all_items:
        if item in e.loadings.index:
            rows.append([item, *e.loadings.loc[item].tolist(), float(e.communality[item]), True])
        else:
            c = removed.get(item)
            rows.append([item, *([math.nan] * len(names)), math.nan if c is None else c, False])
    return pd.DataFrame(rows, columns=["pair_id", *names, "communality", "kept"])


VARIANCE_COLUMNS = ["factor", "rotated_share", "extraction_ss", "extraction_share", "extraction_cumulative"]


def variance_table(result: SDResult) -> pd.DataFrame:
    """variance.csv: per factor the share of variance after rotation (rotated_share, this
    project's factor order) beside SPSS's Extraction Sums of Squared Loadings before rotation
    (extraction_ss, extraction_share = ss / p, extraction_cumulative; the unrotated factors'
    order). Shares are 0-1 (SPSS prints percent)."""
    e = result.efa
    if e is None:
        return pd.DataFrame(columns=VARIANCE_COLUMNS)
    return pd.DataFrame(
        {
            "factor": _factor_names(e.n_factors),
            "rotated_share": e.variance_explained,
            "extraction_ss": e.extraction_ss,
            "extraction_share": e.extraction_variance,
            "extraction_cumulative": e.extraction_cumulative,
        }
    )[VARIANCE_COLUMNS]


def figures(result: SDResult) -> dict:
    """Plotly figures: 'loadings' (pattern-matrix heat map of the final items, grouped by their
    largest loading) and 'scree' (observed eigenvalues with the parallel-analysis criterion).
    Empty when the EFA did not run."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    e = result.efa
    if e is None:
        return {}
    out = {}
    lo = e.loadings
    primary = lo.abs().to_numpy().argmax(axis=1)
    strength = lo.abs().to_numpy().max(axis=1)
    order = sorted(range(len(lo)), key=lambda i: (primary[i], -strength[i]))
    lo = lo.iloc[order]
    labels = [f"{item} (h² {e.communality[item]:.2f})" for item in lo.index]
    names = [f"{c} ({v:.1%})" for c, v in zip(lo.columns, e.variance_explained)]
    fig = go.Figure(
        go.Heatmap(
            z=lo.to_numpy(),
            x=names,
            y=labels,
            colorscale="RdBu",
            zmid=0,
            zmin=-1,
            zmax=1,
            text=np.vectorize(lambda v: f"{v:.2f}")(lo.to_numpy()),
            texttemplate="%{text}",
            hovertemplate="%{y}<br>%{x}<br>loading %{z:.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        title=f"Pattern loadings (ML, promax), {e.n_factors} factor(s), {e.n_rows} rows; KMO {e.kmo:.3f}",
        height=max(400, 60 + 32 * len(lo)),
        width=max(500, 260 + 130 * e.n_factors),
    )
    out["loadings"] = fig

    x = list(range(1, len(e.eigenvalues) + 1))
    crit = "mean" if e.pa_percentile is None else f"{e.pa_percentile:g}th percentile"
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=e.eigenvalues, mode="lines+markers", name="observed"))
    fig.add_trace(
        go.Scatter(
            x=x,
            y=e.pa_eigenvalues,
            mode="lines",
            line=dict(dash="dash"),
            name=f"parallel analysis ({crit} of {e.pa_iterations} random sets)",
        )
    )
    fig.add_hline(y=1, line_dash="dot", line_color="firebrick", annotation_text="eigenvalue 1 (Kaiser, SPSS's default)")
    fig.add_vline(
        x=e.n_factors, line_dash="dot", line_color="grey", annotation_text=f"K = {e.n_factors} ({e.n_factors_source})"
    )
    fig.update_layout(
        title=f"Scree plot of the {len(e.eigenvalues)} analysed pairs",
        xaxis_title="component",
        yaxis_title="eigenvalue",
        height=450,
        width=750,
    )
    out["scree"] = fig
    return out


def write_outputs(result: SDResult, out_dir, include_plotlyjs="directory", png: bool | None = None) -> list[Path]:
    """Write cleansing.csv, cleansing_summary.csv, loadings.csv, summary.json, variance.csv (when the EFA ran) and each
    figure as a standalone HTML file (plotly.min.js written once beside them)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    p = out / "cleansing.csv"
    result.cleansing.to_csv(p, index=False)
    paths.append(p)
    p = out / "loadings.csv"
    loadings_table(result).to_csv(p, index=False)
    paths.append(p)
    p = out / "summary.json"
    p.write_text(json.dumps(summary_dict(result), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths.append(p)
    p = out / "cleansing_summary.csv"
    cleansing_report(result).to_csv(p, index=False)
    paths.append(p)
    if result.efa is not None:
        p = out / "variance.csv"
        variance_table(result).to_csv(p, index=False)
        paths.append(p)
    paths += write_figures(figures(result), out, include_plotlyjs, png)
    return paths


def summary(result: SDResult) -> str:
    cl = result.cleansing
    lines = [
        f"{count(result.n_participants, 'participant')}, {count(result.n_ratings, 'rating')}; kept {result.n_kept} "
        f"(too fast <= {result.expected_seconds * FAST_SHARE:g} s: {int(cl['too_fast'].sum())}, "
        f"straight-liners: {int(cl['straight_liner'].sum())}, inconsistency outliers: {int(cl['outlier'].sum())})"
    ]
    fence = result.inconsistency_fence
    removed = result.n_ratings - result.n_ratings_kept
    share = f" ({removed / result.n_ratings:.1%})" if result.n_ratings else ""
    lines.append(
        f"cleansing removed {result.n_participants - result.n_kept} of {result.n_participants} raters and "
        f"{removed:,} of {result.n_ratings:,} ratings{share}; inconsistency cut-off "
        + (
            f"{fence:.3f} ({result.inconsistency_measure} > Q3 + {FENCE_IQR:g} IQR)"
            if math.isfinite(fence)
            else "none (no repeats)"
        )
        + f"; paper 002: {_paper_cleansing()}"
    )
    e = result.efa
    if e is None:
        lines.append(f"EFA not run: {result.efa_error}")
        return "\n".join(lines)
    lines.append(
        f"EFA on {e.n_rows} rows x {len(e.items)} pairs: {e.n_factors} factor(s) ({e.n_factors_source}); "
        f"KMO {e.kmo:.3f}; Bartlett chi2 {e.bartlett_chi2:.1f}, p {e.bartlett_p:.3g}"
    )
    p = "n/a" if not math.isfinite(e.p) else f"{e.p:.3g}"
    lines.append(
        f"fit: chi2 {e.chi2:.2f}, dof {e.dof}, p {p}; variance explained "
        + ", ".join(f"F{i + 1} {v:.1%}" for i, v in enumerate(e.variance_explained))
        + f" (total {sum(e.variance_explained):.1%}); before rotation (SPSS's extraction sums of "
        "squared loadings) "
        + ", ".join(f"F{i + 1} {v:.1%}" for i, v in enumerate(e.extraction_variance))
        + (f" (cumulative {e.extraction_cumulative[-1]:.1%})" if e.extraction_cumulative else "")
    )
    if e.prune:
        lines.append(
            f"pruning (section 4.2): communality < {e.min_communality:g} or the two largest |loadings| "
            f"differing by < {e.min_gap:g}; {len([s for s in e.pruned if s['step']])} pair(s) removed"
        )
    else:
        lines.append("pruning off (paper 002, section 4.2, removed pairs with low communalities or cross-loadings)")
    for s in e.pruned:
        lines.append(f"  pruned {s['step']}: {s['item']} ({s['detail']})")
    primary = e.loadings.abs().idxmax(axis=1)
    for f in e.loadings.columns:
        members = [f"{i} {e.loadings.at[i, f]:+.2f}" for i in e.items if primary[i] == f]
        lines.append(f"  {f}: " + (", ".join(members) if members else "(no pair loads highest here)"))
    lines.extend(f"note: {n}" for n in e.notes)
    return "\n".join(lines)


def run_cli(
    path,
    out_dir,
    n_factors: int | None = None,
    expected_seconds: float = EXPECTED_SECONDS,
    prune: bool = True,
    factor_rule: str = FACTOR_RULE,
) -> str:
    """Read ratings, analyse, write outputs to out_dir and return a short human summary.
    n_factors None or 0: the factor rule chooses."""
    df = read_ratings(path)
    result = analyze(
        df,
        expected_seconds=expected_seconds,
        n_factors=n_factors or None,
        prune=prune,
        factor_rule=factor_rule,
        source=str(path),
    )
    files = write_outputs(result, out_dir)
    return f"SD analysis of {path}\n" + summary(result) + f"\n{len(files)} files written to {out_dir}"
