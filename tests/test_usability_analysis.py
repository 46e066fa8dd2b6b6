"""services.usability.analysis against independent computations on seeded generated data:
groups.csv against a pandas groupby, Spearman against scipy, the LMM against known
coefficients (the scale of paper 000's Table 4) and against statsmodels' own (unpatched)
solver, thresholds against a known linear relation, input errors naming file/row/column."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.usability import analysis as U
from tests.helpers.usability import (
    INTERCEPT,
    U_B,
    WOMAN,
    generate,
    items_for,
)

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

TRUE = {
    "Intercept": INTERCEPT,
    "system: Phi 4": 0.069,
    "system: Tower+": 0.644,
    "system: Voxtral": 0.733,
    "topic: Health": 0.332,
    "corpus: Gemini": -0.541,
    "corpus: MED-MT": -0.343,
    "corpus: Qwen 3": -0.452,
    "u_b": U_B,
    "group: USB": 0.136,
    "group: USW": 0.131,
    "gender: Woman": WOMAN,
    "group: USB x gender: Woman": 0.070,
    "group: USW x gender: Woman": 0.363,
}


@pytest.fixture(scope="module")
def small():
    return generate(seed=1, senders_per_cell=8, per_sender=10, receivers=20, validators=20)


@pytest.fixture(scope="module")
def small_result(small):
    return U.analyze(small, pa_iterations=50)


@pytest.fixture(scope="module")
def paper_size():
    return generate(seed=0)


# ---------------------------------------------------------------------------------------------
# descriptive tables


def test_groups_equal_pandas_groupby(small, small_result):
    d = small.copy()
    d["u"] = d[U.ITEMS].mean(axis=1)
    d["u_b"] = d[U.BASELINE_ITEMS].mean(axis=1)
    g = result_groups = small_result.groups
    for by, keys in (
        ("group", ["group"]),
        ("group x gender", ["group", "gender"]),
        ("system", ["system"]),
        ("topic", ["topic"]),
    ):
        exp = d.groupby(keys).agg(
            n=("u", "size"),
            S=("satisfaction", "mean"),
            T=("trust", "mean"),
            R=("reliance", "mean"),
            mu_u=("u", "mean"),
            sigma_u=("u", "std"),
            mu_ub=("u_b", "mean"),
            usable_share=("u", lambda x: (x >= 4).mean()),
        )
        exp["delta_u"] = exp["mu_u"] - exp["mu_ub"]
        exp.index = [" x ".join(k) if isinstance(k, tuple) else k for k in exp.index]
        got = g[g["by"] == by].set_index("level")
        assert list(got.index) == list(exp.index)
        for c in exp.columns:
            np.testing.assert_allclose(got[c].to_numpy(float), exp[c].to_numpy(float), rtol=1e-12, err_msg=c)
    allrow = result_groups[result_groups["by"] == "all"].iloc[0]
    assert allrow["n"] == len(d)
    assert allrow["sigma_u"] == pytest.approx(np.std(d["u"], ddof=1))


def test_spearman_equals_scipy(small, small_result):
    c = small_result.correlations.set_index("signal")
    assert list(c.index) == ["translation_score", "qa_score", "metric_comet", "metric_metricx24"]
    u = small[U.ITEMS].mean(axis=1)
    for s in c.index:
        ok = small[s].notna()
        r = stats.spearmanr(u[ok], small.loc[ok, s])
        assert c.at[s, "spearman_rho_raw"] == pytest.approx(r.statistic, abs=1e-12)
        sign = -1 if s == "metric_metricx24" else 1  # MetricX: lower is better, reported oriented
        assert c.at[s, "spearman_rho"] == pytest.approx(sign * r.statistic, abs=1e-12)
        assert c.at[s, "p_value"] == pytest.approx(r.pvalue, rel=1e-9)
        assert c.at[s, "n"] == ok.sum()
    assert c.at["metric_comet", "n"] == len(small) - 1
    m = small_result.correlation_matrix
    assert m.at["u", "qa_score"] == pytest.approx(stats.spearmanr(u, small["qa_score"]).statistic)
    assert m.at["u", "metric_metricx24"] == pytest.approx(-stats.spearmanr(u, small["metric_metricx24"]).statistic)


# ---------------------------------------------------------------------------------------------
# LMM


@pytest.fixture(scope="module")
def paper_fit(paper_size):
    d = U.normalise(paper_size)
    return d, U.fit_lmm(d)


def test_lmm_recovers_known_coefficients(paper_fit):
    """Each true coefficient lies in its 95% Wald CI. One seed's 14 intervals all cover with
    probability ~0.95^14 ~ 0.5 only, so this checks four seeds: every coefficient covered in
    at least 3 of 4, and at least 85% of the 56 intervals (nominal 95%)."""
    d, fit = paper_fit
    assert fit.converged
    assert fit.n == len(d) == 1740
    t = fit.table.set_index("term")
    assert set(t.index) == set(TRUE)
    covered = {k: 0 for k in TRUE}
    fits = [fit] + [U.fit_lmm(U.normalise(generate(seed=s))) for s in (1, 2, 3)]
    for f in fits:
        assert f.converged
        t = f.table.set_index("term")
        for k, v in TRUE.items():
            covered[k] += bool(t.at[k, "ci_low"] <= v <= t.at[k, "ci_high"])
    assert min(covered.values()) >= 3, covered
    assert sum(covered.values()) >= 0.85 * 4 * len(TRUE), covered
    assert set(fit.variance_components) == {"sender", "validator", "receiver"}
    assert fit.variance_components["sender"]["levels"] == 174
    # the generating variances: sender 0.35^2, validator and receiver 0.15^2; residual 0.6^2 + rounding
    assert fit.variance_components["sender"]["variance"] == pytest.approx(0.35**2, abs=0.05)
    for name in ("validator", "receiver"):
        assert fit.variance_components[name]["variance"] == pytest.approx(0.15**2, abs=0.02)
    assert fit.residual_variance == pytest.approx(0.36, abs=0.06)


def test_lmm_equals_statsmodels_formula_fit(small):
    """The patched solver and hand-built design give statsmodels' own formula fit (dense, unpatched)."""
    import statsmodels.formula.api as smf

    d = U.normalise(small)
    fit = U.fit_lmm(d)
    x = d.copy()
    for f, lv in fit.factors.items():
        x[f] = pd.Categorical(x[f], categories=lv)
    x["one"] = 1
    vc = {"sender": "0 + C(sender_id)", "validator": "0 + C(validator_id)", "receiver": "0 + C(receiver_id)"}
    ref = smf.mixedlm(
        "u ~ system + topic + corpus + u_b + group * gender", x, groups="one", vc_formula=vc, re_formula="0"
    ).fit(reml=True)

    def readable(name):  # patsy's "group[T.USW]:gender[T.Woman]" -> "group: USW x gender: Woman"
        return " x ".join(re.sub(r"^(\w+)\[T\.(.*)\]$", r"\1: \2", p) for p in name.split(":"))

    est = ref.fe_params.rename(readable)
    se = ref.bse_fe.rename(readable)
    t = fit.table.set_index("term")
    assert set(t.index) == set(est.index)
    np.testing.assert_allclose(t["estimate"].to_numpy(), est[t.index].to_numpy(), atol=1e-5)
    np.testing.assert_allclose(t["std_error"].to_numpy(), se[t.index].to_numpy(), atol=1e-5)
    k = len(ref.fe_params)
    np.testing.assert_allclose(t["z"].to_numpy(), ref.tvalues.iloc[:k].rename(readable)[t.index], rtol=1e-4)
    np.testing.assert_allclose(t["p_value"].to_numpy(), ref.pvalues.iloc[:k].rename(readable)[t.index], atol=1e-5)
    assert fit.llf == pytest.approx(ref.llf, abs=1e-6)
    got = [fit.variance_components[k]["variance"] for k in ("receiver", "sender", "validator")]
    np.testing.assert_allclose(got, ref.vcomp, atol=1e-5)  # statsmodels sorts the names


def test_marginal_means_and_text(small_result):
    mm = small_result.marginal_means
    assert len(mm) == 6 and list(mm.columns) == U.MARGINAL_COLUMNS
    assert (mm["ci_low"] < mm["mean"]).all() and (mm["mean"] < mm["ci_high"]).all()
    # Hindi x Man (all references) with equal weights over the other factors, u_b at its mean
    fit = small_result.lmm
    b = fit.table.set_index("term")["estimate"]
    sysm = np.mean([0] + [b[f"system: {s}"] for s in fit.factors["system"][1:]])
    topm = np.mean([0] + [b[f"topic: {s}"] for s in fit.factors["topic"][1:]])
    srcm = np.mean([0] + [b[f"corpus: {s}"] for s in fit.factors["corpus"][1:]])
    exp = b["Intercept"] + sysm + topm + srcm + b["u_b"] * small_result.data["u_b"].mean()
    row = mm[(mm["group"] == "Hindi") & (mm["gender"] == "Man")].iloc[0]
    assert row["mean"] == pytest.approx(exp, abs=1e-9)
    text = U.lmm_text(fit)
    assert "one all-covering group" in text and "sender:" in text and "converged: yes" in text


def test_metric_effects(small_result):
    e = small_result.metric_effects.set_index("signal")
    assert list(e.index) == small_result.signals
    assert (e["effect_lmm"] > 0).all()  # oriented: 1 = best quality, metricx reversed
    assert e.at["metric_metricx24", "orientation"] == "lower is better"
    assert e[["effect_low", "effect_mid", "effect_high"]].notna().all().all()
    assert e.at["metric_comet", "n_lmm"] == len(small_result.data) - 1


def test_signal_lmm_equals_statsmodels_formula_fit(small_result):
    """The per-signal LMM (warm-started from the main fit, patched solver) equals statsmodels'
    stock formula fit with the rescaled signal added."""
    import statsmodels.formula.api as smf

    d = small_result.data
    fit = small_result.lmm
    signal = "metric_comet"
    x = d.copy()
    for f, lv in fit.factors.items():
        x[f] = pd.Categorical(x[f], categories=lv)
    x["one"] = 1
    x["sig"] = (d[signal] - d[signal].min()) / (d[signal].max() - d[signal].min())
    x = x[x["sig"].notna()]
    vc = {"sender": "0 + C(sender_id)", "validator": "0 + C(validator_id)", "receiver": "0 + C(receiver_id)"}
    ref = smf.mixedlm(
        "u ~ system + topic + corpus + u_b + group * gender + sig", x, groups="one", vc_formula=vc, re_formula="0"
    ).fit(reml=True)
    e = small_result.metric_effects.set_index("signal")
    assert e.at[signal, "effect_lmm"] == pytest.approx(ref.fe_params["sig"], abs=1e-5)
    assert e.at[signal, "p_lmm"] == pytest.approx(ref.pvalues["sig"], abs=1e-5)
    assert e.at[signal, "n_lmm"] == len(x)


def test_tertile_ols_holds_the_covariates_constant(small_result):
    """Table 2's caption: the tertile effects hold the other covariates constant. Each equals
    statsmodels' formula OLS (patsy's own design) of u on the rescaled signal and the LMM's fixed
    effects within the translation-score tertile, with its SE, t, p, CI and n; it is not the
    simple slope of u on the signal."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    d = small_result.data
    tert = pd.qcut(d["translation_score"], 3, labels=["low", "mid", "high"])
    e = small_result.metric_effects.set_index("signal")
    est = small_result.effect_estimates.set_index(["signal", "fit"])
    for signal, lower in (("qa_score", False), ("metric_metricx24", True)):
        x = (d[signal] - d[signal].min()) / (d[signal].max() - d[signal].min())
        x = 1 - x if lower else x
        for t in ("low", "mid", "high"):
            sub = d[(tert == t).to_numpy()].assign(sig=x)
            ref = smf.ols("u ~ sig + system + topic + corpus + u_b + group * gender", sub).fit()
            assert e.at[signal, f"effect_{t}"] == pytest.approx(ref.params["sig"], rel=1e-9)
            assert e.at[signal, f"p_{t}"] == pytest.approx(ref.pvalues["sig"], rel=1e-7)
            r = est.loc[(signal, t)]
            assert r["std_error"] == pytest.approx(ref.bse["sig"], rel=1e-9)
            assert r["statistic"] == pytest.approx(ref.tvalues["sig"], rel=1e-9)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx(tuple(ref.conf_int().loc["sig"]), rel=1e-9)
            assert r["n"] == e.at[signal, f"n_{t}"] == len(sub)
            assert r["test"] == U.OLS_T and "u_b + group * gender" in r["covariates"]
            simple = sm.OLS(sub["u"], sm.add_constant(sub["sig"])).fit().params["sig"]
            assert abs(simple - ref.params["sig"]) > 1e-3
    # the LMM rows of the long table are metric_effects' effect_lmm, with the LMM's Wald z
    lmm = est.xs("lmm", level="fit")
    np.testing.assert_allclose(lmm["estimate"], e.loc[lmm.index, "effect_lmm"], rtol=1e-12)
    assert (lmm["test"] == U.WALD_Z).all()
    assert lmm.at["qa_score", "statistic"] == pytest.approx(
        lmm.at["qa_score", "estimate"] / lmm.at["qa_score", "std_error"], rel=1e-9
    )


# ---------------------------------------------------------------------------------------------
# thresholds


def test_threshold_recovers_known_crossing():
    rng = np.random.default_rng(3)
    n = 3000
    x = rng.uniform(0, 1, n)
    latent = 1.5 + 3.0 * x + rng.normal(0, 0.4, n)  # u = 4 at x = 5/6
    it = items_for(rng, np.clip(latent, 1, 5))
    curve = U.monotone_curve(x, it.mean(axis=1))
    value, note = U.crossing(curve)
    assert note == ""
    assert value == pytest.approx(5 / 6, abs=0.03)
    # decreasing (lower is better): the same relation mirrored
    curve = U.monotone_curve(1 - x, it.mean(axis=1), increasing=False)
    value, _ = U.crossing(curve, increasing=False)
    assert value == pytest.approx(1 / 6, abs=0.03)


def test_threshold_never_reached():
    curve = U.monotone_curve([0, 1, 2, 3], [1, 2, 2.5, 3])
    value, note = U.crossing(curve)
    assert math.isnan(value) and "below" in note


# ---------------------------------------------------------------------------------------------
# factor analysis


def test_factor_analysis(small_result):
    f = small_result.factor
    for level in ("within", "between"):
        x = f[level]
        assert 0 < x["kmo"] <= 1 and x["bartlett_p"] < 0.05
        assert x["parallel_analysis"]["factors_retained"] >= 1
        assert 0 < x["variance_explained_one_factor"] <= 1
    assert f["between"]["n"] == small_result.data["sender_id"].nunique()
    assert f["within"]["n"] == len(small_result.data)


# ---------------------------------------------------------------------------------------------
# input errors


def _write(tmp_path, df):
    p = tmp_path / "exchanges.csv"
    df.to_csv(p, index=False)
    return p


def test_missing_column(tmp_path, small):
    p = _write(tmp_path, small.drop(columns=["trust_b"]))
    with pytest.raises(U.UsabilityInputError) as e:
        U.read_exchanges(p)
    assert str(p) in str(e.value) and "row 1" in str(e.value) and "column 'trust_b'" in str(e.value)


@pytest.mark.parametrize(
    "col,value,problem",
    [
        ("trust", 6, "not a whole number in 1..5"),
        ("reliance_b", 0, "not a whole number in 1..5"),
        ("satisfaction", 3.5, "not a whole number in 1..5"),
        ("translation_score", 101, "not in 0-100"),
        ("translation_score", -1, "not in 0-100"),
        ("qa_score", 1.2, "not in 0-1"),
    ],
)
def test_out_of_range(tmp_path, small, col, value, problem):
    d = small.copy()
    d[col] = d[col].astype(float)
    d.loc[4, col] = value
    p = _write(tmp_path, d)
    with pytest.raises(U.UsabilityInputError) as e:
        U.read_exchanges(p)
    msg = str(e.value)
    assert str(p) in msg and "row 6" in msg and f"column '{col}'" in msg and problem in msg
    assert e.value.row == 6 and e.value.column == col


def test_other_input_errors(small):
    d = small.copy()
    d.loc[2, "gender"] = "Woman" if d.loc[2, "gender"] == "Man" else "Man"
    with pytest.raises(U.UsabilityInputError, match="row 4, column 'gender'"):
        U.normalise(d, "x.csv")
    d = small.copy()
    d["perspective"] = "first"
    d.loc[0, "perspective"] = "second"
    with pytest.raises(U.UsabilityInputError, match="row 2, column 'perspective'"):
        U.normalise(d, "x.csv")
    d = small.copy()
    d.loc[7, "exchange_id"] = d.loc[1, "exchange_id"]
    with pytest.raises(U.UsabilityInputError, match="row 9, column 'exchange_id'"):
        U.normalise(d, "x.csv")


def test_speaker_may_be_empty_the_respondent_may_not(small):
    """An exchange without a sender (imported) has no speaker group or gender: allowed. Every
    survey has a respondent: respondent_id, or without that column the sender."""
    d = small.copy()
    d.loc[[3, 5], ["sender_id", "group", "gender"]] = ""
    with pytest.raises(U.UsabilityInputError, match="row 5, column 'sender_id': empty value .without a respondent_id"):
        U.normalise(d, "x.csv")
    d["respondent_id"] = small["sender_id"]
    d.loc[[3, 5], "respondent_id"] = ["rater-1", "rater-2"]
    x = U.normalise(d, "x.csv")
    assert x.loc[3, "group"] == "" and x.loc[3, "respondent_id"] == "rater-1"
    assert (x["starter_id"] == "").all() and (x["respondent_role"] == "").all()
    d.loc[7, "respondent_id"] = ""
    with pytest.raises(U.UsabilityInputError, match="row 9, column 'respondent_id': empty value"):
        U.normalise(d, "x.csv")
    # without the column the sender is the respondent (first person, as before)
    x = U.normalise(small)
    assert (x["respondent_id"] == x["sender_id"]).all()


def test_rows_without_a_speaker_in_tables_figures_and_the_lmm(small):
    d = small.copy()
    d["respondent_id"] = d["sender_id"]
    d.loc[:9, ["sender_id", "group", "gender"]] = ""
    res = U.analyze(d, pa_iterations=20, metric_lmm=False)
    g = res.groups
    assert g[(g["by"] == "group x gender") & (g["level"] == "(none) x (none)")]["n"].tolist() == [10]
    assert res.lmm.n == len(d) - 10 and res.lmm.rows_left_out == {"no sender": 10}
    assert f"10 of {len(d)} rows left out (no sender: 10)" in U.lmm_text(res.lmm)
    assert any(n.startswith(f"LMM: 10 of {len(d)} rows left out (no sender: 10)") for n in res.notes)
    assert "(none)" not in set(res.marginal_means["group"]) and res.marginal_means["n"].sum() == len(d) - 10
    assert "(none)" in set(U.figures(res)["u_distribution"].data[0].x)
    assert res.factor["person"] == "respondent_id" and res.factor["between"]["n"] == d["respondent_id"].nunique()


# ---------------------------------------------------------------------------------------------
# outputs


def test_run_cli_writes_outputs(tmp_path, small):
    d = small.copy()
    d["perspective"] = np.where(np.arange(len(d)) % 5 == 0, "third", "first")
    p = _write(tmp_path, d)
    out = tmp_path / "out"
    text = U.run_cli(p, out)
    assert "Usability analysis" in text and "LMM" in text
    for name in (
        "groups.csv",
        "correlations.csv",
        "lmm.csv",
        "lmm.txt",
        "metric_effects.csv",
        "thresholds.csv",
        "perspective.csv",
        "perspective.txt",
        "factor.json",
        "marginal_means.csv",
        "u_distribution.html",
        "baseline_shift.html",
        "usable_share.html",
        "quality.html",
        "correlations.html",
        "thresholds.html",
        "marginal_means.html",
        "plotly.min.js",
        "score_lmm.csv",
        "score_lmm.txt",
        "score_marginal_means.csv",
        "contrasts.csv",
        "metric_effect_estimates.csv",
        "score_lmm.html",
        "score_marginal_means.html",
        "contrasts.html",
        "metric_effects.html",
    ):
        assert (out / name).exists(), name
    lmm = pd.read_csv(out / "lmm.csv")
    assert list(lmm.columns) == U.LMM_COLUMNS
    # which test the p-values come from, on every row (the paper's lme4 gave Satterthwaite t)
    assert (lmm["test"] == "Wald z (statsmodels MixedLM, REML; normal reference)").all()
    np.testing.assert_allclose(lmm["z"], lmm["estimate"] / lmm["std_error"], rtol=1e-9)
    assert "Satterthwaite" in (out / "lmm.txt").read_text() and "pymer4" in (out / "lmm.txt").read_text()
    assert list(pd.read_csv(out / "score_lmm.csv").columns) == U.LMM_COLUMNS
    assert "translation_score ~ system + topic + corpus + group * gender" in (out / "score_lmm.txt").read_text()
    assert list(pd.read_csv(out / "contrasts.csv").columns) == U.C.CONTRAST_COLUMNS
    assert set(pd.read_csv(out / "contrasts.csv")["outcome"]) == {"u", "translation_score"}
    assert list(pd.read_csv(out / "metric_effect_estimates.csv").columns) == U.ESTIMATE_COLUMNS
    assert "score LMM (validator's DA+SQM" in text and "Holm-adjusted p < 0.05" in text
    assert list(pd.read_csv(out / "correlations.csv").columns) == U.CORRELATION_COLUMNS
    assert list(pd.read_csv(out / "thresholds.csv").columns)[:2] == ["signal", "value_at_u4"]
    assert list(pd.read_csv(out / "metric_effects.csv").columns)[:5] == [
        "signal",
        "effect_lmm",
        "effect_low",
        "effect_mid",
        "effect_high",
    ]
    assert "perspective" in set(pd.read_csv(out / "groups.csv")["by"])
    f = json.loads((out / "factor.json").read_text())
    assert f["within"]["parallel_analysis"]["iterations"] == 500
    assert f["within"]["parallel_analysis"]["percentile"] == 95


def test_figures(small_result):
    figs = U.figures(small_result)
    assert set(figs) == {
        "u_distribution",
        "baseline_shift",
        "usable_share",
        "quality",
        "correlations",
        "thresholds",
        "marginal_means",
        "score_lmm",
        "score_marginal_means",
        "contrasts",
        "metric_effects",
        "lmm_coefficients",
        "model_means",
    }  # the last two: paper 000 Figures 2b and 10
    # error bars: each point's 95% CI
    c = small_result.contrasts
    first = c[c["outcome"] == "u"].iloc[::-1]
    bars = figs["contrasts"].data[0].error_x
    np.testing.assert_allclose(bars.array, first["ci_high"] - first["estimate"])
    np.testing.assert_allclose(bars.arrayminus, first["estimate"] - first["ci_low"])
    t = small_result.score_lmm.table
    t = t[t["term"] != "Intercept"].iloc[::-1]
    assert list(figs["score_lmm"].data[0].y) == list(t["term"])
    np.testing.assert_allclose(figs["score_lmm"].data[0].error_x.array, t["ci_high"] - t["estimate"])
    mm = small_result.score_marginal_means
    man = figs["score_marginal_means"].data[0]
    np.testing.assert_allclose(man.y, mm[mm["gender"] == "Man"]["mean"])
    assert [tr.name for tr in figs["metric_effects"].data] == [
        "LMM",
        "OLS, low tertile",
        "OLS, mid tertile",
        "OLS, high tertile",
    ]
