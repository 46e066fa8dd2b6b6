"""The semantic-differential analysis of a stored study, as the Analysis tab shows it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from services.sd import analysis as sd_analysis
from storage import studies
from storage.db import required
from storage.sd import ratings


@dataclass
class StudyAnalysis:
    result: sd_analysis.SDResult
    figures: dict
    loadings: pd.DataFrame | None  # None when no factor analysis ran
    suitability: pd.DataFrame | None  # None without suitability ratings (preliminary study)
    cleansing_report: pd.DataFrame | None = None  # per cleansing step, beside paper 002's figure


# the Analysis tab's choice of how many factors: the two rules, or the number in its Factors field
FACTOR_CHOICES = [
    ("eigenvalue > 1 (SPSS's default, paper 002)", "kaiser"),
    ("parallel analysis", "parallel"),
    ("the number in Factors", "given"),
]


def factor_count(n_factors, factor_rule: str = sd_analysis.FACTOR_RULE) -> tuple[int | None, str] | str:
    """(n_factors or None, rule) from the tab's fields, or the message to show: an empty or 0
    Factors field means the rule (the browser sends 0 for an empty number field); a number >= 1
    is used whatever the rule."""
    if n_factors is None or (isinstance(n_factors, float) and math.isnan(n_factors)) or n_factors == 0:
        if factor_rule == "given":
            return "Factors: enter a number of factors >= 1, or choose eigenvalue > 1 or parallel analysis."
        n_factors = None
    elif n_factors < 1 or n_factors != int(n_factors):
        return f"Factors: {n_factors:g} is not a whole number >= 1 (empty or 0: the rule chosen beside it)."
    if factor_rule not in (*sd_analysis.FACTOR_RULES, "given"):
        return f"Unknown factor rule {factor_rule!r} (choose {', '.join(label for label, _ in FACTOR_CHOICES)})."
    return (
        int(n_factors) if n_factors is not None else None,
        sd_analysis.FACTOR_RULE if factor_rule == "given" else factor_rule,
    )


def analyse(
    database,
    study_id: str,
    n_factors: int | None = None,
    prune: bool = True,
    factor_rule: str = sd_analysis.FACTOR_RULE,
) -> StudyAnalysis | str:
    """The study's ratings, their analysis (the study's expected seconds per page; paper 002's
    defaults: pruning on, K by eigenvalue > 1 unless a number is given), figures and the
    suitability of each pair, or the message to show instead."""
    count = factor_count(n_factors, factor_rule)
    if isinstance(count, str):
        return count
    rows = ratings.sd_rating_rows(database, study_id) if study_id else []
    if not rows:
        return "No SD ratings yet (pick the study above and press Show first)."
    study = required(studies.get_study(database, study_id), "study with SD ratings")
    res = sd_analysis.analyze(
        pd.DataFrame(rows),
        expected_seconds=study["config"]["sd"]["expected_seconds"],
        n_factors=count[0],
        prune=bool(prune),
        factor_rule=count[1],
    )
    suit = ratings.sd_suitability_rows(database, study_id)
    return StudyAnalysis(
        res,
        sd_analysis.figures(res),
        sd_analysis.loadings_table(res) if res.efa is not None else None,
        sd_analysis.suitability_filter(pd.DataFrame(suit)) if suit else None,
        sd_analysis.cleansing_report(res),
    )


def qc_outcomes(database, study_id: str) -> dict[int, str]:
    """Each SD rater's cleansing outcome (analysis.cleanse, the analysis's own steps, on the whole
    study: the outlier fence needs every rater) in the words a payer acts on, by participant id:
    "passed", "too fast (200 s, expected 600 s)", "straight-liner", "inconsistent repeats"."""
    rows = ratings.sd_rating_rows(database, study_id)
    if not rows:
        return {}
    study = required(studies.get_study(database, study_id), "study with SD ratings")
    expected = float(study["config"]["sd"]["expected_seconds"])
    out = {}
    for r in sd_analysis.cleanse(pd.DataFrame(rows), expected_seconds=expected).itertuples():
        parts = [f"too fast ({r.duration_s:.0f} s, expected {expected:.0f} s)"] if r.too_fast else []
        parts += ["straight-liner (one answer everywhere)"] if r.straight_liner else []
        parts += [f"inconsistent repeats (score {r.inconsistency:.2f})"] if r.outlier else []
        out[int(r.participant_id)] = "; ".join(parts) or "passed"
    return out
