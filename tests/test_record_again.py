"""Issue 29, point 1: a recording too short for its text is refused at once, and one rejected
in review goes back to its sender as "record again" (both recordings kept)."""

from __future__ import annotations

import pytest

from services.admin.usability_review import ReviewError, decide
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.usability import audio_intake, pipeline
from storage.usability import corpus as usability_corpus
from storage.usability import exports, pool
from tests.helpers.audio import write_wav
from tests.helpers.workflow import stand_in_translation


def starter_of(db, item_id) -> dict:
    ex = db.one("SELECT * FROM exchanges WHERE id = ?", [int(str(item_id).split("-")[0])])
    return usability_corpus.starter(db, "demo", ex["starter_id"])


def test_a_recording_too_short_for_its_starter_is_refused_and_nothing_is_stored(demo_db, tmp_path):
    sender = add_participants(demo_db, "demo", "sender", 1, "USB", "Man")[0]
    v = get_view(demo_db, sender.token, "record")
    n = len(starter_of(demo_db, v.item_id)["text"].split())
    assert n >= 40
    # 1.5 s of voice: above the old 1 s floor, far below any reading of 40+ words
    short = write_wav(tmp_path / "short.wav", seconds=1.5, lead_s=0.2)
    with pytest.raises(SubmissionError) as e:
        submit(demo_db, sender.token, "record", v.item_id, {"audio": str(short)}, media_dir=tmp_path / "m")
    said = str(e.value)
    assert "too short (1.5 s" in said and f"these {n} words" in said and "Nothing was saved" in said
    assert demo_db.scalar("SELECT COUNT(*) FROM recordings") == 0
    assert not (tmp_path / "m" / "recordings").exists() or not any((tmp_path / "m" / "recordings").iterdir())
    again = get_view(demo_db, sender.token, "record")
    assert (again.item_id, again.progress) == (v.item_id, "0 / 4")


def test_the_floor_is_below_the_fastest_measured_reading():
    """The constant is the benchmark's figure: half of espeak-ng's fastest reading (450 wpm)."""
    import json
    from pathlib import Path

    bench = json.loads(
        (Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "reading_floor.json").read_text()
    )
    assert audio_intake.MIN_SECONDS_PER_WORD == bench["floor_seconds_per_word"]
    for s in bench["starters"]:
        assert audio_intake.min_seconds_for("w " * s["words"]) < s["seconds_at_450"] / 1.5


def test_a_rejected_recording_goes_back_to_its_sender_and_both_are_kept(demo_db, tmp_path):
    db, media = demo_db, tmp_path / "media"
    sender = add_participants(db, "demo", "sender", 1, "USB", "Man")[0]
    v = get_view(db, sender.token, "record")
    assert v.content["record_again"] == ""
    text = starter_of(db, v.item_id)["text"]
    first = submit(
        db, sender.token, "record", v.item_id, {"audio": str(write_wav(tmp_path / "a.wav"))}, media_dir=media
    )
    ex_id = int(v.item_id)
    rid1 = first.stored["id"]
    # what the worker stores: a transcript that misses most of the text is flagged
    assert pipeline.record_outcome(db, rid1, "uma tradução", "hello good morning") == "flagged"
    assert "3 still to record" in get_view(db, sender.token, "survey").message
    out = decide(db, rid1, "reject", "reviewer")
    assert out.record_again and not out.sender_excluded
    # the sender's page gives the same text back first, saying why
    back = get_view(db, sender.token, "record")
    assert back.status == "item" and back.item_id == f"{ex_id}-2"
    assert "record this text again" in back.content["record_again"]
    assert starter_of(db, back.item_id)["text"] == text
    assert "4 still to record" in get_view(db, sender.token, "survey").message  # the 3 others and this
    with pytest.raises(ReviewError):  # a re-decided rejection cannot fork the item
        decide(db, rid1, "accept", "reviewer")
    second = submit(
        db, sender.token, "record", back.item_id, {"audio": str(write_wav(tmp_path / "b.wav", 5.0))}, media_dir=media
    )
    rid2 = second.stored["id"]
    assert rid2 != rid1
    new = "a nova tradução " + stand_in_translation(text)  # as long as the reading
    assert pipeline.record_outcome(db, rid2, new, text) == "passed"
    assert db.scalar("SELECT text FROM translations WHERE exchange_id = ?", [ex_id]) == new
    assert db.scalar("SELECT text FROM superseded_translations WHERE recording_id = ?", [rid1]) == "uma tradução"
    state = pool.exchange_state(db, ex_id)
    assert state["translated"] and state["qc_ok"]
    assert pool.entry(db, "demo", "receive", ex_id) is not None  # receivers get it now
    rows = [r for r in exports.recording_rows(db, "demo") if r["exchange_id"] == ex_id]
    assert [(r["recording_id"], r["qc_status"]) for r in rows] == [(rid1, "rejected"), (rid2, "passed")]


def test_the_senders_messages_name_the_survey_tab_and_count_one_recording(demo_db, tmp_path):
    from services.participation.items import _waiting_message
    from storage import participants

    db, media = demo_db, tmp_path / "media"
    sender = add_participants(db, "demo", "sender", 1, "USB", "Man")[0]
    done = []
    while (v := get_view(db, sender.token, "record")).status == "item":
        res = submit(
            db, sender.token, "record", v.item_id, {"audio": str(write_wav(tmp_path / "r.wav"))}, media_dir=media
        )
        done.append(res.stored["id"])
    assert v.message == (
        "Thank you, you have finished this part. Please continue on the Survey tab at the top of this page."
    )
    me = participants.get(db, sender.id)
    assert _waiting_message(db, me, "survey").startswith("4 of your recordings are being checked")
    for rid in done[:3]:
        text = starter_of(db, db.scalar("SELECT exchange_id FROM recordings WHERE id = ?", [rid]))["text"]
        pipeline.record_outcome(db, rid, stand_in_translation(text), text)
    assert _waiting_message(db, me, "survey").startswith(
        "1 of your recordings is being checked and translated; its survey opens"
    )
    pipeline.record_outcome(db, done[3], "uma tradução", "hello")
    assert _waiting_message(db, me, "survey").startswith(
        "1 of your recordings waits for a check by the study team; its survey opens"
    )
