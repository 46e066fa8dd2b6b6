"""The reranking table with the quality columns of paper 003's Table 2 (issue 20, point 4):
COMET-22 and BLEU of each source-gender group's outputs against the references of both genders,
beside the gender accuracy; "mean" (over languages) and "pooled" rows.

BLEU is checked against sacrebleu's corpus BLEU of the same groups, built here, and on literal
cases (an output equal to its reference scores 100); COMET's columns are exercised with a
reference-based test double (a real COMET checkpoint is not available offline; the metric itself
is tested in test_metrics_comet.py), and "auto" without a configured COMET leaves them out with a
note."""

from __future__ import annotations

import pandas as pd
import pytest
import sacrebleu

from services.qe import rerank as R

PAIRS = pd.DataFrame(
    {
        "instance_id": ["1", "2", "3", "1", "2"],
        "lang": ["pt", "pt", "pt", "es", "es"],
        "source": [
            "The doctor arrived today.",
            "The teacher left early.",
            "The author wrote a book.",
            "The doctor arrived today.",
            "The teacher left early.",
        ],
        "hyp_f": [
            "A médica chegou hoje.",
            "A professora saiu cedo.",
            "A autora escreveu um livro.",
            "La doctora llegó hoy.",
            "La profesora salió temprano.",
        ],
        "hyp_m": [
            "O médico chegou hoje.",
            "O professor saiu cedo.",
            "O autor escreveu um livro.",
            "El doctor llegó hoy.",
            "El profesor salió temprano.",
        ],
        "gold": ["F", "M", "F", "F", "M"],
    }
)

CANDIDATES = pd.DataFrame(
    [
        ("pt", "1", "The doctor arrived today.", "F", "O médico chegou hoje.", 1),
        ("pt", "1", "The doctor arrived today.", "F", "A médica chegou hoje.", 0),
        ("pt", "2", "The teacher left early.", "M", "O professor saiu cedo.", 1),
        ("pt", "2", "The teacher left early.", "M", "A professora saiu muito cedo.", 0),
        ("pt", "3", "The author wrote a book.", "F", "A autora escreveu um livro.", 1),
        ("pt", "3", "The author wrote a book.", "F", "O autor escreveu um livro grande.", 0),
        ("es", "1", "The doctor arrived today.", "F", "El doctor llegó hoy.", 1),
        ("es", "1", "The doctor arrived today.", "F", "La doctora llegó hoy mismo.", 0),
        ("es", "2", "The teacher left early.", "M", "El profesor salió temprano.", 1),
        ("es", "2", "The teacher left early.", "M", "El profesor se fue temprano.", 0),
    ],
    columns=["lang", "instance_id", "source", "gold", "hypothesis", "is_greedy"],
)


def length_score(sources, hypotheses):
    return [float(len(h)) for h in hypotheses]


class FakeComet:
    """A reference-based test double: 0.9 when the output equals the reference, else 0.5."""

    name = "fake-comet"
    kind = "reference-based"

    def __init__(self):
        self.calls = []

    def score(self, sources, hypotheses, references=None, contexts=None):
        self.calls.append(list(references))
        return [0.9 if h == r else 0.5 for h, r in zip(hypotheses, references)]


def test_bleu_columns_are_sacrebleus_corpus_bleu_per_group():
    result = R.evaluate(CANDIDATES, length_score, pairs=PAIRS, comet=None)
    t = result.table.set_index(["method", "lang"])
    assert {"bleu_f", "bleu_f_vs_m", "bleu_m", "bleu_m_vs_f"} <= set(result.table.columns)
    assert not any(c.startswith("comet") for c in result.table.columns)
    sel = result.selected
    for method in ("greedy", "reranked"):
        for lang in ("pt", "es"):
            g = sel[(sel["method"] == method) & (sel["lang"] == lang)]
            f, m = g[g["gold"] == "F"], g[g["gold"] == "M"]
            exp = {
                "bleu_f": sacrebleu.corpus_bleu(list(f["hypothesis"]), [list(f["ref_f"])]).score,
                "bleu_f_vs_m": sacrebleu.corpus_bleu(list(f["hypothesis"]), [list(f["ref_m"])]).score,
                "bleu_m": sacrebleu.corpus_bleu(list(m["hypothesis"]), [list(m["ref_m"])]).score,
                "bleu_m_vs_f": sacrebleu.corpus_bleu(list(m["hypothesis"]), [list(m["ref_f"])]).score,
            }
            for col, value in exp.items():
                assert t.loc[(method, lang), col] == pytest.approx(value)
    # greedy pt, gold M: "O professor saiu cedo." is its masculine reference exactly
    assert t.loc[("greedy", "pt"), "bleu_m"] == pytest.approx(100.0)
    assert t.loc[("greedy", "pt"), "bleu_m_vs_f"] < 100.0
    # the mean row averages the languages; the pooled row is one corpus over both
    for col in ("bleu_f", "acc_f", "acc_all"):
        assert t.loc[("greedy", "mean"), col] == pytest.approx(
            (t.loc[("greedy", "pt"), col] + t.loc[("greedy", "es"), col]) / 2
        )
    g = sel[(sel["method"] == "greedy") & (sel["gold"] == "F")]
    assert t.loc[("greedy", "pooled"), "bleu_f"] == pytest.approx(
        sacrebleu.corpus_bleu(list(g["hypothesis"]), [list(g["ref_f"])]).score
    )
    assert t.loc[("greedy", "mean"), "n"] == 5 and list(result.table["lang"].unique()) == ["es", "pt", "mean", "pooled"]
    assert any("bleu" in q for q in result.quality)


def test_comet_columns_from_a_reference_based_metric():
    comet = FakeComet()
    result = R.evaluate(CANDIDATES, length_score, pairs=PAIRS, comet=comet, bleu=False)
    assert len(comet.calls) == 2  # one batched call per reference column
    t = result.table.set_index(["method", "lang"])
    assert list(result.table.columns[-4:]) == ["comet_f", "comet_f_vs_m", "comet_m", "comet_m_vs_f"]
    # greedy pt: gold F outputs "O médico chegou hoje." (= ref_m) and "A autora escreveu um livro." (= ref_f)
    assert t.loc[("greedy", "pt"), "comet_f"] == pytest.approx(100 * (0.5 + 0.9) / 2)
    assert t.loc[("greedy", "pt"), "comet_f_vs_m"] == pytest.approx(100 * (0.9 + 0.5) / 2)
    assert t.loc[("greedy", "pt"), "comet_m"] == pytest.approx(90.0)
    assert t.loc[("greedy", "pt"), "comet_m_vs_f"] == pytest.approx(50.0)
    assert "bleu_f" not in result.table.columns


def test_comet_auto_without_a_configured_comet_says_so(monkeypatch):
    monkeypatch.delenv("TRADLAB_COMET_CHECKPOINT", raising=False)
    result = R.evaluate(CANDIDATES, length_score, pairs=PAIRS)
    assert not any(c.startswith("comet") for c in result.table.columns)
    assert "bleu_f" in result.table.columns
    assert any("COMET" in n and "not configured" in n for n in result.notes)


def test_a_language_naming_judge_is_asked_per_language(monkeypatch):
    from services.metrics import registry as metrics  # noqa: F401  (imports metrics_gemba)
    from services.metrics.gemba import GembaDA

    prompts = []

    def ask(self, ps):
        prompts.extend(ps)
        return ["90"] * len(ps)

    monkeypatch.setattr(GembaDA, "ask", ask)
    judge = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1")
    R.select(R.read_candidates(CANDIDATES), judge)
    es = [p for p in prompts if "llegó" in p or "salió" in p or "fue" in p]
    assert es and all("from English to Spanish" in p for p in es)
    assert all("from English to Portuguese" in p for p in prompts if p not in es)
