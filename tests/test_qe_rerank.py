"""services.qe.rerank on a literal example: greedy vs reranked outputs and their MT-GenEval
gender accuracy, counted by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from services.qe import rerank as R

PAIRS = pd.DataFrame(
    {
        "instance_id": ["1", "2", "3"],
        "lang": "pt",
        "source": ["The doctor arrived.", "The teacher left.", "The author wrote."],
        "hyp_f": ["A médica chegou.", "A professora saiu.", "A autora escreveu."],
        "hyp_m": ["O médico chegou.", "O professor saiu.", "O autor escreveu."],
        "gold": ["F", "M", "F"],
    }
)

CANDIDATES = pd.DataFrame(
    [
        # instance 1 (gold F): greedy masculine; the sample scored best is feminine
        ("1", "The doctor arrived.", "F", "O médico chegou.", 1),
        ("1", "The doctor arrived.", "F", "O médico chegou!", 0),
        ("1", "The doctor arrived.", "F", "A médica chegou.", 0),
        # instance 2 (gold M): greedy masculine; best sample feminine
        ("2", "The teacher left.", "M", "O professor saiu.", 1),
        ("2", "The teacher left.", "M", "A professora saiu embora.", 0),
        ("2", "The teacher left.", "M", "O professor saiu", 0),
        # instance 3 (gold F): greedy feminine; two samples tie for best: the first one wins
        ("3", "The author wrote.", "F", "A autora escreveu.", 1),
        ("3", "The author wrote.", "F", "Escreveu.", 0),
        ("3", "The author wrote.", "F", "O autor escreveu.", 0),
    ],
    columns=["instance_id", "source", "gold", "hypothesis", "is_greedy"],
).assign(lang="pt")


def length_score(sources, hypotheses):
    """A test double of a QE metric: the longer hypothesis scores higher."""
    return [float(len(h)) for h in hypotheses]


def test_rerank_and_gender_accuracy_by_hand():
    result = R.evaluate(CANDIDATES, length_score, pairs=PAIRS)
    sel = result.selected.set_index(["method", "instance_id"])
    assert sel.loc[("greedy", "1"), "hypothesis"] == "O médico chegou."
    assert sel.loc[("reranked", "1"), "hypothesis"] == "O médico chegou!"  # 16 chars, first of the two 16s
    assert sel.loc[("reranked", "2"), "hypothesis"] == "A professora saiu embora."
    assert sel.loc[("reranked", "3"), "hypothesis"] == "O autor escreveu."
    assert sel.loc[("reranked", "2"), "score"] == 25.0 and sel.loc[("reranked", "2"), "n_candidates"] == 2
    table = result.table.set_index(["method", "lang"])
    # greedy: 1 wrong (masculine for F), 2 right, 3 right -> acc_f 1/2, acc_m 1/1, all 2/3
    g = table.loc[("greedy", "pooled")]
    assert (g["n"], g["n_f"], g["n_m"]) == (3, 2, 1)
    assert g["acc_f"] == pytest.approx(0.5) and g["acc_m"] == 1.0 and g["acc_all"] == pytest.approx(2 / 3)
    # f_as_m: gold-F outputs that pass against the masculine reference: instance 1 only
    assert g["f_as_m"] == pytest.approx(0.5) and g["m_as_f"] == 0.0
    # reranked: 1 wrong, 2 wrong, 3 wrong
    r = table.loc[("reranked", "pooled")]
    assert r["acc_f"] == 0.0 and r["acc_m"] == 0.0 and r["acc_all"] == 0.0
    assert r["f_as_m"] == 1.0 and r["m_as_f"] == 1.0
    assert list(result.table["method"].unique()) == ["greedy", "reranked"]


def test_ties_go_to_the_first_candidate_and_lower_is_better_is_respected():
    def constant(sources, hypotheses):
        return [1.0] * len(hypotheses)

    sel = R.select(R.read_candidates(CANDIDATES), constant)
    rer = sel[sel["method"] == "reranked"].set_index("instance_id")
    assert list(rer["hypothesis"]) == ["O médico chegou!", "A professora saiu embora.", "Escreveu."]

    class ErrorMetric:  # lower is better, e.g. an error count
        higher_is_better = False

        def score(self, sources, hypotheses):
            return [float(len(h)) for h in hypotheses]

    sel = R.select(R.read_candidates(CANDIDATES), ErrorMetric())
    rer = sel[sel["method"] == "reranked"].set_index("instance_id")
    # shortest wins; "O médico chegou!" and "A médica chegou." tie at 16 characters: the first
    assert list(rer["hypothesis"]) == ["O médico chegou!", "O professor saiu", "Escreveu."]


def test_include_greedy_and_unscored_candidates():
    def scores(sources, hypotheses):
        return [None if h.startswith("O médico") else float(len(h)) for h in hypotheses]

    sel = R.select(R.read_candidates(CANDIDATES), scores, include_greedy=True)
    rer = sel[sel["method"] == "reranked"].set_index("instance_id")
    assert rer.loc["1", "hypothesis"] == "A médica chegou."  # the None-scored ones never win
    assert rer.loc["3", "hypothesis"] == "A autora escreveu."  # the greedy row competes (18 chars)

    def none(sources, hypotheses):
        return [None] * len(hypotheses)

    result = R.evaluate(CANDIDATES, none, pairs=PAIRS)
    assert result.n_unscored == 3 and "no reranked output" in result.notes[0]
    assert set(result.table["method"]) == {"greedy"}


def test_context_aware_reranking_sees_the_context():
    seen = []

    def record(sources, hypotheses):
        seen.append((list(sources), list(hypotheses)))
        return [0.0] * len(hypotheses)

    cands = CANDIDATES.assign(context="Ana is a doctor.")
    R.select(R.read_candidates(cands), record, context="mon")
    assert seen[0][0][0] == "Ana is a doctor. The doctor arrived."
    assert seen[0][1][0] == "Ana is a doctor. O médico chegou!"
    assert len(seen) == 1 and len(seen[0][0]) == 6  # one batched call, samples only


def test_sample_candidates_with_a_sampler():
    calls = []

    def sampler(source, n):
        calls.append((source, n))
        return [f"{source} #{k}" for k in range(n)]

    c = R.sample_candidates(PAIRS, sampler, 2, greedy=lambda s: s.upper())
    assert calls == [(s, 2) for s in PAIRS["source"]]
    assert len(c) == 9 and c["is_greedy"].sum() == 3
    assert list(c.loc[c["instance_id"] == "2", "hypothesis"]) == [
        "THE TEACHER LEFT.",
        "The teacher left. #0",
        "The teacher left. #1",
    ]
    assert list(c["candidate"][:3]) == [0, 1, 2]
    assert c.loc[0, "ref_f"] == "A médica chegou."
    with pytest.raises(ValueError, match="list of strings"):
        R.sample_candidates(PAIRS, lambda s, n: "one string", 1)
    with pytest.raises(ValueError, match="n must be"):
        R.sample_candidates(PAIRS, sampler, 0)


def test_candidate_validation():
    bad = CANDIDATES.copy()
    bad.loc[4, "gold"] = "X"
    with pytest.raises(R.RerankInputError, match=r"row 6, column 'gold': gold 'X' is not F or M"):
        R.read_candidates(bad)
    bad = CANDIDATES.copy()
    bad.loc[2, "gold"] = "M"
    with pytest.raises(R.RerankInputError, match=r"row 4, column 'gold': gold differs"):
        R.read_candidates(bad)
    bad = CANDIDATES.copy()
    bad.loc[1, "is_greedy"] = 1
    with pytest.raises(R.RerankInputError, match="a second greedy hypothesis"):
        R.read_candidates(bad)
    with pytest.raises(R.RerankInputError, match="missing column"):
        R.read_candidates(CANDIDATES.drop(columns="gold"))
    with pytest.raises(ValueError, match="no references in PAIRS for instance '3'"):
        R.attach_references(R.read_candidates(CANDIDATES), PAIRS.iloc[:2])
    with pytest.raises(ValueError, match="needs ref_f and ref_m"):
        R.accuracy(R.select(R.read_candidates(CANDIDATES), length_score))


def test_without_greedy_rows_every_candidate_competes(tmp_path):
    c = CANDIDATES.drop(columns="is_greedy")
    p = tmp_path / "candidates.csv"
    c.merge(PAIRS[["instance_id", "hyp_f", "hyp_m"]].rename(columns={"hyp_f": "ref_f", "hyp_m": "ref_m"})).to_csv(
        p, index=False
    )
    result = R.evaluate(p, length_score)
    assert list(result.table["method"].unique()) == ["reranked"]
    rer = result.selected.set_index("instance_id")
    assert rer.loc["3", "hypothesis"] == "A autora escreveu."
    assert not math.isnan(result.table.iloc[-1]["acc_all"])
