"""The admin tab's tables as pure functions: each exchange's phase through the workflow."""

from __future__ import annotations

from services.admin import usability_progress
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from storage.usability import recordings


def phases(db):
    return {r["exchange"]: r["phase"] for r in usability_progress.exchanges_table(db, "demo").to_dict("records")}


def test_exchange_phase_follows_the_workflow(demo_db, tmp_path):
    db = demo_db
    sender = add_participants(db, "demo", "sender", 1, "USW", "Woman")[0]
    receiver = add_participants(db, "demo", "receiver", 1)[0]
    validator = add_participants(db, "demo", "validator", 1)[0]
    mine = [
        r for r in usability_progress.exchanges_table(db, "demo").to_dict("records") if r["sender"] == str(sender.id)
    ]
    assert {r["phase"] for r in mine} == {"1 to record"}
    # an imported exchange: answered by the receiver, then validated
    v = get_view(db, receiver.token, "receiver")
    ex = int(v.item_id)
    assert phases(db)[ex] == "2 with receivers"
    submit(
        db,
        receiver.token,
        "receiver",
        v.item_id,
        {"answers": [{"idx": q["idx"], "text": "sim"} for q in v.content["questions"]]},
    )
    assert phases(db)[ex] == "3 with validators"
    val = get_view(db, validator.token, "validator")
    submit(
        db,
        validator.token,
        "validator",
        val.item_id,
        {"score": 80, "marks": {q["idx"]: "correct" for q in val.content["questions"]}},
    )
    validated = int(db.scalar("SELECT exchange_id FROM validations"))
    assert phases(db)[validated] == "4 surveys"
    # a recording: queued, then flagged
    from tests.helpers.audio import write_wav

    rv = get_view(db, sender.token, "record")
    submit(db, sender.token, "record", rv.item_id, {"audio": str(write_wav(tmp_path / "a.wav"))}, media_dir=tmp_path)
    assert phases(db)[int(rv.item_id)] == "1 recorded: QC and translation queued"
    rid = db.scalar("SELECT id FROM recordings")
    with db.write() as w:
        recordings.set_recording_qc(w, rid, "flagged", "hm", 1.0, ["high_wer"])
    assert phases(db)[int(rv.item_id)] == "recording flagged: review"


def test_a_proxied_request_is_never_local():
    from services.admin.auth import AdminAuth, client_address

    assert client_address("127.0.0.1", {"accept": "*/*"}) == "127.0.0.1"
    assert client_address("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}) == "forwarded"
    assert client_address("127.0.0.1", {"forwarded": "for=203.0.113.9"}) == "forwarded"
    auth = AdminAuth("")
    assert auth.available("127.0.0.1") and not auth.available(client_address("127.0.0.1", {"x-real-ip": "x"}))
