"""Issue 20, points 1 and 2: MetricX-23 and MetricX-24 each read their own input format, and
several checkpoints of one metric family run side by side under their own names, their scores
stored with the model (weights) that produced them.

The MetricX inputs are checked against the reference implementation's preprocessing, restated
below from google-research/metricx (repository google-research/metricx, files
metricx23/predict.py and metricx24/predict.py, function get_dataset(), its _make_input,
_tokenize and _remove_eos; metricx23/models.py MT5ForRegression.forward for the head), on tiny
mT5 models built here (tests/tiny_metric_models.py) and copied under the real models' names."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from services.metrics import comet as metrics_comet
from services.metrics import exchange as exchange_metrics
from services.metrics import metricx as metrics_metricx
from services.metrics import registry as metrics
from services.metrics.metricx import metricx_input
from services.models.backends import BackendUnavailable
from services.models.cache import ModelCache
from storage import metric_cache
from storage.usability import exchange_metrics as metric_store
from storage.usability import exchanges

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_metric_models as tmm  # noqa: E402

SRC = ["Hello world.", "Thank you very much.", "Good morning everyone."]
HYP = ["Olá mundo.", "Bom dia.", "O gato comeu o peixe."]
REF = ["Olá mundo!", "Muito obrigado.", "Bom dia a todos."]


# -- the reference implementation's preprocessing, restated -------------------------------------
# google-research/metricx  metricx23/predict.py  get_dataset() -> _make_input(example):
#     if is_qe:  example["input"] = "candidate: " + example["hypothesis"] + " source: " + example["source"]
#     else:      example["input"] = "candidate: " + example["hypothesis"] + " reference: " + example["reference"]
# google-research/metricx  metricx24/predict.py  get_dataset() -> _make_input(example):
#     if is_qe:  example["input"] = "source: " + example["source"] + " candidate: " + example["hypothesis"]
#     else:      example["input"] = ("source: " + example["source"] + " candidate: " + example["hypothesis"]
#                                    + " reference: " + example["reference"])
# both: _tokenize = tokenizer(example["input"], max_length=max_input_length, truncation=True,
#       padding=False); _remove_eos drops the last id; metricx23/models.py (and metricx24's):
#       one decoder step from id 0, predictions = lm_logits[:, 0, 250089], torch.clamp(.., 0, 25).
# README of google-research/metricx: max_input_length 1024 for MetricX-23, 1536 for MetricX-24.


def reference_input(version: str, example: dict, is_qe: bool) -> str:
    """_make_input of metricx{23,24}/predict.py, as quoted above."""
    if version == "23":
        if is_qe:
            return "candidate: " + example["hypothesis"] + " source: " + example["source"]
        return "candidate: " + example["hypothesis"] + " reference: " + example["reference"]
    if is_qe:
        return "source: " + example["source"] + " candidate: " + example["hypothesis"]
    return (
        "source: " + example["source"] + " candidate: " + example["hypothesis"] + " reference: " + example["reference"]
    )


def reference_prediction(model_dir, tok_dir, score_id: int, text: str, max_input_length: int) -> float:
    """_tokenize, _remove_eos and MT5ForRegression's head, on a model loaded independently."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tok_dir, local_files_only=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir, local_files_only=True).eval()
    ids = tok(text, max_length=max_input_length, truncation=True, padding=False).input_ids[:-1]
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            decoder_input_ids=torch.zeros((1, 1), dtype=torch.long),
        )
    return float(torch.clamp(out.logits[0, 0, score_id], 0, 25))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    with tmm.offline():
        return tmm.build_metricx(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def cache():
    return ModelCache(device="cpu")


@pytest.fixture
def clean_env(monkeypatch):
    """No MetricX / COMET variable of the machine leaks into these tests."""
    import os

    for var in list(os.environ):
        if var.startswith(("TRADLAB_METRICX", "TRADLAB_COMET", "TRADLAB_XCOMET")):
            monkeypatch.delenv(var)
    return monkeypatch


def checkpoint(tiny, folder: Path, **config) -> Path:
    """The tiny model copied to `folder` (named like a real checkpoint), config.json updated."""
    shutil.copytree(tiny["model"], folder)
    if config:
        data = json.loads((folder / "config.json").read_text())
        data.update(config)
        (folder / "config.json").write_text(json.dumps(data))
    return folder


def get(name, tiny, model, cache, **options):
    return metrics.get(
        name,
        model=str(model),
        tokenizer=str(tiny["tokenizer"]),
        score_token_id=tiny["score_token_id"],
        cache=cache,
        **options,
    )


def examples(with_ref: bool) -> list[dict]:
    return [{"source": s, "hypothesis": h, **({"reference": r} if with_ref else {})} for s, h, r in zip(SRC, HYP, REF)]


# -- point 1: each MetricX version reads its own input ------------------------------------------


def test_input_strings_equal_the_reference_implementations():
    for ex in examples(with_ref=True):
        s, h, r = ex["source"], ex["hypothesis"], ex["reference"]
        assert metricx_input(s, h, None, "23-qe") == reference_input("23", ex, is_qe=True)
        assert metricx_input(s, h, r, "23-qe") == reference_input("23", ex, is_qe=True)  # QE model: no reference
        assert metricx_input(s, h, r, "23") == reference_input("23", ex, is_qe=False)
        assert metricx_input(s, h, None, "24") == reference_input("24", ex, is_qe=True)
        assert metricx_input(s, h, r, "24") == reference_input("24", ex, is_qe=False)
        assert metricx_input(s, h, r) == reference_input("24", ex, is_qe=False)  # the old default
    with pytest.raises(ValueError, match="need a reference"):
        metricx_input("a", "b", None, "23")


def test_metricx23_qe_checkpoint_scores_as_the_reference_implementation(tiny, tmp_path, cache, clean_env, no_network):
    """Paper 003 (3.1, A.1) uses google/metricx-23-qe-{large,xl}-v2p0: detected from the folder's
    name, scored with MetricX-23's QE input, not MetricX-24's."""
    folder = checkpoint(tiny, tmp_path / "metricx-23-qe-large-v2p0")
    m = get("metricx", tiny, folder, cache)
    got = m.score(SRC, HYP)
    want = [
        reference_prediction(
            folder, tiny["tokenizer"], tiny["score_token_id"], reference_input("23", ex, is_qe=True), 1024
        )
        for ex in examples(False)
    ]
    assert got == pytest.approx(want, abs=1e-4)
    assert (m.metricx_version, m.kind, m.max_input_length) == ("23-qe", metrics.QE, 1024)
    assert "MetricX-23 QE" in m.model and "candidate: .. source: .." in m.model
    as_24 = [
        reference_prediction(
            folder, tiny["tokenizer"], tiny["score_token_id"], reference_input("24", ex, is_qe=True), 1536
        )
        for ex in examples(False)
    ]
    assert got != pytest.approx(as_24, abs=1e-3)  # the formats really score differently
    assert m.score(SRC, HYP, REF) == got  # a QE model ignores references
    # the named checkpoint of the paper, configured by its own variables, is the same metric
    clean_env.setenv("TRADLAB_METRICX_23_QE_L_MODEL", str(folder))
    clean_env.setenv("TRADLAB_METRICX_23_QE_L_TOKENIZER", str(tiny["tokenizer"]))
    named = metrics.get("metricx-23-qe-l", score_token_id=tiny["score_token_id"], cache=cache)
    assert named.name == "metricx-23-qe-l" and named.score(SRC, HYP) == pytest.approx(want, abs=1e-4)


def test_metricx23_reference_checkpoint_reads_candidate_and_reference(tiny, tmp_path, cache, clean_env, no_network):
    folder = checkpoint(tiny, tmp_path / "metricx-23-large-v2p0")
    m = get("metricx", tiny, folder, cache)
    assert (m.metricx_version, m.kind) == ("23", metrics.REFERENCE)
    want = [
        reference_prediction(
            folder, tiny["tokenizer"], tiny["score_token_id"], reference_input("23", ex, is_qe=False), 1024
        )
        for ex in examples(True)
    ]
    assert m.score(SRC, HYP, REF) == pytest.approx(want, abs=1e-4)
    assert m.score(SRC, HYP) == [None] * len(SRC)  # a MetricX-23 reference model has no QE mode


def test_metricx24_checkpoint_keeps_its_format(tiny, tmp_path, cache, clean_env, no_network):
    folder = checkpoint(tiny, tmp_path / "metricx-24-hybrid-xl-v2p6")
    clean_env.setenv("TRADLAB_METRICX_24_XL_MODEL", str(folder))
    clean_env.setenv("TRADLAB_METRICX_24_XL_TOKENIZER", str(tiny["tokenizer"]))
    m = metrics.get("metricx-24-xl", score_token_id=tiny["score_token_id"], cache=cache)
    assert (m.metricx_version, m.kind, m.max_input_length) == ("24", metrics.REFERENCE, 1536)
    for with_ref in (True, False):
        want = [
            reference_prediction(
                folder, tiny["tokenizer"], tiny["score_token_id"], reference_input("24", ex, is_qe=not with_ref), 1536
            )
            for ex in examples(with_ref)
        ]
        assert m.score(SRC, HYP, REF if with_ref else None) == pytest.approx(want, abs=1e-4)


def test_version_read_from_the_checkpoint_config(tiny, tmp_path, cache, clean_env, no_network):
    by_path = checkpoint(tiny, tmp_path / "a", _name_or_path="google/metricx-23-qe-xl-v2p0")
    assert get("metricx", tiny, by_path, cache).metricx_version == "23-qe"
    by_key = checkpoint(tiny, tmp_path / "b", metricx_version="23")
    assert get("metricx", tiny, by_key, cache).metricx_version == "23"
    # a hub-cache snapshot: the repository's name two levels up
    snap = checkpoint(tiny, tmp_path / "models--google--metricx-23-qe-large-v2p0" / "snapshots" / "0123abc")
    assert get("metricx", tiny, snap, cache).metricx_version == "23-qe"
    # nothing says: named explicitly, or MetricX-24 as before (said so in the model string)
    plain = checkpoint(tiny, tmp_path / "plain")
    assert get("metricx", tiny, plain, cache, metricx_version="23-qe").metricx_version == "23-qe"
    default = get("metricx", tiny, plain, cache)
    assert default.metricx_version == "24" and "assumed" in default.model
    clean_env.setenv("TRADLAB_METRICX_VERSION", "23-qe")
    assert get("metricx", tiny, plain, cache).metricx_version == "23-qe"


def test_a_named_version_the_checkpoint_contradicts_is_an_error(tiny, tmp_path, cache, clean_env, no_network):
    v23 = checkpoint(tiny, tmp_path / "metricx-23-qe-large-v2p0")
    v24 = checkpoint(tiny, tmp_path / "m24", _name_or_path="google/metricx-24-hybrid-large-v2p6")
    with pytest.raises(
        metrics_metricx.VersionMismatch,
        match=r"configured as MetricX-24.*metricx-23-qe-large-v2p0 is a "
        r"MetricX-23 QE checkpoint.*scores would be wrong",
    ):
        get("metricx", tiny, v23, cache, metricx_version="24")
    with pytest.raises(
        metrics_metricx.VersionMismatch,
        match=r"'metricx-23-qe-l' is configured as MetricX-23 QE.*MetricX-24"
        r".*_name_or_path.*TRADLAB_METRICX_23_QE_L_MODEL",
    ):
        get("metricx-23-qe-l", tiny, v24, cache)
    clean_env.setenv("TRADLAB_METRICX_VERSION", "24")
    with pytest.raises(metrics_metricx.VersionMismatch):
        get("metricx", tiny, v23, cache)
    # an unavailable metric, with the reason, not a silently wrong one
    clean_env.setenv("TRADLAB_METRICX_MODEL", str(v23))
    clean_env.setenv("TRADLAB_METRICX_TOKENIZER", str(tiny["tokenizer"]))
    assert "metricx" not in {i["name"] for i in metrics.available()}
    with pytest.raises(ValueError, match="contradicts"):
        get("metricx-23-qe-l", tiny, v23, cache, metricx_version="24")


# -- point 2: several checkpoints of one family, each under its name ----------------------------


def test_the_papers_checkpoints_have_names_and_the_old_names_stay():
    want = {
        "comet-22": "Unbabel/wmt22-comet-da",
        "cometkiwi-22": "Unbabel/wmt22-cometkiwi-da",
        "cometkiwi-23-xl": "Unbabel/wmt23-cometkiwi-da-xl",
        "cometkiwi-23-xxl": "Unbabel/wmt23-cometkiwi-da-xxl",
        "xcomet-xl": "Unbabel/XCOMET-XL",
        "xcomet-xxl": "Unbabel/XCOMET-XXL",
        "metricx-23-qe-l": "google/metricx-23-qe-large-v2p0",
        "metricx-23-qe-xl": "google/metricx-23-qe-xl-v2p0",
        "metricx-24-xl": "google/metricx-24-hybrid-xl-v2p6",
    }
    names = metrics.names()
    for name, hub in want.items():
        assert name in names and metrics.CHECKPOINTS[name].hub == hub and metrics.CHECKPOINTS[name].paper
    assert {"comet", "cometkiwi", "xcomet", "metricx"} <= set(names)  # back-compatible aliases
    assert metrics.env_var("cometkiwi-23-xl", "CHECKPOINT") == "TRADLAB_COMETKIWI_23_XL_CHECKPOINT"


def fake_comet(folder: Path, weights: bytes = b"", **hparams) -> Path:
    """A COMET model folder with hparams.yaml and a stand-in model.ckpt (enough for get())."""
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "model.ckpt").write_bytes(weights)
    (folder / "hparams.yaml").write_text("".join(f"{k}: {v}\n" for k, v in hparams.items()))
    return folder


KIWI = dict(class_identifier="unified_metric", input_segments="[mt, src]")


def test_two_cometkiwi_checkpoints_side_by_side(tmp_path, clean_env, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "2.2.7")
    k22 = fake_comet(tmp_path / "k22", b"22", pretrained_model="microsoft/infoxlm-large", **KIWI)
    k23 = fake_comet(tmp_path / "k23", b"23xl", pretrained_model="facebook/xlm-roberta-xl", **KIWI)
    clean_env.setenv("TRADLAB_COMETKIWI_22_CHECKPOINT", str(k22))
    clean_env.setenv("TRADLAB_COMETKIWI_23_XL_CHECKPOINT", str(k23))
    clean_env.setenv("TRADLAB_COMETKIWI_CHECKPOINT", str(k22))  # the old name still works
    listed = {i["name"]: i for i in metrics.available()}
    assert {"cometkiwi-22", "cometkiwi-23-xl", "cometkiwi"} <= set(listed)
    assert listed["cometkiwi-22"]["model"].startswith(str(k22 / "checkpoints" / "model.ckpt"))
    assert listed["cometkiwi-23-xl"]["model"].startswith(str(k23 / "checkpoints" / "model.ckpt"))
    assert listed["cometkiwi-22"]["fingerprint"] != listed["cometkiwi-23-xl"]["fingerprint"]
    assert all(listed[n]["kind"] == metrics.QE for n in ("cometkiwi-22", "cometkiwi-23-xl", "cometkiwi"))
    # each name says what to set when it is not configured
    clean_env.delenv("TRADLAB_COMETKIWI_23_XL_CHECKPOINT")
    with pytest.raises(BackendUnavailable, match="TRADLAB_COMETKIWI_23_XL_CHECKPOINT.*wmt23-cometkiwi-da-xl"):
        metrics.get("cometkiwi-23-xl")


def test_a_named_comet_checkpoint_refuses_another_papers_model(tmp_path, clean_env, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "2.2.7")
    k22 = fake_comet(tmp_path / "k22", pretrained_model="microsoft/infoxlm-large", **KIWI)
    with pytest.raises(
        BackendUnavailable,
        match=r"'cometkiwi-23-xl'.*microsoft/infoxlm-large.*"
        r"Unbabel/wmt22-cometkiwi-da",
    ):
        metrics.get("cometkiwi-23-xl", checkpoint=str(k22))
    local = fake_comet(tmp_path / "local", pretrained_model=str(tmp_path / "my-encoder"), **KIWI)
    assert metrics.get("cometkiwi-23-xl", checkpoint=str(local)).name == "cometkiwi-23-xl"  # not judged


def test_a_comet_checkpoint_replaced_in_place_is_another_model(tmp_path, clean_env, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "2.2.7")
    folder = fake_comet(tmp_path / "kiwi", b"old weights", pretrained_model="microsoft/infoxlm-large", **KIWI)
    before = metrics.get("cometkiwi-22", checkpoint=str(folder)).model
    (folder / "checkpoints" / "model.ckpt").write_bytes(b"new weights")
    assert metrics.get("cometkiwi-22", checkpoint=str(folder)).model != before


def _perturb(model_dir: Path, score_id: int) -> None:
    """Other weights at the same path: the score row of lm_head changed."""
    from safetensors.torch import load_file, save_file

    path = model_dir / "model.safetensors"
    tensors = load_file(path)
    tensors["lm_head.weight"][score_id] *= 0.5
    save_file(tensors, path, metadata={"format": "pt"})


def test_scores_of_a_replaced_checkpoint_are_not_reused(tiny, tmp_path, database, clean_env, no_network):
    folder = checkpoint(tiny, tmp_path / "metricx-24-hybrid-xl-v2p6")
    args = (SRC, HYP, REF)
    old = get("metricx", tiny, folder, ModelCache(device="cpu"))
    first = metrics.score_cached(database, old, *args)
    _perturb(folder, tiny["score_token_id"])
    new = get("metricx", tiny, folder, ModelCache(device="cpu"))
    fresh = new.score(*args)
    assert fresh != pytest.approx(first, abs=1e-3)
    assert metrics.score_cached(database, new, *args) == pytest.approx(fresh, abs=1e-6)  # not the old ones
    assert new.model != old.model and new.fingerprint != old.fingerprint
    assert metric_cache.count(database, "metricx") == 2 * len(SRC)  # both models' scores kept apart
    # one model cache: the replaced weights are loaded afresh, not served from memory
    shared = ModelCache(device="cpu")
    get("metricx-24-xl", tiny, folder, shared).score(*args)
    _perturb(folder, tiny["score_token_id"])
    assert get("metricx-24-xl", tiny, folder, shared).score(*args) != pytest.approx(fresh, abs=1e-3)


def test_exchange_scores_name_their_checkpoint_and_a_change_is_found(tiny, tmp_path, demo_db, clean_env, no_network):
    """Two MetricX checkpoints stored side by side per exchange; replacing one mid-study is found
    (mixed_models, stale_exchanges) and repaired (rescore_stale), never silently mixed."""
    db = demo_db
    l23 = checkpoint(tiny, tmp_path / "metricx-23-qe-large-v2p0")
    xl23 = checkpoint(tiny, tmp_path / "metricx-23-qe-xl-v2p0")
    _perturb(xl23, tiny["score_token_id"])
    for name, folder in (("metricx-23-qe-l", l23), ("metricx-23-qe-xl", xl23)):
        clean_env.setenv(metrics.env_var(name, "MODEL"), str(folder))
        clean_env.setenv(metrics.env_var(name, "TOKENIZER"), str(tiny["tokenizer"]))
    real_get = metrics.get
    clean_env.setattr(
        metrics,
        "get",
        lambda name, **o: real_get(
            name, **({"score_token_id": tiny["score_token_id"]} if name.startswith("metricx") else {}), **o
        ),
    )
    cache = ModelCache(device="cpu")
    names = ["metricx-23-qe-l", "metricx-23-qe-xl"]
    ids = [e["id"] for e in exchanges.translated_exchanges(db, "demo")][:3]
    for eid in ids[:2]:
        exchange_metrics.score_exchange(db, eid, cache, names=names)
    rows = [r for r in metric_store.exchange_metric_rows(db, "demo") if r["metric"] in names]
    assert len(rows) == 4
    by = {(r["exchange_id"], r["metric"]): r for r in rows}
    assert "metricx-23-qe-large-v2p0" in by[ids[0], "metricx-23-qe-l"]["model"]
    assert "metricx-23-qe-xl-v2p0" in by[ids[0], "metricx-23-qe-xl"]["model"]
    assert by[ids[0], "metricx-23-qe-l"]["score"] != pytest.approx(by[ids[0], "metricx-23-qe-xl"]["score"])
    assert exchange_metrics.mixed_models(db, "demo") == {}
    # the XL checkpoint is replaced in place; the third exchange is scored with the new weights
    _perturb(xl23, tiny["score_token_id"])
    exchange_metrics.score_exchange(db, ids[2], cache, names=names)
    assert set(exchange_metrics.mixed_models(db, "demo")) == {"metricx-23-qe-xl"}
    assert exchange_metrics.stale_exchanges(db, "demo", cache, names) == {"metricx-23-qe-xl": sorted(ids[:2])}
    assert exchange_metrics.rescore_stale(db, "demo", cache, names) == {"metricx-23-qe-xl": 2}
    assert exchange_metrics.mixed_models(db, "demo") == {}
    assert exchange_metrics.stale_exchanges(db, "demo", cache, names) == {}
