"""The semantic-differential form: stored order and polarity, canonical values, repeats,
pages, and the preliminary study's suitability page."""

from __future__ import annotations

import pytest

from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.sd.form import REPEAT_SUFFIX
from services.setup.enrolment import add_participants
from storage.sd import ratings
from tests.helpers.app import run_cli
from tests.helpers.sd import answer_page, sd_study


def past_intro(db, tok):
    """The first page with scales: the welcome and example pages (no scales) are passed."""
    v = get_view(db, tok, "sd")
    while v.status == "item" and v.content["kind"] in ("welcome", "example"):
        assert v.content["pairs"] == []
        submit(db, tok, "sd", v.item_id, {"values": {}})
        v = get_view(db, tok, "sd")
    return v


def test_order_and_polarity_are_per_participant_and_values_canonical(database, tmp_path):
    # every pair on one page, no repeats (the defaults are the paper's: 4 pages, 2 repeats)
    db = sd_study(database, tmp_path, pages_per_sentence=1, repeats_per_sentence=0)
    a, b = add_participants(db, "demo", "sd", 2)
    va, vb = past_intro(db, a.token), past_intro(db, b.token)
    order_a = [p["pair_id"] for p in va.content["pairs"]]
    assert order_a != [p["pair_id"] for p in vb.content["pairs"]]  # randomised per participant
    metas = db.query(
        "SELECT meta FROM assignments WHERE participant_id = ? AND phase = 'sd' "
        "AND json_extract(meta, '$.kind') = 'ratings'",
        [a.id],
    )
    layouts = [
        [(e["pair_id"], e["positive_left"]) for e in __import__("json").loads(m["meta"])["pairs"]] for m in metas
    ]
    assert all(lay == layouts[0] for lay in layouts)  # stored once, same on every page
    flips = {pid: left for pid, left in layouts[0]}
    assert set(flips.values()) == {True, False}  # both polarities occur
    pairs = {r["id"]: r for r in db.query("SELECT * FROM sd_pairs WHERE language = 'en'")}
    # the participant ticks the point next to the POSITIVE adjective on every scale
    res = answer_page(db, a.token, va, lambda p: 1 if p["left"] == pairs[p["pair_id"]]["positive"] else 7)
    assert res.saved
    stored = db.query("SELECT pair_id, value, positive_left FROM sd_ratings")
    assert {r["value"] for r in stored} == {3}  # +3 = positive, whatever the display
    assert {r["pair_id"]: bool(r["positive_left"]) for r in stored} == flips


def test_repeats_get_their_own_scale_and_are_marked(database, tmp_path):
    db = sd_study(database, tmp_path, repeats_per_sentence=2, pages_per_sentence=1)
    p = add_participants(db, "demo", "sd", 1)[0]
    v = past_intro(db, p.token)
    slots = [x["slot"] for x in v.content["pairs"]]
    repeats = [s for s in slots if s.endswith(REPEAT_SUFFIX)]
    assert len(repeats) == 2 and len(slots) == 20 + 2
    assert all(slots.index(r) > slots.index(r[: -len(REPEAT_SUFFIX)]) for r in repeats)  # after the first
    # leaving a repeat unanswered is refused
    with pytest.raises(SubmissionError, match="answer every scale") as refused:
        submit(db, p.token, "sd", v.item_id, {"values": {s: 4 for s in slots if s != repeats[0]}})
    # the mark beside the scale fits the default slider as well as the radio points
    (mark,) = refused.value.fields.values()
    assert "has no answer yet" in mark and "point" not in mark
    answer_page(db, p.token, v, lambda x: 2 if x["slot"].endswith(REPEAT_SUFFIX) else 4)
    rows = db.query("SELECT pair_id, is_repeat, value FROM sd_ratings ORDER BY is_repeat")
    assert sum(r["is_repeat"] for r in rows) == 2 and len(rows) == 22
    assert {r["value"] for r in rows if not r["is_repeat"]} == {0}


def test_a_sentence_can_span_pages(database, tmp_path):
    db = sd_study(database, tmp_path, pairs_per_page=8, repeats_per_sentence=0)
    p = add_participants(db, "demo", "sd", 1)[0]
    seen = []
    past_intro(db, p.token)
    for _ in range(3):
        v = get_view(db, p.token, "sd")
        seen.append((v.content["sentence"], v.content["page"], v.content["pages"], len(v.content["pairs"])))
        answer_page(db, p.token, v, lambda x: 4)
    # the first sentence's three pages come one after another: 8 + 8 + 4 scales
    assert [s[1:] for s in seen] == [(1, 3, 8), (2, 3, 8), (3, 3, 4)]
    assert len({s[0] for s in seen}) == 1
    total = get_view(db, p.token, "sd").total
    assert total == 9  # 3 sentences x 3 pages: the welcome and example are not progress (issue 29)


def test_preliminary_mode_asks_suitability_last(database, tmp_path):
    db = sd_study(database, tmp_path, mode="preliminary", sentences_per_participant=1)
    p = add_participants(db, "demo", "sd", 1)[0]
    v = get_view(db, p.token, "sd")
    assert v.content["kind"] == "welcome"
    v = past_intro(db, p.token)
    assert v.content["kind"] == "ratings" and not v.content["example"]  # the example has its own page
    while v.content["kind"] == "ratings":
        answer_page(db, p.token, v, lambda x: 3)
        v = get_view(db, p.token, "sd")
    assert v.content["kind"] == "suitability" and len(v.content["pairs"]) == 20
    with pytest.raises(SubmissionError, match="from 1 to 5"):
        submit(db, p.token, "sd", v.item_id, {"values": {x["slot"]: 6 for x in v.content["pairs"]}})
    res = submit(
        db,
        p.token,
        "sd",
        v.item_id,
        {"values": {x["slot"]: 4 for x in v.content["pairs"]}, "suggestion": "add 'natural - unnatural'"},
    )
    assert res.saved and res.next.status == "complete"
    assert len(ratings.sd_suitability_rows(db, "demo")) == 20
    assert db.scalar("SELECT text FROM sd_suggestions") == "add 'natural - unnatural'"


def test_ratings_frame_for_the_analysis(database, tmp_path):
    db = sd_study(database, tmp_path, repeats_per_sentence=1)
    p = add_participants(db, "demo", "sd", 1)[0]
    while (v := get_view(db, p.token, "sd")).status == "item":
        answer_page(db, p.token, v, lambda x: 5)
    rows = ratings.sd_rating_rows(db, "demo")
    assert len(rows) == 3 * 21
    assert set(rows[0]) == {"participant_id", "sentence_id", "pair_id", "value", "is_repeat", "duration_s"}
    assert all(r["sentence_id"] for r in rows)


def test_app_ratings_go_through_the_analysis_and_the_command(database, tmp_path):

    import numpy as np
    import pandas as pd

    from services.sd import analysis as sd_analysis

    db = sd_study(database, tmp_path, repeats_per_sentence=2)
    rng = np.random.default_rng(3)
    for p in add_participants(db, "demo", "sd", 4):
        while (v := get_view(db, p.token, "sd")).status == "item":
            answer_page(db, p.token, v, lambda x: int(rng.integers(1, 8)))
    frame = pd.DataFrame(ratings.sd_rating_rows(db, "demo"))
    res = sd_analysis.analyze(frame, expected_seconds=600)
    assert res.n_participants == 4 and len(res.cleansing) == 4
    assert set(res.cleansing.columns) >= {
        "participant_id",
        "too_fast",
        "straight_liner",
        "inconsistency",
        "outlier",
        "kept",
    }
    # the app's active time is a few milliseconds here: everyone is "too fast", as they should be
    assert res.cleansing["too_fast"].all() and res.n_kept == 0
    csv = tmp_path / "ratings.csv"
    frame.to_csv(csv, index=False)
    out = run_cli("analyze", "sd", csv, "--out", tmp_path / "out", "--expected-seconds", "0.001")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "out" / "cleansing.csv").exists() and (tmp_path / "out" / "summary.json").exists()
    bad = tmp_path / "bad.csv"
    frame.assign(value=9).to_csv(bad, index=False)
    out = run_cli("analyze", "sd", bad, "--out", tmp_path / "o2")
    assert out.returncode == 2 and "value" in out.stderr
