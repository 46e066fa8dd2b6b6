"""MetricX-24 (services/metrics/metricx.py) on a tiny mT5 built here (tests/tiny_metric_models.py):
the input strings, the tokenization, the regression head against an independent computation,
clipping, batching, QE mode, blanks and the configuration errors."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from services.metrics import registry as metrics
from services.metrics.metricx import (
    ENV_MAX_INPUT_LENGTH,
    ENV_MODEL,
    ENV_TOKENIZER,
    SCORE_TOKEN_ID,
    MetricX,
    encode,
    factory,
    metricx_input,
)
from services.models.backends import BackendUnavailable
from services.models.cache import ModelCache

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_metric_models as tmm  # noqa: E402

DESIGN = tmm.METRICX_DESIGN
REF = [k for k in DESIGN if k[2] is not None]
QE = [k for k in DESIGN if k[2] is None]


def clip(x: float) -> float:
    return min(25.0, max(0.0, x))


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    with tmm.offline():
        return tmm.build_metricx(tmp_path_factory.mktemp("metricx"))


@pytest.fixture(scope="module")
def cache():
    return ModelCache(device="cpu")


@pytest.fixture
def metric(tiny, cache, no_network):
    return MetricX(str(tiny["model"]), str(tiny["tokenizer"]), score_token_id=tiny["score_token_id"], cache=cache)


@pytest.fixture(scope="module")
def reference_model(tiny):
    """The tiny model and tokenizer loaded here, independently of the metric."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny["tokenizer"], local_files_only=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny["model"], local_files_only=True).eval()
    return model, tok


def independent(reference_model, score_id, text: str, max_length: int | None = None) -> float:
    """MetricX's prediction by hand: ids without the final </s>, one decoder step from <pad>,
    logits[:, 0, score_id] (unclipped)."""
    import torch

    model, tok = reference_model
    ids = tok(text, max_length=max_length, truncation=max_length is not None).input_ids
    assert ids[-1] == tok.eos_token_id
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor([ids[:-1]]),
            attention_mask=torch.ones(1, len(ids) - 1, dtype=torch.long),
            decoder_input_ids=torch.zeros((1, 1), dtype=torch.long),
        )
    return float(out.logits[0, 0, score_id])


# -- pure functions -------------------------------------------------------------------------


def test_input_strings_are_metricx24s():
    assert (
        metricx_input("Hello world.", "Olá mundo.", "Olá mundo!")
        == "source: Hello world. candidate: Olá mundo. reference: Olá mundo!"
    )
    assert metricx_input("Hello world.", "Olá mundo.") == "source: Hello world. candidate: Olá mundo."
    assert metricx_input("a {b}", "{c} d", "{reference}") == "source: a {b} candidate: {c} d reference: {reference}"
    assert "reference" not in metricx_input("Hello.", "Olá.", None)


def test_encode_truncates_then_drops_the_final_eos(tiny, reference_model):
    _, tok = reference_model
    text = metricx_input("Good morning everyone.", "Bom dia a todos.", "Bom dia a todos.")
    full = tok(text).input_ids
    assert full[-1] == tok.eos_token_id == 1
    assert encode(tok, [text]) == [full[:-1]]
    short = encode(tok, [text, "Olá."], max_input_length=8)
    assert short[0] == tok(text, max_length=8, truncation=True).input_ids[:-1]
    assert len(short[0]) == 7 and tok.eos_token_id not in short[0]
    assert short[1] == tok("Olá.").input_ids[:-1]


def test_score_token_default_is_extra_id_10_of_mt5(tiny, reference_model):
    _, tok = reference_model
    # mT5's vocabulary has 250100 tokens, <extra_id_0> last: <extra_id_10> = 250100 - 11 = 250089
    assert SCORE_TOKEN_ID == 250100 - 11
    assert tiny["score_token_id"] == tok.convert_tokens_to_ids("<extra_id_10>") == len(tok) - 11


# -- scores ---------------------------------------------------------------------------------


def test_scores_equal_metricx_computed_by_hand(metric, tiny, reference_model):
    got = metric.score([k[0] for k in REF], [k[1] for k in REF], [k[2] for k in REF])
    for key, score in zip(REF, got):
        want = independent(reference_model, tiny["score_token_id"], metricx_input(*key))
        assert score == pytest.approx(clip(want), abs=1e-4)
        assert score == pytest.approx(clip(DESIGN[key]), abs=1e-3)  # the values the model was built for
    assert all(isinstance(s, float) and math.isfinite(s) for s in got)


def test_outputs_are_clipped_to_0_25(metric):
    raw = metric.raw_scores([metricx_input(*k) for k in DESIGN])
    assert min(raw) < -2 and max(raw) > 35  # the tiny model really leaves the range
    got = metric.score([k[0] for k in REF], [k[1] for k in REF], [k[2] for k in REF])
    assert got[3] == 25.0 and got[4] == 0.0  # designed 40 and -3
    assert all(0.0 <= s <= 25.0 for s in got)


def test_qe_mode_when_references_is_none(metric, tiny, reference_model):
    got = metric.score([k[0] for k in QE], [k[1] for k in QE])
    for key, score in zip(QE, got):
        want = independent(reference_model, tiny["score_token_id"], metricx_input(key[0], key[1]))
        assert score == pytest.approx(clip(want), abs=1e-4)
    assert got == pytest.approx([2.5, 21.0, 25.0], abs=1e-3)
    # the same pair with a reference is another input, another score
    with_ref = metric.score(["Hello world."], ["Olá mundo."], ["Olá mundo."])
    assert with_ref[0] == pytest.approx(1.5, abs=1e-3) and got[0] != with_ref[0]


def test_batches_keep_the_order(tiny, cache, no_network):
    keys = REF[::-1] + REF
    args = ([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys])
    results = [
        MetricX(
            str(tiny["model"]), str(tiny["tokenizer"]), score_token_id=tiny["score_token_id"], batch_size=b, cache=cache
        ).score(*args)
        for b in (1, 3, 16)
    ]
    for r in results[1:]:
        assert r == pytest.approx(results[0], abs=1e-4)
    assert results[0] == pytest.approx([clip(DESIGN[k]) for k in keys], abs=1e-3)


def test_max_input_length_truncates(tiny, cache, reference_model, no_network):
    m = MetricX(
        str(tiny["model"]),
        str(tiny["tokenizer"]),
        score_token_id=tiny["score_token_id"],
        max_input_length=8,
        cache=cache,
    )
    key = REF[2]
    want = independent(reference_model, tiny["score_token_id"], metricx_input(*key), max_length=8)
    assert m.score([key[0]], [key[1]], [key[2]]) == [pytest.approx(clip(want), abs=1e-4)]
    assert "max 8 tokens" in m.model


def test_blanks_and_missing_references(metric):
    got = metric.score(
        ["", "Hello world.", "Hello world.", "Hello world.", "Hello world."],
        ["Olá mundo.", "", "Olá mundo.", "Olá mundo.", "Olá mundo."],
        ["Olá mundo.", "Olá mundo.", None, "  ", ["", "Olá mundo."]],
    )
    assert got[:4] == [None, 25.0, None, None]  # blank source, blank hypothesis, no reference
    assert got[4] == pytest.approx(1.5, abs=1e-3)  # several references: the first non-blank
    assert metric.score([], []) == []
    assert metric.score(["Hello world."], ["  "]) == [25.0]


def test_metric_attributes_and_one_load(metric, tiny, cache):
    assert metric.higher_is_better is False and metrics.Metric.higher_is_better is True
    assert metric.kind == metrics.REFERENCE and "LOWER IS BETTER" in metric.scale
    assert metric.version == metrics._package_version("transformers")
    assert str(tiny["model"]) in metric.model and str(tiny["tokenizer"]) in metric.model
    assert "max 1536 tokens" in metric.model and "float32" in metric.model
    info = metric.info()
    assert info["higher_is_better"] is False and info["max_input_length"] == 1536
    before = cache.loads
    metric.score(["Hello world."], ["Olá mundo."])
    metric.score(["Hello world."], ["Olá mundo."])
    assert cache.loads == before  # loaded by an earlier test, once


def test_score_cached_stores_metricx_scores(metric, database):
    args = (["Hello world.", "Thank you very much."], ["Olá mundo.", "Bom dia."], ["Olá mundo.", "Muito obrigado."])
    first = metrics.score_cached(database, metric, *args)
    assert first == pytest.approx([1.5, 18.0], abs=1e-3)
    assert metrics.score_cached(database, metric, *args) == first


# -- configuration --------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch):
    for var in (ENV_MODEL, ENV_TOKENIZER, ENV_MAX_INPUT_LENGTH):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_not_configured_names_the_variables(clean_env):
    for call in (factory, lambda: metrics.get("metricx")):
        with pytest.raises(BackendUnavailable) as e:
            call()
        assert ENV_MODEL in str(e.value) and ENV_TOKENIZER in str(e.value)
        assert "metricx-24-hybrid" in str(e.value)
    assert "metricx" not in {m["name"] for m in metrics.available()}


def test_missing_paths_are_unavailable(clean_env, tiny, tmp_path):
    with pytest.raises(BackendUnavailable, match=f"{ENV_MODEL}.*does not exist"):
        factory(model=str(tmp_path / "no-such-model"), tokenizer=str(tiny["tokenizer"]))
    with pytest.raises(BackendUnavailable, match=f"{ENV_TOKENIZER}.*does not exist"):
        factory(model=str(tiny["model"]), tokenizer=str(tmp_path / "no-such-tokenizer"))
    # MetricX's model folders hold no tokenizer: it must be named
    with pytest.raises(BackendUnavailable, match=ENV_TOKENIZER):
        factory(model=str(tiny["model"]))


def test_environment_configures_it(clean_env, tiny, cache, no_network):
    clean_env.setenv(ENV_MODEL, str(tiny["model"]))
    clean_env.setenv(ENV_TOKENIZER, str(tiny["tokenizer"]))
    clean_env.setenv(ENV_MAX_INPUT_LENGTH, "512")
    m = metrics.get("metricx", score_token_id=tiny["score_token_id"], cache=cache)
    assert isinstance(m, MetricX) and m.max_input_length == 512 and m.score_token_id == tiny["score_token_id"]
    assert m.score(["Hello world."], ["Olá mundo."]) == [pytest.approx(2.5, abs=1e-3)]
    listed = {i["name"]: i for i in metrics.available()}
    assert listed["metricx"]["higher_is_better"] is False
    assert listed["metricx"]["model"].startswith(str(tiny["model"]))
    # the tokenizer defaults to the model folder when it holds one
    assert factory(model=str(tiny["tokenizer"]), score_token_id=1).tokenizer_path == str(tiny["tokenizer"])


def test_score_token_outside_the_vocabulary_is_unavailable(tiny, no_network):
    m = MetricX(str(tiny["model"]), str(tiny["tokenizer"]), cache=ModelCache(device="cpu"))  # 250089
    with pytest.raises(BackendUnavailable, match="score_token_id 250089 is outside"):
        m.score(["Hello world."], ["Olá mundo."])
