"""Issue 54: system strengths from comparisons (services/common/comparison.py). Bradley-Terry
against Agresti's published baseball table and an independent scipy maximum-likelihood fit,
TrueSkill against the trueskill package's documented example, win rates against the binomial
distribution by hand, best-worst counting scores by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from services.common.comparison import (
    TIE,
    best_choice_strengths,
    best_worst_scores,
    best_worst_to_outcomes,
    bootstrap_strengths,
    bradley_terry,
    bradley_terry_ranking,
    check_outcomes,
    plackett_luce,
    rankings_to_outcomes,
    trueskill_ratings,
    win_matrix,
    win_rates,
)

# Agresti, Categorical Data Analysis (2nd ed., 2002), Table 10.10: the 1987 American League East,
# wins of the row team over the column team (home and away together; BradleyTerry2's `baseball`)
TEAMS = ["Baltimore", "Boston", "Cleveland", "Detroit", "Milwaukee", "New York", "Toronto"]
WINS = [
    [0, 1, 7, 4, 2, 3, 1],
    [12, 0, 7, 2, 6, 7, 6],
    [6, 6, 0, 4, 4, 6, 5],
    [9, 11, 9, 0, 6, 5, 7],
    [11, 7, 9, 7, 0, 7, 9],
    [10, 6, 7, 8, 6, 0, 6],
    [12, 7, 8, 6, 4, 7, 0],
]
# Table 10.11: the fitted log-abilities with Baltimore's set to 0
PUBLISHED = {"Milwaukee": 1.58, "Detroit": 1.44, "Toronto": 1.29, "New York": 1.25, "Boston": 1.11, "Cleveland": 0.68}


def outcomes_of(wins, names, ties=None):
    rows = []
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            for k in range(wins[i][j]):
                # alternate sides so that a's position does not mean anything
                rows.append((f"{a}-{b}-{k}", "r1", a, b, a) if k % 2 else (f"{a}-{b}-{k}", "r1", b, a, a))
    for a, b, n in ties or []:
        rows += [(f"tie-{a}-{b}-{k}", "r1", a, b, TIE) for k in range(n)]
    return pd.DataFrame(rows, columns=["item", "annotator", "system_a", "system_b", "winner"])


def ml_fit(m):
    """Bradley-Terry by maximising sum m_ij log(sigmoid(t_i - t_j)) with scipy (t_0 fixed at 0)."""
    m = np.asarray(m, dtype=float)

    def nll(free):
        t = np.concatenate([[0.0], free])
        d = t[:, None] - t[None, :]
        return -float(np.sum(m * -np.logaddexp(0, -d)))

    res = optimize.minimize(nll, np.zeros(len(m) - 1), method="BFGS", options={"gtol": 1e-10})
    t = np.concatenate([[0.0], res.x])
    return t - t.mean()


def test_bradley_terry_reproduces_agrestis_baseball_table():
    outcomes = outcomes_of(WINS, TEAMS)
    assert (win_matrix(outcomes, TEAMS) == np.array(WINS)).all()
    s = bradley_terry(outcomes, alpha=0.0)
    assert list(s.index) == ["Milwaukee", "Detroit", "Toronto", "New York", "Boston", "Cleveland", "Baltimore"]
    for team, value in PUBLISHED.items():
        assert round(s[team] - s["Baltimore"], 2) == value
    assert s.sum() == pytest.approx(0, abs=1e-9)
    # and the same as an independent ML fit
    np.testing.assert_allclose(s[TEAMS].to_numpy(), ml_fit(WINS), atol=1e-5)


def test_ties_count_half_a_win_each():
    names = ["A", "B", "C"]
    wins = [[0, 6, 4], [3, 0, 5], [2, 2, 0]]
    outcomes = outcomes_of(wins, names, ties=[("A", "B", 2), ("B", "C", 3)])
    m = win_matrix(outcomes, names)
    assert m[0, 1] == 7 and m[1, 0] == 4 and m[1, 2] == 6.5 and m[2, 1] == 3.5
    np.testing.assert_allclose(bradley_terry(outcomes, alpha=0.0)[names].to_numpy(), ml_fit(m), atol=1e-5)


def test_regularisation_keeps_an_unbeaten_system_finite():
    outcomes = outcomes_of([[0, 5, 5], [0, 0, 3], [0, 2, 0]], ["A", "B", "C"])
    s = bradley_terry(outcomes)  # A never loses: no ML estimate, the default alpha keeps it finite
    assert list(s.index) == ["A", "B", "C"] and np.isfinite(s).all()
    assert bradley_terry(outcomes, alpha=1.0)["A"] < s["A"]  # more regularisation, less spread


def test_outcomes_are_checked():
    good = pd.DataFrame([("i", "r", "A", "B", None)], columns=["item", "annotator", "system_a", "system_b", "winner"])
    assert check_outcomes(good)["winner"].tolist() == [TIE]
    with pytest.raises(ValueError, match="neither 'A' nor 'B'"):
        check_outcomes(good.assign(winner="C"))
    with pytest.raises(ValueError, match="compared with itself"):
        check_outcomes(good.assign(system_b="A"))
    with pytest.raises(ValueError, match="need the columns winner"):
        check_outcomes(good.drop(columns="winner"))


def test_bootstrap_is_seeded_and_clusters_follow_it():
    rng = np.random.default_rng(4)
    true = {"A": 1.5, "B": 1.4, "C": -1.0}
    rows = []
    for item in range(60):
        for a, b in (("A", "B"), ("A", "C"), ("B", "C")):
            p = 1 / (1 + math.exp(true[b] - true[a]))
            rows.append((item, f"r{item % 5}", a, b, a if rng.random() < p else b))
    outcomes = pd.DataFrame(rows, columns=["item", "annotator", "system_a", "system_b", "winner"])
    one = bootstrap_strengths(outcomes, n_boot=50, seed=7)
    assert one.equals(bootstrap_strengths(outcomes, n_boot=50, seed=7))
    assert not one.equals(bootstrap_strengths(outcomes, n_boot=50, seed=8))
    table, pairs = bradley_terry_ranking(outcomes, n_boot=300, seed=1)
    assert list(table["system"])[2] == "C"
    assert (table["low"] <= table["strength"]).all() and (table["strength"] <= table["high"]).all()
    assert list(table["cluster"]) == [1, 1, 2]  # A and B too close to separate, C clearly below
    p_bc = pairs[(pairs.system_a == table.system[1]) & (pairs.system_b == "C")].p_value.iloc[0]
    assert p_bc < 0.05
    # a resample is the drawn items' rows put together and fitted again
    items = [g for _, g in outcomes.groupby("item", sort=True)]
    drawn = np.random.default_rng(11).integers(0, len(items), len(items))
    again = bradley_terry(pd.concat([items[i] for i in drawn]))
    np.testing.assert_allclose(bootstrap_strengths(outcomes, n_boot=1, seed=11).iloc[0][again.index], again, atol=1e-6)
    by_annotator = bootstrap_strengths(outcomes, by="annotator", n_boot=20, seed=1)
    assert by_annotator.shape == (20, 3)
    with pytest.raises(ValueError, match="bootstrap over 'segment'"):
        bootstrap_strengths(outcomes, by="segment", n_boot=2)


def test_trueskill_matches_the_packages_documented_example():
    # trueskill.org, "Learning": two new players, 1P wins -> 29.396 / 20.604, sigma 7.171;
    # a draw -> both 25.000, sigma 6.458
    one = pd.DataFrame([("i", "r", "B", "A", "A")], columns=["item", "annotator", "system_a", "system_b", "winner"])
    r = trueskill_ratings(one).set_index("system")
    assert (round(r.mu["A"], 3), round(r.sigma["A"], 3)) == (29.396, 7.171)
    assert (round(r.mu["B"], 3), round(r.sigma["B"], 3)) == (20.604, 7.171)
    assert r.conservative["A"] == pytest.approx(r.mu["A"] - 3 * r.sigma["A"])
    drawn = trueskill_ratings(one.assign(winner=TIE)).set_index("system")
    assert (round(drawn.mu["A"], 3), round(drawn.sigma["A"], 3)) == (25.0, 6.458)


def test_trueskill_orders_a_clear_ranking():
    outcomes = outcomes_of([[0, 8, 9], [2, 0, 8], [1, 2, 0]], ["A", "B", "C"])
    r = trueskill_ratings(outcomes, seed=3)
    assert list(r["system"]) == ["A", "B", "C"] and list(r["n"]) == [20, 20, 20]
    assert r.equals(trueskill_ratings(outcomes, seed=3))


def test_win_rates_and_the_sign_test_by_hand():
    outcomes = outcomes_of([[0, 9, 0], [3, 0, 0], [0, 0, 0]], ["A", "B", "C"], ties=[("A", "B", 4), ("B", "C", 2)])
    w = win_rates(outcomes).set_index(["system_a", "system_b"])
    ab = w.loc[("A", "B")]
    assert (ab.wins_a, ab.wins_b, ab.ties) == (9, 3, 4)
    assert ab.win_rate_a == 0.75
    # two-sided exact binomial: P(X <= 3) + P(X >= 9) for X ~ Bin(12, 1/2)
    by_hand = sum(math.comb(12, k) for k in [0, 1, 2, 3, 9, 10, 11, 12]) / 2**12
    assert ab.p_value == pytest.approx(by_hand, rel=1e-12)
    assert ab.p_value == pytest.approx(stats.binom.cdf(3, 12, 0.5) * 2, rel=1e-12)
    bc = w.loc[("B", "C")]
    assert bc.ties == 2 and math.isnan(bc.win_rate_a) and math.isnan(bc.p_value)
    assert ("A", "C") not in w.index  # never compared


def test_rankings_become_pairs_and_plackett_luce():
    rankings = pd.DataFrame(
        [
            ("s1", "r1", "A", 1),
            ("s1", "r1", "B", 2),
            ("s1", "r1", "C", 2),
            ("s2", "r1", "C", 1),
            ("s2", "r1", "A", 2),
            ("s2", "r1", "B", 3),
        ],
        columns=["item", "annotator", "system", "rank"],
    )
    pairs = rankings_to_outcomes(rankings)
    assert sorted(map(tuple, pairs[["system_a", "system_b", "winner"]].to_numpy())) == sorted(
        [("A", "B", "A"), ("A", "C", "A"), ("B", "C", TIE), ("C", "A", "C"), ("C", "B", "C"), ("A", "B", "A")]
    )
    with pytest.raises(ValueError, match="equal ranks"):
        plackett_luce(rankings)
    # Plackett-Luce with full rankings of two systems is Bradley-Terry on the same pairs
    two = pd.DataFrame(
        [(f"s{i}", "r1", s, r) for i, order in enumerate(["AB"] * 7 + ["BA"] * 3) for r, s in enumerate(order, 1)],
        columns=["item", "annotator", "system", "rank"],
    )
    pl = plackett_luce(two, alpha=0.0)
    assert pl["A"] - pl["B"] == pytest.approx(math.log(7 / 3), abs=1e-6)
    assert pl["A"] - pl["B"] == pytest.approx(bradley_terry(rankings_to_outcomes(two), alpha=0.0).diff().abs().iloc[1])


def test_best_worst_counting_score_by_hand():
    trials = pd.DataFrame(
        [
            ("t1", "r1", ("A", "B", "C", "D"), "A", "D"),
            ("t2", "r1", ("A", "B", "C", "E"), "B", "C"),
            ("t3", "r2", ("B", "C", "D", "E"), "B", "D"),
        ],
        columns=["item", "annotator", "shown", "best", "worst"],
    )
    s = best_worst_scores(trials).set_index("system")
    assert s.loc["A"].tolist() == [2, 1, 0, 0.5]
    assert s.loc["B"].tolist() == [3, 2, 0, 2 / 3]
    assert s.loc["C"].tolist() == [3, 0, 1, -1 / 3]
    assert s.loc["D"].tolist() == [2, 0, 2, -1.0]
    assert s.loc["E"].tolist() == [2, 0, 0, 0.0]
    assert list(s.index) == ["B", "A", "E", "C", "D"]
    pairs = best_worst_to_outcomes(trials.head(1))
    assert sorted(map(tuple, pairs[["system_a", "system_b"]].to_numpy())) == sorted(
        [("A", "B"), ("A", "C"), ("A", "D"), ("B", "D"), ("C", "D")]
    )
    assert (pairs["winner"] == pairs["system_a"]).all()
    top1 = best_choice_strengths(trials, alpha=0.01)
    assert top1.index[0] == "B"
    with pytest.raises(ValueError, match="two different systems"):
        best_worst_scores(trials.assign(worst="Z"))
