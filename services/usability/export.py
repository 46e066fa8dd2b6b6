"""The four-phase study's data as the usability analysis reads it (services/usability/analysis.py).

The exchange's speaker (its sender: sender_id, group, gender; empty for an exchange without a
sender) and the survey's respondent (the sender, or a third-person rater: respondent_*) are
separate columns; services/usability/export_tables.py (ANALYSIS_TABLE) documents them.

Each automatic metric gives a metric_<name> column (its score) and a <name>_model column (the
model that produced each score; ANALYSIS_PATTERN_COLUMNS documents both). A metric whose
scores come from more than one model (a checkpoint changed mid-study) is named in the frame's
attrs["warnings"] and in a UserWarning, so its column is never silently one model's numbers."""

from __future__ import annotations

import warnings

import pandas as pd

from services.usability import export_tables
from storage import participants
from storage.usability import answers, exchange_metrics, exports

COLUMNS = list(export_tables.ANALYSIS_TABLE[1])
# storage.usability.answers.usability_rows: its sender_id, group and gender are the respondent's
_ROWS = [
    "exchange_id",
    "sender_id",
    "receiver_id",
    "validator_id",
    "group",
    "gender",
    "system",
    "topic",
    "source",
    "satisfaction",
    "trust",
    "reliance",
    "satisfaction_b",
    "trust_b",
    "reliance_b",
    "translation_score",
    "qa_score",
    "perspective",
    "corpus",
]
_IDS = ["exchange_id", "sender_id", "receiver_id", "validator_id", "respondent_id"]


def _column_name(metric: str) -> str:
    return metric.replace("-", "_")


def exchanges_frame(database, study_id: str) -> pd.DataFrame:
    """One row per validated answer set, plus metric_<name> and <name>_model columns per
    automatic metric; attrs["warnings"] names each metric whose scores mix models."""
    df = pd.DataFrame(answers.usability_rows(database, study_id), columns=_ROWS)
    df = df.rename(columns={"sender_id": "respondent_id", "group": "respondent_group", "gender": "respondent_gender"})
    ex = pd.DataFrame(exports.exchange_rows(database, study_id), columns=["exchange_id", "starter_id", "sender__pid"])
    people = pd.DataFrame(participants.list_for_study(database, study_id), columns=["id", "role", "grp", "gender"])
    ex["sender__pid"] = ex["sender__pid"].astype("Int64")
    people["id"] = people["id"].astype("Int64")
    df["respondent_id"] = df["respondent_id"].astype("Int64")
    speakers = people.rename(columns={"id": "sender_id", "grp": "group"})[["sender_id", "group", "gender"]]
    df = df.merge(ex.rename(columns={"sender__pid": "sender_id"}), on="exchange_id", how="left")
    df = df.merge(speakers, on="sender_id", how="left")
    df = df.merge(
        people[["id", "role"]].rename(columns={"id": "respondent_id", "role": "respondent_role"}),
        on="respondent_id",
        how="left",
    )
    for c in _IDS:
        df[c] = df[c].astype("Int64")
    df = df[COLUMNS]
    # the analysis takes one row per exchange (the paper had one receiver and one validator each);
    # with redundancy > 1 the first validated answer set stands for the exchange
    df = df.drop_duplicates("exchange_id", keep="first").reset_index(drop=True)
    m = pd.DataFrame(
        exchange_metrics.exchange_metric_rows(database, study_id),
        columns=["exchange_id", "metric", "version", "model", "score"],
    )
    df.attrs["warnings"] = []
    if df.empty or m.empty:
        return df
    # one stored row per (exchange, metric) (its primary key): the first, should there be more
    m = m.drop_duplicates(["exchange_id", "metric"], keep="first")
    scores = m.pivot(index="exchange_id", columns="metric", values="score").astype(float)
    models = m.pivot(index="exchange_id", columns="metric", values="model")
    wide = pd.concat(
        {
            f"{prefix}{_column_name(c)}{suffix}": frame[c]
            for c in scores.columns
            for prefix, suffix, frame in (("metric_", "", scores), ("", "_model", models))
        },
        axis=1,
    )
    out = df.merge(wide.reset_index(), on="exchange_id", how="left")
    shown = m[m["exchange_id"].isin(out["exchange_id"])]  # the rows the frame's columns hold
    out.attrs["warnings"] = export_tables.metric_warnings(export_tables.mixed_metric_models(shown.to_dict("records")))
    for w in out.attrs["warnings"]:
        warnings.warn(f"study {study_id!r}: {w}", UserWarning, stacklevel=2)
    return out
