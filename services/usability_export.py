"""The four-phase study's data as the usability analysis reads it (services/usability_analysis.py)."""
from __future__ import annotations

import pandas as pd

from storage import results

COLUMNS = ["exchange_id", "sender_id", "receiver_id", "validator_id", "group", "gender", "system", "topic",
           "source", "satisfaction", "trust", "reliance", "satisfaction_b", "trust_b", "reliance_b",
           "translation_score", "qa_score", "perspective"]


def exchanges_frame(database, study_id: str) -> pd.DataFrame:
    """One row per validated answer set, plus a metric_<name> column per automatic metric."""
    df = pd.DataFrame(results.usability_rows(database, study_id), columns=COLUMNS)
    # the analysis takes one row per exchange (the paper had one receiver and one validator each);
    # with redundancy > 1 the first validated answer set stands for the exchange
    df = df.drop_duplicates("exchange_id", keep="first").reset_index(drop=True)
    m = pd.DataFrame(results.exchange_metric_rows(database, study_id),
                     columns=["exchange_id", "metric", "version", "model", "score"])
    if df.empty or m.empty:
        return df
    wide = m.pivot_table(index="exchange_id", columns="metric", values="score", aggfunc="first")
    wide.columns = [f"metric_{c.replace('-', '_')}" for c in wide.columns]
    return df.merge(wide.reset_index(), on="exchange_id", how="left")
