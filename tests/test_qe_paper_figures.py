"""Paper 003's cross-metric results (issue 27, point 8): Table 8, Figure 4 with its Pareto
frontier, Figures 6/9, from the audit's own runs (services.qe.paper_figures).

Expected values are computed here independently, on literal data: the matched ratios by hand,
the t statistic, its one-sided p and the 95 % interval from their formulas (statistics for the
mean and sd, scipy.stats.t for the distribution), error rates and Phi by hand, the Pareto
frontier worked by hand, quartiles with numpy.percentile."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.qe import audit as Q
from services.qe import paper_figures as P
from tests.helpers.app import run_cli
from tests.helpers.qe import SPEC, counterfactual

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def _t_expected(x):
    """(mean, ci_low, ci_high, t, one-sided p) of H1: mean < 1, from the formulas."""
    n, mean, sd = len(x), statistics.fmean(x), statistics.stdev(x)
    se = sd / math.sqrt(n)
    t = (mean - 1) / se
    half = stats.t.ppf(0.975, n - 1) * se
    return mean, mean - half, mean + half, t, stats.t.cdf(t, n - 1)


def test_table8_is_the_matched_ratio_of_feminine_and_masculine_pairs():
    """Appendix B.5: "Do neural QE metrics systematically rank (F, F) pairs higher or lower than
    (M, M) pairs? Table 8 shows the ratio of QE score assigned to the translation pairs";
    Table 8: "QE(s_F, h_F) / QE(s_M, h_M) ... A warning mark indicates that the QE score of
    [s_F, h_F] pairs is statistically significantly lower than [s_M, h_M] pairs (p < .05)";
    section 4.3 uses "the same QE metrics, fairness measures, and dataset" as section 4.2, so the
    test is section 3's one-sided one-sample t-test of the ratios against 1."""
    df = counterfactual(SPEC).sample(frac=1, random_state=3)  # matched by content, not by position
    run = P.Run("kiwi", "none", df)
    assert run.kind == "counterfactual"
    t8 = P.table8([run]).set_index("lang")
    assert list(t8.index) == ["es", "pt", "mean", "pooled"]
    expected = {lang: [ff / mm for ff, _, _, mm in lines] for lang, lines in SPEC.items()}
    for lang, x in expected.items():
        mean, lo, hi, t, p = _t_expected(x)
        row = t8.loc[lang]
        assert row["n_pairs"] == len(x)
        assert row["mean_ratio"] == pytest.approx(mean, rel=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
        assert row["t"] == pytest.approx(t, rel=1e-9) and row["p_value"] == pytest.approx(p, rel=1e-9)
        assert row["mean_ff"] == pytest.approx(statistics.fmean(s[0] for s in SPEC[lang]))
        assert row["mean_mm"] == pytest.approx(statistics.fmean(s[3] for s in SPEC[lang]))
    assert bool(t8.loc["pt", "warning"]) and t8.loc["pt", "p_value"] < 0.05
    assert not bool(t8.loc["es", "warning"]) and t8.loc["es", "p_value"] > 0.05
    assert t8.loc["mean", "mean_ratio"] == pytest.approx(
        statistics.fmean(statistics.fmean(x) for x in expected.values())
    )
    assert math.isnan(t8.loc["mean", "p_value"]) and t8.loc["mean", "n_pairs"] == 7
    pooled = _t_expected(expected["pt"] + expected["es"])
    assert t8.loc["pooled", "mean_ratio"] == pytest.approx(pooled[0]) and t8.loc["pooled", "p_value"] == pytest.approx(
        pooled[4]
    )
    # the audit's own ratio (same source, score_f / score_m per row) is another number altogether
    rat = Q.ratios(df).set_index(["lang", "source_gender"])
    assert rat.loc[("pt", "any"), "mean_ratio"] != pytest.approx(t8.loc["pt", "mean_ratio"], rel=1e-3)


def test_table8_drops_nonpositive_ratios_and_skips_unmatched_runs():
    spec = {"pt": [(0.8, 0.7, 0.5, 0.9), (0.7, 0.6, 0.4, 0.0), (0.9, 0.1, 0.1, 0.95)]}
    t8 = P.table8([P.Run("m", "none", counterfactual(spec))]).set_index("lang")
    assert t8.loc["pt", "n_pairs"] == 2 and t8.loc["pt", "n_dropped"] == 1
    assert t8.loc["pt", "mean_ratio"] == pytest.approx(statistics.fmean([0.8 / 0.9, 0.9 / 0.95]))
    # one line without its masculine row: not a counterfactual run, so no Table 8 rows
    partial = counterfactual(spec).iloc[:-1]
    run = P.Run("m", "none", partial)
    assert run.kind == "unambiguous" and P.table8([run]).empty


def test_table8_marks_are_laid_out_as_the_paper_prints_them():
    """Table 8: metric rows, "References (left) and automatic translations from GT (right)", a
    column per language, a warning mark where p < .05."""
    low = {"pt": SPEC["pt"], "es": SPEC["pt"]}
    even = {"pt": SPEC["es"], "es": SPEC["es"]}
    runs = [
        P.Run("kiwi", "none", counterfactual(low), hypotheses="GT"),
        P.Run("kiwi", "none", counterfactual(even)),
        P.Run("xcomet", "none", counterfactual({"pt": SPEC["es"], "es": SPEC["pt"]})),
    ]
    marks = P.table8_marks(P.table8(runs)).set_index("metric")
    assert list(marks.columns) == ["references es", "references pt", "GT es", "GT pt"]
    assert marks.loc["kiwi"].tolist() == ["-", "-", "⚠", "⚠"]
    assert marks.loc["xcomet"].tolist() == ["⚠", "-", "", ""]


def test_figure11_is_each_groups_error_rate_averaged_over_languages():
    """ER(S^F): the feminine sources whose masculine form scores >= the feminine one (ties are
    errors); ER(S^M) the mirror; worked by hand per line, then the mean of the two languages."""
    # (QE(s_F, h_F), QE(s_F, h_M), QE(s_M, h_F), QE(s_M, h_M)) and whether each source errs
    refs = {
        "pt": [(0.8, 0.9, 0.5, 0.9), (0.7, 0.6, 0.8, 0.75), (0.6, 0.6, 0.2, 0.9), (0.9, 0.1, 0.1, 0.8)],
        "es": [(0.5, 0.4, 0.6, 0.5), (0.3, 0.9, 0.9, 0.95)],
    }
    # pt: F errs on lines 1 and 3 (0.9 >= 0.8, a tie), M on line 2: 2/4 and 1/4; es: 1/2 and 1/2
    mt = {"pt": [(0.9, 0.1, 0.1, 0.9), (0.2, 0.8, 0.3, 0.6)]}  # F errs once, M never: 1/2 and 0
    runs = [P.Run("kiwi", "none", counterfactual(refs)), P.Run("kiwi", "none", counterfactual(mt), hypotheses="GT")]
    t = P.figure11(runs, n_resamples=20).set_index(["hypotheses", "lang"])
    assert t.loc[("references", "pt"), ["er_f", "er_m", "n_f", "n_m"]].tolist() == [0.5, 0.25, 4, 4]
    assert t.loc[("references", "es"), ["er_f", "er_m"]].tolist() == [0.5, 0.5]
    assert t.loc[("references", "mean"), "er_f"] == pytest.approx(0.5)
    assert t.loc[("references", "mean"), "er_m"] == pytest.approx((0.25 + 0.5) / 2)
    assert t.loc[("GT", "mean"), ["er_f", "er_m"]].tolist() == [0.5, 0.0]
    assert "pooled" not in t.index.get_level_values("lang")
    fig = P.figures(P.paper_results(runs, n_resamples=20))["fig11_group_error_rates"]
    bars = {(tr.name, tr.xaxis): list(tr.y) for tr in fig.data}
    assert bars[("ER(S^F)", "x")] == [0.5] and bars[("ER(S^M)", "x")] == [0.375]  # references, the mean
    assert bars[("ER(S^F)", "x2")] == [0.5] and bars[("ER(S^M)", "x2")] == [0.0]  # GT


def test_pareto_front_on_a_hand_worked_example():
    """Section 6, Figure 4: "The best case is (0,0). The dashed lines indicate the Pareto
    frontier." By hand, minimising both coordinates: A (0.1, 0.5), B (0.2, 0.2) and C (0.3, 0.1)
    are not dominated; D (0.3, 0.3) is dominated by B, E (0.1, 0.6) by A (same x, larger y), F
    (0.2, 0.2) equals B (neither dominates the other), G has no value."""
    x = [0.1, 0.2, 0.3, 0.3, 0.1, 0.2, math.nan]
    y = [0.5, 0.2, 0.1, 0.3, 0.6, 0.2, 0.0]
    assert P.pareto_front(x, y).tolist() == [True, True, True, False, False, True, False]
    assert P.pareto_front([0.0, math.inf], [0.5, 0.1]).tolist() == [True, True]


def _contextual(errors_by_gold: dict, lang="pt") -> pd.DataFrame:
    """An unambiguous run: {gold: [error?, ...]}; the right form scores 0.8, the wrong 0.9 (an
    error) or 0.7."""
    rows = []
    for gold, errs in errors_by_gold.items():
        for i, e in enumerate(errs):
            right, wrong = 0.8, (0.9 if e else 0.7)
            f, m = (right, wrong) if gold == "F" else (wrong, right)
            rows.append(
                {
                    "instance_id": f"{gold}{i}",
                    "lang": lang,
                    "source": f"s {gold}{i}",
                    "hyp_f": f"f{gold}{i}",
                    "hyp_m": f"m{gold}{i}",
                    "gold": gold,
                    "score_f": f,
                    "score_m": m,
                }
            )
    return pd.DataFrame(rows)


def _ambiguous(ratio: float, n=4, lang="pt") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "instance_id": [str(i) for i in range(n)],
            "lang": lang,
            "source": [f"s{i}" for i in range(n)],
            "hyp_f": [f"f{i}" for i in range(n)],
            "hyp_m": [f"m{i}" for i in range(n)],
            "score_f": [0.5 * ratio] * n,
            "score_m": [0.5] * n,
        }
    )


def test_figure4_points_and_their_pareto_frontiers():
    """Section 6: "we contrast the total error rate in picking the correct inflection when source
    gender is known ... against the ratio between Q(s, h_F) and Q(s, h_M) for ambiguous
    instances (section 3) and the ratio between each group's error rate Phi(S^F, S^M)
    (section 4). Ideally, a metric would score a low error rate and show parity (-> 1)".
    By hand: a: ER(F) 2/4, ER(M) 1/4 -> ER 3/8, Phi 2; b: 1/4, 1/4 -> ER 1/4, Phi 1;
    c: 3/4, 1/4 -> ER 1/2, Phi 3. Ambiguous ratios a 0.9, b 0.95, c 0.99."""
    runs = [
        P.Run("a", "mon", _contextual({"F": [1, 1, 0, 0], "M": [1, 0, 0, 0]})),
        P.Run("b", "mon", _contextual({"F": [1, 0, 0, 0], "M": [0, 1, 0, 0]})),
        P.Run("c", "bil", _contextual({"F": [1, 1, 1, 0], "M": [0, 0, 1, 0]})),
        P.Run("a", "none", _ambiguous(0.9)),
        P.Run("b", "none", _ambiguous(0.95)),
        P.Run("c", "none", _ambiguous(0.99)),
    ]
    t = P.tradeoff(runs, n_resamples=50).set_index("label")
    assert list(t.index) == ["a mon", "b mon", "c bil"]
    assert t["er"].tolist() == pytest.approx([3 / 8, 1 / 4, 1 / 2])
    assert t["phi"].tolist() == pytest.approx([2, 1, 3])
    assert t["gap_unambiguous"].tolist() == pytest.approx([1, 0, 2])
    assert t["gap_ambiguous"].tolist() == pytest.approx([0.1, 0.05, 0.01])
    # unambiguous: b (0, 1/4) dominates both others; ambiguous: b (0.05, 1/4) and c (0.01, 1/2) stand
    assert t["pareto_unambiguous"].tolist() == [False, True, False]
    assert t["pareto_ambiguous"].tolist() == [False, True, True]
    with pytest.raises(P.PaperInputError, match="two ambiguous runs of metric 'a'"):
        P.tradeoff(runs + [P.Run("a", "none", _ambiguous(0.8))])


def test_figure4_uses_the_mean_across_languages():
    """Figure 4 plots the values of Table 1 / Table 4 ("Mean results across eight languages"):
    Phi there is the mean of the languages' Phi. By hand: pt Phi 2/1 = 2, es Phi (1/4)/(2/4) =
    0.5, mean 1.25; ER (3/8 + 3/8) / 2."""
    df = pd.concat(
        [
            _contextual({"F": [1, 1, 0, 0], "M": [1, 0, 0, 0]}, "pt"),
            _contextual({"F": [1, 0, 0, 0], "M": [1, 1, 0, 0]}, "es"),
        ]
    )
    t = P.tradeoff([P.Run("a", "none", df)], n_resamples=50).iloc[0]
    assert t["phi"] == pytest.approx(1.25) and t["gap_unambiguous"] == pytest.approx(0.25)
    assert t["er"] == pytest.approx(3 / 8) and t["n_languages"] == 2 and math.isnan(t["ambiguous_ratio"])


def test_score_distributions_per_metric_and_form():
    """Appendix B.1, Figures 6 and 9: "Raw scores for all QE metrics"; quartiles checked against
    numpy.percentile (linear interpolation)."""
    f = [0.1, 0.4, 0.35, 0.8, 0.9]
    m = [0.2, 0.5, 0.45, 0.85, 0.95]
    df = pd.DataFrame(
        {
            "instance_id": list("abcde"),
            "lang": ["pt", "pt", "pt", "es", "es"],
            "source": list("abcde"),
            "hyp_f": list("fghij"),
            "hyp_m": list("klmno"),
            "score_f": f,
            "score_m": m,
        }
    )
    runs = [P.Run("kiwi", "none", df), P.Run("kiwi", "mon", _contextual({"F": [1], "M": [0]}))]
    d = P.score_distributions(runs).set_index(["metric", "lang", "form"])
    assert sorted(d.index.get_level_values("metric").unique()) == ["kiwi"]  # the unambiguous run is not in it
    for form, v in (("F", f), ("M", m)):
        row = d.loc[("kiwi", "pooled", form)]
        assert row["n"] == 5 and row["mean"] == pytest.approx(statistics.fmean(v))
        assert row["sd"] == pytest.approx(statistics.stdev(v))
        assert [row["min"], row["q1"], row["median"], row["q3"], row["max"]] == pytest.approx(
            np.percentile(v, [0, 25, 50, 75, 100]).tolist()
        )
    assert d.loc[("kiwi", "pt", "F"), "median"] == pytest.approx(0.35)


def test_results_figures_have_captions_and_notes_name_what_is_missing(tmp_path):
    runs = [
        P.Run("kiwi", "none", counterfactual(SPEC)),
        P.Run("kiwi", "none", _ambiguous(0.9)),
        P.Run("kiwi", "mon", _contextual({"F": [1, 1, 0], "M": [1, 0, 0]})),
    ]
    result = P.paper_results(runs, n_resamples=50)
    assert result.notes == [] and [r["kind"] for r in result.runs] == ["counterfactual", "ambiguous", "unambiguous"]
    figs = P.figures(result)
    assert set(figs) == {"fig4_tradeoff", "fig9_score_distributions", "fig11_group_error_rates"}
    for name, fig in figs.items():
        caption = " ".join(a.text for a in fig.layout.annotations).replace("<br>", " ")
        assert P.CAPTIONS[name][:60] in caption
    frontier = [tr for tr in figs["fig4_tradeoff"].data if tr.name == "Pareto frontier"]
    assert len(frontier) == 2 and all(tr.line.dash == "dash" for tr in frontier)
    paths = {p.name for p in P.write_outputs(result, tmp_path, png=False)}
    assert {
        "table8.csv",
        "table8_marks.csv",
        "figure11.csv",
        "fig4_tradeoff.csv",
        "score_distributions.csv",
        "captions.md",
        "fig4_tradeoff.html",
        "fig9_score_distributions.html",
    } <= paths
    assert "Table 8" in (tmp_path / "captions.md").read_text(encoding="utf-8")
    only = P.paper_results([P.Run("kiwi", "none", _ambiguous(0.9))])
    assert any("Table 8 and Figure 11 need a counterfactual run" in n for n in only.notes)
    assert any("Figure 4 needs an unambiguous run" in n for n in only.notes)
    with pytest.raises(P.PaperInputError, match="no audit runs"):
        P.paper_results([])


def test_runs_load_from_audit_folders_and_the_cli_builds_the_tables(tmp_path):
    folders = {}
    for name, frame in (
        ("cf", counterfactual(SPEC)),
        ("amb", _ambiguous(0.9)),
        ("una", _contextual({"F": [1, 1, 0], "M": [1, 0, 0]})),
    ):
        pairs = tmp_path / f"{name}.csv"
        frame.to_csv(pairs, index=False)
        res = run_cli("analyze", "qe-audit", pairs, "--out", tmp_path / name, "--resamples", "50", "--no-cache")
        assert res.returncode == 0, res.stderr
        folders[name] = tmp_path / name
    run = P.load_run(folders["cf"], "GT")
    assert run.kind == "counterfactual" and run.hypotheses == "GT" and run.metric == "precomputed"
    assert P.parse_run_argument(f"GT={folders['cf']}") == ("GT", str(folders["cf"]))
    res = run_cli(
        "analyze",
        "qe-audit",
        "--paper",
        f"GT={folders['cf']}",
        folders["amb"],
        folders["una"],
        "--out",
        tmp_path / "paper",
        "--resamples",
        "50",
    )
    assert res.returncode == 0, res.stderr
    assert "Table 8 precomputed [GT] pt" in res.stdout and "Figure 4 precomputed" in res.stdout
    t8 = pd.read_csv(tmp_path / "paper" / "table8.csv").set_index("lang")
    assert t8.loc["pt", "mean_ratio"] == pytest.approx(statistics.fmean(ff / mm for ff, _, _, mm in SPEC["pt"]))
    assert json.loads((tmp_path / "paper" / "paper.json").read_text())["captions"]["table8"].startswith("Table 8")
    bad = run_cli("analyze", "qe-audit", "--paper", tmp_path / "nowhere", "--out", tmp_path / "p2")
    assert bad.returncode == 2 and "nowhere: not a folder" in bad.stderr
    both = run_cli("analyze", "qe-audit", tmp_path / "cf.csv", "--paper", folders["cf"], "--out", tmp_path / "p3")
    assert both.returncode == 2 and "not a PAIRS file" in both.stderr
    none = run_cli("analyze", "qe-audit", "--out", tmp_path / "p4")
    assert none.returncode == 2 and "needs a PAIRS file" in none.stderr
