"""A saved recording, through the worker, with the real offline models: QC, translation,
and the receiver's item; a garbled reading is flagged and held for review; exclusion."""

from __future__ import annotations

import json

import pytest

from services.admin.usability_review import decide, queue_for_review
from services.common.jobs_worker import Worker
from services.models.cache import ModelCache
from services.participation import worker_jobs
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.usability import pipeline
from speech import spoken_wav
from storage.usability import exchanges, pool, recordings

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

CACHE = ModelCache(device="cpu")


@pytest.fixture
def study(demo_db):
    sender = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")[0]
    receiver = add_participants(demo_db, "demo", "receiver", 1)[0]
    return demo_db, sender, receiver


def only_recordings(db):
    """The recording job alone: the metric jobs that imports and translations queue are tested elsewhere."""
    return {"process_recording": worker_jobs.handlers(db, CACHE)["process_recording"]}


QC_CLEAN = ("s08", "s09", "s11", "s05", "s03", "s02")  # starters Piper + tiny.en read back cleanly


def record(db, sender, text, tmp_path, name, exchange_id=None):
    if exchange_id:  # a chosen exchange: made the sender's next item (a submit must be for that)
        with db.write() as w:
            w.execute(
                "UPDATE assignments SET position = -1 WHERE participant_id = ? AND phase = 'record' AND item_id = ?",
                [sender.id, str(exchange_id)],
            )
    item = str(exchange_id) if exchange_id else get_view(db, sender.token, "record").item_id
    wav = spoken_wav(text, tmp_path / f"{name}.wav", cache=CACHE)
    res = submit(db, sender.token, "record", item, {"audio": str(wav)}, media_dir=tmp_path / "media")
    return int(item), res


def test_a_clear_reading_is_translated_and_reaches_the_receiver(study, tmp_path):
    db, sender, receiver = study
    mine = db.query(
        "SELECT e.id, e.starter_id, s.text FROM exchanges e JOIN starters s ON s.id = e.starter_id "
        "AND s.study_id = e.study_id WHERE e.sender_id = ?",
        [sender.id],
    )
    ex = next(e for sid in QC_CLEAN for e in mine if e["starter_id"] == sid)
    ex_id = ex["id"]
    _, res = record(db, sender, ex["text"], tmp_path, "clear", ex_id)
    assert (
        res.saved
        and db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'process_recording' AND status = 'pending'") == 1
    )
    # nothing ran in the request: no transcript or translation yet
    assert recordings.translation(db, ex_id) is None
    done = Worker(db, only_recordings(db)).run_until_idle()
    assert [j["status"] for j in done] == ["done"]
    rec = db.one("SELECT * FROM recordings WHERE exchange_id = ?", [ex_id])
    assert rec["qc_status"] == "passed", (rec["transcript"], rec["qc_flags"])
    assert rec["wer"] < 0.35 and json.loads(rec["qc_flags"]) == []
    tr = recordings.translation(db, ex_id)
    meta = json.loads(tr["meta"])
    assert meta["models"]["asr"].startswith("faster-whisper") and "bergamot" in meta["models"]["mt"]
    # QC reads the study's QC ASR (tiny.en, beam 5): the beam-5 cascade lends its own transcript,
    # the greedy one's recording is transcribed again (tests/test_qc_asr.py)
    if db.scalar("SELECT system_id FROM exchanges WHERE id = ?", [ex_id]) == "cascade-beam":
        assert tr["transcript"] == rec["transcript"]
    # sensible Portuguese: the starter's key information comes through
    assert len(tr["text"].split()) > 20 and tr["text"] != tr["transcript"]
    keys = [
        k
        for k in db.one("SELECT key_spans FROM starters WHERE id = ?", [ex["starter_id"]])["key_spans"]
        .strip("[]")
        .replace('"', "")
        .split(", ")
        if any(c.isdigit() for c in k) or k[:1].isupper()
    ]
    found = [k for k in keys if k.split()[0].lower().strip(",.") in tr["text"].lower()]
    assert len(found) >= len(keys) / 2, (keys, tr["text"])
    # ready for receivers: its receive item waits in the pool for one receiver, and its sender's
    # baseline survey is open
    assert ex_id in {e["id"] for e in exchanges.translated_exchanges(db, "demo")}
    assert pool.entry(db, "demo", "receive", ex_id)["need"] == 1
    assert (
        db.scalar(
            "SELECT COUNT(*) FROM assignments WHERE phase = 'survey_baseline' AND status = 'open' AND exchange_id = ?",
            [ex_id],
        )
        == 1
    )
    # a second run of the same job (e.g. resumed after a crash) writes nothing twice
    assert pipeline.process_recording(db, rec["id"], CACHE) == {"skipped": True}
    assert db.scalar("SELECT COUNT(*) FROM translations WHERE exchange_id = ?", [ex_id]) == 1


def test_a_wrong_reading_is_flagged_held_back_and_reviewed(study, tmp_path):
    db, sender, receiver = study
    ex_id, res = record(
        db, sender, "Good evening. I would like to order two pizzas and a bottle of water, please.", tmp_path, "wrong"
    )
    Worker(db, only_recordings(db)).run_until_idle()
    rec = db.one("SELECT * FROM recordings WHERE exchange_id = ?", [ex_id])
    assert rec["qc_status"] == "flagged"
    assert set(json.loads(rec["qc_flags"])) >= {"start_differs", "end_differs", "high_wer"}
    assert recordings.translation(db, ex_id) is not None  # translated, but held back:
    assert ex_id not in {e["id"] for e in exchanges.translated_exchanges(db, "demo")}
    [row] = queue_for_review(db, "demo")
    assert row["id"] == rec["id"] and "bottle of water" in row["transcript"].lower()
    assert "word error rate" in row["flags"]
    out = decide(db, rec["id"], "accept", "admin@test")
    assert out.status == "accepted" and not out.sender_excluded
    assert ex_id in {e["id"] for e in exchanges.translated_exchanges(db, "demo")}
    assert queue_for_review(db, "demo") == []
    assert db.scalar("SELECT COUNT(*) FROM events WHERE action = 'review'") == 1


def test_more_than_three_rejections_exclude_the_sender_and_reassign_open_items(database, tmp_path):
    import shutil

    from harness.demo import DEMO
    from services.setup.importer import import_study
    from storage.usability import recordings
    from tests.helpers.audio import write_wav

    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text().replace("items_per_sender = 4", "items_per_sender = 6")
    (folder / "study.toml").write_text(toml)
    import_study(database, folder)
    db = database
    bad = add_participants(db, "demo", "sender", 1, "USW", "Woman")[0]
    same_cell = add_participants(db, "demo", "sender", 1, "USW", "Woman")[0]
    other_cell = add_participants(db, "demo", "sender", 1, "Hindi", "Man")[0]
    wav = write_wav(tmp_path / "tone.wav", seconds=4)
    rec_ids = []
    for _ in range(4):
        v = get_view(db, bad.token, "record")
        submit(db, bad.token, "record", v.item_id, {"audio": str(wav)}, media_dir=tmp_path / "media")
        rid = db.scalar("SELECT id FROM recordings WHERE exchange_id = ?", [int(v.item_id)])
        with db.write() as w:  # what the worker would store for a tone: nothing recognised
            recordings.set_recording_qc(w, rid, "flagged", "", 1.0, ["empty_transcript"])
        rec_ids.append(rid)
    open_before = db.query(
        "SELECT e.starter_id, e.system_id FROM assignments a "
        "JOIN exchanges e ON e.id = a.exchange_id "
        "WHERE a.participant_id = ? AND a.phase = 'record' AND a.status = 'open'",
        [bad.id],
    )
    assert len(open_before) == 2
    outs = [decide(db, rid, "reject", "admin@test") for rid in rec_ids]
    assert [o.sender_excluded for o in outs] == [False, False, False, True]  # more than three
    p = db.one("SELECT * FROM participants WHERE id = ?", [bad.id])
    assert p["active"] == 0 and p["excluded_at"] and "rejected" in p["excluded_reason"]
    assert db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND status = 'open'", [bad.id]) == 0
    # each open recording item went to another sender, the same group and gender first
    assert len(outs[-1].reassigned) == 2 and not outs[-1].unassigned
    new_ids = ",".join(str(r["new_exchange"]) for r in outs[-1].reassigned)
    moved = db.query(
        "SELECT a.participant_id, e.starter_id, e.system_id FROM assignments a JOIN exchanges e "
        "ON e.id = a.exchange_id WHERE e.id IN (%s)" % new_ids
    )
    assert sorted((m["starter_id"], m["system_id"]) for m in moved) == sorted(
        (o["starter_id"], o["system_id"]) for o in open_before
    )
    takers = {m["participant_id"] for m in moved}
    assert takers <= {same_cell.id, other_cell.id}
    for m in moved:  # nobody records a starter twice
        assert (
            db.scalar(
                "SELECT COUNT(*) FROM exchanges WHERE sender_id = ? AND starter_id = ?",
                [m["participant_id"], m["starter_id"]],
            )
            == 1
        )
    # rejected exchanges never reach receivers
    ready = {e["id"] for e in exchanges.translated_exchanges(db, "demo")}
    assert not ready & {db.scalar("SELECT exchange_id FROM recordings WHERE id = ?", [r]) for r in rec_ids}
