"""Server-side validation, idempotent saving and the workflow that opens the next phase."""

from __future__ import annotations

import wave

import pytest

from services.participation.items import AccessError, get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from tests.helpers.audio import write_wav


@pytest.fixture
def people(demo_db):
    roles = {r: add_participants(demo_db, "demo", r, 1)[0] for r in ("receiver", "validator", "rater", "da", "sd")}
    roles["sender"] = add_participants(demo_db, "demo", "sender", 1, "USB", "Man")[0]
    return roles


def count(db, table):
    return db.scalar(f"SELECT COUNT(*) FROM {table}")


def test_recording_intake_and_idempotency(demo_db, people, tmp_path):
    tok = people["sender"].token
    v = get_view(demo_db, tok, "record")
    media = tmp_path / "media"
    for bad, msg in [
        (tmp_path / "none.wav", "empty"),
        (write_wav(tmp_path / "silent.wav", amplitude=0.0), "silent"),
        (write_wav(tmp_path / "short.wav", seconds=0.6, lead_s=0.1), "too short"),
        (write_wav(tmp_path / "long.wav", seconds=31), "too long"),
    ]:
        with pytest.raises(SubmissionError, match=msg):
            submit(demo_db, tok, "record", v.item_id, {"audio": str(bad)}, media_dir=media)
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio")
    with pytest.raises(SubmissionError, match="not an audio recording"):
        submit(demo_db, tok, "record", v.item_id, {"audio": str(text)}, media_dir=media)
    assert count(demo_db, "recordings") == 0
    good = write_wav(tmp_path / "ok.wav", seconds=4, rate=48000, channels=2)
    res = submit(demo_db, tok, "record", v.item_id, {"audio": str(good)}, media_dir=media)
    assert res.saved and res.next.progress == "1 / 4"
    with wave.open(res.stored["path_16k"]) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        assert abs(w.getnframes() / 16000 - 4.0) < 0.01
    again = submit(demo_db, tok, "record", v.item_id, {"audio": str(good)}, media_dir=media)
    assert not again.saved and again.stored["id"] == res.stored["id"]
    assert count(demo_db, "recordings") == 1
    # QC + translation queued for the worker (besides the metric jobs of the imported exchanges)
    assert demo_db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'process_recording'") == 1


def _answer_all(db, tok):
    v = get_view(db, tok, "receiver")
    answers = [{"idx": q["idx"], "text": "sim", "unanswerable": False} for q in v.content["questions"]]
    return v, submit(db, tok, "receiver", v.item_id, {"answers": answers})


def test_full_workflow_opens_each_phase(demo_db, people):
    db = demo_db
    assert get_view(db, people["validator"].token, "validator").status == "waiting"
    v, res = _answer_all(db, people["receiver"].token)
    assert res.saved and count(db, "answers") == len(v.content["questions"])
    val = get_view(db, people["validator"].token, "validator")
    assert val.status == "item" and val.content["source"]
    assert "English source does not answer it" in val.content["flagged_help"]  # how to judge a flag
    qs = [a["idx"] for a in val.content["answers"]]
    marks = {i: i != qs[0] for i in qs}
    with pytest.raises(SubmissionError, match="move the slider"):
        submit(db, people["validator"].token, "validator", val.item_id, {"score": None, "marks": marks})
    with pytest.raises(SubmissionError, match="between 0 and 100"):
        submit(db, people["validator"].token, "validator", val.item_id, {"score": 101, "marks": marks})
    with pytest.raises(SubmissionError, match="between 0 and 100"):
        submit(db, people["validator"].token, "validator", val.item_id, {"score": float("nan"), "marks": marks})
    with pytest.raises(SubmissionError, match="mark every answer"):
        submit(db, people["validator"].token, "validator", val.item_id, {"score": 50, "marks": {}})
    res = submit(db, people["validator"].token, "validator", val.item_id, {"score": 80, "marks": marks})
    assert res.stored["qa_score"] == pytest.approx((len(qs) - 1) / len(qs))
    assert res.stored["translation_score"] == 80
    # the imported exchanges have no sender: their surveys go to third-person raters, who take
    # them from the pool (4 surveys per rater, 12 imported exchanges: three raters take them all,
    # each exactly once), baselines first, then the informed survey of the validated exchange
    raters = [people["rater"].token] + [r.token for r in add_participants(db, "demo", "rater", 2)]
    ex_id = int(db.scalar("SELECT exchange_id FROM validations"))
    informed = {}
    for rater in raters:
        rv = get_view(db, rater, "survey")
        while rv.status == "item":
            if rv.phase == "survey_informed":
                informed[rater] = rv
                break
            with pytest.raises(SubmissionError, match="trust"):
                submit(db, rater, "survey", rv.item_id, {"satisfaction": 3, "trust": None, "reliance": 3})
            with pytest.raises(SubmissionError, match="between 1 and 5"):
                submit(db, rater, "survey", rv.item_id, {"satisfaction": 6, "trust": 3, "reliance": 3})
            rv = submit(db, rater, "survey", rv.item_id, {"satisfaction": 4, "trust": 4, "reliance": 4}).next
    assert (
        db.query(
            "SELECT item_id, COUNT(*) AS n FROM assignments WHERE phase = 'survey_baseline' "
            "GROUP BY item_id HAVING n > 1"
        )
        == []
    )
    [(rater, rv)] = informed.items()
    assert rv.phase == "survey_informed" and rv.item_id == f"survey_informed:{ex_id}"
    assert rv.content["perspective"] == "third"
    assert rv.content["outcomes"][0]["translation_score"] == 80
    res = submit(db, rater, "survey", rv.item_id, {"satisfaction": 2, "trust": 2, "reliance": 3})
    assert res.saved, res.message
    rv = res.next  # that rater goes on with their remaining baselines
    while rv.status == "item" and rv.phase == "survey_baseline":
        rv = submit(db, rater, "survey", rv.item_id, {"satisfaction": 4, "trust": 4, "reliance": 4}).next
    assert db.scalar("SELECT COUNT(*) FROM assignments WHERE phase='survey_baseline' AND status = 'done'") == 12
    row = db.one("SELECT * FROM surveys WHERE stage = ?", ["informed"])
    assert (row["perspective"], row["satisfaction"], row["reliance"]) == ("third", 2, 3)


def test_da_and_sd_store_canonical_values(demo_db, people):
    db = demo_db
    v = get_view(db, people["da"].token, "da")
    with pytest.raises(SubmissionError, match="move the slider"):
        submit(db, people["da"].token, "da", v.item_id, {"score": None})
    assert submit(db, people["da"].token, "da", v.item_id, {"score": 42}).saved
    s = get_view(db, people["sd"].token, "sd")
    while s.content["kind"] in ("welcome", "example"):  # the pages before the scales store nothing
        s = submit(db, people["sd"].token, "sd", s.item_id, {"values": {}}).next
    pairs = s.content["pairs"]
    values = {p["pair_id"]: 1 for p in pairs}  # everything at the far left
    with pytest.raises(SubmissionError, match="answer every scale"):
        submit(db, people["sd"].token, "sd", s.item_id, {"values": dict(list(values.items())[:-1])})
    with pytest.raises(SubmissionError, match="from 1 to 7"):
        submit(db, people["sd"].token, "sd", s.item_id, {"values": {**values, pairs[0]["pair_id"]: 9}})
    submit(db, people["sd"].token, "sd", s.item_id, {"values": values})
    stored = {r["pair_id"]: r for r in db.query("SELECT * FROM sd_ratings")}
    positives = {r["id"]: r["positive"] for r in db.query("SELECT * FROM sd_pairs WHERE language='en'")}
    for p in pairs:
        r = stored[p["pair_id"]]
        # far left is +3 when the positive adjective stands left, -3 otherwise
        assert r["value"] == (3 if p["left"] == positives[p["pair_id"]] else -3)
        assert r["positive_left"] == int(p["left"] == positives[p["pair_id"]])


def test_items_outside_the_queue_are_refused(demo_db, people):
    other = add_participants(demo_db, "demo", "receiver", 1)[0]
    mine = get_view(demo_db, people["receiver"].token, "receiver").item_id
    theirs = get_view(demo_db, other.token, "receiver").item_id
    # the receiver's page is in Portuguese; the validator's in English
    with pytest.raises(AccessError, match="não está na sua lista"):
        submit(demo_db, people["receiver"].token, "receiver", theirs, {"answers": []})
    with pytest.raises(AccessError, match="not for your role"):
        submit(demo_db, people["receiver"].token, "validator", mine, {"score": 3})
    with pytest.raises(AccessError, match="não é válida"):
        submit(demo_db, "forged", "receiver", mine, {})
    assert count(demo_db, "answers") == 0


def test_too_long_answer_refused(demo_db, people):
    v = get_view(demo_db, people["receiver"].token, "receiver")
    answers = [{"idx": q["idx"], "text": "x" * 2001, "unanswerable": False} for q in v.content["questions"]]
    with pytest.raises(SubmissionError, match="too long"):
        submit(demo_db, people["receiver"].token, "receiver", v.item_id, {"answers": answers}, lang="en")


def test_no_self_assignment_across_roles(demo_db):
    """One person enrolled as receiver and validator never validates their own answers."""
    r = add_participants(demo_db, "demo", "receiver", 1, external_ids=["same-person"])[0]
    add_participants(demo_db, "demo", "validator", 1, external_ids=["same-person"])
    _answer_all(demo_db, r.token)
    assert demo_db.scalar("SELECT COUNT(*) FROM assignments WHERE phase='validate'") == 0
    v2 = add_participants(demo_db, "demo", "validator", 1)[0]
    assert get_view(demo_db, v2.token, "validator").status == "item"


def test_every_write_is_in_the_audit_log(demo_db, people):
    before = count(demo_db, "events")
    _answer_all(demo_db, people["receiver"].token)
    assert demo_db.one("SELECT * FROM events ORDER BY id DESC LIMIT 1")["action"] == "submit"
    assert count(demo_db, "events") == before + 1
