"""Paper 000's models as the paper fitted them (issue 18 points 2-3), each against an independent
computation on simulated data: the corpus as Table 4's Source factor with a configurable
reference level; the LMM of the validator's score (section 4.3, Figure 3a-b) against
statsmodels' formula fit and planted group effects; marginal means against cell means of a
balanced design and against a patsy reference grid on statsmodels' formula fit; Holm-adjusted
pairwise contrasts against scipy and a hand-written Holm step-down."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.usability import analysis as U
from services.usability import contrasts as UC
from tests.helpers.usability import generate, holm, items_for
from tests.helpers.workflow import study_folder

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

VC = {"sender": "0 + C(sender_id)", "validator": "0 + C(validator_id)", "receiver": "0 + C(receiver_id)"}


@pytest.fixture(scope="module")
def small():
    return U.normalise(generate(seed=1, senders_per_cell=8, per_sender=10, receivers=20, validators=20))


def _categorical(d, fit):
    x = d.copy()
    for f, lv in fit.factors.items():
        x[f] = pd.Categorical(x[f], categories=lv)
    x["one"] = 1
    return x


# ---------------------------------------------------------------------------------------------
# the corpus factor


def test_the_corpus_is_the_source_factor_with_the_papers_reference(small):
    fit = U.fit_lmm(small)
    terms = set(fit.table["term"])
    assert {"corpus: Gemini", "corpus: MED-MT", "corpus: Qwen 3"} <= terms
    assert not any(t.startswith("source:") for t in terms)
    assert fit.reference["corpus"] == "BConTrasT" and fit.formula == U.FORMULA
    assert "corpus: the starter's corpus, the factor the paper's Table 4 calls Source" in U.lmm_text(fit)


def test_corpus_reference_is_configurable(small):
    fit = U.fit_lmm(small, {"corpus": "qwen 3"})  # matched case-insensitively
    assert fit.reference["corpus"] == "Qwen 3" and fit.reference["group"] == "Hindi"  # the others stay the paper's
    assert {"corpus: BConTrasT", "corpus: Gemini", "corpus: MED-MT"} <= set(fit.table["term"])
    assert not fit.warnings
    base = U.fit_lmm(small).table.set_index("term")["estimate"]
    # the same model, re-parametrised: Gemini - Qwen 3 either way
    b = fit.table.set_index("term")["estimate"]
    assert b["corpus: Gemini"] == pytest.approx(base["corpus: Gemini"] - base["corpus: Qwen 3"], abs=1e-4)


def test_a_reference_corpus_missing_from_the_data_falls_back_and_says_so(small):
    d = small.assign(
        corpus=small["corpus"].map(
            {"BConTrasT": "b-natural", "MED-MT": "m-natural", "Gemini": "g-synth", "Qwen 3": "q-synth"}
        )
    )
    fit = U.fit_lmm(d)  # the paper's level is absent: the first in sorted order, said (issue 27)
    assert fit.reference["corpus"] == "b-natural"
    assert any("reference level 'BConTrasT' of corpus is not in the data (the paper's" in w for w in fit.warnings)
    fit = U.fit_lmm(d, {"corpus": "Gemini"})
    assert fit.reference["corpus"] == "b-natural"
    assert any("reference level 'Gemini' of corpus is not in the data" in w for w in fit.warnings)


def test_without_a_corpus_column_source_stands_in(small):
    d = small.drop(columns=["corpus"]).assign(corpus="")
    res = U.analyze(d, pa_iterations=20, metric_lmm=False)
    assert {"source: synthetic"} == {t for t in res.lmm.table["term"] if t.startswith(("source", "corpus"))}
    assert res.lmm.reference["source"] == "natural"
    assert any("no corpus column" in n for n in res.notes)
    assert "system + topic + source + u_b" in res.lmm.formula


def test_command_line_corpus_reference(tmp_path, capsys):
    import cli

    d = generate(seed=3, senders_per_cell=4, per_sender=10, receivers=10, validators=10)
    d.to_csv(tmp_path / "x.csv", index=False)
    assert (
        cli.main(
            [
                "analyze",
                "usability",
                str(tmp_path / "x.csv"),
                "--out",
                str(tmp_path / "out"),
                "--corpus-reference",
                "MED-MT",
            ]
        )
        == 0
    )
    for name in ("lmm.txt", "score_lmm.txt"):
        assert "corpus = MED-MT" in (tmp_path / "out" / name).read_text()
    assert "corpus: BConTrasT" in set(pd.read_csv(tmp_path / "out" / "lmm.csv")["term"])
    assert "Usability analysis" in capsys.readouterr().out


def test_study_setting_corpus_reference(tmp_path, database):
    from services.setup.importer import import_study
    from services.study.files import StudyValidationError, load_study
    from services.usability.study_analysis import study_reference

    assert load_study(study_folder(tmp_path)).config["usability"]["corpus_reference"] == ""
    with pytest.raises(StudyValidationError) as e:
        load_study(study_folder(tmp_path, corpus_reference='"BConTrasT"'))
    assert "usability.corpus_reference" in str(e.value) and "demo-natural-style, demo-synthetic" in str(e.value)
    with pytest.raises(StudyValidationError, match="usability.corpus_reference.*must be a string"):
        load_study(study_folder(tmp_path / "b", corpus_reference="3"))
    import_study(database, study_folder(tmp_path / "c", corpus_reference='"demo-synthetic"'))
    assert study_reference(database, "demo") == {"corpus": "demo-synthetic"}


# ---------------------------------------------------------------------------------------------
# Holm-corrected pairwise contrasts


def test_pairwise_holm_against_scipy():
    """Four cells' means from an OLS cell-means model: each difference, its t test and the
    Holm adjustment equal scipy's pooled-variance t test and a hand-written Holm step-down."""
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    means, n = [0.0, 0.3, 0.35, 1.0], [12, 15, 9, 20]
    cell = np.repeat(np.arange(4), n)
    y = np.asarray(means)[cell] + rng.normal(0, 0.6, len(cell))
    x = np.eye(4)[cell]
    res = sm.OLS(y, x).fit()
    out = UC.pairwise(res, np.eye(4), list("abcd"), "y", test="t")
    assert list(out.columns) == UC.CONTRAST_COLUMNS and len(out) == 6
    s2 = res.mse_resid
    df = res.df_resid
    p = []
    for r, (i, j) in zip(out.itertuples(), itertools.combinations(range(4), 2)):
        assert (r.a, r.b) == ("abcd"[i], "abcd"[j])
        diff = y[cell == i].mean() - y[cell == j].mean()
        se = np.sqrt(s2 * (1 / n[i] + 1 / n[j]))
        assert r.estimate == pytest.approx(diff, rel=1e-10) and r.std_error == pytest.approx(se, rel=1e-10)
        p.append(2 * stats.t.sf(abs(diff / se), df))
        half = stats.t.ppf(0.975, df) * se
        assert (r.ci_low, r.ci_high) == pytest.approx((diff - half, diff + half), rel=1e-9)
    np.testing.assert_allclose(out["p_value"], p, rtol=1e-9)
    np.testing.assert_allclose(out["p_holm"], holm(p), rtol=1e-9)
    assert (out["p_holm"] >= out["p_value"]).all() and out["p_holm"].min() < 0.05 < out["p_holm"].max()
    # a published example (Holm 1979's step-down on four p-values): 0.01, 0.04, 0.03, 0.005
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])


# ---------------------------------------------------------------------------------------------
# marginal means


def balanced(seed=0, per_cell=4):
    """Every sender scores every system x topic x corpus combination once, one validator: GLS
    equals OLS, so each group x gender marginal mean is that cell's raw mean."""
    rng = np.random.default_rng(seed)
    systems, topics, corpora = ("DeSTA2", "Voxtral"), ("Everyday", "Health"), ("BConTrasT", "Gemini")
    rows = []
    for g, s in itertools.product(("Hindi", "USB", "USW"), ("Man", "Woman")):
        for j in range(per_cell):
            fx = rng.normal(0, 8)
            for sy, tp, co in itertools.product(systems, topics, corpora):
                score = (
                    60
                    + {"Hindi": 0, "USB": 7.4, "USW": 13.7}[g]
                    + (s == "Woman") * 3
                    + (sy == "Voxtral") * 10
                    + (tp == "Health") * 4
                    - (co == "Gemini") * 5
                    + fx
                    + rng.normal(0, 6)
                )
                rows.append(
                    dict(
                        sender_id=f"{g}{s}{j}",
                        group=g,
                        gender=s,
                        system=sy,
                        topic=tp,
                        corpus=co,
                        source="natural" if co == "BConTrasT" else "synthetic",
                        translation_score=float(np.clip(score, 0, 100)),
                    )
                )
    d = pd.DataFrame(rows)
    n = len(d)
    d.insert(0, "exchange_id", [f"E{i}" for i in range(n)])
    d["receiver_id"] = [f"R{i % 7}" for i in range(n)]
    d["validator_id"] = "V0"
    it = items_for(rng, np.clip(rng.normal(3.5, 0.7, n), 1, 5))
    for j, c in enumerate(U.ITEMS):
        d[c] = it[:, j]
    for j, c in enumerate(U.BASELINE_ITEMS):
        d[c] = it[:, j]
    d["qa_score"] = 0.5
    return U.normalise(d)


def test_score_marginal_means_equal_cell_means_in_a_balanced_design():
    d = balanced()
    fit = U.fit_score_lmm(d)
    assert set(fit.variance_components) == {"sender"}  # one validator: its intercept left out
    mm = U.marginal_means(fit, d).set_index(["group", "gender"])
    raw = d.groupby(["group", "gender"])["translation_score"].agg(["mean", "size"])
    np.testing.assert_allclose(mm["mean"], raw.loc[mm.index, "mean"], atol=1e-6)
    assert (mm["n"] == raw.loc[mm.index, "size"]).all()
    # contrasts: differences of those cell means
    c = U.cell_contrasts(fit, d).set_index(["a", "b"])
    diff = raw.at[("USW", "Man"), "mean"] - raw.at[("Hindi", "Man"), "mean"]
    assert c.at[("Hindi x Man", "USW x Man"), "estimate"] == pytest.approx(-diff, abs=1e-6)


def _grid_L(ref, d, factors, covariates: dict):
    """emmeans' grid through patsy: the formula's own design of every combination of the other
    factors' levels, per group x gender cell, averaged."""
    from patsy import build_design_matrices

    info = ref.model.data.model_spec
    others = [f for f in factors if f not in ("group", "gender")]
    cells, rows = [], []
    for g, s in itertools.product(factors["group"], factors["gender"]):
        grid = pd.DataFrame(list(itertools.product(*[factors[f] for f in others])), columns=others)
        grid["group"], grid["gender"] = g, s
        for k, v in covariates.items():
            grid[k] = v
        for f in factors:
            grid[f] = pd.Categorical(grid[f], categories=factors[f])
        rows.append(np.asarray(build_design_matrices([info], grid)[0]).mean(axis=0))
        cells.append(f"{g} x {s}")
    return cells, np.vstack(rows)


def test_u_marginal_means_and_holm_contrasts_equal_a_patsy_grid(small):
    """Section 4.2's marginal means of u (u_b at its mean) and their Holm-adjusted pairwise
    differences: our grid on our fit against patsy's design of the formula on statsmodels'
    stock formula fit, its covariance, normal p-values and Holm written out."""
    import statsmodels.formula.api as smf

    fit = U.fit_lmm(small)
    x = _categorical(small, fit)
    ref = smf.mixedlm(
        "u ~ system + topic + corpus + u_b + group * gender", x, groups="one", vc_formula=VC, re_formula="0"
    ).fit(reml=True)
    cells, L = _grid_L(ref, x, fit.factors, {"u_b": small["u_b"].mean()})
    k = len(ref.fe_params)
    beta, cov = ref.fe_params.to_numpy(), ref.cov_params().to_numpy()[:k, :k]
    mm = U.marginal_means(fit, small)
    assert [f"{g} x {s}" for g, s in zip(mm["group"], mm["gender"])] == cells
    np.testing.assert_allclose(mm["mean"], L @ beta, atol=1e-5)
    np.testing.assert_allclose(mm["std_error"], np.sqrt(np.einsum("ij,jk,ik->i", L, cov, L)), atol=1e-5)
    c = U.cell_contrasts(fit, small, holm_family="all")  # the option: one family of all 15 pairs
    assert len(c) == 15 and (c["outcome"] == "u").all() and (c["family"] == "all 15 pairs").all()
    pairs = list(itertools.combinations(range(len(cells)), 2))
    assert list(zip(c["a"], c["b"])) == [(cells[i], cells[j]) for i, j in pairs]
    D = np.vstack([L[i] - L[j] for i, j in pairs])
    est, se = D @ beta, np.sqrt(np.einsum("ij,jk,ik->i", D, cov, D))
    p = 2 * stats.norm.sf(np.abs(est / se))
    np.testing.assert_allclose(c["estimate"], est, atol=1e-5)
    np.testing.assert_allclose(c["std_error"], se, atol=1e-5)
    np.testing.assert_allclose(c["p_value"], p, atol=1e-4)
    np.testing.assert_allclose(c["p_holm"], holm(c["p_value"]), rtol=1e-12)
    assert c["test"].str.startswith("Wald z").all() and c["test"].str.contains("Holm over the family's 15").all()


# ---------------------------------------------------------------------------------------------
# the validator's score (section 4.3)

GROUP_SCORE = {"Hindi": 0.0, "USB": 7.43, "USW": 13.71}  # the paper's section 4.3 group effects
WOMAN_SCORE = {"Hindi": 5.0, "USB": 0.0, "USW": -2.0}


def with_scores(d: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    senders = d["sender_id"].unique()
    vals = d["validator_id"].unique()
    sfx = dict(zip(senders, rng.normal(0, 6, len(senders))))
    vfx = dict(zip(vals, rng.normal(0, 5, len(vals))))
    score = (
        62.7
        + d["group"].map(GROUP_SCORE)
        + (d["gender"] == "Woman") * d["group"].map(WOMAN_SCORE)
        + (d["system"] == "Voxtral") * 8
        - (d["corpus"] == "Gemini") * 4
        + d["sender_id"].map(sfx)
        + d["validator_id"].map(vfx)
        + rng.normal(0, 10, len(d))
    )
    return d.assign(translation_score=np.clip(score, 0, 100))


def test_score_lmm_equals_statsmodels_formula_fit_and_recovers_group_effects():
    import statsmodels.formula.api as smf

    d = with_scores(U.normalise(generate(seed=4, senders_per_cell=12, per_sender=10, receivers=20, validators=25)))
    fit = U.fit_score_lmm(d)
    assert fit.converged and fit.outcome == "translation_score" and fit.formula == U.SCORE_FORMULA
    assert set(fit.variance_components) == {"sender", "validator"}
    assert "u_b" not in set(fit.table["term"])
    x = _categorical(d, fit)
    ref = smf.mixedlm(
        "translation_score ~ system + topic + corpus + group * gender",
        x,
        groups="one",
        vc_formula={k: VC[k] for k in ("sender", "validator")},
        re_formula="0",
    ).fit(reml=True)
    t = fit.table.set_index("term")
    readable = {
        n: n.replace("[T.", ": ").replace("]", "").replace(":group", " x group").replace(":gender", " x gender")
        for n in ref.fe_params.index
    }
    est = ref.fe_params.rename(readable)
    assert set(t.index) == set(est.index)
    np.testing.assert_allclose(t["estimate"], est[t.index], atol=1e-3)
    np.testing.assert_allclose(t["std_error"], ref.bse_fe.rename(readable)[t.index], atol=1e-3)
    # the planted group effects (at the reference gender, Man) within 3 SE
    for g, v in GROUP_SCORE.items():
        if v:
            assert abs(t.at[f"group: {g}", "estimate"] - v) < 3 * t.at[f"group: {g}", "std_error"], g
    mm = U.marginal_means(fit, d).set_index(["group", "gender"])
    usw_hindi = mm.at[("USW", "Man"), "mean"] - mm.at[("Hindi", "Man"), "mean"]
    assert usw_hindi == pytest.approx(t.at["group: USW", "estimate"], abs=1e-9)  # Man is the reference


def test_analyze_writes_the_score_model():
    d = with_scores(generate(seed=2, senders_per_cell=5, per_sender=10, receivers=12, validators=12))
    res = U.analyze(d, pa_iterations=20, metric_lmm=False)
    assert res.score_lmm is not None and res.score_lmm.n == len(d)
    assert list(res.score_marginal_means.columns) == U.MARGINAL_COLUMNS and len(res.score_marginal_means) == 6
    # the paper's families (section 4.2): 3 group pairs within each gender + 1 gender pair within each group
    assert res.contrasts.groupby("outcome").size().to_dict() == {"translation_score": 9, "u": 9}
    assert "score LMM (validator's DA+SQM" in U.summary(res)


# ---------------------------------------------------------------------------------------------
# the analysis tab: the study's setting reaches the models


@pytest.fixture
def demo_db(database, tmp_path):
    """The demo study imported with usability.corpus_reference = demo-synthetic (overrides
    conftest's demo_db for mixed_study below)."""
    from services.setup.importer import import_study

    import_study(database, study_folder(tmp_path / "study", corpus_reference='"demo-synthetic"'))
    return database


def test_the_tab_fits_the_studys_reference_corpus(mixed_study):
    from services.usability.study_analysis import analyse as analyse_usability
    from tabs.analysis_usability import US_PLOTS

    db, _ = mixed_study
    res, figs, files = analyse_usability(db, "demo")
    assert res.lmm.reference["corpus"] == "demo-synthetic"
    assert res.lmm.factors["corpus"] == ["demo-synthetic", "demo-natural-style"]  # reference first
    assert res.score_lmm is not None and res.score_lmm.reference["corpus"] == "demo-synthetic"
    assert len(figs) <= US_PLOTS and {"contrasts", "score_lmm", "metric_effects"} <= {n for n, _ in figs}
    assert {"contrasts.csv", "score_lmm.csv", "metric_effect_estimates.csv"} <= {U.Path(f).name for f in files}
