"""The metric registry (services.metrics.registry) and its score cache (storage.metric_cache)."""

from __future__ import annotations

import pytest
import sacrebleu

from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.models.cache import ModelCache
from storage import metric_cache

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

SOURCES = [
    "The patient should take two tablets a day with water.",
    "Where is the nearest pharmacy?",
    "I have had a headache since yesterday.",
]
FAITHFUL = [
    "O paciente deve tomar dois comprimidos por dia com água.",
    "Onde fica a farmácia mais próxima?",
    "Estou com dor de cabeça desde ontem.",
]
UNRELATED = [
    "O futebol é o esporte mais popular do Brasil.",
    "Amanhã vai chover muito na cidade.",
    "Meu gato gosta de dormir no sofá.",
]
REFS = ["O paciente deve tomar dois comprimidos por dia, com água.", "Onde é a farmácia mais próxima?", None]


@pytest.fixture(scope="module")
def model_cache():
    return ModelCache(device="cpu")


# -- registry --------------------------------------------------------------------------------


def test_available_lists_the_offline_metrics_with_versions():
    info = {m["name"]: m for m in metrics.available()}
    assert {"e5-cosine", "chrf", "bleu", "backtranslation-chrf"} <= set(info)
    assert info["e5-cosine"]["kind"] == metrics.QE == info["backtranslation-chrf"]["kind"]
    assert info["chrf"]["kind"] == metrics.REFERENCE == info["bleu"]["kind"]
    assert info["chrf"]["version"] == sacrebleu.__version__
    assert "multilingual-e5-small" in info["e5-cosine"]["model"]
    assert all(m["version"] and m["model"] for m in info.values())


def test_unknown_metric_names_the_known_ones():
    with pytest.raises(KeyError, match="e5-cosine.*chrf.*bleu"):
        metrics.get("no-such-metric")


@pytest.mark.parametrize(
    "name,hint",
    [
        ("comet", "pip install unbabel-comet"),
        ("CometKiwi", "pip install unbabel-comet"),
        ("metricx", "metricx"),
        ("gemba-da", "TRADLAB_GEMBA_MODEL"),
    ],
)
def test_planned_metrics_say_what_to_install(name, hint):
    with pytest.raises(BackendUnavailable, match=hint):
        metrics.get(name)


def test_register_is_the_extension_point():
    class Fake(metrics.Metric):
        name, kind, version, model = "cometkiwi", metrics.QE, "0", "fake"

        def __init__(self, **_):
            pass

        def _score(self, sources, hypotheses, references, contexts):
            return [1.0] * len(sources)

    old = metrics._FACTORIES.copy()
    try:
        metrics.register("cometkiwi", Fake)
        assert metrics.get("cometkiwi").score(["a"], ["b"]) == [1.0]
    finally:
        metrics._FACTORIES.clear()
        metrics._FACTORIES.update(old)
    with pytest.raises(BackendUnavailable):
        metrics.get("cometkiwi")


def test_mismatched_lengths_and_context_are_rejected():
    with pytest.raises(ValueError, match="2 sources but 1 hypotheses"):
        metrics.get("chrf").score(["a", "b"], ["a"], ["a", "b"])
    with pytest.raises(ValueError, match="context"):
        metrics.get("chrf").score(["a"], ["a"], ["a"], contexts=["earlier sentence"])
    assert metrics.get("chrf").score([], [], []) == []


# -- the metrics -----------------------------------------------------------------------------


def test_e5_cosine_ranks_a_translation_above_an_unrelated_sentence(model_cache):
    e5 = metrics.get("e5-cosine", cache=model_cache)
    good = e5.score(SOURCES, FAITHFUL)
    bad = e5.score(SOURCES, UNRELATED)
    assert all(g > b for g, b in zip(good, bad)), (good, bad)
    assert all(0.5 < s <= 1.0 for s in good + bad)
    assert e5.score(["", "Hello."], ["Olá.", ""]) == [None, 0.0]
    e5.score(SOURCES[:1], FAITHFUL[:1])
    assert model_cache.loads == 1  # loaded once, through the cache


def test_chrf_and_bleu_equal_sacrebleu():
    hyps = FAITHFUL[:2] + [FAITHFUL[2]]
    chrf = metrics.get("chrf").score(SOURCES, hyps, REFS)
    bleu = metrics.get("bleu").score(SOURCES, hyps, REFS)
    for i in range(2):
        assert chrf[i] == sacrebleu.sentence_chrf(hyps[i], [REFS[i]]).score
        assert bleu[i] == sacrebleu.sentence_bleu(hyps[i], [REFS[i]]).score
    assert chrf[2] is None and bleu[2] is None  # no reference
    assert metrics.get("chrf").score(SOURCES, hyps) == [None] * 3
    # several references per segment
    multi = metrics.get("bleu").score(["s"], [hyps[0]], [[REFS[0], FAITHFUL[0]]])
    assert multi == [sacrebleu.sentence_bleu(hyps[0], [REFS[0], FAITHFUL[0]]).score]
    assert multi[0] == pytest.approx(100.0)


def test_backtranslation_chrf_separates_faithful_from_unrelated(model_cache):
    bt = metrics.get("backtranslation-chrf", cache=model_cache)
    good = bt.score(SOURCES, FAITHFUL)
    bad = bt.score(SOURCES, UNRELATED)
    assert min(good) > 60, good
    assert max(bad) < 30, bad
    assert bt.score([""], ["Olá."]) == [None]


# -- the storage cache -----------------------------------------------------------------------


class Counting(metrics.Metric):
    """chrF with a call counter, and a version/model that the test can change."""

    def __init__(self, name="chrf", version=None, model=None):
        inner = metrics.get("chrf")
        self.inner, self.name, self.kind = inner, name, inner.kind
        self.version, self.model = version or inner.version, model or inner.model
        self.calls: list[int] = []

    def _score(self, sources, hypotheses, references, contexts):
        self.calls.append(len(sources))
        return self.inner.score(sources, hypotheses, references)


def test_score_cached_computes_once_and_returns_identical_numbers(database):
    m = Counting()
    first = metrics.score_cached(database, m, SOURCES, FAITHFUL, REFS)
    assert m.calls == [3]
    assert first == metrics.get("chrf").score(SOURCES, FAITHFUL, REFS)
    assert None in first  # one pair has no reference
    again = metrics.score_cached(database, m, SOURCES, FAITHFUL, REFS)
    # scores are not recomputed; a None is not stored (an LLM judge's failure is asked again)
    assert again == first and m.calls == [3, 1]
    assert metric_cache.count(database, "chrf") == 2
    # only the misses are computed, each distinct input once
    mixed = metrics.score_cached(
        database, m, SOURCES + [SOURCES[0]] * 2, FAITHFUL + [UNRELATED[0]] * 2, REFS + [REFS[0]] * 2
    )
    assert m.calls == [3, 1, 2]
    assert mixed[:3] == first and mixed[3] == mixed[4] < first[0]


def test_score_cache_is_keyed_by_metric_version_and_model(database):
    base = Counting()
    metrics.score_cached(database, base, SOURCES, FAITHFUL, REFS)
    for other in (Counting(version="9.9"), Counting(model="chrF3"), Counting(name="other-metric")):
        metrics.score_cached(database, other, SOURCES, FAITHFUL, REFS)
        assert other.calls == [3]  # never reads another's rows
    # a different metric on the same inputs gets its own numbers
    bleu = metrics.score_cached(database, "bleu", SOURCES, FAITHFUL, REFS)
    assert bleu == metrics.get("bleu").score(SOURCES, FAITHFUL, REFS)
    assert bleu != metrics.score_cached(database, base, SOURCES, FAITHFUL, REFS)
    # the reference is part of a reference-based key
    changed = metrics.score_cached(database, base, SOURCES[:1], FAITHFUL[:1], [FAITHFUL[0]])
    assert changed == [100.0] and base.calls[-1] == 1


def test_qe_keys_ignore_the_reference():
    e5 = metrics.get("e5-cosine")
    chrf = metrics.get("chrf")
    assert metrics.input_hash(e5, "s", "h", "r1") == metrics.input_hash(e5, "s", "h", "r2")
    assert metrics.input_hash(chrf, "s", "h", "r1") != metrics.input_hash(chrf, "s", "h", "r2")
    assert metrics.input_hash(e5, "s", "h", None, "ctx") != metrics.input_hash(e5, "s", "h")


def test_score_cached_e5_uses_the_model_cache(database, model_cache):
    e5 = metrics.get("e5-cosine", cache=model_cache)
    first = metrics.score_cached(database, e5, SOURCES, FAITHFUL)
    assert first == pytest.approx(e5.score(SOURCES, FAITHFUL), abs=1e-6)
    assert metrics.score_cached(database, "e5-cosine", SOURCES, FAITHFUL) == first  # read from the table
    assert metric_cache.count(database, "e5-cosine") == 3


def test_metric_cache_sql_round_trip(database):
    assert metric_cache.get_many(database, "m", "1", "x", []) == {}
    hashes = [f"{i:064x}" for i in range(1200)]  # more than one IN (...) chunk
    assert metric_cache.put_many(database, "m", "1", "x", {h: i / 7 for i, h in enumerate(hashes)}) == 1200
    got = metric_cache.get_many(database, "m", "1", "x", hashes + ["missing"])
    assert len(got) == 1200 and got[hashes[700]] == 700 / 7 and "missing" not in got
    assert metric_cache.get_many(database, "m", "2", "x", hashes) == {}
    assert metric_cache.clear(database, "m") == 1200 and metric_cache.count(database) == 0
