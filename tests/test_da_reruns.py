"""Issue 27, point 5 and the paper-001 part of point 8: DA campaigns as paper 001 ran them.
Failed HITs go back to the pool for a fresh rater (up to `reruns`), unrealistically fast HITs
leave the scores by default, the TTS engine and voice of every audio item reach the data and
the analysis, and Table 1 (segments and document length per domain) comes from the imported
segments."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.common.jobs_worker import Worker
from services.da import analysis as da_analysis
from services.da import campaign as da_campaign
from services.da import study_analysis as da_study
from services.models import tts
from services.participation import worker_jobs
from services.setup.enrolment import add_participants
from services.study.files import StudyValidationError, load_study
from storage import studies
from storage.da import exports, hits
from tests.helpers.da import careful, make_judgments
from tests.helpers.da import da_study as make_study
from tests.helpers.da_reruns import SMALL_HIT, campaign_with_one_careless_rater, careless, held_hit, rate

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def test_a_failed_hit_goes_back_to_the_pool_for_a_fresh_rater(database, tmp_path):
    """Paper 001, section 2.2.3: "we apply the Wilcoxon rank-sum test to compare the score
    differences between ask_again and bad_reference translation pairs ... A lower p-value (p <
    0.05) indicates higher reliability"; "Rejected HITs were rescheduled to obtain fresh
    judgments". The careless rater's HIT is judged when their last item is saved (p from scipy
    on the HIT's own control pairs, found here by their of_pos), and the next rater gets that
    HIT, not the first HIT (which least-loaded assignment gave when failed raters counted)."""
    db, media, raters = campaign_with_one_careless_rater(database, tmp_path)
    failed = raters[-1]
    outcome = db.one("SELECT * FROM da_hit_outcomes WHERE participant_id = ?", [failed.id])
    assert outcome["reliable"] == 0 and outcome["rerun"] == 1 and outcome["hit_id"] == held_hit(db, failed.id)
    items = {it["pos"]: it for it in hits.da_hit_items(db, outcome["hit_id"])}
    score = {it["pos"]: careless(it) for it in items.values()}
    diff = {
        t: [score[it["of_pos"]] - score[p] for p, it in items.items() if it["type"] == t]
        for t in ("bad_reference", "ask_again")
    }
    assert outcome["p_value"] == pytest.approx(
        stats.mannwhitneyu(diff["ask_again"], diff["bad_reference"], alternative="less").pvalue
    )
    # the careful raters pass and keep their HITs
    passed = db.query("SELECT reliable, rerun FROM da_hit_outcomes WHERE participant_id != ?", [failed.id])
    assert len(passed) == len(raters) - 1 and all(r["reliable"] == 1 and r["rerun"] == 0 for r in passed)
    (fresh,) = add_participants(db, "demo", "da", 1)
    assert held_hit(db, fresh.id) == outcome["hit_id"] != hits.da_hits(db, "demo")[0]["id"]


def test_reruns_stop_at_the_setting_and_the_analysis_says_so(database, tmp_path):
    """reruns = 1: the failed HIT gets one fresh rater; when that one fails too the HIT stays as
    it is (the next rater goes to the least-held HIT again) and the analysis notes it."""
    db, media, raters = campaign_with_one_careless_rater(database, tmp_path, reruns="1")
    hit = held_hit(db, raters[-1].id)
    (second,) = add_participants(db, "demo", "da", 1)
    assert held_hit(db, second.id) == hit
    rate(db, media, second, careless)
    assert db.scalar("SELECT rerun FROM da_hit_outcomes WHERE participant_id = ?", [second.id]) == 0
    (third,) = add_participants(db, "demo", "da", 1)
    assert held_hit(db, third.id) == hits.da_hits(db, "demo")[0]["id"]
    done = da_study.analyse(db, "demo", 0.5)
    idx = next(h["idx"] for h in hits.da_hits(db, "demo") if h["id"] == hit)
    note = f"HIT {idx} (text, run 1): 1 reruns used (reruns = 1), no rater passed"
    assert any(n.startswith(note) for n in done.notes)
    assert len(done.hit_outcomes) == len(raters) + 1


def test_the_rerun_decision_is_made_once(database, tmp_path):
    """Called again for the same rater (a retried job, a double submit), nothing changes."""
    db, media, raters = campaign_with_one_careless_rater(database, tmp_path)
    failed = raters[-1]
    before = db.query("SELECT * FROM da_hit_outcomes ORDER BY participant_id")
    last = db.one("SELECT * FROM assignments WHERE participant_id = ? ORDER BY position DESC LIMIT 1", [failed.id])
    last["meta"] = json.loads(last["meta"])
    with db.transaction() as tx:
        assert da_campaign.hit_completed(tx, studies.get_study(db, "demo"), last) is None
    assert db.query("SELECT * FROM da_hit_outcomes ORDER BY participant_id") == before


def test_an_unrealistically_fast_hit_is_rejected_and_rerun_by_default(database, tmp_path):
    """Paper 001, Ethical Considerations: "In cases where crowd-workers did not meet the quality
    control criteria—such as submitting robotic responses or completing tasks in an
    unrealistically short time—we rejected their submissions". A careful rater who answers every
    item at once passes the reliability test, but the HIT is too fast: rejected and rerun."""
    db, media = make_study(database, tmp_path, **SMALL_HIT)
    (rater,) = add_participants(db, "demo", "da", 1)
    rate(db, media, rater, careful)
    o = db.one("SELECT * FROM da_hit_outcomes WHERE participant_id = ?", [rater.id])
    assert o["reliable"] == 1 and o["fast"] == 1 and o["rerun"] == 1 and o["median_item_s"] < 2.0


def test_fast_hits_leave_the_z_scores_and_rankings_by_default():
    """Ethics (above): fast HITs were rejected, so by default their judgments are in neither the
    workers' z-standardisation nor the system scores; qc_summary and the summary count them.
    Checked against a z computed here with pandas on the judgments without the fast HIT."""
    df = make_judgments(seed=3)
    fast = df["worker_id"] == "w3"  # a reliable worker whose HIT took 1 s per item
    df.loc[fast, "duration_s"] = 1.0
    res = da_analysis.analyze(df)
    qc = res.qc_summary.iloc[0]
    assert qc["hits_fast_excluded"] == 1 and qc["judgments_fast_excluded"] == fast.sum()
    assert "1 unrealistically fast HITs (median under 2 s per item) excluded" in da_analysis.summary(res)
    kept = set(res.workers.loc[res.workers["kept"], "worker_id"])
    assert "w3" not in kept and res.workers.set_index("worker_id").loc["w3", "reliable"]
    rest = df[df["worker_id"].isin(kept)].copy()
    g = rest.groupby("worker_id")["score"]
    rest["z"] = (rest["score"] - g.transform("mean")) / g.transform("std")
    sys_rows = rest[rest["item_type"] == "system"]
    expected = sys_rows.groupby(["system", "segment_id"])["z"].mean().groupby("system").mean()
    got = res.systems.set_index("system")["z_mean"]
    assert got.sort_index().to_numpy() == pytest.approx(expected.sort_index().to_numpy())
    # keep_fast keeps them (the old behaviour), and changes the scores
    kept_all = da_analysis.analyze(df, keep_fast=True)
    assert kept_all.qc_summary.iloc[0]["hits_fast_excluded"] == 0
    assert "w3" in set(kept_all.workers.loc[kept_all.workers["kept"], "worker_id"])
    assert not np.allclose(kept_all.systems.set_index("system")["z_mean"].sort_index(), got.sort_index())


class FakeTTS:
    """Stands in for the Piper fallback a study without Google credentials gets."""

    name, voice, lang = "piper", "en_US-joe-medium", "en"

    def synthesize(self, text: str) -> bytes:
        return tts._wav_bytes(np.zeros(1600, dtype=np.int16), 16000)


def test_the_tts_engine_and_voice_reach_the_data_and_the_analysis(database, tmp_path, monkeypatch):
    """Paper 001, section 2.2.2: "we used the Google Cloud Text-to-Speech (TTS) Service". A study
    with tts_backend auto and no Google credentials is spoken by Piper: every audio item stores
    its engine and voice at render time, every judgment carries them (analysis frame and
    export), and the analysis notes that the audio is not Google's."""
    monkeypatch.setattr(tts, "choose", lambda lang, backend=None, voice=None: FakeTTS())
    db, media = make_study(database, tmp_path, modality='"audio"', keep_fast="true", reliability_alpha="0.5")
    (rater,) = add_participants(db, "demo", "da", 1)
    Worker(db, {"render_da_audio": worker_jobs.handlers(db, media_dir=media)["render_da_audio"]}).run_until_idle()
    hit = held_hit(db, rater.id)
    assert {(i["tts_engine"], i["tts_voice"]) for i in hits.da_hit_items(db, hit)} == {("piper", "en_US-joe-medium")}
    rate(db, media, rater, careful)
    df = da_campaign.judgments_frame(db, "demo")
    assert set(zip(df["tts_engine"], df["tts_voice"])) == {("piper", "en_US-joe-medium")}
    rows = exports.da_judgment_rows(db, "demo")
    assert rows and all(r["tts_engine"] == "piper" and r["tts_voice"] == "en_US-joe-medium" for r in rows)
    done = da_study.analyse(db, "demo", 0.5)
    assert (
        f"{len(df)} audio judgments were spoken by piper (voice en_US-joe-medium), not by google "
        "(paper 001 used Google Cloud TTS)" in done.notes
    )


def test_no_tts_note_when_the_engine_is_the_configured_one():
    df = pd.DataFrame({"modality": ["audio", "text"], "tts_engine": ["espeak-ng", None], "tts_voice": ["pt", None]})
    assert da_study.tts_notes(df, {"tts_backend": "espeak"}) == []
    assert da_study.tts_notes(df, {"tts_backend": "auto"}) == [
        "1 audio judgments were spoken by espeak-ng (voice pt), not by google (paper 001 used Google Cloud TTS)"
    ]


def test_table1_segments_and_document_length_per_domain():
    """Paper 001, Table 1: "Number of segments and average document length (#segments per
    document)" per domain. Literal data: news has documents of 3 and 1 segments, social one of
    2; each segment is output by two systems (a segment counts once)."""
    segs = [
        ("n1", "d1", "news", "a b c"),
        ("n2", "d1", "news", "a b"),
        ("n3", "d1", "news", "a"),
        ("n4", "d2", "news", "a b c d"),
        ("s1", "d3", "social", "a b"),
        ("s2", "d3", "social", "a b c d e f"),
    ]
    df = pd.DataFrame(
        [dict(segment_id=s, doc_id=d, domain=m, source=t, system=sy) for s, d, m, t in segs for sy in ("A", "B")]
    )
    t = da_analysis.table1(df).set_index("domain")
    assert list(t.index) == ["news", "social", "all"]
    assert t.loc["news", ["segments", "documents"]].tolist() == [4, 2]
    assert t.loc["news", "mean_doc_segments"] == 2.0 and t.loc["news", "median_doc_segments"] == 2.0
    assert t.loc["news", "mean_doc_words"] == 5.0  # d1: 3+2+1 = 6 words, d2: 4
    assert t.loc["social", ["segments", "documents", "mean_doc_segments", "mean_doc_words"]].tolist() == [2, 1, 2, 8]
    assert t.loc["all", ["segments", "documents"]].tolist() == [6, 3]
    assert t.loc["all", "mean_doc_segments"] == pytest.approx(2.0)
    assert t.loc["all", "median_doc_words"] == 6


def test_table1_from_the_imported_segments_in_the_tab_and_the_cli(database, tmp_path):
    """The study's da_segments.csv may name each segment's domain; the campaign analysis (tab
    and `app.py analyze da --study`) shows Table 1 from the imported segments."""
    import csv
    import shutil

    from harness.demo import DEMO
    from services.setup.importer import import_study
    from tests.helpers.app import run_cli

    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    path = folder / "da_segments.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    for r in rows:
        r["domain"] = "news" if r["doc_id"] == rows[0]["doc_id"] else "social"
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import_study(database, folder)
    t = da_study.segments_table1(database, "demo").set_index("domain")
    news = {r["segment_id"] for r in rows if r["domain"] == "news"}
    assert t.loc["news", "segments"] == len(news) and t.loc["news", "documents"] == 1
    assert t.loc["all", "segments"] == len({r["segment_id"] for r in rows})
    (rater,) = add_participants(database, "demo", "da", 1)
    rate(database, tmp_path / "media", rater, careful)
    out = tmp_path / "out"
    r = run_cli("analyze", "da", "--study", "demo", "--out", out, env={**os.environ, "TRADLAB_DB": str(database.path)})
    assert r.returncode == 0, r.stderr
    assert f"news: {len(news)} segments, 1 documents" in r.stdout
    assert pd.read_csv(out / "table1.csv")["domain"].tolist()[-1] == "all"
    assert (out / "hit_outcomes.csv").is_file()


def test_new_settings_are_checked(tmp_path):
    import shutil

    from harness.demo import DEMO

    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    toml = toml.replace("reliability_alpha = 0.2\n", "")  # the demo's own, set below instead
    (folder / "study.toml").write_text(
        toml.replace("[da]\n", "[da]\nreruns = -1\nfast_item_s = 0\nkeep_fast = 1\nreliability_alpha = 5\n", 1)
    )
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    text = str(e.value)
    assert "'da.reruns': must be an integer >= 0" in text and "'da.fast_item_s': must be a number of seconds" in text
    assert "'da.keep_fast': must be true" in text and "'da.reliability_alpha': must be a significance level" in text
    (folder / "study.toml").write_text(toml.replace("[da]\n", "[da]\nreruns = 0\nfast_item_s = 1.5\n", 1))
    da = load_study(folder).config["da"]
    assert (da["reruns"], da["fast_item_s"], da["keep_fast"], da["reliability_alpha"]) == (0, 1.5, False, 0.05)


def test_the_demo_as_shipped_lets_a_careful_rater_pass_and_reruns_a_careless_one(database, tmp_path):
    """The demo's HITs hold 2 + 2 control pairs, whose smallest one-sided Mann-Whitney p is 1/6
    (scipy's exact test, below): at paper 001's p < 0.05 (section 2.2.3) no demo rater could ever
    pass, so the demo sets reliability_alpha = 0.2. A careful rater's HIT stays theirs, a
    careless rater's goes back to the pool."""
    assert stats.mannwhitneyu([1, 2], [3, 4], alternative="less", method="exact").pvalue == pytest.approx(1 / 6)
    db, media = make_study(database, tmp_path, modality='"text"', keep_fast="true")
    assert studies.get_study(db, "demo")["config"]["da"]["reliability_alpha"] == 0.2
    good, bad = add_participants(db, "demo", "da", 2)
    rate(db, media, good, careful)
    rate(db, media, bad, careless)
    outcome = {r["worker_id"]: r for r in da_study.analyse(db, "demo").hit_outcomes.to_dict("records")}
    assert outcome[good.id]["reliable"] and not outcome[good.id]["rerun"]
    assert not outcome[bad.id]["reliable"] and outcome[bad.id]["rerun"]
