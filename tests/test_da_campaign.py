"""A DA campaign in the app: HITs at import, one modality per rater, what items show,
audio only after rendering, ordered rating, listening time, feedback, the analysis frame."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest

from harness.demo import DEMO
from services.common.jobs_worker import Worker
from services.da import campaign as da_campaign
from services.da import render as da_render
from services.participation import worker_jobs
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from storage.da import hits as hit_store

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def da_study(database, tmp_path, **settings):
    """The demo study with [da] settings added (TOML values as written)."""
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    if settings:
        toml = (folder / "study.toml").read_text()
        lines = "".join(f"{k} = {v}\n" for k, v in settings.items())
        (folder / "study.toml").write_text(toml.replace("[da]\n", "[da]\n" + lines, 1))
    import_study(database, folder)
    return database, tmp_path / "media"


@pytest.fixture
def campaign(database, tmp_path):
    return da_study(database, tmp_path)


def test_hits_are_built_at_import_and_reproducible(campaign, tmp_path):
    db, _ = campaign
    hits = hit_store.da_hits(db, "demo")
    assert hits
    items = hit_store.da_hit_items(db, hits[0]["id"])
    assert [it["pos"] for it in items] == list(range(1, len(items) + 1))
    types = [it["type"] for it in items]
    assert types.count("bad_reference") + types.count("ask_again") == 4 and len(items) == 24
    # the same folder imported into another database gives the same HITs
    from storage import open_database

    other = open_database(tmp_path / "other.db")
    import_study(other, tmp_path / "study")
    again = hit_store.da_hit_items(other, hit_store.da_hits(other, "demo")[0]["id"])
    assert [(i["type"], i["candidate"]) for i in again] == [(i["type"], i["candidate"]) for i in items]


def test_modality_alternates_between_raters_and_hits_spread(campaign):
    db, _ = campaign
    raters = add_participants(db, "demo", "da", 4)
    metas = []
    for r in raters:
        a = db.one("SELECT meta FROM assignments WHERE participant_id = ? AND phase = 'da' LIMIT 1", [r.id])
        metas.append(json.loads(a["meta"]))
    assert [m["modality"] for m in metas] == ["text", "audio", "text", "audio"]
    n_hits = len(hit_store.da_hits(db, "demo"))
    if n_hits > 1:
        assert metas[0]["hit_id"] != metas[2]["hit_id"]  # the next text rater gets the other HIT
    # every rater has the whole HIT, in its order
    n = db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ?", [raters[0].id])
    assert n == len(hit_store.da_hit_items(db, metas[0]["hit_id"]))


def test_text_items_show_an_image_and_never_the_candidate(campaign):
    db, media = campaign
    text_rater = add_participants(db, "demo", "da", 1)[0]
    v = get_view(db, text_rater.token, "da", media_dir=media)
    assert v.status == "item" and v.content["modality"] == "text" and v.content["image"].endswith(".png")
    it = hit_store.da_hit_item(db, int(v.item_id))
    assert it["candidate"] not in json.dumps(v.content, ensure_ascii=False)
    assert v.progress == f"0 / {v.total}"


def test_a_text_hit_is_drawn_by_the_worker_ahead_of_the_rater(campaign):
    db, media = campaign
    rater = add_participants(db, "demo", "da", 1)[0]
    job = db.one("SELECT * FROM jobs WHERE kind = 'render_da_images'")
    hit_id = json.loads(job["payload"])["hit_id"]
    items = hit_store.da_hit_items(db, hit_id)
    assert not any(da_render.image_path(i["reference"], i["candidate"], media).exists() for i in items)
    done = Worker(
        db, {"render_da_images": worker_jobs.handlers(db, media_dir=media)["render_da_images"]}
    ).run_until_idle()
    assert [j["status"] for j in done] == ["done"]
    for width in (da_render.DEFAULT_WIDTH, da_render.NARROW_WIDTH):  # the phone's copy too
        assert all(da_render.image_path(i["reference"], i["candidate"], media, width).is_file() for i in items)
    v = get_view(db, rater.token, "da", media_dir=media)
    it = hit_store.da_hit_item(db, int(v.item_id))
    assert v.content["image"] == str(da_render.image_path(it["reference"], it["candidate"], media))
    assert v.content["image_narrow"] == str(
        da_render.image_path(it["reference"], it["candidate"], media, da_render.NARROW_WIDTH)
    )


def test_the_phone_copy_keeps_the_texts_size(tmp_path):
    """On a 390 px phone (302 px for the image) the 900 px image showed its 24 px text at 8 px;
    the narrow copy, wrapped to 360 px, shows it at 20 px."""
    from PIL import Image

    ref, cand = "A maioria das novas estações ficará situada perto de escolas. " * 2, "Muitas estações novas."
    wide, narrow = da_render.render_item_images(ref, cand, tmp_path)
    shown = 302
    with Image.open(wide) as w, Image.open(narrow) as n:
        assert w.width == 900 and n.width == 360 and n.height > w.height  # the same text, more lines
        assert da_render.FONT_SIZE * shown / w.width < 10 <= 19 < da_render.FONT_SIZE * shown / n.width


def test_audio_items_wait_for_rendering_and_need_listening_when_locked(database, tmp_path):
    # the lock is a study setting (paper 001 does not lock: the default is false)
    db, media = da_study(database, tmp_path, lock_until_played="true")
    add_participants(db, "demo", "da", 1)  # text
    audio_rater = add_participants(db, "demo", "da", 1)[0]  # audio
    v = get_view(db, audio_rater.token, "da", media_dir=media)
    assert v.status == "waiting" and "audio" in v.message
    assert db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'render_da_audio'") == 1
    render = worker_jobs.handlers(db, media_dir=media)["render_da_audio"]
    done = Worker(db, {"render_da_audio": render}).run_until_idle()
    assert [j["status"] for j in done] == ["done"]
    v = get_view(db, audio_rater.token, "da", media_dir=media)
    assert v.status == "item" and v.content["audio"].endswith(".wav") and v.content["audio_seconds"] > 1
    assert v.content["image"].endswith(".png") and v.content["lock"] and v.content["audio_note"]
    it = hit_store.da_hit_item(db, int(v.item_id))
    assert it["candidate"] not in json.dumps(v.content, ensure_ascii=False)
    assert it["reference"] not in json.dumps(v.content, ensure_ascii=False)
    # a score before the audio could have played to its end is refused
    with pytest.raises(SubmissionError, match="listen to the whole recording"):
        submit(db, audio_rater.token, "da", v.item_id, {"score": 50}, media_dir=media)
    # ... and accepted once that time has passed since the item was shown
    past = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=60)).isoformat()
    with db.write() as w:
        w.execute(
            "UPDATE assignments SET first_shown_at = ? WHERE participant_id = ? AND item_id = ?",
            [past, audio_rater.id, v.item_id],
        )
    res = submit(db, audio_rater.token, "da", v.item_id, {"score": 50}, media_dir=media)
    assert res.saved
    j = db.one("SELECT * FROM da_judgments")
    assert j["modality"] == "audio" and j["hit_item_id"] == int(v.item_id)


def test_items_are_rated_in_order_without_going_back(campaign):
    db, media = campaign
    r = add_participants(db, "demo", "da", 1)[0]
    first = get_view(db, r.token, "da", media_dir=media)
    later = db.scalar("SELECT item_id FROM assignments WHERE participant_id = ? AND position = 3", [r.id])
    with pytest.raises(SubmissionError, match="in order"):
        submit(db, r.token, "da", later, {"score": 10}, media_dir=media)
    with pytest.raises(SubmissionError, match="move the slider"):
        submit(db, r.token, "da", first.item_id, {"score": None}, media_dir=media)
    res = submit(db, r.token, "da", first.item_id, {"score": 80}, media_dir=media)
    assert res.saved and res.next.progress.startswith("1 /")
    again = submit(db, r.token, "da", first.item_id, {"score": 5}, media_dir=media)
    assert not again.saved  # no going back: the first score stays
    assert db.scalar("SELECT score FROM da_judgments") == 80


def test_feedback_after_the_last_item_and_the_analysis_frame(campaign):
    db, media = campaign
    r = add_participants(db, "demo", "da", 1)[0]
    while (v := get_view(db, r.token, "da", media_dir=media)).status == "item":
        assert db.scalar("SELECT completed_at FROM participants WHERE id = ?", [r.id]) is None
        submit(db, r.token, "da", v.item_id, {"score": 70}, media_dir=media)
    assert v.status == "complete" and v.completion_code
    # the first view of the end stamps the completion time (the admin's completion-code list)
    stamped = db.scalar("SELECT completed_at FROM participants WHERE id = ?", [r.id])
    assert stamped and get_view(db, r.token, "da", media_dir=media).status == "complete"
    assert db.scalar("SELECT completed_at FROM participants WHERE id = ?", [r.id]) == stamped
    with pytest.raises(da_campaign.DAError, match="write something"):
        da_campaign.save_feedback(db, r.id, "  ")
    da_campaign.save_feedback(db, r.id, "The images were easy to read.")
    da_campaign.save_feedback(db, r.id, "The images were easy to read. Thanks!")  # an edit, not a second row
    assert db.scalar("SELECT COUNT(*) FROM da_feedback") == 1
    df = da_campaign.judgments_frame(db, "demo")
    assert len(df) == v.total and set(df["item_type"]) >= {"system", "bad_reference", "ask_again"}
    assert list(df.columns) == [
        "worker_id",
        "hit_id",
        "modality",
        "system",
        "segment_id",
        "item_type",
        "score",
        "run",
        "duration_s",
        "tts_engine",
        "tts_voice",
    ]


def test_the_campaigns_judgments_go_through_the_analysis(campaign):
    from services.da import analysis as da_analysis

    db, media = campaign
    raters = add_participants(db, "demo", "da", 2)  # one text, one audio rater
    r = raters[0]
    while (v := get_view(db, r.token, "da", media_dir=media)).status == "item":
        it = hit_store.da_hit_item(db, int(v.item_id))
        # a careful rater: bad references scored low, repeats like their originals
        score = 20 if it["type"] == "bad_reference" else 60 + (hash(it["system"]) % 30)
        submit(db, r.token, "da", v.item_id, {"score": score}, media_dir=media)
    df = da_campaign.judgments_frame(db, "demo")
    res = da_analysis.analyze(df, alpha=0.5, keep_fast=True)  # a test's rater answers in milliseconds
    assert set(res.systems["system"]) <= {"demo-good", "demo-fair", "demo-poor"}
    assert len(res.workers) == 1 and res.qc_summary["judgments_total"].sum() == len(df)
    figs = da_analysis.figures(res)
    assert "ranking" in figs
