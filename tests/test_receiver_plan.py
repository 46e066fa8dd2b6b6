"""A usability study that always finishes (issue 50, point 4): the import says how many receivers
the design needs, the dashboard lists the exchanges no receiver with room may take (each reads a
starter once) and what would release them, and receiver_repeat_after_minutes lets such an
exchange go, after a wait, to a receiver who had its starter, recorded with the answers."""

from __future__ import annotations

from collections import Counter

import pytest

from services.admin.dashboard import dashboard
from services.participation.items import get_view
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from storage import open_database
from tests.helpers.sql_trace import Trace, scans
from tests.helpers.workflow import answer_receiver, record_all, study_folder, until_none, wav

pytestmark = pytest.mark.slow  # records and translates a dozen exchanges (out of make test-fast)


def _two_senders_one_design(tmp_path, **usability):
    """Two senders of design block 0 (USW and USB women): the same four starters, so every
    starter has two exchanges; receivers have room for all eight."""
    db = open_database(tmp_path / "s.db")
    import_study(db, study_folder(tmp_path / "study", 4, items_per_receiver=8, **usability))
    for g in ("USW", "USB"):
        (s,) = add_participants(db, "demo", "sender", 1, g, "Woman")
        record_all(db, s, tmp_path / "media", wav(tmp_path))
    return db


def _plan_lines(db) -> list[str]:
    return [line for line in dashboard(db, "demo").waiting if "has not read the starter" in line]


def test_the_import_says_how_many_receivers_the_design_needs(tmp_path):
    db = open_database(tmp_path / "s.db")
    res = import_study(db, study_folder(tmp_path / "study"))
    [note] = [n for n in res.notes if n.startswith("Receivers the design needs")]
    assert "1 per cell (6 senders): 6;" in note, note
    # the same count from the exchanges that six senders, one per cell, really get: the busiest
    # starter has one exchange per cell (design block 0 is the same in every cell)
    for g in ("USW", "USB", "Hindi"):
        for gender in ("Man", "Woman"):
            add_participants(db, "demo", "sender", 1, g, gender)
    per_starter = Counter(r["starter_id"] for r in db.query("SELECT starter_id FROM exchanges"))
    assert max(per_starter.values()) == 6 and sum(per_starter.values()) == 24
    # and the running study says the six receivers are missing, none enrolled
    [short] = [line for line in dashboard(db, "demo").waiting if "need at least" in line]
    assert "The 24 exchanges need at least 6 receivers" in short and "add 6 more" in short


def test_the_dashboard_lists_what_no_receiver_may_take_and_its_advice_releases_it(tmp_path):
    db = _two_senders_one_design(tmp_path)
    (first,) = add_participants(db, "demo", "receiver", 1)
    assert len(until_none(answer_receiver, db, first.token)) == 4
    assert get_view(db, first.token, "receiver").status == "waiting"
    [line] = _plan_lines(db)
    assert line.startswith("4 receive places of 4 starters (exchanges ") and "1 more receiver would" in line, line
    assert "receiver_repeat_after_minutes" in line  # the other way out
    # the advice, followed: one more receiver takes all four and nothing waits any more
    (second,) = add_participants(db, "demo", "receiver", 1)
    assert len(until_none(answer_receiver, db, second.token)) == 4
    assert _plan_lines(db) == []


def test_after_the_wait_a_receiver_who_had_the_starter_takes_it_and_it_is_recorded(tmp_path):
    from services.study.export import export_study

    db = _two_senders_one_design(tmp_path, receiver_repeat_after_minutes=60)
    (r,) = add_participants(db, "demo", "receiver", 1)
    assert len(until_none(answer_receiver, db, r.token)) == 4  # the four starters once each
    assert get_view(db, r.token, "receiver").status == "waiting"  # the rest has not waited an hour
    [line] = _plan_lines(db)
    assert "after 60 minutes in the pool" in line and "UTC" in line
    with db.write() as w:  # an hour and more later
        w.execute("UPDATE work_pool SET created_at = '2026-01-01T00:00:00.000+00:00' WHERE phase = 'receive'")
    with Trace(db) as t:  # now they go to the one receiver, through indexes (no study-sized scan)
        assert len(until_none(answer_receiver, db, r.token)) == 4
    assert scans(db, t.sql) == []
    metas = db.query("SELECT meta FROM assignments WHERE phase = 'receive' ORDER BY id")
    assert [m["meta"] is not None and '"repeat_starter": true' in m["meta"] for m in metas] == [False] * 4 + [True] * 4
    assert db.scalar("SELECT COUNT(*) FROM events WHERE action = 'repeat_starter'") == 4
    out = export_study(db, "demo", tmp_path / "export", fmt="csv", media_dir=tmp_path / "media").folder
    import pandas as pd

    answers = pd.read_csv(out / "answers.csv")
    per_set = answers.groupby("answer_set")["repeat_starter"].agg(["min", "max"])
    assert (per_set["min"] == per_set["max"]).all() and per_set["max"].tolist() == [0] * 4 + [1] * 4


def test_the_wait_must_be_whole_minutes(tmp_path):
    from services.study.files import StudyValidationError, load_study

    with pytest.raises(StudyValidationError, match=r"usability.receiver_repeat_after_minutes.*integer >= 0"):
        load_study(study_folder(tmp_path, receiver_repeat_after_minutes="-5"))


def test_a_sender_who_left_counts_only_what_they_recorded(tmp_path):
    """Tried as a user: the demo (a sender and one who dropped out after two readings, one
    receiver with room for six) said 'the 8 exchanges need at least 2 receivers': the leaver's
    two unrecorded texts wait for another sender, who records them as new exchanges."""
    from services.participation.submissions import submit
    from services.usability import dropouts, pipeline

    db = open_database(tmp_path / "s.db")
    import_study(db, study_folder(tmp_path / "study"))
    # as the demo makes them (services/setup/usability_demo.py): another cell, design block 1 (other starters)
    (stay,) = add_participants(db, "demo", "sender", 1, "USW", "Woman")
    (leave,) = add_participants(db, "demo", "sender", 1, "Hindi", "Man", design_index=1)
    for _ in range(2):
        v = get_view(db, leave.token, "record")
        rec = submit(db, leave.token, "record", v.item_id, {"audio": str(wav(tmp_path))}, media_dir=tmp_path).stored
        pipeline.record_outcome(db, rec["id"], "Tradução de teste.", "texto")
    dropouts.drop_out(db, leave.id, "test", "did not come back")
    add_participants(db, "demo", "receiver", 1)
    # the stayer's 4 and the leaver's 2 recorded: one receiver with room for 6 takes them all
    assert [line for line in dashboard(db, "demo").waiting if "need at least" in line] == []
