"""Senders who drop out are replaced by third-person raters for the surveys (paper 000, A.1)."""

from __future__ import annotations

import datetime as dt

import pytest

from services.admin import participants as pa
from services.participation.items import AccessError, get_view
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.usability import dropouts, workflow
from storage import open_database
from storage.usability import pool
from tests.helpers.workflow import (
    answer_receiver,
    answer_survey,
    answer_validator,
    record_all,
    study_folder,
    until_none,
    wav,
)


@pytest.fixture
def study(tmp_path):
    db = open_database(tmp_path / "d.db")
    # items_per_rater=0: a rater takes a whole sender's share, as in the paper (the demo takes 2)
    import_study(db, study_folder(tmp_path, 7, dropout_after_days=3, items_per_rater=0))
    audio = wav(tmp_path)
    s1, s2 = add_participants(db, "demo", "sender", 2, "USB", "Man")
    ex = {s.id: record_all(db, s, tmp_path / "media", audio) for s in (s1, s2)}
    return db, s1, s2, ex


def surveys(db, exchange_id):
    return db.query(
        "SELECT s.stage, s.perspective, a.participant_id FROM surveys s "
        "JOIN assignments a ON a.id = s.assignment_id WHERE s.exchange_id = ? ORDER BY s.id",
        [exchange_id],
    )


def test_a_dropped_out_senders_surveys_go_to_a_rater_who_answers_both(study):
    db, s1, s2, ex = study
    first = answer_survey(db, s1.token)  # s1 answers one baseline, then leaves
    assert first["perspective"] == "first"
    out = dropouts.drop_out(db, s1.id, "admin", "did not come back")
    with pytest.raises(AccessError, match="deactivated"):
        get_view(db, s1.token, "survey")
    # all four exchanges wait for a rater: the one answered (its informed survey is missing) too
    assert sorted(int(w["item"]) for w in out.waiting if w.get("third_person")) == sorted(ex[s1.id])
    assert db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND status = 'open'", [s1.id]) == 0
    # receivers and validators go on as before; the rater answers baselines, then informed ones
    receivers = add_participants(db, "demo", "receiver", 2)
    validators = add_participants(db, "demo", "validator", 2)
    for r in receivers:
        until_none(answer_receiver, db, r.token)
    for v in validators:
        until_none(answer_validator, db, v.token)
    (rater,) = add_participants(db, "demo", "rater", 1, "USB", "Woman")
    answered = until_none(answer_survey, db, rater.token)
    assert {a["perspective"] for a in answered} == {"third"}
    assert sorted(a["phase"] for a in answered) == ["survey_baseline"] * 4 + ["survey_informed"] * 4
    for eid in ex[s1.id]:
        rows = surveys(db, eid)
        third = [(r["stage"], r["participant_id"]) for r in rows if r["perspective"] == "third"]
        assert third == [("baseline", rater.id), ("informed", rater.id)]
    # s2, who stayed, answers their own surveys in the first person: no rater was involved
    until_none(answer_survey, db, s2.token)
    for eid in ex[s2.id]:
        assert [(r["stage"], r["perspective"]) for r in surveys(db, eid)] == [
            ("baseline", "first"),
            ("informed", "first"),
        ]
    assert workflow.refresh(db, "demo") == 0  # the repair finds nothing missing


def test_a_rater_who_leaves_between_the_two_surveys_hands_the_exchange_on(study):
    db, s1, s2, ex = study
    dropouts.drop_out(db, s1.id, "admin", "gone")
    (r1, r2) = add_participants(db, "demo", "rater", 2)
    got = answer_survey(db, r1.token)
    eid = int(got["item"].split(":")[1])
    pa.deactivate(db, "demo", r1.id, "admin")
    out = pa.reassign_open_items(db, "demo", r1.id, "admin")
    assert str(eid) in {w["item"] for w in out.waiting}  # answered baseline, informed never: back
    assert pool.entry(db, "demo", "survey_baseline", eid)["need"] == 1
    until_none(answer_survey, db, r2.token)
    assert (
        db.scalar(
            "SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND item_id = ? AND phase = 'survey_baseline'",
            [r2.id, str(eid)],
        )
        == 1
    )
    assert workflow.refresh(db, "demo") == 0


def test_inactive_senders_with_open_surveys_count_as_dropped_out_after_the_studys_days(study):
    db, s1, s2, ex = study
    get_view(db, s2.token, "survey")
    now = dt.datetime.now(dt.timezone.utc)
    assert dropouts.detect_inactive(db, "demo", now + dt.timedelta(days=2)) == []
    with db.write() as w:  # s2 came back yesterday; s1 was last seen 4 days ago
        w.execute(
            "UPDATE participants SET last_seen_at = ? WHERE id = ?", [(now - dt.timedelta(days=4)).isoformat(), s1.id]
        )
    assert dropouts.detect_inactive(db, "demo", now) == [s1.id]
    row = db.one("SELECT active, dropped_out_at, dropped_out_reason FROM participants WHERE id = ?", [s1.id])
    assert row["active"] == 0 and row["dropped_out_at"] and "3 days" in row["dropped_out_reason"]
    assert sum(pool.entry(db, "demo", "survey_baseline", e)["need"] for e in ex[s1.id]) == 4
    assert dropouts.detect_inactive(db, "demo", now) == []  # once


def test_only_senders_drop_out(study):
    db, *_ = study
    (r,) = add_participants(db, "demo", "receiver", 1)
    with pytest.raises(dropouts.DropoutError, match="only senders"):
        dropouts.drop_out(db, r.id, "admin", "x")


def test_a_deactivated_sender_is_paused_not_dropped_out(study):
    """Deactivation alone is a pause: the sender's surveys wait for them (reactivation gives
    them back); only reassigning their items (or drop_out) hands the surveys to raters."""
    db, s1, s2, ex = study
    pa.deactivate(db, "demo", s1.id, "admin")
    assert workflow.refresh(db, "demo") == 0
    assert all(pool.entry(db, "demo", "survey_baseline", e) is None for e in ex[s1.id])
    pa.reactivate(db, "demo", s1.id, "admin")
    assert len(until_none(answer_survey, db, s1.token)) == 4  # their four baselines, first person
    pa.deactivate(db, "demo", s2.id, "admin")
    out = pa.reassign_open_items(db, "demo", s2.id, "admin")
    assert sorted(int(w["item"]) for w in out.waiting if w.get("third_person")) == sorted(ex[s2.id])
    assert db.one("SELECT dropped_out_at FROM participants WHERE id = ?", [s2.id])["dropped_out_at"]


def test_a_rater_with_no_work_yet_waits_instead_of_finishing(demo_db):
    """A rater's items come from senders who drop out: with none waiting they see the waiting page
    (which checks again by itself), never "finished" with a completion code at 0 of 0."""
    with demo_db.write() as db:
        db.execute("UPDATE work_pool SET need = 0 WHERE phase = 'survey_baseline'")
    (rater,) = add_participants(demo_db, "demo", "rater", 1)
    v = get_view(demo_db, rater.token, "survey")
    assert v.status == "waiting", (v.status, v.message)
    assert not v.completion_code
    assert v.done == 0 and v.total > 0


def test_the_workers_upkeep_drops_out_the_inactive_sender_through_the_protocols_hook(study):
    """maintenance.run names no protocol: the usability spec's drop_inactive does the work."""
    from services.participation import maintenance

    db, s1, s2, ex = study
    get_view(db, s2.token, "survey")
    old = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=4)).isoformat()
    with db.write() as w:
        w.execute("UPDATE participants SET last_seen_at = ? WHERE id = ?", [old, s1.id])
    assert maintenance.run(db, "demo", every_s=0) == {"dropped_out": [s1.id], "repaired": 0}
    assert maintenance.run(db, "demo", every_s=0) == {"dropped_out": [], "repaired": 0}
