"""Agreement between annotators beyond Krippendorff's alpha: Cohen's and Fleiss' kappa for
categories (statsmodels), the intraclass correlation for scores (pingouin), and a study's
figures with each annotator's against the rest, from one row per (unit, annotator, value).

* Cohen's kappa (Cohen 1960): two annotators on the units both rated, from their confusion table
  (statsmodels.stats.inter_rater.cohens_kappa; weights None, "linear" or "quadratic" for
  ordered categories, on the categories' sorted order), with statsmodels' asymptotic 95% interval.
* Fleiss' kappa (Fleiss 1971): any number of annotators, each unit rated by the same number of
  them; units with another number of ratings than the most common one are left out and counted
  (statsmodels' fleiss_kappa on aggregate_raters' counts).
* ICC (Shrout and Fleiss 1979; McGraw and Wong 1996): pingouin.intraclass_corr on the units every
  annotator rated (the two-way designs need complete data): ICC(1,1) one-way, ICC(A,1) = ICC(2,1)
  absolute agreement, ICC(C,1) = ICC(3,1) consistency, and their averages over k annotators, with
  pingouin's F-based 95% intervals.
* Per annotator against the rest: Krippendorff's alpha between the annotator and the rest's
  consensus on each unit both cover (the rest's mean at the interval and ratio levels, median at
  the ordinal level, their single most frequent value at the nominal level, a unit with a tie for
  the most frequent being left out), and the study's alpha without the annotator (higher than
  the study's: the annotator lowers agreement).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from services.common.agreement import LEVELS, krippendorff_alpha, reliability_matrix

WEIGHTS = (None, "linear", "quadratic")


def _categories(*columns) -> list:
    values = set()
    for c in columns:
        values |= set(pd.Series(c).dropna())
    return sorted(values)


def cohen_kappa(ratings: pd.DataFrame, first, second, *, weights: str | None = None) -> dict:
    """Cohen's kappa of annotators `first` and `second` on the units both rated: kappa, its 95%
    interval (low, high), n units and the confusion table (rows first's values, columns
    second's). A ValueError when they share no unit."""
    # statsmodels is heavy to import; only the analyses need it
    from statsmodels.stats.inter_rater import cohens_kappa

    if weights not in WEIGHTS:
        raise ValueError(f"unknown kappa weights {weights!r}: None, linear or quadratic")
    matrix = reliability_matrix(ratings)
    for who in (first, second):
        if who not in matrix.index:
            raise ValueError(f"annotator {who!r} gave no value")
    pair = matrix.loc[[first, second]].T.dropna()
    if pair.empty:
        raise ValueError(f"annotators {first!r} and {second!r} share no unit: nothing to compare")
    cats = _categories(matrix.loc[first], matrix.loc[second])
    table = pd.crosstab(pair[first], pair[second]).reindex(index=cats, columns=cats, fill_value=0)
    res = cohens_kappa(table.to_numpy(), wt=weights)
    return {
        "kappa": float(res.kappa),
        "low": float(res.kappa_low),
        "high": float(res.kappa_upp),
        "n_units": len(pair),
        "table": table,
    }


def fleiss_kappa(ratings: pd.DataFrame) -> dict:
    """Fleiss' kappa on the units rated by the most common number of annotators (at least two):
    kappa, n units used, n units left out, the number of ratings per unit. A ValueError when no
    unit has two ratings."""
    from statsmodels.stats.inter_rater import aggregate_raters  # heavy: see above
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    matrix = reliability_matrix(ratings)
    counts = matrix.notna().sum(axis=0)
    counts = counts[counts >= 2]
    if counts.empty:
        raise ValueError("no unit has values from two annotators: nothing to compare")
    m = int(counts.mode().max())
    units = counts.index[counts == m]
    cats = _categories(*[matrix[u] for u in units])
    codes = {c: i for i, c in enumerate(cats)}
    data = np.array([[codes[v] for v in matrix[u].dropna()] for u in units])
    table, _ = aggregate_raters(data, n_cat=len(cats))
    return {
        "kappa": float(sm_fleiss(table, method="fleiss")),
        "n_units": len(units),
        "left_out": int(len(matrix.columns) - len(units)),
        "per_unit": m,
    }


ICC_COLUMNS = ["type", "icc", "low", "high", "f", "p_value"]


def icc(ratings: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The six intraclass correlations (pingouin's table: ICC(1,1), ICC(A,1), ICC(C,1), ICC(1,k),
    ICC(A,k), ICC(C,k)) on the units every annotator rated, and that number of units. A
    ValueError when fewer than two annotators or two such units."""
    # pingouin (and the matplotlib it loads) is heavy to import; only the analyses need it
    import pingouin

    matrix = reliability_matrix(ratings)
    if len(matrix) < 2:
        raise ValueError(f"the ICC needs at least two annotators, not {len(matrix)}")
    complete = matrix.dropna(axis=1)
    if complete.shape[1] < 2:
        raise ValueError("fewer than two units rated by every annotator: no ICC")
    long = complete.T.stack().rename("value").rename_axis(["unit", "annotator"]).reset_index()
    with warnings.catch_warnings():
        # pingouin 0.7 calls dropna(inplace=True), which pandas 3.1 deprecates: its concern, not ours
        warnings.filterwarnings("ignore", message="The inplace keyword")
        table = pingouin.intraclass_corr(data=long, targets="unit", raters="annotator", ratings="value")
    out = pd.DataFrame(
        {
            "type": table["Type"].to_numpy(),
            "icc": table["ICC"].to_numpy(dtype=float),
            "low": [float(ci[0]) for ci in table["CI95"]],
            "high": [float(ci[1]) for ci in table["CI95"]],
            "f": table["F"].to_numpy(dtype=float),
            "p_value": table["pval"].to_numpy(dtype=float),
        }
    )
    return out, complete.shape[1]


def consensus(values: pd.Series, level: str) -> float:
    """The rest's value on a unit at `level`: mean, median, or the single most frequent (NaN on
    a tie for it)."""
    values = values.dropna()
    if values.empty:
        return math.nan
    if level in ("interval", "ratio"):
        return float(values.mean())
    if level == "ordinal":
        return float(values.median())
    top = values.value_counts()
    return top.index[0] if len(top) == 1 or top.iloc[0] > top.iloc[1] else math.nan


def _pairable(matrix: pd.DataFrame) -> tuple[int, int]:
    counts = matrix.notna().sum(axis=0)
    return int((counts >= 2).sum()), int(counts[counts >= 2].sum())


@dataclass
class AgreementReport:
    """A study's agreement figures (one row per statistic: value, interval, units and values it
    rests on, a note when it could not be computed) and each annotator's against the rest."""

    level: str
    study: pd.DataFrame
    per_annotator: pd.DataFrame
    notes: list[str] = field(default_factory=list)


STUDY_COLUMNS = ["statistic", "value", "low", "high", "n_units", "n_values", "note"]
ANNOTATOR_COLUMNS = ["annotator", "n_units", "alpha_vs_rest", "alpha_without", "note"]


def agreement_report(
    ratings: pd.DataFrame,
    level: str = "interval",
    *,
    unit: str = "unit",
    annotator: str = "annotator",
    value: str = "value",
) -> AgreementReport:
    """Krippendorff's alpha at `level`; Cohen's kappa (two annotators) or Fleiss' kappa (more) at
    the nominal and ordinal levels (ordinal: Cohen's with quadratic weights); the ICCs at the
    interval and ratio levels; and per annotator the alpha against the rest's consensus and the
    study's alpha without them. What cannot be computed gets NaN and a note saying why."""
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r}: one of {', '.join(LEVELS)}")
    ratings = ratings.rename(columns={unit: "unit", annotator: "annotator", value: "value"})
    matrix = reliability_matrix(ratings)
    n_units, n_values = _pairable(matrix)
    rows: list[tuple] = []
    notes: list[str] = []

    def attempt(name, compute):
        try:
            rows.append((name, *compute(), ""))
        except ValueError as e:
            rows.append((name, math.nan, math.nan, math.nan, 0, 0, str(e)))
            notes.append(f"{name}: {e}")

    attempt("krippendorff_alpha", lambda: (krippendorff_alpha(ratings, level), math.nan, math.nan, n_units, n_values))
    annotators = list(matrix.index)
    if level in ("nominal", "ordinal"):
        if len(annotators) == 2:

            def cohen():
                k = cohen_kappa(ratings, *annotators, weights="quadratic" if level == "ordinal" else None)
                return k["kappa"], k["low"], k["high"], k["n_units"], 2 * k["n_units"]

            attempt("cohen_kappa", cohen)
        else:

            def fleiss():
                k = fleiss_kappa(ratings)
                return k["kappa"], math.nan, math.nan, k["n_units"], k["n_units"] * k["per_unit"]

            attempt("fleiss_kappa", fleiss)
    else:
        try:
            table, n_complete = icc(ratings)
            for r in table.itertuples():
                rows.append((r.type, r.icc, r.low, r.high, n_complete, n_complete * len(annotators), ""))
        except ValueError as e:
            rows.append(("icc", math.nan, math.nan, math.nan, 0, 0, str(e)))
            notes.append(f"icc: {e}")

    per = []
    for who in annotators if len(annotators) >= 2 else []:
        rest = matrix.drop(index=who)
        agreed = rest.apply(lambda col: consensus(col, level), axis=0)
        pair = pd.DataFrame({"mine": matrix.loc[who], "rest": agreed}).dropna()
        long = pair.rename_axis("unit").reset_index().melt(id_vars="unit", var_name="annotator", value_name="value")
        note = []
        try:
            vs_rest = krippendorff_alpha(long, level)
        except ValueError as e:
            vs_rest = math.nan
            note.append(f"against the rest: {e}")
        try:
            without = krippendorff_alpha(ratings[ratings["annotator"] != who], level)
        except ValueError as e:
            without = math.nan
            note.append(f"without: {e}")
        per.append((who, len(pair), vs_rest, without, "; ".join(note)))
    if len(annotators) < 2:
        notes.append(f"{len(annotators)} annotator(s): no agreement to compute")
    return AgreementReport(
        level=level,
        study=pd.DataFrame(rows, columns=STUDY_COLUMNS),
        per_annotator=pd.DataFrame(per, columns=ANNOTATOR_COLUMNS),
        notes=notes,
    )
