"""The study's exchanges, with both surveys, in the usability analysis's columns."""
from __future__ import annotations

from services.items import get_view
from services.participants import add_participants
from services.submissions import submit
from services.usability_export import COLUMNS, exchanges_frame


def test_rated_exchanges_become_rows(demo_db):
    db = demo_db
    receiver = add_participants(db, "demo", "receiver", 1)[0]
    validator = add_participants(db, "demo", "validator", 1)[0]
    rater = add_participants(db, "demo", "rater", 1)[0]
    assert exchanges_frame(db, "demo").empty
    while (b := get_view(db, rater.token, "survey")).status == "item" and b.item_id.startswith("survey_baseline"):
        submit(db, rater.token, "survey", b.item_id, {"satisfaction": 4, "trust": 4, "reliance": 5})
    while (v := get_view(db, receiver.token, "receiver")).status == "item":
        submit(db, receiver.token, "receiver", v.item_id,
               {"answers": [{"idx": q["idx"], "text": "x"} for q in v.content["questions"]]})
    while (val := get_view(db, validator.token, "validator")).status == "item":
        qs = val.content["questions"]
        submit(db, validator.token, "validator", val.item_id,
               {"score": 55, "marks": {q["idx"]: "correct" if q["idx"] % 2 else "incorrect" for q in qs}})
    informed = []
    while (s := get_view(db, rater.token, "survey")).status == "item":
        assert s.item_id.startswith("survey_informed")
        informed.append(int(s.item_id.split(":")[1]))
        submit(db, rater.token, "survey", s.item_id, {"satisfaction": 2, "trust": 3, "reliance": 2})
    df = exchanges_frame(db, "demo")
    assert list(df.columns) == COLUMNS and len(df) == len(informed) >= 1
    assert set(df["exchange_id"]) == set(informed)
    row = df.iloc[0]
    assert row["sender_id"] == rater.id and row["perspective"] == "third"
    assert row["receiver_id"] == receiver.id and row["validator_id"] == validator.id
    assert (row["satisfaction"], row["trust"], row["reliance"]) == (2, 3, 2)
    assert (row["satisfaction_b"], row["trust_b"], row["reliance_b"]) == (4, 4, 5)
    assert row["translation_score"] == 55 and 0 < row["qa_score"] < 1
    assert row["topic"] in ("health", "everyday") and row["system"] == "human-reference"
