"""The first- vs third-person analysis (paper 000 appendix A.1) of services.usability.analysis
on seeded simulated studies of the paper's size (1,358 first-person and 380 third-person
surveys: 38 of 174 senders dropped out, raters answered their exchanges' surveys): equal to
statsmodels' own formula fit, a planted perspective effect recovered within its 95% CI, a
null effect not significant, and rows without a speaker left out and counted."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from services.usability import analysis as U
from tests.helpers.usability import SYSTEMS, items_for

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

GROUP_FX = {"Hindi": 0.0, "USB": 0.15, "USW": 0.10}
WOMAN = -0.2
TS_SLOPE = 0.01  # per translation-score point (0-100)
QA_SLOPE = 0.8  # per unit of QA score (0-1)
INTERCEPT = 2.1


def simulate(
    seed=0,
    perspective_effect=0.0,
    senders_per_cell=29,
    per_sender=10,
    dropped=38,
    raters=38,
    starters=100,
    sd_respondent=0.35,
    sd_starter=0.15,
    sd_resid=0.5,
    short=2,
):
    """One row per exchange. The first `dropped` senders (in a seeded order) dropped out: raters
    answered their exchanges' surveys (third person), each rater a random share of them. `short`
    senders who stayed have one exchange fewer (paper size: 1,358 + 380 = 1,738)."""
    rng = np.random.default_rng(seed)
    senders = [(f"{g}-{s}-{j}", g, s) for g in GROUP_FX for s in ("Man", "Woman") for j in range(senders_per_cell)]
    order = rng.permutation(len(senders))
    gone = {senders[i][0] for i in order[:dropped]}
    fewer = {senders[i][0] for i in order[dropped : dropped + short]}
    rows = []
    for sid, g, s in senders:
        for _ in range(per_sender - (sid in fewer)):
            rows.append(dict(sender_id=sid, group=g, gender=s))
    d = pd.DataFrame(rows)
    n = len(d)
    d.insert(0, "exchange_id", [f"E{i}" for i in range(n)])
    third = d["sender_id"].isin(gone).to_numpy()
    d["perspective"] = np.where(third, "third", "first")
    rater_of = rng.integers(0, raters, n)
    d["respondent_id"] = np.where(third, [f"rater-{k}" for k in rater_of], d["sender_id"])
    d["respondent_role"] = np.where(third, "rater", "sender")
    d["respondent_group"] = np.where(third, "", d["group"])
    d["respondent_gender"] = np.where(third, "", d["gender"])
    st = rng.integers(0, starters, n)
    d["starter_id"] = [f"S{k}" for k in st]
    d["topic"] = np.where(st % 2 == 0, "Everyday", "Health")
    d["source"] = np.where(st % 3 == 0, "BConTrasT", "Gemini")
    d["system"] = rng.choice(list(SYSTEMS), n)
    d["receiver_id"] = [f"R{k}" for k in rng.integers(0, 60, n)]
    d["validator_id"] = [f"V{k}" for k in rng.integers(0, 69, n)]
    d["translation_score"] = rng.uniform(20, 100, n).round(1)
    d["qa_score"] = rng.integers(0, 11, n) / 10
    people = pd.unique(d["respondent_id"])
    rfx = dict(zip(people, rng.normal(0, sd_respondent, len(people))))
    sfx = rng.normal(0, sd_starter, starters)
    latent = (
        INTERCEPT
        + perspective_effect * third
        + TS_SLOPE * d["translation_score"]
        + QA_SLOPE * d["qa_score"]
        + d["system"].map(SYSTEMS)
        + d["group"].map(GROUP_FX)
        + WOMAN * (d["gender"] == "Woman")
        + d["respondent_id"].map(rfx)
        + sfx[st]
        + rng.normal(0, sd_resid, n)
    ).to_numpy()
    it = items_for(rng, np.clip(latent, 1, 5))
    base = items_for(rng, np.clip(rng.normal(3.5, 0.7, n), 1, 5))
    for j, c in enumerate(U.ITEMS):
        d[c] = it[:, j]
    for j, c in enumerate(U.BASELINE_ITEMS):
        d[c] = base[:, j]
    return d


def statsmodels_fit(d: pd.DataFrame, fit: U.LMMFit):
    """The same model written as a formula for statsmodels' own (dense, unpatched) MixedLM."""
    import statsmodels.formula.api as smf

    x = d.copy()
    for f, lv in fit.factors.items():
        x[f] = pd.Categorical(x[f], categories=lv)
    x["one"] = 1
    vc = {"respondent": "0 + C(respondent_id)", "starter": "0 + C(starter_id)"}
    return smf.mixedlm(U.PERSPECTIVE_FORMULA, x, groups="one", vc_formula=vc, re_formula="0").fit(reml=True)


def readable(name):  # patsy's "system[T.Phi 4]" -> "system: Phi 4"
    return re.sub(r"^(\w+)\[T\.(.*)\]$", r"\1: \2", name)


def test_equals_statsmodels_formula_fit():
    d = U.normalise(simulate(seed=5, perspective_effect=0.2, senders_per_cell=8, dropped=10, raters=8, starters=30))
    pr = U.fit_perspective(d)
    assert pr.fit is not None and pr.fit.converged
    ref = statsmodels_fit(d, pr.fit)
    t = pr.table.set_index("term")
    est, se = ref.fe_params.rename(readable), ref.bse_fe.rename(readable)
    k = len(ref.fe_params)
    z, p = ref.tvalues.iloc[:k].rename(readable), ref.pvalues.iloc[:k].rename(readable)
    assert set(t.index) == set(est.index)
    assert "perspective: third" in t.index and {"translation_score", "qa_score"} <= set(t.index)
    for col, exp in (("estimate", est), ("std_error", se)):
        np.testing.assert_allclose(t[col].to_numpy(), exp[t.index].to_numpy(), atol=1e-5, err_msg=col)
    # z and p follow from those: equal to the two optimisers' tolerance (|z| up to ~16 here)
    np.testing.assert_allclose(t["z"].to_numpy(), z[t.index].to_numpy(), rtol=1e-4)
    np.testing.assert_allclose(t["p_value"].to_numpy(), p[t.index].to_numpy(), atol=1e-4)
    got = [pr.fit.variance_components[k]["variance"] for k in ("respondent", "starter")]
    np.testing.assert_allclose(got, ref.vcomp, atol=1e-5)
    assert pr.fit.llf == pytest.approx(ref.llf, abs=1e-6)
    assert (t["n_first"] == (d["perspective"] == "first").sum()).all()
    assert (t["n_third"] == (d["perspective"] == "third").sum()).all()


def test_planted_effect_recovered_at_the_papers_size():
    d = U.normalise(simulate(seed=11, perspective_effect=0.3))
    pr = U.fit_perspective(d)
    assert pr.counts == {"first": 1358, "third": 380}
    t = pr.table.set_index("term")
    r = t.loc["perspective: third"]
    assert (r["n_first"], r["n_third"]) == (1358, 380)
    assert r["ci_low"] <= 0.3 <= r["ci_high"], r.to_dict()
    assert r["p_value"] < 1e-3 and r["estimate"] == pytest.approx(0.3, abs=0.15)
    assert r["z"] == pytest.approx(r["estimate"] / r["std_error"], rel=1e-9)
    # the covariates too: slopes per point and per unit, the speaker's group and gender
    for term, v in (("translation_score", TS_SLOPE), ("qa_score", QA_SLOPE), ("gender: Woman", WOMAN)):
        assert t.at[term, "ci_low"] <= v <= t.at[term, "ci_high"], term
    assert set(pr.fit.variance_components) == {"respondent", "starter"}
    assert pr.fit.variance_components["respondent"]["levels"] == 136 + 38


def test_null_effect_is_not_significant():
    d = U.normalise(simulate(seed=3, perspective_effect=0.0))
    r = U.fit_perspective(d).table.set_index("term").loc["perspective: third"]
    assert r["p_value"] > 0.05 and r["ci_low"] < 0 < r["ci_high"], r.to_dict()
    assert abs(r["estimate"]) < 0.1


@pytest.mark.parametrize("perspective", ["first", None])
def test_no_third_person_surveys(tmp_path, perspective):
    d = simulate(seed=2, senders_per_cell=5, dropped=0, short=0)
    if perspective is None:
        d = d.drop(columns=["perspective"])
    res = U.analyze(d, pa_iterations=20, metric_lmm=False)
    assert res.perspective.fit is None and res.perspective.note == "no third-person surveys"
    assert res.lmm is not None
    U.write_outputs(res, tmp_path)
    assert list(pd.read_csv(tmp_path / "perspective.csv").columns) == U.PERSPECTIVE_COLUMNS
    assert len(pd.read_csv(tmp_path / "perspective.csv")) == 0
    assert "not fitted: no third-person surveys" in (tmp_path / "perspective.txt").read_text()
    assert "perspective (A.1): not fitted: no third-person surveys" in U.summary(res)


def test_rows_without_a_speaker_are_left_out_and_counted():
    """Imported exchanges (no sender, so no group or gender) rated by raters stay in the
    descriptive tables as "(none)" and are left out of both models, counted."""
    d = simulate(seed=4, perspective_effect=0.2, senders_per_cell=8, dropped=10, raters=8, starters=30)
    third = np.flatnonzero(d["perspective"] == "third")
    imported = third[:15]
    d.loc[imported, ["sender_id", "group", "gender"]] = ""
    d.loc[third[15], "gender"] = ""  # a speaker enrolled without a gender
    x = U.normalise(d)
    pr = U.fit_perspective(x)
    assert pr.fit.rows_left_out == {"no sender": 15, "no gender": 1}
    assert pr.fit.n == len(d) - 16
    r = pr.table.set_index("term").loc["perspective: third"]
    assert r["n_third"] == len(third) - 16 and r["n_first"] == len(d) - len(third)
    fit = U.fit_lmm(x)
    assert fit.rows_left_out == {"no sender": 15, "no gender": 1} and fit.n == len(d) - 16
    g = U.group_table(x)
    assert g[(g["by"] == "group") & (g["level"] == U.NONE_LEVEL)]["n"].tolist() == [15]
    assert g[(g["by"] == "gender") & (g["level"] == U.NONE_LEVEL)]["n"].tolist() == [16]
    assert f"16 of {len(d)} rows left out (no sender: 15, no gender: 1)" in U.perspective_text(pr)


def test_cli_writes_the_perspective_table(tmp_path):
    d = simulate(seed=6, perspective_effect=0.2, senders_per_cell=8, dropped=10, raters=8, starters=30)
    p = tmp_path / "exchanges.csv"
    d.to_csv(p, index=False)
    text = U.run_cli(p, tmp_path / "out")
    assert "perspective (A.1, informed u; Wald z): third vs first person" in text
    t = pd.read_csv(tmp_path / "out" / "perspective.csv")
    assert list(t.columns) == U.PERSPECTIVE_COLUMNS and t["term"].iloc[1] == "perspective: third"
    txt = (tmp_path / "out" / "perspective.txt").read_text()
    assert "Wald z" in txt and "statsmodels" in txt and "respondent:" in txt and "starter:" in txt
