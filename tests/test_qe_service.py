"""services.qe.service and its commands: metric orientation, per-language 'bil' translation,
reranking from candidates or a sampler, and the CLI (data mt-geneval, analyze qe-audit / qe-rerank)."""

from __future__ import annotations

import pandas as pd
import pytest

from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.qe import service as qe_service
from tests.helpers.app import run_cli


class LowerIsBetter(metrics.Metric):
    """A test double with MetricX's orientation: 0 best, 25 worst (here: character distance)."""

    name = "distance"
    kind = metrics.QE
    version = "1"
    model = "len-diff"
    higher_is_better = False
    worst = 25.0

    def _score(self, sources, hypotheses, references, contexts):
        return [min(25.0, abs(len(s) - len(h))) for s, h in zip(sources, hypotheses)]


class Length(metrics.Metric):
    name = "length"
    kind = metrics.QE
    version = "1"
    model = "len"

    def __init__(self):
        self.seen = []

    def _score(self, sources, hypotheses, references, contexts):
        self.seen.append((list(sources), list(hypotheses)))
        return [float(len(h)) for h in hypotheses]


def _pairs(**extra):
    d = pd.DataFrame(
        {
            "instance_id": ["1", "2", "3"],
            "lang": ["pt", "es", "pt"],
            "source": ["The nurse.", "The doctor.", "The judge."],
            "hyp_f": ["A enfermeira.", "La doctora.", "A juíza."],
            "hyp_m": ["O enfermeiro.", "El doctor.", "O juiz."],
        }
    )
    for k, v in extra.items():
        d[k] = v
    return d


def test_lower_is_better_metric_is_audited_as_quality():
    m = qe_service.audit_metric(LowerIsBetter())
    assert m.name == "distance (1 - x/25)" and getattr(m, "higher_is_better", True)
    assert m.score(["abcd"], ["ab"]) == [pytest.approx(1 - 2 / 25)]
    plain = Length()
    assert qe_service.audit_metric(plain) is plain

    class NoWorst(LowerIsBetter):
        worst = None

    with pytest.raises(ValueError, match="worst"):
        qe_service.audit_metric(NoWorst())


def test_bil_translates_each_language_with_its_own_mt(monkeypatch):
    asked = []

    def translator(lang):
        def translate(texts):
            asked.append((lang, list(texts)))
            return [f"[{lang}] {t}" for t in texts]

        return translate

    monkeypatch.setattr(qe_service, "context_translator", translator)
    m = Length()
    d = _pairs(context=["She works.", "He works.", "She works."])
    out = qe_service.score(d, m, context="bil")
    assert sorted(asked) == [("es", ["He works."]), ("pt", ["She works."])]  # once per language
    assert list(out["instance_id"]) == ["1", "2", "3"]  # order kept
    hyps = [h for _, hs in m.seen for h in hs]
    assert "[pt] She works. A enfermeira." in hyps and "[es] He works. La doctora." in hyps
    assert out.loc[0, "score_f"] == len("[pt] She works. A enfermeira.")


def test_context_translator_without_mt_says_what_to_set(monkeypatch):
    monkeypatch.delenv(qe_service.ENV_CONTEXT_MT, raising=False)
    with pytest.raises(BackendUnavailable, match="TRADLAB_QE_CONTEXT_MT"):
        qe_service.context_translator("it")


def test_run_audit_with_precomputed_scores_never_calls_the_metric(tmp_path):
    class Broken(Length):
        def _score(self, *a):
            raise AssertionError("called")

    d = _pairs(score_f=["0.8", "0.9", "0.7"], score_m=["0.9", "0.9", "0.8"])
    result, files = qe_service.run_audit(d, tmp_path, metric=Broken())
    assert {p.name for p in files} >= {"ratios.csv", "retention.csv", "summary.json"}
    ratio_all = result.ratios.set_index("lang").loc["pooled"]  # the three instances as one sample
    assert ratio_all["mean_ratio"] == pytest.approx((0.8 / 0.9 + 1 + 0.7 / 0.8) / 3)


def test_rerank_from_a_sampler_picks_by_the_metric():
    pairs = pd.DataFrame(
        {
            "instance_id": ["1", "2"],
            "lang": ["pt", "pt"],
            "source": ["The nurse arrived.", "The judge arrived."],
            "hyp_f": ["A enfermeira chegou.", "A juíza chegou."],
            "hyp_m": ["O enfermeiro chegou.", "O juiz chegou."],
            "gold": ["F", "M"],
        }
    )
    samples = {
        "The nurse arrived.": ["O enfermeiro chegou.", "A enfermeira chegou agora."],
        "The judge arrived.": ["A juíza chegou.", "O juiz chegou hoje."],
    }
    sampler = (lambda s, n: samples[s][:n], lambda s: samples[s][0])
    res = qe_service.run_rerank(None, Length(), pairs=pairs, sampler=sampler, n=2)
    sel = res.selected.set_index(["method", "instance_id"])["hypothesis"]
    assert sel[("greedy", "1")] == "O enfermeiro chegou."
    assert sel[("reranked", "1")] == "A enfermeira chegou agora."  # the longest wins
    t = res.table.set_index(["method", "lang"])
    assert t.loc[("greedy", "pooled"), "acc_f"] == 0.0 and t.loc[("reranked", "pooled"), "acc_f"] == 1.0
    assert t.loc[("greedy", "pooled"), "acc_m"] == 0.0 and t.loc[("reranked", "pooled"), "acc_m"] == 1.0
    with pytest.raises(ValueError, match="candidates file"):
        qe_service.run_rerank(None, Length())


def _cli(*args, env=None):
    return run_cli(*args, env=env)


def test_cli_audit_and_rerank(tmp_path):
    import os

    env = {**os.environ, "TRADLAB_DB": str(tmp_path / "t.db")}
    pairs = tmp_path / "pairs.csv"
    _pairs(gold=["F", "M", "M"], score_f=["0.8", "0.9", "0.7"], score_m=["0.9", "0.85", "0.8"]).to_csv(
        pairs, index=False
    )
    r = _cli("analyze", "qe-audit", str(pairs), "--out", str(tmp_path / "a"), "--thresholds", "0.75,0.85", env=env)
    assert r.returncode == 0, r.stderr
    assert "ratio" in r.stdout and (tmp_path / "a" / "errors.csv").exists()
    ret = pd.read_csv(tmp_path / "a" / "retention.csv")
    assert sorted(set(ret["threshold"])) == [0.75, 0.85]
    r = _cli("analyze", "qe-audit", str(pairs), "--out", str(tmp_path / "b"), "--thresholds", "x", env=env)
    assert r.returncode == 2 and "--thresholds" in r.stderr
    r = _cli("analyze", "qe-audit", str(pairs), "--out", str(tmp_path / "b"), "--metric", "nope", "--no-cache", env=env)
    assert r.returncode == 0  # precomputed scores: the metric is not needed
    cands = tmp_path / "cands.csv"
    pd.DataFrame(
        {
            "instance_id": ["1", "1"],
            "lang": ["pt", "pt"],
            "source": ["The nurse.", "The nurse."],
            "gold": ["F", "F"],
            "hypothesis": ["O enfermeiro.", "A enfermeira."],
            "is_greedy": ["1", "0"],
        }
    ).to_csv(cands, index=False)
    r = _cli(
        "analyze",
        "qe-rerank",
        str(cands),
        "--pairs",
        str(pairs),
        "--metric",
        "chrf",
        "--out",
        str(tmp_path / "r"),
        "--no-cache",
        env=env,
    )
    assert r.returncode == 2 and "no score" in (r.stderr + r.stdout).lower() or r.returncode == 0


def test_cli_mt_geneval_needs_its_files(tmp_path):
    r = _cli("data", "mt-geneval", "--root", str(tmp_path), "--lang", "pt", "--out", str(tmp_path / "p.csv"))
    assert r.returncode == 2 and "geneval-context" in r.stderr


def test_rerank_samples_from_a_local_transformers_model(tmp_path, no_network):
    """The --mt-model path: greedy + n epsilon samples per source from a tiny Marian model the
    test trains, reranked by a test metric; the greedy output is the trained translation."""
    from tests import tiny_models as tm

    model = tm.build_marian(tmp_path / "marian", steps=150)
    (src, tgt), (src2, tgt2) = tm.PAIRS[0], tm.PAIRS[1]
    pairs = pd.DataFrame(
        {
            "instance_id": ["1", "2"],
            "lang": ["pt", "pt"],
            "source": [src, src2],
            "hyp_f": [tgt, tgt2],
            "hyp_m": [tgt + " x", tgt2 + " x"],
            "gold": ["F", "M"],
        }
    )
    sampler = qe_service.mt_sampler(str(model), epsilon=0.02, seed=1)
    res = qe_service.run_rerank(None, Length(), pairs=pairs, sampler=sampler, n=5, out_dir=tmp_path / "out")
    sel = res.selected
    assert set(sel["method"]) == {"greedy", "reranked"} and len(sel) == 4
    assert (sel[sel["method"] == "reranked"]["n_candidates"] == 5).all()
    assert (tmp_path / "out" / "accuracy.csv").exists() and (tmp_path / "out" / "selected.csv").exists()
    greedy = sel[sel["method"] == "greedy"].set_index("instance_id")["hypothesis"]
    assert greedy["1"] == tgt  # the tiny model learnt its pairs
