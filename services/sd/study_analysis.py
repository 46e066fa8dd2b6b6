"""The semantic-differential analysis of a stored study, as the Analysis tab shows it."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from services.sd import analysis as sd_analysis
from storage import results, studies


@dataclass
class StudyAnalysis:
    result: sd_analysis.SDResult
    figures: dict
    loadings: pd.DataFrame | None          # None when no factor analysis ran
    suitability: pd.DataFrame | None       # None without suitability ratings (preliminary study)


def analyse(database, study_id: str, n_factors: int | None = None, prune: bool = False) -> StudyAnalysis | str:
    """The study's ratings, their analysis (the study's expected seconds per page), figures and
    the suitability of each pair, or the message to show instead."""
    rows = results.sd_rating_rows(database, study_id) if study_id else []
    if not rows:
        return "No SD ratings yet (pick the study above and press Show first)."
    study = studies.get_study(database, study_id)
    res = sd_analysis.analyze(pd.DataFrame(rows), expected_seconds=study["config"]["sd"]["expected_seconds"],
                              n_factors=int(n_factors) if n_factors else None, prune=bool(prune))
    suit = results.sd_suitability_rows(database, study_id)
    return StudyAnalysis(res, sd_analysis.figures(res),
                         sd_analysis.loadings_table(res) if res.efa is not None else None,
                         sd_analysis.suitability_filter(pd.DataFrame(suit)) if suit else None)
