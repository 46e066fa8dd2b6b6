"""qe_service passes each candidate's language to a judge that names the languages in its prompt
(GEMBA-DA, paper 003): reranking through the app / CLI path (run_rerank), with and without the
score cache, and a lower-is-better wrapper (QualityOriented) that keeps the judge per-language."""

from __future__ import annotations

import pandas as pd
import pytest

from services.metrics import registry as metrics  # noqa: F401  (metrics registers metrics_gemba)
from services.metrics.gemba import GembaDA
from services.qe import service as qe_service

CANDIDATES = pd.DataFrame(
    [
        (
            "pt",
            "1",
            "The doctor arrived today.",
            "F",
            "O médico chegou hoje.",
            1,
            "A médica chegou hoje.",
            "O médico chegou hoje.",
        ),
        (
            "pt",
            "1",
            "The doctor arrived today.",
            "F",
            "A médica chegou hoje.",
            0,
            "A médica chegou hoje.",
            "O médico chegou hoje.",
        ),
        (
            "es",
            "1",
            "The doctor arrived today.",
            "F",
            "El doctor llegó hoy.",
            1,
            "La doctora llegó hoy.",
            "El doctor llegó hoy.",
        ),
        (
            "es",
            "1",
            "The doctor arrived today.",
            "F",
            "La doctora llegó hoy mismo.",
            0,
            "La doctora llegó hoy.",
            "El doctor llegó hoy.",
        ),
        (
            "es",
            "1",
            "The doctor arrived today.",
            "F",
            "El doctor llegó hoy mismo.",
            0,
            "La doctora llegó hoy.",
            "El doctor llegó hoy.",
        ),
    ],
    columns=["lang", "instance_id", "source", "gold", "hypothesis", "is_greedy", "ref_f", "ref_m"],
)


@pytest.fixture
def asked(monkeypatch):
    """GembaDA.ask replaced: records every prompt; a feminine hypothesis scores 90, others 10."""
    prompts: list[str] = []

    def ask(self, ps):
        prompts.extend(ps)
        return ["90" if ("médica" in p or "doctora" in p) else "10" for p in ps]

    monkeypatch.setattr(GembaDA, "ask", ask)
    return prompts


def _check(prompts):
    es = [p for p in prompts if "llegó" in p]
    pt = [p for p in prompts if "chegou" in p]
    assert len(es) == 2 and len(pt) == 1
    assert all("from English to Spanish" in p and "Spanish translation:" in p for p in es)
    assert all("from English to Portuguese" in p for p in pt)


def test_run_rerank_asks_a_gemba_judge_in_each_candidates_language(asked):
    judge = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1")
    res = qe_service.run_rerank(CANDIDATES, judge)
    _check(asked)
    reranked = res.selected[res.selected["method"] == "reranked"].set_index("lang")
    assert reranked.loc["es", "hypothesis"] == "La doctora llegó hoy mismo."
    assert reranked.loc["pt", "hypothesis"] == "A médica chegou hoje."


def test_run_rerank_with_the_score_cache_keeps_the_language(asked, database):
    judge = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1")
    qe_service.run_rerank(CANDIDATES, judge, database=database)
    _check(asked)
    models = {r["model"] for r in database.query("SELECT DISTINCT model FROM metric_scores")}
    assert any("English->Spanish" in m for m in models) and any("English->Portuguese" in m for m in models)
    asked.clear()
    qe_service.run_rerank(CANDIDATES, judge, database=database)  # all cached: the judge is not asked
    assert asked == []


class LowerJudge(GembaDA):
    """A GEMBA judge read as an error score (0 best, 100 worst): QualityOriented wraps it."""

    higher_is_better = False
    worst = 100.0


def test_a_wrapped_lower_is_better_judge_stays_per_language(asked):
    m = qe_service.audit_metric(LowerJudge("remote", "judge", base_url="http://127.0.0.1:9/v1", scale="0-100"))
    assert isinstance(m, qe_service.QualityOriented) and hasattr(m, "for_languages")
    qe_service.run_rerank(CANDIDATES, m)
    _check(asked)
    asked.clear()
    pairs = CANDIDATES[CANDIDATES["is_greedy"] == 1].rename(columns={"ref_f": "hyp_f", "ref_m": "hyp_m"})
    pairs = pairs[["instance_id", "lang", "source", "hyp_f", "hyp_m", "gold"]]
    scored = qe_service.score(pairs, m)
    assert any("from English to Spanish" in p for p in asked)
    assert scored["score_f"].tolist() == pytest.approx([0.1, 0.1])  # 1 - 90/100
