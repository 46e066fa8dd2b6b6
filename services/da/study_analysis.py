"""The DA analysis of a stored campaign, as the Analysis tab shows it."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from services.da import analysis as da_analysis
from services.da import campaign as da_campaign


@dataclass
class CampaignAnalysis:
    judgments: pd.DataFrame
    result: da_analysis.DAResult
    figures: dict


def analyse(database, study_id: str, alpha: float = 0.05) -> CampaignAnalysis | str:
    """The campaign's judgments, their analysis and its figures, or the message to show instead."""
    df = da_campaign.judgments_frame(database, study_id) if study_id else None
    if df is None or df.empty:
        return "No DA judgments yet (pick the study above and press Show first)."
    res = da_analysis.analyze(df, alpha=float(alpha or 0.05))
    return CampaignAnalysis(df, res, da_analysis.figures(res))
