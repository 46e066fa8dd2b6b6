"""The study's exchanges, with both surveys, in the usability analysis's columns; the app's own
table through the command line's analysis (a third-person rater has no group or gender)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from services.setup.enrolment import add_participants
from services.usability import analysis as usability_analysis
from services.usability.export import COLUMNS, exchanges_frame
from tests.helpers.workflow import rate_imported_exchanges

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def test_rated_exchanges_become_rows(demo_db):
    db = demo_db
    receiver = add_participants(db, "demo", "receiver", 1)[0]
    validator = add_participants(db, "demo", "validator", 1)[0]
    rater = add_participants(db, "demo", "rater", 1)[0]
    assert exchanges_frame(db, "demo").empty
    informed = rate_imported_exchanges(
        db, rater, receiver, validator, mark=lambda idx: "correct" if idx % 2 else "incorrect"
    )
    df = exchanges_frame(db, "demo")
    assert list(df.columns) == COLUMNS and len(df) == len(informed) >= 1
    assert set(df["exchange_id"]) == set(informed)
    row = df.iloc[0]
    # an imported exchange: no speaker (sender, group, gender empty); the rater is the respondent
    assert pd.isna(row["sender_id"]) and pd.isna(row["group"]) and pd.isna(row["gender"])
    assert row["respondent_id"] == rater.id and row["respondent_role"] == "rater"
    assert pd.isna(row["respondent_group"]) and pd.isna(row["respondent_gender"])
    assert row["perspective"] == "third" and row["starter_id"]
    assert row["receiver_id"] == receiver.id and row["validator_id"] == validator.id
    assert (row["satisfaction"], row["trust"], row["reliance"]) == (2, 3, 2)
    assert (row["satisfaction_b"], row["trust_b"], row["reliance_b"]) == (4, 4, 5)
    assert row["translation_score"] == 55 and 0 < row["qa_score"] < 1
    assert row["topic"] in ("health", "everyday") and row["system"] == "human-reference"
    # the starter's corpus: the models' Source factor (paper 000 Table 4)
    starters = pd.read_csv(Path(__file__).parents[1] / "assets" / "demo_study" / "starters.csv").set_index("id")
    assert (df["corpus"] == df["starter_id"].map(starters["corpus"])).all()


def test_every_column_is_in_the_data_dictionary():
    from services.study import export_dictionary as dictionary
    from services.usability.export_tables import ANALYSIS_TABLE

    cols = ANALYSIS_TABLE[1]
    assert COLUMNS == list(cols)
    assert set(usability_analysis.REQUIRED + usability_analysis.OPTIONAL) == set(cols)
    assert set(dictionary.TYPES) >= {t for t, _ in cols.values()}


# -- the app's own table through the command line's analysis -----------------------------------------


def test_the_apps_table_with_rater_surveys_runs_through_the_cli_analysis(mixed_study, tmp_path):
    """Issue 16: the raters' rows carried the rater's own (empty) group and gender, and
    `analyze usability` on this table stopped at "column 'group': empty value"."""
    db, senders = mixed_study
    df = exchanges_frame(db, "demo")
    path = tmp_path / "exchanges.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    text = usability_analysis.run_cli(path, out)  # what `python app.py analyze usability` prints
    first, third = df[df["perspective"] == "first"], df[df["perspective"] == "third"]
    imported = third[third["sender_id"].isna()]
    replaced = third[third["sender_id"].notna()]
    assert (len(first), len(replaced), len(imported)) == (8, 8, 12) and len(df) == 28
    by_id = {s.id: s for s in senders}
    # first person: the speaker is the respondent, and the exchange's group and gender are theirs
    for r in first.itertuples():
        s = by_id[r.sender_id]
        assert (r.respondent_id, r.respondent_role, r.group, r.gender) == (s.id, "sender", s.group, s.gender)
        assert (r.respondent_group, r.respondent_gender) == (s.group, s.gender)
    # a dropped-out sender's exchange: the speaker's group and gender; the rater's own kept apart
    assert set(replaced["sender_id"]) == {s.id for s in senders[2:]}
    for r in replaced.itertuples():
        s = by_id[r.sender_id]
        assert (r.group, r.gender, r.respondent_role) == (s.group, s.gender, "rater") and r.respondent_id != s.id
        assert pd.isna(r.respondent_group) and pd.isna(r.respondent_gender)
    # an imported exchange: no speaker
    assert imported["group"].isna().all() and imported["gender"].isna().all()
    assert (imported["respondent_role"] == "rater").all()
    # kept in the descriptive tables under "(none)", left out of the models, and said so
    groups = pd.read_csv(out / "groups.csv", keep_default_na=False)
    g = groups[groups["by"] == "group"].set_index("level")["n"]
    assert g.to_dict() == {"(none)": 12, "USB": 8, "USW": 8}
    assert set(groups.loc[groups["by"] == "perspective", "level"]) == {"first", "third"}
    assert "12 of 28 rows left out (no sender: 12)" in text
    # the perspective model: the speakers' exchanges, first person against the raters'
    t = pd.read_csv(out / "perspective.csv")
    assert t.loc[t["term"] == "perspective: third", ["n_first", "n_third"]].values.tolist() == [[8, 8]]
    assert "perspective (A.1, informed u; Wald z): third vs first person" in text
    txt = (out / "perspective.txt").read_text()
    assert "surveys in the data: 8 first-person, 20 third-person" in txt
    assert "12 of 28 rows left out (no sender: 12)" in txt
