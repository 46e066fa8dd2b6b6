"""Audio DA as paper 001 (issue 20, point 6): the reference as an image in audio mode, the
slider lock as a study setting (off, as in the paper), self-replication runs inside one study,
and Figure 3 (score distributions per control type) in the analysis's outputs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from services.common.jobs_worker import Worker
from services.da import analysis as da_analysis
from services.da import campaign as da_campaign
from services.da import render as da_render
from services.participation import worker_jobs
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from storage.da import hits
from tabs.da import body_html
from tests.helpers.da import careful, da_study, make_judgments

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def audio_item(db, media):
    """The first item of an audio rater (the demo's modality "both": the second rater), rendered."""
    add_participants(db, "demo", "da", 1)  # text
    rater = add_participants(db, "demo", "da", 1)[0]  # audio
    Worker(db, {"render_da_audio": worker_jobs.handlers(db, media_dir=media)["render_da_audio"]}).run_until_idle()
    v = get_view(db, rater.token, "da", media_dir=media)
    assert v.status == "item" and v.content["modality"] == "audio"
    return rater, v


def test_audio_mode_shows_the_reference_as_an_image(database, tmp_path):
    """Paper 001, Figure 2 (the multimodal interface): "Worker can use audio control to listen
    translations, the text in presented in the image form"; section 2.2.1: translations are
    "converted into bit-mapped images, in order to deter workers from using speech feature of
    Web Browsers to read-aloud the translations"."""
    db, media = da_study(database, tmp_path)
    _, v = audio_item(db, media)
    it = hits.da_hit_item(db, int(v.item_id))
    assert v.content["image"] == str(da_render.image_path(it["reference"], "", media))
    assert (media / "da").joinpath(v.content["image"].rsplit("/", 1)[-1]).is_file()
    shown = json.dumps(v.content, ensure_ascii=False)
    assert it["reference"] not in shown and it["candidate"] not in shown
    page = body_html(v.content)
    assert '<div id="da-image"><picture><source media="(max-width: 640px)" srcset=' in page and "<img src=" in page
    assert "<audio controls" in page
    assert it["reference"] not in page and 'class="reference"' not in page


def test_the_slider_is_not_locked_by_default(database, tmp_path):
    """Paper 001, section 2.2 (Figures 1-2): "The slider is initially placed at left most corner;
    workers move it to the right in reaction to the question" - nothing waits for the audio."""
    db, media = da_study(database, tmp_path)
    rater, v = audio_item(db, media)
    assert v.content["lock"] is False and "audio_note" not in v.content
    page = body_html(v.content)
    assert "data-unlock-on-ended" not in page and " disabled" not in page
    res = submit(db, rater.token, "da", v.item_id, {"score": 40}, media_dir=media)  # at once: accepted
    assert res.saved


def test_the_lock_is_a_study_setting(database, tmp_path):
    db, media = da_study(database, tmp_path, lock_until_played="true")
    _, v = audio_item(db, media)
    assert v.content["lock"] is True
    page = body_html(v.content)
    assert "disabled data-unlock-on-ended" in page and v.content["audio_note"] in page


@pytest.mark.parametrize(
    "key,value,message", [("lock_until_played", '"yes"', "must be true"), ("runs", "0", "must be an integer >= 1")]
)
def test_da_settings_are_checked(database, tmp_path, key, value, message):
    with pytest.raises(Exception, match=f"da.{key}") as e:
        da_study(database, tmp_path, **{key: value})
    assert message in str(e.value)


def test_a_second_run_of_the_same_hits_by_other_raters(database, tmp_path):
    """Paper 001, section 3.2: "we conduct two independent runs and compute the Pearson
    correlation (r) between the initial and self-replicated results" (Figure 5a). With runs = 2
    the study's raters fill run 1 of every HIT, then run 2 of the same HITs; the run is stored
    with each rater's assignments and reaches the analysis."""
    db, media = da_study(database, tmp_path, modality='"text"', runs="2")
    n_hits = len(hits.da_hits(db, "demo"))
    raters = add_participants(db, "demo", "da", 2 * n_hits)
    held = []
    for r in raters:
        meta = json.loads(db.scalar("SELECT meta FROM assignments WHERE participant_id = ? LIMIT 1", [r.id]))
        held.append((meta["run"], meta["hit_id"]))
    first, second = held[:n_hits], held[n_hits:]
    assert {run for run, _ in first} == {1} and {run for run, _ in second} == {2}
    assert sorted(h for _, h in first) == sorted(h for _, h in second)  # the same HITs again
    for r in raters:
        while (v := get_view(db, r.token, "da", media_dir=media)).status == "item":
            submit(
                db,
                r.token,
                "da",
                v.item_id,
                {"score": careful(hits.da_hit_item(db, int(v.item_id)))},
                media_dir=media,
            )
    df = da_campaign.judgments_frame(db, "demo")
    assert sorted(df["run"].unique().tolist()) == [1, 2]
    assert df.groupby("run")["worker_id"].nunique().tolist() == [n_hits, n_hits]
    res = da_analysis.analyze(df, alpha=0.5, keep_fast=True)  # a test's rater answers in milliseconds
    rep = res.replication[res.replication["comparison"] == "text: run 1 vs run 2"]
    assert set(rep["level"]) == {"system", "segment"}
    assert rep.loc[rep["level"] == "system", "n"].item() == res.systems[res.systems["run"] == 1].shape[0]
    assert "replication" in da_analysis.figures(res)


def test_runs_default_to_one(database, tmp_path):
    db, _ = da_study(database, tmp_path, modality='"text"')
    raters = add_participants(db, "demo", "da", 3)
    runs = {
        json.loads(db.scalar("SELECT meta FROM assignments WHERE participant_id = ? LIMIT 1", [r.id]))["run"]
        for r in raters
    }
    assert runs == {1}


def test_figure_3_score_distributions_per_control_type(tmp_path):
    """Paper 001, Figure 3: "Score distributions of reliable workers across different quality
    control segments: bad_reference, ask_again, and original system outputs"."""
    df = make_judgments(seed=3, modalities=("text", "audio"), runs=(1, 2))
    res = da_analysis.analyze(df)
    kept = res.workers.loc[res.workers["kept"], ["modality", "run", "worker_id"]]
    d = da_analysis.normalise(df).merge(kept, on=["modality", "run", "worker_id"])
    expected = d.groupby(["modality", "run", "item_type"])["score"].agg(["size", "mean", "median"])
    got = res.score_distribution.set_index(["modality", "run", "item_type"]).sort_index()
    assert len(got) == len(expected)
    for key, row in expected.iterrows():
        assert got.loc[key, "n"] == row["size"]
        assert got.loc[key, "mean"] == pytest.approx(row["mean"])
        assert got.loc[key, "median"] == pytest.approx(row["median"])
    # reliable workers score degraded copies well below the system outputs (the figure's point)
    text1 = got.loc[("text", 1)]
    assert text1.loc["bad_reference", "mean"] < text1.loc["system", "mean"] - 15
    fig = da_analysis.figures(res)["score_distribution"]
    assert {t.type for t in fig.data} == {"box"}
    assert {t.name for t in fig.data} >= {"system", "bad_reference", "ask_again"}
    assert len(fig.layout.annotations) == 4  # a panel per modality and run
    box = next(t for t in fig.data if t.name == "bad_reference" and t.xaxis in ("x", None))
    assert sorted(box.y) == sorted(d[(d.modality == "text") & (d.run == 1) & (d.item_type == "bad_reference")]["score"])
    # written where the other DA figures go
    paths = {p.name for p in da_analysis.write_outputs(res, tmp_path / "out", png=False)}
    assert {"score_distribution.html", "score_distribution.csv", "ranking.html"} <= paths
    back = pd.read_csv(tmp_path / "out" / "score_distribution.csv")
    assert list(back.columns) == da_analysis.DISTRIBUTION_COLUMNS
