"""Automatic metrics per exchange: queued when a translation exists, stored with their provenance,
and joined to the usability analysis's rows."""

from __future__ import annotations

import pytest

from services.common.jobs_worker import Worker
from services.metrics import exchange as exchange_metrics
from services.models.cache import ModelCache
from services.participation import worker_jobs
from storage.usability import corpus as usability_corpus
from storage.usability import exchange_metrics as metric_store
from storage.usability import recordings

CACHE = ModelCache(device="cpu")
# Lightning 2.6 under torch 2.13 warns about a torch pytree deprecation on every COMET predict
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:DeprecationWarning", "ignore:.*LeafSpec.*"),
    pytest.mark.usefixtures("one_torch_thread"),
]


def test_imported_exchanges_are_scored_by_the_worker(demo_db):
    db = demo_db
    queued = db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'score_exchange'")
    assert queued == 12  # one per imported translation
    score = worker_jobs.handlers(db, CACHE)["score_exchange"]
    done = Worker(db, {"score_exchange": score}).run_until_idle(limit=3)
    assert [j["status"] for j in done] == ["done"] * 3
    rows = metric_store.exchange_metric_rows(db, "demo")
    by_metric = {r["metric"] for r in rows}
    # no second human reference of the same starter: chrF/BLEU have nothing to compare with
    assert by_metric == {"e5-cosine", "backtranslation-chrf"}
    for r in rows:
        assert r["version"] and r["model"] and r["score"] is not None
    e5 = [r["score"] for r in rows if r["metric"] == "e5-cosine"]
    assert all(0.7 < s <= 1.0 for s in e5)  # human translations of the starters
    # scoring again is idempotent (the score cache answers)
    ex = rows[0]["exchange_id"]
    again = exchange_metrics.score_exchange(db, ex, CACHE)
    assert again["e5-cosine"] == pytest.approx(
        next(r["score"] for r in rows if r["exchange_id"] == ex and r["metric"] == "e5-cosine")
    )


def test_an_unknown_metric_in_the_study_is_an_import_error(tmp_path):
    import shutil

    from harness.demo import DEMO
    from services.study.files import StudyValidationError, load_study

    folder = tmp_path / "s"
    shutil.copytree(DEMO, folder)
    toml = (
        (folder / "study.toml")
        .read_text()
        .replace("items_per_sender = 4", 'items_per_sender = 4\nmetrics = ["e5-cosine", "blue"]')
    )
    (folder / "study.toml").write_text(toml)
    with pytest.raises(StudyValidationError, match="unknown metric 'blue'"):
        load_study(folder)


# -- issue 27 point 1: paper 000's metrics by default, QE mode without a reference, every skip counted --
#
# Paper 000, section 3 "Quality Metrics": "we rely on the following set of automatic metrics ...:
# COMET Rei et al. (2020), COMET Kiwi Base and XL Rei et al. (2022), XCOMET-XL Guerreiro et al.
# (2024), and MetricX 24 XL Juraska et al. (2024)" (Table 2 and Figure 11 report all five).
# The tiny models of tests/tiny_metric_models.py stand in for the weights (the scores mean nothing).

PAPER_VARS = {
    "comet-22": "TRADLAB_COMET_22_CHECKPOINT",
    "cometkiwi-22": "TRADLAB_COMETKIWI_22_CHECKPOINT",
    "cometkiwi-23-xl": "TRADLAB_COMETKIWI_23_XL_CHECKPOINT",
    "xcomet-xl": "TRADLAB_XCOMET_XL_CHECKPOINT",
    "metricx-24-xl": "TRADLAB_METRICX_24_XL_MODEL",
}


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    import shutil
    import sys
    from pathlib import Path

    from services.metrics import comet as metrics_comet

    if not metrics_comet._package_version():
        pytest.skip("unbabel-comet is not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tiny_metric_models as tmm

    root = tmp_path_factory.mktemp("tiny-metrics")
    with tmm.offline():
        comet = tmm.build_comet(root / "comet")
        mx = tmm.build_metricx(root / "metricx")
    # named like the real checkpoint, so its version (24, hybrid) is the one the name says
    shutil.copytree(mx["model"], root / "metricx-24-hybrid-xl-v2p6")
    return {
        **comet,
        "metricx": root / "metricx-24-hybrid-xl-v2p6",
        "tokenizer": mx["tokenizer"],
        "score_token_id": mx["score_token_id"],
    }


@pytest.fixture
def paper_env(monkeypatch, tiny_models):
    """No metric variable of the machine leaks in; configure(name, ...) sets the paper checkpoints'."""
    import os

    from services.metrics import registry as metrics

    for var in list(os.environ):
        if var.startswith(("TRADLAB_METRICX", "TRADLAB_COMET", "TRADLAB_XCOMET")):
            monkeypatch.delenv(var)
    real_get = metrics.get
    # the tiny MetricX's score token is not MetricX's id 250089
    monkeypatch.setattr(
        metrics,
        "get",
        lambda name, **o: real_get(
            name, **({"score_token_id": tiny_models["score_token_id"]} if name.startswith("metricx") else {}), **o
        ),
    )
    folder = {"comet-22": "comet", "cometkiwi-22": "cometkiwi", "cometkiwi-23-xl": "cometkiwi", "xcomet-xl": "xcomet"}

    def configure(*names):
        for name in names:
            if name == "metricx-24-xl":
                monkeypatch.setenv("TRADLAB_METRICX_24_XL_MODEL", str(tiny_models["metricx"]))
                monkeypatch.setenv("TRADLAB_METRICX_24_XL_TOKENIZER", str(tiny_models["tokenizer"]))
            else:
                monkeypatch.setenv(PAPER_VARS[name], str(tiny_models[folder[name]]))

    return configure


def test_default_set_is_the_papers_where_configured_else_the_offline_one(demo_db, paper_env, no_network):
    """Paper 000 section 3 names five metrics; without any weights the offline set runs, and
    each paper metric is named with the variable that would configure it."""
    study = {"config": {"usability": {}}}
    got, notes = exchange_metrics.default_metrics(study, CACHE)
    assert got == ["e5-cosine", "backtranslation-chrf", "chrf", "bleu"]
    for name, var in PAPER_VARS.items():
        assert any(n.startswith(name) and f"not configured (set {var})" in n for n in notes), (name, notes)
    assert "the offline set instead" in notes[-1]
    paper_env("xcomet-xl", "metricx-24-xl")
    got, notes = exchange_metrics.default_metrics(study, CACHE)
    assert got == ["xcomet-xl", "metricx-24-xl"]
    assert len(notes) == 3 and not any("offline" in n for n in notes)
    paper_env("comet-22", "cometkiwi-22", "cometkiwi-23-xl")
    assert exchange_metrics.default_metrics(study, CACHE) == (exchange_metrics.PAPER_METRICS, [])
    # a study's own list still wins
    listed = {"config": {"usability": {"metrics": ["chrf"]}}}
    assert exchange_metrics.study_metrics(listed, CACHE) == ["chrf"]


def test_without_a_reference_xcomet_and_metricx_score_reference_free(demo_db, paper_env, tiny_models, no_network):
    """The demo's exchanges have no human reference. Today XCOMET-XL and MetricX-24 are skipped
    for them; both have a reference-free mode (XCOMET: src+mt; MetricX-24: "source: .. candidate: .."),
    used and stored in its own column (name + "-qe"). COMET-22 has none: skipped, and counted."""
    import json

    from services.metrics import registry as metrics
    from services.metrics.metricx import metricx_input
    from storage.usability import exchanges

    paper_env("comet-22", "xcomet-xl", "metricx-24-xl")
    db = demo_db
    eid = exchanges.translated_exchanges(db, "demo")[0]["id"]
    got = exchange_metrics.score_exchange(db, eid, CACHE)
    assert set(got) == {"xcomet-xl-qe", "metricx-24-xl-qe"}
    ex = exchanges.exchange(db, eid)
    src = usability_corpus.starter(db, "demo", ex["starter_id"])["text"]
    hyp = recordings.translation(db, eid)["text"]
    # independently: comet's own predict on a src+mt sample (XCOMET's QE input), and MetricX-24's
    # reference-free input through the model's encoder-decoder head (MT5ForRegression: the score
    # token's logit after one decoder step, clipped to 0..25)
    xcomet = metrics.get("xcomet-xl", cache=CACHE)
    want_x = (
        xcomet.loaded().model.predict([{"src": src, "mt": hyp}], batch_size=1, gpus=0, progress_bar=False).scores[0]
    )
    assert got["xcomet-xl-qe"] == pytest.approx(want_x, abs=1e-5)
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["tokenizer"], local_files_only=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_models["metricx"], local_files_only=True).eval()
    text = "source: " + src + " candidate: " + hyp
    assert metricx_input(src, hyp, None, "24") == text
    ids = tok(text, max_length=1536, truncation=True, padding=False).input_ids[:-1]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits
    want_m = float(torch.clamp(logits[0, 0, tiny_models["score_token_id"]], 0, 25))
    assert got["metricx-24-xl-qe"] == pytest.approx(want_m, abs=1e-4)
    stored = {r["metric"] for r in metric_store.exchange_metric_rows(db, "demo")}
    assert stored == {"xcomet-xl-qe", "metricx-24-xl-qe"}  # never under the reference-based name
    assert json.loads(json.dumps(got))  # plain numbers


def test_the_report_counts_every_skip_by_reason(tmp_path, database, paper_env, no_network):
    """Per stored column: its mode, how many exchanges it scored, how many it skipped and why
    (no reference, not configured, failed, pending), each column's counts summing to the
    exchanges; the analysis summary and the export manifest say the same."""
    import csv
    import json

    from harness.demo import demo_with_exchanges
    from services.setup.importer import import_study
    from services.study import export
    from storage import jobs
    from storage.usability import exchanges

    folder = demo_with_exchanges(tmp_path / "demo", keep_references=True)
    with open(folder / "references.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    with open(folder / "references.csv", "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows[:3])  # references for two starters only
    import_study(database, folder)
    paper_env("comet-22", "xcomet-xl")
    ids = [e["id"] for e in exchanges.translated_exchanges(database, "demo")]
    with_ref = {
        e
        for e in ids
        if metric_store.reference_translation(
            database, "demo", exchanges.exchange(database, e)["starter_id"], "human-reference"
        )
        is not None
    }
    assert len(ids) == 12 and len(with_ref) == 2
    pending, failed = [e for e in ids if e not in with_ref][:2]
    for eid in ids:
        if eid not in (pending, failed):
            exchange_metrics.score_exchange(database, eid, CACHE)
    job = database.one("SELECT id FROM jobs WHERE dedupe_key = ?", [f"score_exchange:{failed}"])
    jobs.fail(database, job["id"], "RuntimeError: out of memory", None)
    report = exchange_metrics.metrics_report(database, "demo", CACHE)
    assert report["source"] == "paper 000" and report["exchanges"] == 12
    by = {r["metric"]: r for r in report["rows"]}
    assert {k: by[k]["mode"] for k in ("comet-22", "xcomet-xl", "xcomet-xl-qe", "cometkiwi-22")} == {
        "comet-22": "reference-based",
        "xcomet-xl": "reference-based",
        "xcomet-xl-qe": "reference-free QE",
        "cometkiwi-22": "reference-free QE",
    }
    assert by["comet-22"]["scored"] == 2
    assert by["comet-22"]["skipped"] == {"no reference (a reference-based metric)": 10}
    assert by["xcomet-xl"]["scored"] == 2
    assert by["xcomet-xl"]["skipped"] == {"no reference: its reference-free column is xcomet-xl-qe": 10}
    assert by["xcomet-xl-qe"]["scored"] == 8
    assert by["xcomet-xl-qe"]["skipped"] == {
        "has a reference: scored reference-based as xcomet-xl": 2,
        "not scored yet (job pending)": 1,
        "failed: RuntimeError: out of memory": 1,
    }
    for name in ("cometkiwi-22", "cometkiwi-23-xl"):
        assert by[name]["skipped"] == {f"not configured (set {PAPER_VARS[name]})": 12}
    for name in ("metricx-24-xl", "metricx-24-xl-qe"):  # both of its modes
        assert by[name]["skipped"] == {"not configured (set TRADLAB_METRICX_24_XL_MODEL)": 12}
    for r in report["rows"]:
        assert r["scored"] + sum(r["skipped"].values()) == 12, r
    lines = exchange_metrics.report_lines(report)
    assert "  xcomet-xl-qe (reference-free QE): scored 8; skipped 2 has a reference" in "\n".join(lines)
    assert any("cometkiwi-23-xl (paper 000 section 3): not configured" in line for line in lines)
    # the export's manifest carries the same report
    export.export_study(database, "demo", tmp_path / "out", "csv", media_dir=tmp_path / "media", include_audio=False)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["metrics"] == json.loads(json.dumps(report))


def test_the_summary_says_which_metrics_ran():
    from services.usability import analysis
    from tests.helpers.usability import generate

    result = analysis.analyze(
        generate(senders_per_cell=4, per_sender=4, receivers=10, validators=10), metric_lmm=False, pa_iterations=5
    )
    lines = ["automatic metrics (x), 3 exchanges:", "  chrf (reference-based): scored 0; skipped 3 no reference"]
    text = analysis.summary_with_metrics(result, lines)
    assert text.startswith(analysis.summary(result)) and text.endswith("\n".join(lines))


def test_the_analysis_tab_shows_the_metrics_report(demo_db, paper_env):
    """The Analysis tab's usability section says which metrics ran and what each skipped, also
    before there are enough exchanges to analyse (the demo has no surveys yet)."""
    import gradio as gr

    from services.admin import auth as admin
    from tabs import analysis
    from tabs.common import Ctx, summary_markdown

    auth = admin.AdminAuth("pw")
    with gr.Blocks() as demo:
        session = gr.Textbox()
        analysis.build(Ctx(demo_db, None, gr.Textbox(visible=False)), auth, session)
    (event,) = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "run_usability"]
    out = event.fn(auth.login("pw", None), "demo", False, None)
    text = next(v for k, v in out.items() if isinstance(v, str) and "Too few exchanges" in v)
    want = exchange_metrics.report_lines(exchange_metrics.metrics_report(demo_db, "demo", CACHE))
    # as Markdown: the header its own paragraph, each metric and note a bullet (not one run-on paragraph)
    assert text.endswith(summary_markdown("\n".join(want)))
    assert "\n- e5-cosine (reference-free QE): scored 0" in text
    assert "the offline set: none of paper 000's metrics is configured" in text
    assert "e5-cosine (reference-free QE): scored 0; skipped 12 not scored yet (job pending)" in text
    assert "xcomet-xl (paper 000 section 3): not configured (set TRADLAB_XCOMET_XL_CHECKPOINT)" in text
