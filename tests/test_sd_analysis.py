"""services.sd.analysis on crafted participants and seeded generated factor data.

Expected values are computed here independently: the cleansing rules with plain loops, the
quartiles with statistics.quantiles, KMO from the anti-image formula, Bartlett's test from its
formula with scipy.stats.chi2, and the ML chi-square from a separate ML fit (R factanal's
concentrated likelihood over the uniquenesses, minimised with scipy).
"""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from services.sd import analysis as S
from tests.helpers.sd import GROUPS, PHI, factor_data, rating_rows, same_partition, true_loadings

# ---------------------------------------------------------------------------------------------
# generated data


def varied(k: int = 6) -> dict:
    """k non-constant first ratings on sentence s1."""
    return {("s1", f"p{j}"): (j % 7) - 3 for j in range(k)}


def study(
    seed: int = 0, participants: int = 120, sentences: int = 30, per_participant: int = 4, plants: bool = True
) -> pd.DataFrame:
    """Participants rate sentences on the 16 pairs of the 4-factor structure (values rounded to
    -3..3), two repeated pairs per sentence (+-1 noise). Planted: P_fast (200 s), P_straight
    (always 1) and P_random (repeats unrelated to the first ratings)."""
    rng = np.random.default_rng(seed)
    lam, names, _ = true_loadings(rng)
    rows = []
    ids = [f"P{i:03d}" for i in range(participants)]
    if plants:
        ids += ["P_fast", "P_straight", "P_random"]
    for pid in ids:
        duration = 200.0 if pid == "P_fast" else float(rng.uniform(300, 900))
        for s in rng.choice(sentences, per_participant, replace=False):
            f = rng.multivariate_normal(np.zeros(GROUPS), PHI)
            x = lam @ f + rng.normal(size=len(names)) * np.sqrt(1 - np.diag(lam @ PHI @ lam.T))
            v = np.clip(np.round(1.3 * x), -3, 3)
            if pid == "P_straight":
                v[:] = 1
            firsts = {(f"s{s:02d}", n): float(v[j]) for j, n in enumerate(names)}
            reps = {}
            for j in rng.choice(len(names), 2, replace=False):
                if pid == "P_random":
                    reps[(f"s{s:02d}", names[j])] = float(np.clip(-3 * np.sign(v[j] or 1), -3, 3))
                else:
                    noise = rng.integers(-1, 2) * (rng.random() < 0.3)
                    reps[(f"s{s:02d}", names[j])] = float(np.clip(v[j] + noise, -3, 3))
            rows += rating_rows(pid, duration, firsts, reps)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# independent references


def factanal_min(r: np.ndarray, k: int) -> float:
    """Minimum of the ML discrepancy as R's factanal computes it: over uniquenesses psi,
    sum over the p - k smallest eigenvalues e of psi^-1/2 R psi^-1/2 of e - ln e - 1."""
    p = r.shape[0]

    def fn(psi):
        sc = 1 / np.sqrt(psi)
        e = np.linalg.eigvalsh(r * sc[:, None] * sc[None, :])[::-1][k:]
        return float(np.sum(e - np.log(e) - 1))

    start = (1 - 0.5 * k / p) / np.diag(np.linalg.inv(r))
    res = optimize.minimize(fn, start, method="L-BFGS-B", bounds=[(0.005, 1)] * p, options=dict(ftol=1e-14, gtol=1e-10))
    return res.fun


def kmo_antiimage(x: np.ndarray) -> float:
    r = np.corrcoef(x, rowvar=False)
    inv = np.linalg.inv(r)
    partial = -inv / np.sqrt(np.outer(np.diag(inv), np.diag(inv)))
    off = ~np.eye(len(r), dtype=bool)
    return float((r[off] ** 2).sum() / ((r[off] ** 2).sum() + (partial[off] ** 2).sum()))


@pytest.fixture(scope="module")
def clean_efa():
    data, groups = factor_data()
    return data, groups, S.efa(data, seed=0, factor_rule="parallel", prune=False)


# ---------------------------------------------------------------------------------------------
# cleansing


def test_too_fast_at_exactly_40_percent():
    rows = []
    for pid, dur in (("a", 240.0), ("b", 240.001), ("c", 0.0), ("d", 600.0), ("e", 239.999)):
        rows += rating_rows(pid, dur, varied())
    cl = S.cleanse(pd.DataFrame(rows)).set_index("participant_id")
    assert cl["too_fast"].to_dict() == {"a": True, "b": False, "c": True, "d": False, "e": True}
    assert cl["kept"].to_dict() == {"a": False, "b": True, "c": False, "d": True, "e": False}
    cl = S.cleanse(pd.DataFrame(rows), expected_seconds=1000).set_index("participant_id")  # boundary 400 s
    assert cl["too_fast"].to_dict() == {"a": True, "b": True, "c": True, "d": False, "e": True}
    rows = rating_rows("x", 400.0, varied()) + rating_rows("y", 400.5, varied())
    cl = S.cleanse(pd.DataFrame(rows), expected_seconds=1000).set_index("participant_id")
    assert cl["too_fast"].to_dict() == {"x": True, "y": False}


def test_straight_liner_uses_non_repeat_values_only():
    same = {("s1", f"p{j}"): 2 for j in range(5)} | {("s2", f"p{j}"): 2 for j in range(5)}
    almost = dict(same)
    almost[("s2", "p4")] = 1
    rows = (
        rating_rows("flat", 500, same, {("s1", "p0"): -3})  # the repeat differs: still a straight-liner
        + rating_rows("almost", 500, almost)
        + rating_rows("varied", 500, varied())
    )
    cl = S.cleanse(pd.DataFrame(rows)).set_index("participant_id")
    assert cl["straight_liner"].to_dict() == {"almost": False, "flat": True, "varied": False}
    assert not cl.at["flat", "kept"] and cl.at["almost", "kept"]


def test_inconsistency_score_and_outlier_fence():
    # per participant: four repeats whose |first - repeat| are these (first rating 0 or 1)
    diffs = {
        "i0": [0, 0, 0, 0],
        "i1": [1, 0, 0, 0],
        "i2": [1, 1, 0, 0],
        "i3": [0, 1, 0, 1],
        "i4": [1, 1, 1, 0],
        "i5": [2, 0, 1, 1],
        "i6": [1, 1, 1, 1],
        "at_fence": [2, 2, 2, 1],
        "above": [2, 2, 2, 2],
    }
    rows = []
    for pid, ds in diffs.items():
        firsts = {("s1", f"p{j}"): (j % 2) for j in range(6)}
        reps = {("s1", f"p{j}"): (j % 2) + d * (1 if j % 2 == 0 else -1) for j, d in enumerate(ds)}
        rows += rating_rows(pid, 500, firsts, reps)
    rows += rating_rows("no_repeats", 500, varied())
    cl = S.cleanse(pd.DataFrame(rows)).set_index("participant_id")
    expected = {pid: sum(ds) / len(ds) for pid, ds in diffs.items()}
    assert cl["inconsistency"].drop("no_repeats").to_dict() == pytest.approx(expected)
    assert math.isnan(cl.at["no_repeats", "inconsistency"])
    q1, _, q3 = statistics.quantiles(expected.values(), n=4, method="inclusive")
    fence = q3 + 1.5 * (q3 - q1)
    assert fence == 1.75 == S.inconsistency_fence(cl["inconsistency"])
    assert cl.at["at_fence", "inconsistency"] == 1.75
    assert cl["outlier"].to_dict() == {pid: pid == "above" for pid in cl.index}
    assert cl["kept"].to_dict() == {pid: pid != "above" for pid in cl.index}
    assert list(S.cleanse(pd.DataFrame(rows)).columns) == S.CLEANSING_COLUMNS


def test_several_repeats_of_a_pair_each_count_and_custom_measure():
    rows = rating_rows("a", 500, {("s1", "p0"): 0, ("s1", "p1"): 2}, {("s1", "p0"): [1, 3], ("s1", "p1"): 2})
    rows += rating_rows("b", 500, {("s1", "p0"): 0, ("s1", "p1"): 1}, {("s1", "p1"): -1})
    df = pd.DataFrame(rows)
    cl = S.cleanse(df).set_index("participant_id")
    assert cl.at["a", "inconsistency"] == pytest.approx((1 + 3 + 0) / 3)
    assert cl.at["b", "inconsistency"] == 2
    worst = S.cleanse(df, inconsistency=lambda first, repeat: float(np.max(np.abs(first - repeat))))
    assert worst.set_index("participant_id")["inconsistency"].to_dict() == {"a": 3.0, "b": 2.0}
    rms = S.cleanse(df, inconsistency="rms").set_index("participant_id")
    assert rms.at["a", "inconsistency"] == pytest.approx(math.sqrt(10 / 3))
    with pytest.raises(ValueError, match="unknown inconsistency"):
        S.cleanse(df, inconsistency="median")
    with pytest.raises(ValueError, match="expected_seconds"):
        S.cleanse(df, expected_seconds=0)


# ---------------------------------------------------------------------------------------------
# factor analysis


def test_parallel_analysis_chooses_four(clean_efa):
    data, _, res = clean_efa
    assert res.n_factors == 4 and res.n_factors_source == "parallel analysis"
    observed = np.linalg.eigvalsh(np.corrcoef(data.to_numpy(), rowvar=False))[::-1]
    assert res.eigenvalues == pytest.approx(observed.tolist())
    crit = np.array(res.pa_eigenvalues)
    assert (observed[:4] > crit[:4]).all() and observed[4] <= crit[4]
    assert crit[0] > 1 > crit[-1] and (np.diff(crit) <= 0).all()
    eig, crit95, k95 = S.parallel_analysis(data.to_numpy(), iterations=200, seed=3, percentile=95)
    _, crit_mean, k_mean = S.parallel_analysis(data.to_numpy(), iterations=200, seed=3)
    assert k95 == k_mean == 4 and (crit95 >= crit_mean).all()
    # seeded: the same criterion again
    assert S.parallel_analysis(data.to_numpy(), iterations=50, seed=7)[1] == pytest.approx(
        S.parallel_analysis(data.to_numpy(), iterations=50, seed=7)[1], abs=0
    )


def test_efa_recovers_the_four_factor_structure(clean_efa):
    data, groups, res = clean_efa
    assert list(res.loadings.columns) == ["factor_1", "factor_2", "factor_3", "factor_4"]
    assert res.items == list(data.columns) and res.pruned == [] and res.n_rows == 800
    assert same_partition(res.loadings, res.items, groups)
    dominant = res.loadings.abs().max(axis=1)
    assert (dominant > 0.5).all()
    second = res.loadings.abs().apply(lambda r: sorted(r)[-2], axis=1)
    assert (second < 0.2).all()
    assert res.communality.between(0.3, 0.85).all()
    assert res.communality.to_numpy() == pytest.approx(1 - res.uniqueness.to_numpy())
    phi = res.factor_correlations.to_numpy()
    assert np.diag(phi) == pytest.approx(np.ones(4))
    off = phi[~np.eye(4, dtype=bool)]
    assert (np.abs(off - 0.3) < 0.12).all()  # the generating factor correlation, up to sign alignment
    # variance explained: diag(Phi L'L)/p sums to the mean communality, ordered decreasing
    lam = res.loadings.to_numpy()
    # (to the optimiser's tolerance: communality is 1 - uniqueness)
    assert sum(res.variance_explained) == pytest.approx(res.communality.mean(), abs=1e-5)
    assert res.variance_explained == sorted(res.variance_explained, reverse=True)
    assert np.diag(phi @ lam.T @ lam) / 16 == pytest.approx(res.variance_explained)


def test_variance_before_rotation_as_spss_reports_it(clean_efa):
    """Paper 002, section 4.2 (Table 1): "F1 explains 53.2% of the variance. Factor 2 (F2) ...
    explains an additional 8.4% ... another 10.5% of the variance is explained by F3 ... F4 ...
    explains an additional 8.0%" - SPSS's "Extraction Sums of Squared Loadings" (% of Variance,
    before rotation; its oblique "Rotation Sums" have no % column). The result gives these beside
    the rotated shares, checked here against an independent computation: the canonical ML
    loadings rebuilt with numpy from the fitted uniquenesses (L = Psi^1/2 V (Lambda - 1)^1/2 from
    the eigen-decomposition of Psi^-1/2 R Psi^-1/2, the ML stationarity condition), and from the
    reported unrotated loadings."""
    data, _, res = clean_efa
    p = data.shape[1]
    lam = res.unrotated_loadings.to_numpy()
    assert list(res.unrotated_loadings.index) == res.items and lam.shape == (p, 4)
    # from the unrotated loadings: SS / p, cumulated
    ss = (lam**2).sum(axis=0)
    assert res.extraction_ss == pytest.approx(ss, rel=1e-9)
    assert res.extraction_variance == pytest.approx(ss / p, rel=1e-9)
    assert res.extraction_cumulative == pytest.approx(np.cumsum(ss / p), rel=1e-9)
    # rotation moves variance between factors but keeps the total (the mean communality)
    assert sum(res.extraction_variance) == pytest.approx(sum(res.variance_explained), abs=1e-6)
    # independent: the canonical ML solution from the uniquenesses, largest first
    psi = res.uniqueness.to_numpy()
    r = np.corrcoef(data.to_numpy(), rowvar=False)
    scaled = r / np.sqrt(np.outer(psi, psi))
    values, vectors = np.linalg.eigh(scaled)
    values, vectors = values[::-1][:4], vectors[:, ::-1][:, :4]
    canonical = np.sqrt(psi)[:, None] * vectors * np.sqrt(values - 1)
    expected = (canonical**2).sum(axis=0) / p
    assert res.extraction_variance == pytest.approx(expected, abs=2e-4)
    assert res.extraction_variance == sorted(res.extraction_variance, reverse=True)
    # unlike the rotated shares, the first unrotated factor takes the common part of all four
    # correlated factors (as F1's 53.2 % in the paper's Table 1)
    assert res.extraction_variance[0] > 1.5 * res.variance_explained[0]


def test_kmo_and_bartlett_match_factor_analyzer_and_formulas(clean_efa):
    from factor_analyzer import calculate_bartlett_sphericity, calculate_kmo

    data, _, res = clean_efa
    _, kmo = calculate_kmo(data)
    chi2, p = calculate_bartlett_sphericity(data)
    assert res.kmo == pytest.approx(kmo, rel=1e-12) == pytest.approx(kmo_antiimage(data.to_numpy()), rel=1e-9)
    assert res.bartlett_chi2 == pytest.approx(chi2, rel=1e-12)
    n, k = data.shape
    r = np.corrcoef(data.to_numpy(), rowvar=False)
    expected = -(n - 1 - (2 * k + 5) / 6) * np.log(np.linalg.det(r))
    assert res.bartlett_chi2 == pytest.approx(expected, rel=1e-9)
    assert res.bartlett_p == pytest.approx(stats.chi2.sf(expected, k * (k - 1) / 2), abs=1e-300) == p


def test_goodness_of_fit_against_an_independent_ml_fit(clean_efa):
    data, _, res = clean_efa
    n, p = data.shape
    r = np.corrcoef(data.to_numpy(), rowvar=False)
    f_min = factanal_min(r, 4)
    expected = (n - 1 - (2 * p + 5) / 6 - 2 * 4 / 3) * f_min
    assert res.dof == ((p - 4) ** 2 - (p + 4)) // 2 == 62
    assert res.chi2 == pytest.approx(expected, rel=1e-4, abs=1e-4)
    assert res.p == pytest.approx(stats.chi2.sf(res.chi2, 62), rel=1e-9)
    assert res.p > 0.01  # the generating model fits
    # a misspecified model (2 factors) fits much worse
    two = S.efa(data, n_factors=2, prune=False)
    assert two.n_factors_source == "given" and two.p < 1e-10
    assert two.chi2 == pytest.approx((n - 1 - (2 * p + 5) / 6 - 4 / 3) * factanal_min(r, 2), rel=1e-4)


def test_ml_fit_statistics_formula():
    rng = np.random.default_rng(5)
    lam = rng.uniform(0.3, 0.8, (6, 1))
    psi = 1 - (lam**2).ravel()
    sigma = lam @ lam.T + np.diag(psi)
    # the model's own covariance fits perfectly; a perturbed one gives the formula's value
    assert S.ml_fit_statistics(sigma, lam, psi, 200)[0] == pytest.approx(0, abs=1e-9)
    r = sigma.copy()
    r[0, 1] = r[1, 0] = r[0, 1] + 0.1
    m = np.linalg.inv(sigma) @ r
    f = np.trace(m) - np.log(np.linalg.det(m)) - 6
    chi2, dof, p = S.ml_fit_statistics(r, lam, psi, 200)
    assert dof == 9 and chi2 == pytest.approx((200 - 1 - 17 / 6 - 2 / 3) * f)
    assert p == pytest.approx(stats.chi2.sf(chi2, 9))


def test_pruning_removes_the_weak_and_the_cross_loading_item():
    data, groups = factor_data(n=900, seed=1, weak=True, cross=True)
    full = S.efa(data, seed=0, prune=False)
    assert full.n_factors == 4 and full.pruned == []
    assert full.communality["weak"] < 0.3
    res = S.efa(data, prune=True, seed=0)
    assert [s["item"] for s in res.pruned] == ["weak", "cross"]
    assert [s["reason"] for s in res.pruned] == ["low_communality", "cross_loading"]
    assert [s["step"] for s in res.pruned] == [1, 2]
    assert res.pruned[0]["communality"] < 0.3 and res.pruned[1]["loading_gap"] < 0.2
    assert "differ by" in res.pruned[1]["detail"]
    assert res.items == [c for c in data.columns if c not in ("weak", "cross")]
    assert same_partition(res.loadings, res.items, groups[:16])
    assert res.all_items == list(data.columns) and res.n_factors == 4


def test_pruning_thresholds_are_parameters():
    data, _ = factor_data(n=900, seed=1, weak=True, cross=True)
    res = S.efa(data, prune=True, min_communality=0.0, min_gap=0.0)
    assert res.pruned == []
    res = S.efa(data, prune=True, min_communality=0.3, min_gap=0.0)
    assert [s["item"] for s in res.pruned] == ["weak"]


def test_efa_errors_and_zero_variance_items():
    data, _ = factor_data(n=300)
    with pytest.raises(S.EFAError, match="not identified"):
        S.efa(data, n_factors=12)
    with pytest.raises(S.EFAError, match="whole number"):
        S.efa(data, n_factors=0)
    with pytest.raises(S.EFAError, match="more rows than items"):
        S.efa(data.iloc[:10])
    with pytest.raises(S.EFAError, match="at least 3"):
        S.efa(data.iloc[:, :2])
    flat = data.assign(const=1.0)
    flat.iloc[3, 0] = np.nan
    res = S.efa(flat, n_factors=4)
    assert res.pruned[0]["item"] == "const" and res.pruned[0]["reason"] == "zero_variance"
    assert "const" not in res.items and res.n_rows == 299 and res.n_rows_dropped == 1


# ---------------------------------------------------------------------------------------------
# preliminary study


def suit(pair: str, values) -> list[dict]:
    return [dict(participant_id=f"u{i}", pair_id=pair, suitability=v) for i, v in enumerate(values)]


def test_suitability_filter_boundaries():
    sd_12 = [2] * 4 + [3] * 6 + [4] * 2 + [5] * 14  # mean 4.0, sd exactly 1.2
    sd_above = [1] + [2] * 3 + [3] * 6 + [4] * 2 + [5] * 14  # mean 3.96, sd 1.25
    rows = (
        suit("mean_3.2", [3, 3, 3, 3, 4])
        + suit("mean_below", [3, 3, 3, 3, 3, 4])
        + suit("sd_1.2", sd_12)
        + suit("sd_above", sd_above)
        + suit("both_bad", [1, 5, 1, 5, 2])
        + suit("single", [5])
    )
    out = S.suitability_filter(pd.DataFrame(rows))
    assert list(out.columns) == S.SUITABILITY_COLUMNS
    t = out.set_index("pair_id")
    for pair, values in (("mean_3.2", [3, 3, 3, 3, 4]), ("sd_1.2", sd_12), ("sd_above", sd_above)):
        assert t.at[pair, "n"] == len(values)
        assert t.at[pair, "mean"] == pytest.approx(statistics.mean(values))
        assert t.at[pair, "sd"] == pytest.approx(statistics.stdev(values))
    assert statistics.stdev(sd_12) == pytest.approx(1.2) and statistics.stdev(sd_above) > 1.2
    assert t["kept"].to_dict() == {
        "both_bad": False,
        "mean_3.2": True,
        "mean_below": False,
        "sd_1.2": True,
        "sd_above": False,
        "single": False,
    }
    literal = S.suitability_filter(pd.DataFrame(rows), drop_if="both").set_index("pair_id")
    assert literal["kept"].to_dict() == {
        "both_bad": False,
        "mean_3.2": True,
        "mean_below": True,
        "sd_1.2": True,
        "sd_above": True,
        "single": True,
    }
    assert list(out["pair_id"]) == sorted(out["pair_id"])


@pytest.mark.parametrize(
    "rows, row, column",
    [
        ([dict(participant_id="a", pair_id="x")], 1, "suitability"),
        (
            [
                dict(participant_id="a", pair_id="x", suitability=3),
                dict(participant_id="a", pair_id="x", suitability=6),
            ],
            3,
            "suitability",
        ),
        ([dict(participant_id="a", pair_id="", suitability=3)], 2, "pair_id"),
        ([dict(participant_id="a", pair_id="x", suitability="good")], 2, "suitability"),
    ],
)
def test_suitability_filter_input_errors(rows, row, column):
    with pytest.raises(S.SDInputError) as e:
        S.suitability_filter(pd.DataFrame(rows))
    assert e.value.row == row and e.value.column == column


# ---------------------------------------------------------------------------------------------
# input

HEADER = "participant_id,sentence_id,pair_id,value,is_repeat,duration_s\n"
GOOD = "a,s1,p1,1,0,500\na,s1,p2,-3,0,500\n"


@pytest.mark.parametrize(
    "body, row, column, words",
    [
        ("participant_id,sentence_id,pair_id,value,duration_s\n" + "a,s1,p1,1,500\n", 1, "is_repeat", "missing column"),
        (HEADER + GOOD + ",s1,p3,1,0,500\n", 4, "participant_id", "empty"),
        (HEADER + GOOD + "a,,p3,1,0,500\n", 4, "sentence_id", "empty"),
        (HEADER + GOOD + "a,s1,,1,0,500\n", 4, "pair_id", "empty"),
        (HEADER + GOOD + "a,s1,p3,high,0,500\n", 4, "value", "not a number"),
        (HEADER + GOOD + "a,s1,p3,,0,500\n", 4, "value", "not a number"),
        (HEADER + GOOD + "a,s1,p3,4,0,500\n", 4, "value", "outside -3..3"),
        (HEADER + GOOD + "a,s1,p3,-3.5,0,500\n", 4, "value", "outside -3..3"),
        (HEADER + GOOD + "a,s1,p3,1,2,500\n", 4, "is_repeat", "not 0 or 1"),
        (HEADER + GOOD + "a,s1,p3,1,yes,500\n", 4, "is_repeat", "not 0 or 1"),
        (HEADER + GOOD + "a,s1,p3,1,0,-5\n", 4, "duration_s", "not a number >= 0"),
        (HEADER + GOOD + "a,s1,p3,1,0,soon\n", 4, "duration_s", "not a number >= 0"),
        (HEADER + GOOD + "a,s1,p3,1,0,501\n", 4, "duration_s", "differs"),
        (HEADER + GOOD + "a,s1,p1,2,0,500\n", 4, "is_repeat", "second first rating"),
        (HEADER + GOOD + "a,s2,p1,2,1,500\n", 4, "is_repeat", "without a first rating"),
        (HEADER + GOOD + "a,s1,p3,9,7,500\n", 4, "value", "outside"),  # first bad column of the row
    ],
)
def test_input_errors_name_file_row_column(tmp_path, body, row, column, words):
    path = tmp_path / "ratings.csv"
    path.write_text(body)
    with pytest.raises(S.SDInputError) as e:
        S.read_ratings(path)
    assert isinstance(e.value, ValueError)
    assert e.value.row == row and e.value.column == column
    msg = str(e.value)
    assert str(path) in msg and f"row {row}" in msg and f"column '{column}'" in msg and words in msg


def test_a_repeat_may_come_before_its_first_rating_in_the_file(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(HEADER + "a,s1,p1,3,1,500\n" + GOOD)
    cl = S.cleanse(S.read_ratings(p))
    assert cl["inconsistency"].tolist() == [2.0]


def test_input_file_errors(tmp_path):
    for body, words in (("", "empty file"), (HEADER, "no ratings")):
        p = tmp_path / "r.csv"
        p.write_text(body)
        with pytest.raises(S.SDInputError, match=words):
            S.read_ratings(p)
    with pytest.raises(S.SDInputError, match="file not found"):
        S.read_ratings(tmp_path / "missing.csv")


def test_read_ratings_reads_a_good_file(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(HEADER.replace("\n", ",note\n") + "a, s1 ,p1,1,0,500.5,x\na,s1,p1,-2,1,500.5,\nb,s1,p1,3.0,0,20,\n")
    df = S.read_ratings(p)
    assert list(df.columns) == S.REQUIRED
    assert df["sentence_id"].tolist() == ["s1"] * 3
    assert df["value"].tolist() == [1.0, -2.0, 3.0] and df["is_repeat"].tolist() == [0, 1, 0]
    assert df["duration_s"].tolist() == [500.5, 500.5, 20.0]


# ---------------------------------------------------------------------------------------------
# the whole analysis and its outputs


@pytest.fixture(scope="module")
def study_result():
    df = study()
    return df, S.analyze(df, seed=0)


def test_analyze_cleanses_then_factors(study_result):
    df, res = study_result
    cl = res.cleansing.set_index("participant_id")
    assert res.n_participants == 123 and res.n_ratings == len(df)
    dropped = set(cl.index[~cl["kept"]])
    assert {"P_fast", "P_straight", "P_random"} <= dropped
    assert cl.at["P_fast", "too_fast"] and cl.at["P_straight", "straight_liner"] and cl.at["P_random", "outlier"]
    assert res.n_kept == int(cl["kept"].sum()) == 123 - len(dropped)
    e = res.efa
    assert e.n_rows == 4 * res.n_kept and e.n_rows_dropped == 0
    assert len(e.items) == 16 and e.n_factors == 4
    _, _, groups = true_loadings(np.random.default_rng(0))
    assert same_partition(e.loadings, e.items, groups)
    assert res.n_ratings_kept == int(df["participant_id"].isin(cl.index[cl["kept"]]).sum())


def test_write_outputs_files_and_columns(tmp_path, study_result):
    _, res = study_result
    paths = S.write_outputs(res, tmp_path)
    assert sorted(p.name for p in paths) == [
        "cleansing.csv",
        "cleansing_summary.csv",
        "loadings.csv",
        "loadings.html",
        "scree.html",
        "summary.json",
        "variance.csv",
    ]
    var = pd.read_csv(tmp_path / "variance.csv")
    assert list(var.columns) == S.VARIANCE_COLUMNS and len(var) == 4
    assert var["extraction_share"].tolist() == pytest.approx(res.efa.extraction_variance)
    assert var["rotated_share"].tolist() == pytest.approx(res.efa.variance_explained)
    assert (tmp_path / "plotly.min.js").exists()
    for name in ("loadings.html", "scree.html"):
        html = (tmp_path / name).read_text()
        assert 'src="plotly.min.js"' in html and len(html) < 200_000
    cl = pd.read_csv(tmp_path / "cleansing.csv")
    assert list(cl.columns) == S.CLEANSING_COLUMNS and len(cl) == 123
    lo = pd.read_csv(tmp_path / "loadings.csv")
    assert list(lo.columns) == ["pair_id", "factor_1", "factor_2", "factor_3", "factor_4", "communality", "kept"]
    assert lo["kept"].all() and len(lo) == 16
    s = json.loads((tmp_path / "summary.json").read_text())
    assert list(s)[: len(S.SUMMARY_KEYS)] == S.SUMMARY_KEYS
    assert s["n_participants"] == 123 and s["factors"] == 4 and len(s["variance_explained"]) == 4
    assert s["kmo"] == pytest.approx(res.efa.kmo) and s["dof"] == 62 and s["pruned_items"] == []
    assert s["efa"]["parallel_analysis"]["criterion"] == "mean"
    before = s["efa"]["variance_before_rotation"]
    assert before["share"] == pytest.approx(res.efa.extraction_variance)
    assert before["cumulative"][-1] == pytest.approx(sum(res.efa.extraction_variance))


def test_pruned_items_in_outputs(tmp_path):
    data, _ = factor_data(n=900, seed=1, weak=True, cross=True)
    res = S.SDResult(
        cleansing=pd.DataFrame(columns=S.CLEANSING_COLUMNS),
        efa=S.efa(data, prune=True),
        n_participants=0,
        n_kept=0,
        n_ratings=0,
    )
    S.write_outputs(res, tmp_path)
    lo = pd.read_csv(tmp_path / "loadings.csv").set_index("pair_id")
    assert not lo.at["weak", "kept"] and math.isnan(lo.at["weak", "factor_1"])
    assert lo.at["weak", "communality"] == pytest.approx(res.efa.pruned[0]["communality"])
    s = json.loads((tmp_path / "summary.json").read_text())
    assert [p["item"] for p in s["pruned_items"]] == ["weak", "cross"]


def test_figures(study_result):
    _, res = study_result
    figs = S.figures(res)
    assert set(figs) == {"loadings", "scree"}
    heat = figs["loadings"].data[0]
    assert np.asarray(heat.z).shape == (16, 4)
    names = [t.name for t in figs["scree"].data]
    assert names[0] == "observed" and names[1].startswith("parallel analysis")
    assert list(figs["scree"].data[1].y) == pytest.approx(res.efa.pa_eigenvalues)


def test_run_cli(tmp_path):
    df = study(seed=2, participants=60, plants=True)
    csv = tmp_path / "ratings.csv"
    df.to_csv(csv, index=False)
    text = S.run_cli(csv, tmp_path / "out", n_factors=4, prune=True)
    assert "63 participants" in text and "4 factor(s) (given)" in text and "7 files written" in text
    assert "before rotation (SPSS's extraction sums of squared loadings)" in text
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["n_participants"] == 63 and s["factors"] == 4


def test_no_participant_kept_gives_outputs_without_efa(tmp_path):
    rows = rating_rows("a", 100, varied()) + rating_rows("b", 100, varied())
    res = S.analyze(pd.DataFrame(rows))
    assert res.efa is None and res.n_kept == 0 and "no participant" in res.efa_error
    paths = S.write_outputs(res, tmp_path)
    assert sorted(p.name for p in paths) == ["cleansing.csv", "cleansing_summary.csv", "loadings.csv", "summary.json"]
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["factors"] is None and s["n_kept"] == 0 and s["efa_error"]
    assert "EFA not run" in S.summary(res)


@pytest.mark.slow
def test_ml_fit_finds_the_best_of_local_optima():
    """Misspecified models have local optima; the fit keeps the best of several starts and is at
    least as good as the independent factanal-style optimisation."""
    from threadpoolctl import threadpool_limits

    data, _ = factor_data(n=900, seed=1, weak=True, cross=True)
    r = np.corrcoef(data.to_numpy(), rowvar=False)
    for k in (1, 2, 3, 4, 5):
        with threadpool_limits(limits=1, user_api="blas"):  # as efa() runs it: much faster on small matrices
            load, uniq, f = S.ml_extract(r, k, len(data))
        m = np.linalg.solve(load @ load.T + np.diag(uniq), r)
        assert f == pytest.approx(np.trace(m) - np.linalg.slogdet(m)[1] - len(r))
        assert f <= factanal_min(r, k) + 1e-7
