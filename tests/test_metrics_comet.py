"""COMET, CometKiwi and xCOMET (services/metrics/comet.py) on tiny checkpoints built here
(tests/tiny_metric_models.py): configuration and its errors, the transformers-5 patches, and the
scores' plumbing (finite floats, one per segment, batched, deterministic, order kept, None where a
reference is needed and missing)."""

from __future__ import annotations

import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from services.metrics import comet as metrics_comet
from services.metrics import registry as metrics
from services.metrics.comet import ENV, CometMetric
from services.models.backends import BackendUnavailable
from services.models.cache import ModelCache

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_metric_models as tmm  # noqa: E402

# Lightning 2.6 under torch 2.13 warns about a torch pytree deprecation on every predict
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*LeafSpec.*:DeprecationWarning", "ignore:.*LeafSpec.*"),
    pytest.mark.usefixtures("one_torch_thread"),
]

NAMES = ("comet", "cometkiwi", "xcomet")
needs_comet = pytest.mark.skipif(not metrics_comet._package_version(), reason="unbabel-comet is not installed")

SRC = ["Hello world.", "Good morning everyone.", "Thank you very much.", "The cat ate the fish."]
HYP = ["Olá mundo.", "Bom dia a todos.", "Bom dia.", "O gato comeu o peixe."]
REF = ["Olá mundo.", "Bom dia a todos.", "Muito obrigado.", "O gato comeu o peixe."]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    if not metrics_comet._package_version():
        pytest.skip("unbabel-comet is not installed")
    with tmm.offline():
        return tmm.build_comet(tmp_path_factory.mktemp("comet"))


@pytest.fixture(scope="module")
def cache():
    return ModelCache(device="cpu")


@pytest.fixture
def clean_env(monkeypatch):
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def get(tiny, cache, name, **options):
    return metrics.get(name, checkpoint=str(tiny[name]), cache=cache, **options)


def fake_checkpoint(folder: Path, **hparams) -> Path:
    """A COMET model folder with only hparams.yaml and an empty model.ckpt (enough for get())."""
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "model.ckpt").write_bytes(b"")
    (folder / "hparams.yaml").write_text("".join(f"{k}: {v}\n" for k, v in hparams.items()))
    return folder


# -- configuration and errors (no model needed) ---------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_missing_checkpoint_names_the_variable(clean_env, name):
    with pytest.raises(BackendUnavailable) as e:
        metrics.get(name)
    text = str(e.value)
    assert ENV[name] in text and "pip install unbabel-comet" in text and "hf download" in text
    assert name not in {m["name"] for m in metrics.available()}


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_path_that_does_not_exist(clean_env, name, tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "2.2.7")
    clean_env.setenv(ENV[name], str(tmp_path / "nowhere"))
    with pytest.raises(BackendUnavailable, match=f"does not exist.*{ENV[name]}"):
        metrics.get(name)
    assert name not in {m["name"] for m in metrics.available()}


def test_without_the_package_get_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "")
    folder = fake_checkpoint(tmp_path / "m", class_identifier="regression_metric")
    with pytest.raises(BackendUnavailable, match="pip install unbabel-comet==2.2.7 --no-deps"):
        metrics.get("comet", checkpoint=str(folder))
    with pytest.raises(BackendUnavailable, match="unbabel-comet is not installed"):
        metrics_comet._import_comet()


def test_a_checkpoint_of_the_wrong_family_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "2.2.7")
    da = fake_checkpoint(tmp_path / "da", class_identifier="regression_metric", pretrained_model="xlm-roberta-large")
    kiwi = fake_checkpoint(
        tmp_path / "kiwi",
        class_identifier="unified_metric",
        input_segments="[mt, src]",
        pretrained_model="microsoft/infoxlm-large",
    )
    xc = fake_checkpoint(tmp_path / "xc", class_identifier="xcomet_metric", pretrained_model="facebook/xlm-roberta-xl")
    with pytest.raises(BackendUnavailable, match="reference-free model.*cometkiwi"):
        metrics.get("comet", checkpoint=str(kiwi))
    with pytest.raises(BackendUnavailable, match="reference-based model"):
        metrics.get("cometkiwi", checkpoint=str(da))
    with pytest.raises(BackendUnavailable, match="not 'xcomet_metric'"):
        metrics.get("xcomet", checkpoint=str(da))
    # the right ones: the folder or the .ckpt itself; version and model without loading anything
    m = metrics.get("comet", checkpoint=str(da / "checkpoints" / "model.ckpt"))
    assert (m.kind, m.version, m.pretrained_model) == (metrics.REFERENCE, "2.2.7", "xlm-roberta-large")
    fingerprint = metrics.checkpoint_fingerprint(da / "checkpoints" / "model.ckpt", da / "hparams.yaml")
    assert m.model == (
        f"{da / 'checkpoints' / 'model.ckpt'} (pretrained_model=xlm-roberta-large) weights {fingerprint}"
    )
    assert metrics.get("cometkiwi", checkpoint=str(kiwi)).kind == metrics.QE
    assert metrics.get("comet", checkpoint=str(xc)).name == "comet"  # xCOMET can serve as COMET
    assert metrics.get("xcomet", checkpoint=str(xc)).higher_is_better is True


def test_hparams_yaml_is_required(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_comet, "_package_version", lambda: "2.2.7")
    folder = fake_checkpoint(tmp_path / "m", class_identifier="regression_metric")
    (folder / "hparams.yaml").unlink()
    with pytest.raises(BackendUnavailable, match="hparams.yaml is missing"):
        metrics.get("comet", checkpoint=str(folder))


# -- the tiny checkpoints -------------------------------------------------------------------


@needs_comet
@pytest.mark.parametrize("name", NAMES)
def test_scores_are_one_finite_float_per_segment_and_deterministic(tiny, cache, name, no_network):
    m = get(tiny, cache, name)
    first = m.score(SRC, HYP, REF)
    assert len(first) == len(SRC)
    assert all(isinstance(s, float) and math.isfinite(s) for s in first)
    assert m.score(SRC, HYP, REF) == first
    assert len(set(first)) > 1  # different inputs, different scores


@needs_comet
@pytest.mark.parametrize("name", NAMES)
def test_batching_and_order(tiny, cache, name, no_network):
    whole = get(tiny, cache, name, batch_size=16).score(SRC, HYP, REF)
    one_by_one = get(tiny, cache, name, batch_size=1).score(SRC, HYP, REF)
    assert one_by_one == pytest.approx(whole, abs=1e-5)
    order = [3, 1, 0, 2]
    shuffled = get(tiny, cache, name, batch_size=2).score(
        [SRC[i] for i in order], [HYP[i] for i in order], [REF[i] for i in order]
    )
    assert shuffled == pytest.approx([whole[i] for i in order], abs=1e-5)


@needs_comet
def test_reference_based_needs_references(tiny, cache, no_network):
    comet = get(tiny, cache, "comet")
    assert comet.score(SRC, HYP) == [None] * len(SRC)
    with_refs = comet.score(SRC, HYP, REF)
    partial = comet.score(SRC, HYP, [REF[0], None, "  ", REF[3]])
    assert partial[1] is None and partial[2] is None
    assert partial[0] == pytest.approx(with_refs[0], abs=1e-5) and partial[3] == pytest.approx(with_refs[3], abs=1e-5)
    several = comet.score(SRC[:1], HYP[:1], [["", REF[0], "other"]])  # the first non-blank reference
    assert several == [pytest.approx(with_refs[0], abs=1e-5)]


@needs_comet
def test_xcomet_is_reference_free_without_references(tiny, cache, no_network):
    xcomet = get(tiny, cache, "xcomet")
    qe = xcomet.score(SRC, HYP)
    ref = xcomet.score(SRC, HYP, REF)
    assert all(isinstance(s, float) and math.isfinite(s) for s in qe + ref)
    assert qe != ref
    assert xcomet.score(SRC, HYP, [REF[0], None, REF[2], REF[3]])[1] is None  # no mixing of modes


@needs_comet
def test_cometkiwi_ignores_references(tiny, cache, no_network):
    kiwi = get(tiny, cache, "cometkiwi")
    assert kiwi.kind == metrics.QE
    assert kiwi.score(SRC, HYP) == kiwi.score(SRC, HYP, ["something else"] * len(SRC))


@needs_comet
@pytest.mark.parametrize("name", NAMES)
def test_blank_source_is_none_blank_hypothesis_is_the_floor(tiny, cache, name, no_network):
    m = get(tiny, cache, name)
    got = m.score(["", "Hello world.", "Hello world."], ["Olá mundo.", "  ", "Olá mundo."], [REF[0]] * 3)
    assert got[0] is None and got[1] == 0.0 == metrics_comet.FLOOR
    assert isinstance(got[2], float)
    assert m.score([], []) == []


@needs_comet
def test_loaded_once_patched_for_transformers_5_and_usable_from_a_thread(tiny, no_network):
    import transformers

    cache = ModelCache(device="cpu")
    m = get(tiny, cache, "xcomet")
    first = m.score(SRC, HYP, REF)
    with ThreadPoolExecutor(1) as pool:  # Gradio runs events in worker threads
        assert pool.submit(m.score, SRC, HYP, REF).result() == first
    get(tiny, cache, "xcomet").score(SRC[:1], HYP[:1], REF[:1])
    assert cache.loads == 1
    handle = m.loaded()
    if int(transformers.__version__.split(".")[0]) >= 5:
        assert handle.patched == ["tokenizer.build_inputs_with_special_tokens", "encoder.forward"]
    tok = handle.model.encoder.tokenizer  # XLM-R's pair layout: <s> A </s></s> B </s>
    assert tok.build_inputs_with_special_tokens([7, 8], [9]) == [
        tok.cls_token_id,
        7,
        8,
        tok.sep_token_id,
        tok.sep_token_id,
        9,
        tok.sep_token_id,
    ]


@needs_comet
def test_environment_configures_the_metrics(tiny, cache, clean_env, no_network):
    for name in NAMES:
        clean_env.setenv(ENV[name], str(tiny[name]))
    listed = {i["name"]: i for i in metrics.available()}
    for name in NAMES:
        info = listed[name]
        assert info["version"] == metrics_comet._package_version() == "2.2.7"
        assert info["model"].startswith(str(tiny[name] / "checkpoints" / "model.ckpt"))
        assert "pretrained_model=" in info["model"] and info["higher_is_better"] is True
    m = metrics.get("comet", cache=cache)
    assert isinstance(m, CometMetric) and m.score(SRC[:1], HYP[:1], REF[:1])[0] is not None


@needs_comet
def test_score_cached_with_comet(tiny, cache, database, no_network):
    m = get(tiny, cache, "comet")
    first = metrics.score_cached(database, m, SRC, HYP, REF)
    assert first == pytest.approx(m.score(SRC, HYP, REF), abs=1e-6)
    assert metrics.score_cached(database, m, SRC, HYP, REF) == first
