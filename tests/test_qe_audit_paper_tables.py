"""The audit's tables as paper 003 prints them (issue 20, point 4): "mean across languages" rows
(Table 1: "Mean results across eight languages"; Table 4: "Results are averaged across all
languages"), the pooled sample only as a row labelled "pooled", and Phi with a p-value beside its
bootstrap interval.

Expected values are computed here independently: per-language means with the statistics module,
the 2x2 chi-square with Yates' correction from its formula (scipy.stats.chi2.sf for the tail),
the one-sided Fisher exact p from the hypergeometric tail (scipy.stats.hypergeom), the
Cochran-Mantel-Haenszel statistic from its textbook formula, and the bootstrap interval of the
mean Phi through scipy's non-vectorised path and a plain numpy resampling loop."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.qe import audit as Q


def _frame(spec, seed=5) -> pd.DataFrame:
    """spec: {lang: (n, p_error_f, p_error_m)}: gold alternates F/M; the right form scores 0.8,
    the wrong one 0.9 (an error) or 0.7 (right), drawn per instance."""
    rng = np.random.default_rng(seed)
    rows = []
    for lang, (n, pf, pm) in spec.items():
        for i in range(n):
            gold = "F" if i % 2 == 0 else "M"
            err = rng.random() < (pf if gold == "F" else pm)
            right = rng.uniform(0.6, 0.9)
            wrong = right + (0.05 if err else -0.05)
            f, m = (right, wrong) if gold == "F" else (wrong, right)
            rows.append(
                {
                    "instance_id": str(i),
                    "lang": lang,
                    "source": f"s{i}",
                    "hyp_f": f"f{i}",
                    "hyp_m": f"m{i}",
                    "gold": gold,
                    "score_f": f,
                    "score_m": m,
                }
            )
    return pd.DataFrame(rows)


SPEC = {"de": (40, 0.6, 0.35), "es": (120, 0.3, 0.25), "it": (60, 0.8, 0.45)}


def test_mean_rows_average_the_languages_and_pooled_is_labelled():
    df = _frame(SPEC)
    rat = Q.ratios(df)
    rat = rat[rat["source_gender"] == "any"]
    assert list(rat["lang"]) == ["de", "es", "it", "mean", "pooled"]
    assert list(rat["aggregate"]) == ["language"] * 3 + ["mean across languages", "pooled instances"]
    per_lang = {lang: statistics.fmean(g["score_f"] / g["score_m"]) for lang, g in df.groupby("lang")}
    mean = rat.set_index("lang").loc["mean"]
    assert mean["mean_ratio"] == pytest.approx(statistics.fmean(per_lang.values()), rel=1e-12)
    pooled = rat.set_index("lang").loc["pooled"]
    assert pooled["mean_ratio"] == pytest.approx(statistics.fmean(df["score_f"] / df["score_m"]), rel=1e-12)
    assert mean["mean_ratio"] != pytest.approx(pooled["mean_ratio"], rel=1e-9)  # unequal n: they differ
    assert mean["n"] == len(df) and math.isnan(mean["ci_low"]) and math.isnan(mean["p_value"])

    err = Q.errors(df).set_index("lang")
    assert list(err.index) == ["de", "es", "it", "mean", "pooled"]
    er = {}
    for lang, g in df.groupby("lang"):
        wrong = np.where(g["gold"] == "F", g["score_m"], g["score_f"])
        right = np.where(g["gold"] == "F", g["score_f"], g["score_m"])
        e = wrong >= right
        ef, em = e[g["gold"].to_numpy() == "F"].mean(), e[g["gold"].to_numpy() == "M"].mean()
        er[lang] = (e.mean(), ef, em, ef / em)
    for k, col in enumerate(("er", "er_f", "er_m", "phi")):
        assert err.loc["mean", col] == pytest.approx(statistics.fmean(v[k] for v in er.values()), rel=1e-12)
    # Table 4's Phi is the mean of the languages' Phi, not the ratio of the mean error rates
    assert err.loc["mean", "phi"] != pytest.approx(err.loc["mean", "er_f"] / err.loc["mean", "er_m"], rel=1e-6)
    assert err.loc["mean", "aggregate"] == "mean across languages"
    assert err.loc["pooled", "aggregate"] == "pooled instances"

    ret = Q.retention(df, [0.8]).table.set_index("lang")
    shares = [((g["score_f"] >= 0.8).mean(), (g["score_m"] >= 0.8).mean()) for _, g in df.groupby("lang")]
    assert ret.loc["mean", "share_f"] == pytest.approx(statistics.fmean(s[0] for s in shares))
    assert ret.loc["mean", "share_m"] == pytest.approx(statistics.fmean(s[1] for s in shares))


def _chi2_yates_p(a, b, c, d) -> float:
    n = a + b + c + d
    r1, r2, c1, c2 = a + b, c + d, a + c, b + d
    stat = n * max(0.0, abs(a * d - b * c) - n / 2) ** 2 / (r1 * r2 * c1 * c2)
    return float(stats.chi2.sf(stat, 1))


def _fisher_greater_p(a, b, c, d) -> float:
    # P(X >= a), X ~ hypergeometric(total n, column-1 total a + c, row-1 draws a + b)
    return float(stats.hypergeom.sf(a - 1, a + b + c + d, a + c, a + b))


def _cmh_p(tables) -> float:
    num = var = 0.0
    for (a, b), (c, d) in tables:
        n = a + b + c + d
        num += a - (a + b) * (a + c) / n
        var += (a + b) * (c + d) * (a + c) * (b + d) / (n * n * (n - 1))
    stat = (abs(num) - 0.5) ** 2 / var
    return float(stats.chi2.sf(stat, 1))


def test_phi_has_a_p_value_checked_against_independent_formulas():
    df = _frame(SPEC)
    err = Q.errors(df).set_index("lang")
    tables = []
    for lang in ("de", "es", "it", "pooled"):
        r = err.loc[lang]
        a, b = int(r["errors_f"]), int(r["n_f"] - r["errors_f"])
        c, d = int(r["errors_m"]), int(r["n_m"] - r["errors_m"])
        assert r["phi_p_value"] == pytest.approx(_chi2_yates_p(a, b, c, d), rel=1e-9)
        assert r["phi_p_greater"] == pytest.approx(_fisher_greater_p(a, b, c, d), rel=1e-9)
        assert "chi-square" in r["phi_test"]
        if lang != "pooled":
            tables.append(((a, b), (c, d)))
    assert err.loc["mean", "phi_p_value"] == pytest.approx(_cmh_p(tables), rel=1e-9)
    assert "Mantel-Haenszel" in err.loc["mean", "phi_test"]
    # it (0.6 vs 0.1) is clearly significant; the one-sided p is smaller than the two-sided one there
    assert err.loc["it", "phi_p_greater"] < err.loc["it", "phi_p_value"] < 0.05


def test_mean_phi_bootstrap_interval():
    df = _frame(SPEC)
    err = Q.errors(df, seed=2).set_index("lang")
    row = err.loc["mean"]
    assert row["phi_ci_low"] < row["phi"] < row["phi_ci_high"] and row["phi_ci_note"] == ""
    per = Q.instance_errors(df).assign(lang=df["lang"], gold=df["gold"])
    samples = []
    for lang in ("de", "es", "it"):
        g = per[per["lang"] == lang]
        samples += [
            g.loc[g["gold"] == "F", "error"].astype(float).to_numpy(),
            g.loc[g["gold"] == "M", "error"].astype(float).to_numpy(),
        ]

    def mean_phi(*xs):
        return np.mean([np.mean(xs[i]) / np.mean(xs[i + 1]) for i in range(0, len(xs), 2)])

    ref = stats.bootstrap(
        tuple(samples), mean_phi, n_resamples=1000, method="percentile", vectorized=False, rng=np.random.default_rng(2)
    )
    assert row["phi_ci_low"] == pytest.approx(ref.confidence_interval.low)
    assert row["phi_ci_high"] == pytest.approx(ref.confidence_interval.high)
    rng = np.random.default_rng(99)
    boot = [mean_phi(*[rng.choice(x, len(x)) for x in samples]) for _ in range(3000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    assert row["phi_ci_low"] == pytest.approx(lo, rel=0.15) and row["phi_ci_high"] == pytest.approx(hi, rel=0.15)


def test_summary_leads_with_the_mean_rows_and_names_them(tmp_path):
    df = _frame(SPEC)
    result = Q.audit(df, thresholds=[0.8])
    summary = Q.summary_dict(result)
    assert [r["lang"] for r in summary["errors"]] == ["mean", "pooled"]
    assert "mean across languages" in summary["method"]["aggregates"] or "mean" in summary["method"]["aggregates"]
    text = Q.summary(result)
    assert "mean: ER" in text and "pooled: ER" in text and "p " in text
    Q.write_outputs(result, tmp_path, png=False)
    back = pd.read_csv(tmp_path / "errors.csv")
    assert {"phi_p_value", "phi_p_greater", "aggregate"} <= set(back.columns)
