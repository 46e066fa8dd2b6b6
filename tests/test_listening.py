"""Issue 54: listening tests' statistics (services/common/listening.py). MOS and its interval
computed again with the statistics module as the P.808 toolkit does (1.96 * stdev / sqrt(n)),
the t interval and quartiles with scipy and numpy, BS.1534-3's post-screening on hand-made
panels with assessors on both sides of each threshold, and the scales' wording from the data
file."""

from __future__ import annotations

import math
import statistics

import pandas as pd
import pytest
from scipy import stats

from services.common.listening import (
    condition_means,
    condition_summary,
    half_width,
    load_scales,
    post_screening,
    screened,
)

SCALES = load_scales()

# a small known set: two conditions, ACR votes
VOTES = {"c01": [5, 4, 4, 3, 5, 4, 2, 4], "c02": [2, 1, 3, 2, 2, 1, 3, 2, 2, 1], "c03": [4]}


def acr_rows(votes=VOTES):
    return pd.DataFrame([dict(condition=c, value=v) for c, vs in votes.items() for v in vs])


def test_mos_and_ci_as_the_p808_toolkit_reports_them():
    table = condition_means(acr_rows(), SCALES["acr"]).set_index("condition")
    for c in ("c01", "c02"):
        v = VOTES[c]
        mos, sd = statistics.mean(v), statistics.stdev(v)
        ci = 1.96 * sd / math.sqrt(len(v))  # the toolkit's formula
        row = table.loc[c]
        assert row.n == len(v) and row["mean"] == pytest.approx(mos, rel=1e-12)
        assert row["std"] == pytest.approx(sd, rel=1e-12)
        assert row.ci == pytest.approx(ci, rel=1e-4)  # scipy's 1.959964 against 1.96
        assert (row.low, row.high) == (pytest.approx(mos - row.ci), pytest.approx(mos + row.ci))
    assert table.loc["c01", "mean"] == 3.875
    # one vote: a mean but no spread, as the toolkit leaves them empty
    assert table.loc["c03", "mean"] == 4 and math.isnan(table.loc["c03", "std"]) and math.isnan(table.loc["c03", "ci"])


def test_t_interval_against_scipy():
    v = VOTES["c01"]
    lo, hi = stats.t.interval(0.95, len(v) - 1, loc=statistics.mean(v), scale=stats.sem(v))
    table = condition_means(acr_rows(), ci="t").set_index("condition")
    assert (table.loc["c01", "low"], table.loc["c01", "high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert half_width(v, ci="t", level=0.99) > half_width(v, ci="t") > half_width(v)
    with pytest.raises(ValueError, match="unknown confidence interval 'bootstrap'"):
        half_width(v, ci="bootstrap")


def test_scales_wording_and_checks():
    acr, dcr, ccr, cont = SCALES["acr"], SCALES["dcr"], SCALES["ccr"], SCALES["mushra"]
    assert [w for _, w in acr.points] == ["Excellent", "Good", "Fair", "Poor", "Bad"]
    assert acr.label(1) == "Bad" and acr.mean_name == "MOS"
    assert dcr.label(5) == "Degradation is inaudible" and dcr.label(1) == "Degradation is very annoying"
    assert [v for v, _ in ccr.points] == [3, 2, 1, 0, -1, -2, -3] and ccr.label(0) == "About the same"
    assert cont.label(100) == "Excellent" and cont.label(79.5) == "Good" and cont.label(0) == "Bad"
    assert all("P.800" in s.source for s in (acr, dcr, ccr)) and "BS.1534-3" in cont.source
    with pytest.raises(ValueError, match="6 is not on the .* scale"):
        condition_means(pd.DataFrame(dict(condition=["x"], value=[6])), acr)
    with pytest.raises(ValueError, match="3.5 is not on"):
        condition_means(pd.DataFrame(dict(condition=["x"], value=[3.5])), ccr)
    with pytest.raises(ValueError, match="101 is not on"):
        cont.check([50, 101])
    # CCR's mean may be negative (the second sample worse)
    ccr_table = condition_means(pd.DataFrame(dict(condition=["x"] * 4, value=[-3, -1, 0, -2])), ccr)
    assert ccr_table["mean"].iloc[0] == -1.5


def test_continuous_summary_against_numpy_and_scipy():
    rows = pd.DataFrame(dict(condition=["ref"] * 5 + ["sys"] * 6, value=[100, 95, 92, 100, 88, 40, 55, 61, 47, 70, 52]))
    s = condition_summary(rows, scale=SCALES["mushra"]).set_index("condition")
    v = [40, 55, 61, 47, 70, 52]
    lo, hi = stats.t.interval(0.95, 5, loc=statistics.mean(v), scale=stats.sem(v))
    assert (s.loc["sys", "low"], s.loc["sys", "high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert s.loc["sys", "median"] == statistics.median(v) == 53.5
    q1, _, q3 = statistics.quantiles(v, n=4, method="inclusive")  # numpy's linear = inclusive
    assert (s.loc["sys", "q1"], s.loc["sys", "q3"]) == (pytest.approx(q1), pytest.approx(q3))


def panel(ref_scores: dict[str, list[float]], anchor_scores: dict[str, list[float]]):
    rows = []
    for who, scores in ref_scores.items():
        for i, v in enumerate(scores):
            rows.append(dict(item=f"i{i}", assessor=who, condition="ref", value=v))
            rows.append(dict(item=f"i{i}", assessor=who, condition="codec", value=50))
    for who, scores in anchor_scores.items():
        for i, v in enumerate(scores):
            rows.append(dict(item=f"i{i}", assessor=who, condition="anchor35", value=v))
    return pd.DataFrame(rows)


def test_post_screening_on_both_sides_of_each_threshold():
    ten_ok = [100] * 10
    ratings = panel(
        {
            "keeps": [89] + [100] * 9,  # 1 of 10 below 90: 10% <= 15%
            "edge": [90] * 10,  # exactly 90 is not below 90
            "drops": [89, 80] + [100] * 8,  # 2 of 10: 20% > 15%
            "anchor_hi": ten_ok,
            "anchor_edge": ten_ok,
            "both": [10, 20] + [100] * 8,
        },
        {
            "keeps": [20] * 10,
            "edge": [90] * 10,  # exactly 90 is not above 90
            "drops": [20] * 10,
            "anchor_hi": [95, 91] + [30] * 8,  # 2 of 10 above 90
            "anchor_edge": [91] + [30] * 9,  # 1 of 10
            "both": [100, 100] + [30] * 8,
        },
    )
    s = post_screening(ratings, reference="ref", anchor="anchor35").set_index("assessor")
    assert s.excluded.to_dict() == {
        "anchor_edge": False,
        "anchor_hi": True,
        "both": True,
        "drops": True,
        "edge": False,
        "keeps": False,
    }
    assert s.loc["drops", "reason"] == "rated the hidden reference below 90 on 2 of 10 items (20% > 15%)"
    assert s.loc["anchor_hi", "reason"] == "rated the anchor above 90 on 2 of 10 items (20% > 15%)"
    assert "; " in s.loc["both", "reason"] and s.loc["keeps", "reason"] == ""
    assert (s.loc["keeps", "reference_items"], s.loc["keeps", "reference_below"]) == (10, 1)
    kept = screened(ratings, s.reset_index())
    assert set(kept.assessor) == {"keeps", "edge", "anchor_edge"}
    # 15% exactly is not "more than 15%": 3 of 20
    twenty = panel({"a": [50] * 3 + [100] * 17, "b": [50] * 4 + [100] * 16}, {})
    s20 = post_screening(twenty, reference="ref").set_index("assessor")
    assert s20.excluded.to_dict() == {"a": False, "b": True}
    with pytest.raises(ValueError, match="no rating of the hidden reference 'reference'"):
        post_screening(twenty, reference="reference")
