"""The four-phase study's data as the usability analysis reads it (services/usability_analysis.py).

The exchange's speaker (its sender: sender_id, group, gender; empty for an exchange without a
sender) and the survey's respondent (the sender, or a third-person rater: respondent_*) are
separate columns; services/export_dictionary.py (ANALYSIS_TABLES["usability"]) documents them."""
from __future__ import annotations

import pandas as pd

from services import export_dictionary
from storage import exports, participants, results

COLUMNS = export_dictionary.analysis_columns("usability")
# storage.results.usability_rows: its sender_id, group and gender are the respondent's
_ROWS = ["exchange_id", "sender_id", "receiver_id", "validator_id", "group", "gender", "system", "topic",
         "source", "satisfaction", "trust", "reliance", "satisfaction_b", "trust_b", "reliance_b",
         "translation_score", "qa_score", "perspective", "corpus"]
_IDS = ["exchange_id", "sender_id", "receiver_id", "validator_id", "respondent_id"]


def exchanges_frame(database, study_id: str) -> pd.DataFrame:
    """One row per validated answer set, plus a metric_<name> column per automatic metric."""
    df = pd.DataFrame(results.usability_rows(database, study_id), columns=_ROWS)
    df = df.rename(columns={"sender_id": "respondent_id", "group": "respondent_group",
                            "gender": "respondent_gender"})
    ex = pd.DataFrame(exports.exchange_rows(database, study_id), columns=["exchange_id", "starter_id", "sender__pid"])
    people = pd.DataFrame(participants.list_for_study(database, study_id), columns=["id", "role", "grp", "gender"])
    ex["sender__pid"] = ex["sender__pid"].astype("Int64")
    people["id"] = people["id"].astype("Int64")
    df["respondent_id"] = df["respondent_id"].astype("Int64")
    speakers = people.rename(columns={"id": "sender_id", "grp": "group"})[["sender_id", "group", "gender"]]
    df = df.merge(ex.rename(columns={"sender__pid": "sender_id"}), on="exchange_id", how="left")
    df = df.merge(speakers, on="sender_id", how="left")
    df = df.merge(people[["id", "role"]].rename(columns={"id": "respondent_id", "role": "respondent_role"}),
                  on="respondent_id", how="left")
    for c in _IDS:
        df[c] = df[c].astype("Int64")
    df = df[COLUMNS]
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
