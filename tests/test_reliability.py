"""Issue 54: kappas, ICC and a study's agreement report (services/common/reliability.py).
Fleiss' kappa on the worked example of Wikipedia's "Fleiss' kappa" page (10 subjects, 14 raters,
5 categories: 0.210) and by its formula; Cohen's kappa on the textbook 2x2 table (po 0.7, pe 0.5:
0.4) and against scikit-learn's cohen_kappa_score; the ICCs on Shrout and Fleiss (1979), Table 2
(6 targets x 4 judges: ICC(1,1) .17, ICC(2,1) .29, ICC(3,1) .71, ICC(1,4) .44, ICC(2,4) .62,
ICC(3,4) .91)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from services.common.agreement import krippendorff_alpha
from services.common.reliability import agreement_report, cohen_kappa, consensus, fleiss_kappa, icc

FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def fleiss_rows(table):
    rows = []
    for unit, counts in enumerate(table):
        values = [cat + 1 for cat, n in enumerate(counts) for _ in range(n)]
        rows += [dict(unit=unit, annotator=f"r{i}", value=v) for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def fleiss_by_formula(table):
    t = np.asarray(table, dtype=float)
    n = t.sum(axis=1)[0]
    p_j = t.sum(axis=0) / t.sum()
    p_i = ((t**2).sum(axis=1) - n) / (n * (n - 1))
    pe = (p_j**2).sum()
    return (p_i.mean() - pe) / (1 - pe)


def test_fleiss_kappa_on_the_published_example():
    k = fleiss_kappa(fleiss_rows(FLEISS_TABLE))
    assert round(k["kappa"], 3) == 0.210  # published
    assert k["kappa"] == pytest.approx(fleiss_by_formula(FLEISS_TABLE), rel=1e-12)
    assert (k["n_units"], k["left_out"], k["per_unit"]) == (10, 0, 14)
    # a unit with fewer ratings is left out and counted
    rows = fleiss_rows(FLEISS_TABLE)
    rows = rows[~((rows.unit == 3) & (rows.annotator == "r0"))]
    k2 = fleiss_kappa(rows)
    assert (k2["n_units"], k2["left_out"]) == (9, 1)
    assert k2["kappa"] == pytest.approx(fleiss_by_formula(FLEISS_TABLE[:3] + FLEISS_TABLE[4:]), rel=1e-12)


def test_cohen_kappa_on_the_textbook_table_and_against_sklearn():
    # 50 proposals: both yes 20, first yes second no 5, first no second yes 10, both no 15
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    rows = pd.DataFrame(
        [dict(unit=i, annotator=w, value=v) for i, p in enumerate(pairs) for w, v in zip(("A", "B"), p)]
    )
    k = cohen_kappa(rows, "A", "B")
    assert k["kappa"] == pytest.approx(0.4, abs=1e-12) and k["n_units"] == 50
    assert k["table"].loc["yes", "no"] == 5 and k["table"].loc["no", "yes"] == 10
    assert k["low"] < 0.4 < k["high"]
    rng = np.random.default_rng(2)
    a = rng.integers(1, 6, 200)
    b = np.clip(a + rng.integers(-1, 2, 200), 1, 5)
    rows = pd.DataFrame(
        [dict(unit=i, annotator=w, value=int(v)) for i in range(200) for w, v in (("A", a[i]), ("B", b[i]))]
    )
    for weights in (None, "linear", "quadratic"):
        expected = cohen_kappa_score(a, b, weights=weights)
        assert cohen_kappa(rows, "A", "B", weights=weights)["kappa"] == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError, match="annotator 'C' gave no value"):
        cohen_kappa(rows, "A", "C")
    with pytest.raises(ValueError, match="unknown kappa weights"):
        cohen_kappa(rows, "A", "B", weights="cubic")


SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
PUBLISHED_ICC = {
    "ICC(1,1)": 0.17,
    "ICC(A,1)": 0.29,
    "ICC(C,1)": 0.71,
    "ICC(1,k)": 0.44,
    "ICC(A,k)": 0.62,
    "ICC(C,k)": 0.91,
}


def shrout_rows():
    return pd.DataFrame(
        [dict(unit=t, annotator=f"j{j}", value=v) for t, row in enumerate(SHROUT_FLEISS) for j, v in enumerate(row)]
    )


def test_icc_on_shrout_and_fleiss_table_2():
    table, n = icc(shrout_rows())
    assert n == 6
    got = dict(zip(table["type"], table["icc"]))
    for name, value in PUBLISHED_ICC.items():
        assert round(got[name], 2) == value, name
    # ICC(3,1) from the two-way ANOVA's mean squares, by hand
    x = np.array(SHROUT_FLEISS, dtype=float)
    nt, k = x.shape
    grand = x.mean()
    bms = k * ((x.mean(axis=1) - grand) ** 2).sum() / (nt - 1)
    jss = nt * ((x.mean(axis=0) - grand) ** 2).sum()
    ems = (((x - grand) ** 2).sum() - bms * (nt - 1) - jss) / ((nt - 1) * (k - 1))
    assert got["ICC(C,1)"] == pytest.approx((bms - ems) / (bms + (k - 1) * ems), rel=1e-9)
    # a unit one judge missed is left out of the two-way design
    rows = shrout_rows()
    _, n5 = icc(rows[~((rows.unit == 0) & (rows.annotator == "j0"))])
    assert n5 == 5
    with pytest.raises(ValueError, match="at least two annotators"):
        icc(rows[rows.annotator == "j0"])


def test_consensus_of_the_rest():
    s = pd.Series([1, 2, 2, 5])
    assert consensus(s, "interval") == 2.5 and consensus(s, "ordinal") == 2 and consensus(s, "nominal") == 2
    assert math.isnan(consensus(pd.Series(["a", "b"]), "nominal"))  # a tie for the most frequent
    assert consensus(pd.Series(["a", "b", "b"]), "nominal") == "b"


def test_report_on_scores_with_one_noisy_annotator():
    rng = np.random.default_rng(54)
    quality = rng.uniform(0, 100, 30)
    rows = pd.DataFrame(
        [
            dict(unit=i, annotator=a, value=float(q + rng.normal(0, sd)))
            for i, q in enumerate(quality)
            for a, sd in (("r1", 4), ("r2", 4), ("r3", 4), ("noisy", 45))
        ]
    )
    report = agreement_report(rows, "interval")
    study = report.study.set_index("statistic")
    assert study.loc["krippendorff_alpha", "value"] == pytest.approx(krippendorff_alpha(rows, "interval"))
    assert (study.loc["krippendorff_alpha", "n_units"], study.loc["krippendorff_alpha", "n_values"]) == (30, 120)
    assert {"ICC(1,1)", "ICC(A,1)", "ICC(C,1)"} <= set(study.index)
    per = report.per_annotator.set_index("annotator")
    # the noisy annotator agrees least with the rest, and the study agrees more without them
    assert per["alpha_vs_rest"].idxmin() == "noisy"
    assert per.loc["noisy", "alpha_without"] > study.loc["krippendorff_alpha", "value"]
    assert per.loc["r1", "alpha_without"] < study.loc["krippendorff_alpha", "value"]
    # alpha against the rest is alpha between the annotator and the others' mean
    mine = rows[rows.annotator == "r1"].set_index("unit")["value"]
    rest = rows[rows.annotator != "r1"].groupby("unit")["value"].mean()
    two = pd.concat(
        [
            pd.DataFrame(dict(unit=mine.index, annotator="a", value=mine.to_numpy())),
            pd.DataFrame(dict(unit=rest.index, annotator="b", value=rest.to_numpy())),
        ]
    )
    assert per.loc["r1", "alpha_vs_rest"] == pytest.approx(krippendorff_alpha(two, "interval"), rel=1e-9)
    assert report.notes == []


def test_report_on_categories_and_when_nothing_can_be_computed():
    report = agreement_report(fleiss_rows(FLEISS_TABLE), "nominal")
    study = report.study.set_index("statistic")
    assert round(study.loc["fleiss_kappa", "value"], 3) == 0.210
    assert (study.loc["fleiss_kappa", "n_units"], study.loc["fleiss_kappa", "n_values"]) == (10, 140)
    two = fleiss_rows(FLEISS_TABLE)
    two = two[two.annotator.isin(["r0", "r1"])]
    k = agreement_report(two, "ordinal").study.set_index("statistic").loc["cohen_kappa"]
    a = two[two.annotator == "r0"].sort_values("unit").value
    b = two[two.annotator == "r1"].sort_values("unit").value
    assert k["value"] == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"), rel=1e-9)
    # one annotator: every figure NaN with a note, no per-annotator row
    alone = agreement_report(two[two.annotator == "r0"], "interval")
    assert alone.study["value"].isna().all() and alone.per_annotator.empty
    assert any("at least two annotators" in n for n in alone.notes)
    # two annotators who share no unit
    apart = pd.DataFrame(dict(unit=[1, 2], annotator=["a", "b"], value=[3.0, 4.0]))
    r = agreement_report(apart, "interval")
    assert "no unit has values from two annotators" in r.study.set_index("statistic").loc["krippendorff_alpha", "note"]
    assert r.per_annotator["n_units"].tolist() == [0, 0]
    with pytest.raises(ValueError, match="unknown level"):
        agreement_report(apart, "cardinal")
