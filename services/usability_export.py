"""The four-phase study's data as the usability analysis reads it (services/usability_analysis.py)."""
from __future__ import annotations

import pandas as pd

from storage import results

COLUMNS = ["exchange_id", "sender_id", "receiver_id", "validator_id", "group", "gender", "system", "topic",
           "source", "satisfaction", "trust", "reliance", "satisfaction_b", "trust_b", "reliance_b",
           "translation_score", "qa_score", "perspective"]


def exchanges_frame(database, study_id: str) -> pd.DataFrame:
    return pd.DataFrame(results.usability_rows(database, study_id), columns=COLUMNS)
