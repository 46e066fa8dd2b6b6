"""A study's export (`python app.py export`) as the usability analysis's exchanges.

The export keeps one table per entity: its exchanges table holds no ratings. The analysis's row
(export_tables.ANALYSIS_TABLE) is joined here from the export's validations, surveys,
exchanges, participants, starters and exchange_metrics, by the rules the app's own frame
follows in the database (storage/usability/answers.py: usability_rows, and
services/usability/export.py: exchanges_frame): a validation with an informed survey and a
baseline survey by the same respondent, excluded respondents left out, the first validation
standing for its exchange. Ids are the export's pseudonyms (sender-001), not database ids."""

from __future__ import annotations

import pandas as pd

from services.study import export_reader
from services.usability import export_tables
from services.usability.export import COLUMNS

TABLE = "exchanges"
ITEMS = ("satisfaction", "trust", "reliance")
NEEDED = {
    "validations": ("validation_id", "exchange_id", "validator", "receiver", "translation_score", "qa_score"),
    "surveys": ("survey_id", "exchange_id", "respondent", "stage", "perspective", *ITEMS),
    "exchanges": ("exchange_id", "starter_id", "system", "sender"),
    "participants": ("participant", "role", "group", "gender", "status"),
    "starters": ("starter_id", "domain", "source", "corpus"),
}


def exchanges(export: export_reader.Export) -> pd.DataFrame:
    """The analysis's exchanges frame from the export's tables (unchecked: the analysis's
    read_exchanges checks it); attrs["warnings"] as the export's README has them."""
    t = {name: export_reader.read_table(export, name, cols) for name, cols in NEEDED.items()}
    for name in ("validations", "surveys"):
        t[name]["_order"] = pd.to_numeric(t[name][NEEDED[name][0]])
    surveys = t["surveys"]
    informed = surveys[surveys["stage"] == "informed"][["_order", "exchange_id", "respondent", "perspective", *ITEMS]]
    baseline = surveys[surveys["stage"] == "baseline"][["exchange_id", "respondent", *ITEMS]]
    baseline = baseline.rename(columns={c: f"{c}_b" for c in ITEMS})
    people = t["participants"].set_index("participant")
    df = t["validations"].rename(columns={"validator": "validator_id", "receiver": "receiver_id"})
    df = df.merge(informed.rename(columns={"_order": "_survey"}), on="exchange_id")
    df = df.merge(baseline, on=["exchange_id", "respondent"])
    df = df[df["respondent"].map(people["status"]) != "excluded"]
    ex = t["exchanges"].rename(columns={"sender": "sender_id"})
    df = df.merge(ex[["exchange_id", "starter_id", "system", "sender_id"]], on="exchange_id")
    st = t["starters"].rename(columns={"domain": "topic"})
    df = df.merge(st[["starter_id", "topic", "source", "corpus"]], on="starter_id", how="left")
    df["group"] = df["sender_id"].map(people["group"])
    df["gender"] = df["sender_id"].map(people["gender"])
    df["respondent_id"] = df["respondent"]
    for col in ("role", "group", "gender"):
        df[f"respondent_{col}"] = df["respondent"].map(people[col])
    # the database's order (exchange, validation): the first validation stands for its exchange
    df["_exchange"] = pd.to_numeric(df["exchange_id"])
    df = df.sort_values(["_exchange", "_order", "_survey"], kind="stable")
    df = df.drop_duplicates("exchange_id", keep="first").fillna("")[COLUMNS].reset_index(drop=True)
    df.attrs["warnings"] = []
    if export.has("exchange_metrics"):
        df = _with_metrics(df, export)
    return df


def _with_metrics(df: pd.DataFrame, export: export_reader.Export) -> pd.DataFrame:
    """metric_<name> and <name>_model columns, as exchanges_frame makes them."""
    m = export_reader.read_table(export, "exchange_metrics", ("exchange_id", "metric", "version", "model", "score"))
    m = m[m["exchange_id"].isin(df["exchange_id"])].drop_duplicates(["exchange_id", "metric"], keep="first")
    if m.empty:
        return df
    out = df.copy()
    for metric, g in m.groupby("metric", sort=True):
        name = metric.replace("-", "_")
        out[f"metric_{name}"] = out["exchange_id"].map(g.set_index("exchange_id")["score"]).fillna("")
        out[f"{name}_model"] = out["exchange_id"].map(g.set_index("exchange_id")["model"]).fillna("")
    out.attrs["warnings"] = export_tables.metric_warnings(export_tables.mixed_metric_models(m.to_dict("records")))
    return out
