"""services.qe.audit on generated and literal scores.

Expected values are computed here independently: the t-interval from scipy.stats.t.interval
with scipy.stats.sem, the one-sided p from the t distribution's cdf, error rates, ties and
retention shares by hand on literal examples, and the bootstrap CI of phi by scipy's
non-vectorised path and by a plain numpy resampling loop."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.qe import audit as Q

# ---------------------------------------------------------------------------------------------
# data


def generated(seed: int = 1, n: int = 60, langs=("es", "pt"), gold: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for lang in langs:
        for i in range(n):
            m = rng.uniform(0.6, 0.95)
            f = m - rng.normal(0.01, 0.02)
            rows.append(
                {
                    "instance_id": f"{i}",
                    "lang": lang,
                    "source": f"source {i}",
                    "hyp_f": f"f {i}",
                    "hyp_m": f"m {i}",
                    "score_f": f,
                    "score_m": m,
                }
            )
            if gold:
                rows[-1]["gold"] = "F" if i % 2 else "M"
    return pd.DataFrame(rows)


def pairs(scores, gold=None, lang="pt") -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "instance_id": [str(i) for i in range(len(scores))],
            "lang": lang,
            "source": [f"s{i}" for i in range(len(scores))],
            "hyp_f": [f"f{i}" for i in range(len(scores))],
            "hyp_m": [f"m{i}" for i in range(len(scores))],
            "score_f": [s[0] for s in scores],
            "score_m": [s[1] for s in scores],
        }
    )
    if gold is not None:
        df["gold"] = list(gold)
    return df


class RaisingMetric:
    name = "must-not-run"

    def score(self, *args, **kwargs):
        raise AssertionError("the metric was called although scores were precomputed")


class FakeMetric:
    """Test double of the metric interface: score = length of the hypothesis / 100, recording
    every call."""

    name = "fake-len"
    kind = "reference-free QE"
    version = "1"
    model = "len/100"
    uses_reference = False
    supports_context = False

    def __init__(self):
        self.calls: list[tuple[list[str], list[str]]] = []

    def info(self):
        return {"name": self.name, "kind": self.kind, "version": self.version, "model": self.model, "scale": "0-1"}

    def score(self, sources, hypotheses, references=None, contexts=None):
        self.calls.append((list(sources), list(hypotheses)))
        return [len(h) / 100 for h in hypotheses]


# ---------------------------------------------------------------------------------------------
# ratios


def expected_ratio_stats(f, m):
    r = [a / b for a, b in zip(f, m)]
    n = len(r)
    mean = statistics.fmean(r)
    sem = stats.sem(r)
    lo, hi = stats.t.interval(0.95, df=n - 1, loc=mean, scale=sem)
    t = (mean - 1) / sem
    p = stats.t.cdf(t, df=n - 1)
    return n, mean, lo, hi, t, p


def test_ratios_match_an_independent_t_interval_and_one_sided_p():
    df = generated()
    table = Q.ratios(df)
    assert list(table.columns) == Q.ratio_columns("F/M")
    assert list(table["lang"]) == ["es", "pt", "mean", "pooled"]
    assert set(table["source_gender"]) == {"any"}
    for lang in ("es", "pt", "pooled"):
        sub = df if lang == "pooled" else df[df["lang"] == lang]
        n, mean, lo, hi, t, p = expected_ratio_stats(sub["score_f"], sub["score_m"])
        row = table[table["lang"] == lang].iloc[0]
        assert row["n"] == n and row["n_missing"] == 0 and row["n_dropped"] == 0
        assert row["mean_ratio"] == pytest.approx(mean, rel=1e-12)
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(lo, rel=1e-10), pytest.approx(hi, rel=1e-10))
        assert row["t"] == pytest.approx(t, rel=1e-10)
        assert row["p_value"] == pytest.approx(p, rel=1e-8)
        assert row["mean_f"] == pytest.approx(statistics.fmean(sub["score_f"]))
        assert row["sd_ratio"] == pytest.approx(statistics.stdev(sub["score_f"] / sub["score_m"]))
    # the generated feminine scores are lower: a significant one-sided result
    assert table.iloc[-1]["mean_ratio"] < 1 and table.iloc[-1]["p_value"] < 0.05


def test_ratio_on_a_literal_example():
    table = Q.ratios(pairs([(0.8, 1.0), (0.9, 1.0), (1.0, 1.0)]))
    row = table.iloc[0]
    # ratios 0.8, 0.9, 1.0: mean 0.9, sd 0.1, sem 0.1/sqrt(3), t = -0.1/(0.1/sqrt 3) = -sqrt(3)
    assert row["mean_ratio"] == pytest.approx(0.9)
    assert row["sd_ratio"] == pytest.approx(0.1)
    assert row["t"] == pytest.approx(-math.sqrt(3))
    half = stats.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(0.9 - half), pytest.approx(0.9 + half))
    assert row["p_value"] == pytest.approx(stats.t.sf(math.sqrt(3), 2))


def test_nonpositive_and_missing_scores_are_dropped_and_counted():
    good = [(0.8, 1.0), (0.9, 1.0), (1.0, 1.0)]
    bad = [(0.5, 0.0), (0.5, -0.2), (-0.1, 0.5), (math.nan, 0.7), (0.7, math.nan)]
    df = pairs(good + bad + [(0.0, 0.5)])  # a zero numerator is a valid ratio of 0
    table = Q.ratios(df)
    row = table.iloc[0]
    assert row["n"] == 4 and row["n_dropped"] == 3 and row["n_missing"] == 2
    assert row["mean_ratio"] == pytest.approx(statistics.fmean([0.8, 0.9, 1.0, 0.0]))
    per = Q.instance_ratios(df)
    assert list(per["ratio_status"]) == ["ok"] * 3 + ["nonpositive"] * 3 + ["missing"] * 2 + ["ok"]
    result = Q.audit(df, thresholds=[0.5])
    assert any("3 instance(s) left out of the ratios" in w for w in result.warnings)
    assert any("2 instance(s) without both scores" in w for w in result.warnings)


def test_fewer_than_two_ratios_give_nan_interval():
    row = Q.ratios(pairs([(0.8, 1.0)])).iloc[0]
    assert row["n"] == 1 and row["mean_ratio"] == pytest.approx(0.8)
    assert math.isnan(row["ci_low"]) and math.isnan(row["p_value"])


def test_ratios_split_by_source_gender_with_gold():
    df = generated(gold=True, langs=("pt",))
    table = Q.ratios(df)
    assert list(table["source_gender"]) == ["any", "F", "M"] * 3  # pt, mean, pooled
    for g in ("F", "M"):
        sub = df[df["gold"] == g]
        n, mean, lo, hi, t, p = expected_ratio_stats(sub["score_f"], sub["score_m"])
        row = table[(table["lang"] == "pt") & (table["source_gender"] == g)].iloc[0]
        assert row["n"] == n and row["mean_ratio"] == pytest.approx(mean) and row["p_value"] == pytest.approx(p)


def test_neutral_contrast():
    df = generated(langs=("it",)).rename(
        columns={"hyp_f": "hyp_n", "hyp_m": "hyp_g", "score_f": "score_n", "score_m": "score_g"}
    )
    table = Q.ratios(df)
    assert list(table.columns) == Q.ratio_columns("N/G")
    n, mean, lo, hi, t, p = expected_ratio_stats(df["score_n"], df["score_g"])
    assert table.iloc[0]["contrast"] == "N/G" and table.iloc[0]["mean_ratio"] == pytest.approx(mean)
    ret = Q.retention(df, [0.8])
    assert {"share_n", "share_g"} <= set(ret.table.columns)


# ---------------------------------------------------------------------------------------------
# errors

LITERAL = [  # (score_f, score_m), gold
    ((0.9, 0.8), "F"),  # right
    ((0.7, 0.7), "F"),  # tie -> error
    ((0.6, 0.8), "F"),  # error
    ((0.8, 0.5), "F"),  # right
    ((0.5, 0.9), "M"),  # right
    ((0.8, 0.8), "M"),  # tie -> error
    ((0.4, 0.6), "M"),  # right
    ((0.3, 0.7), "M"),  # right
]


def test_error_rates_count_ties_as_errors():
    df = pairs([s for s, _ in LITERAL], [g for _, g in LITERAL])
    e = Q.errors(df)
    assert list(e.columns) == Q.ERROR_COLUMNS
    row = e[e["lang"] == "pooled"].iloc[0]
    assert (row["n"], row["n_f"], row["n_m"]) == (8, 4, 4)
    assert (row["errors_f"], row["errors_m"]) == (2, 1)
    assert row["er"] == pytest.approx(3 / 8)
    assert row["er_f"] == pytest.approx(0.5) and row["er_m"] == pytest.approx(0.25)
    assert row["phi"] == pytest.approx(2.0)
    assert row["ties"] == 2 and row["tie_rate"] == pytest.approx(0.25)
    per = Q.instance_errors(df)
    assert list(per["error"]) == [False, True, True, False, False, True, False, False]
    assert list(per["tie"]) == [False, True, False, False, False, True, False, False]


def test_phi_special_cases():
    assert Q.phi(0.2, 0.0) == math.inf
    assert math.isnan(Q.phi(0.0, 0.0))
    assert math.isnan(Q.phi(math.nan, 0.1))
    assert Q.phi(0.3, 0.1) == pytest.approx(3.0)
    # no masculine error: phi inf, CI upper bound inf, a note, a warning
    df = pairs(
        [(0.6, 0.8), (0.9, 0.1), (0.7, 0.9), (0.2, 0.9), (0.1, 0.95), (0.3, 0.8)], ["F", "F", "F", "M", "M", "M"]
    )
    row = Q.errors(df).iloc[-1]
    assert row["phi"] == math.inf and row["phi_ci_high"] == math.inf and "no masculine error" in row["phi_ci_note"]
    result = Q.audit(df, thresholds=[0.5])
    assert any("phi = inf" in w for w in result.warnings)
    assert json.loads(json.dumps(Q.summary_dict(result)))["errors"][0]["phi"] is None


def error_data(seed=3, n=200):
    rng = np.random.default_rng(seed)
    gold = np.where(np.arange(n) % 2 == 0, "F", "M")
    m = rng.uniform(0.5, 0.9, n)
    # feminine sources: the feminine (right) form often loses; masculine sources: rarely
    f = np.where(gold == "F", m + rng.normal(0.0, 0.05, n), m - rng.normal(0.03, 0.05, n))
    return pairs(list(zip(f, m)), gold)


def test_phi_bootstrap_ci_reproducible_and_independent():
    df = error_data()
    e1 = Q.errors(df, seed=7)
    e2 = Q.errors(df, seed=7)
    pd.testing.assert_frame_equal(e1, e2)
    row = e1.iloc[-1]
    assert row["phi_ci_low"] < row["phi"] < row["phi_ci_high"]
    assert row["phi_ci_note"] == ""
    # the same bootstrap through scipy's non-vectorised path (same resamples, same seed)
    per = Q.instance_errors(df)
    ef = per["error"][df["gold"] == "F"].astype(float).to_numpy()
    em = per["error"][df["gold"] == "M"].astype(float).to_numpy()
    assert row["phi"] == pytest.approx(ef.mean() / em.mean())
    ref = stats.bootstrap(
        (ef, em),
        lambda a, b: np.mean(a) / np.mean(b),
        n_resamples=1000,
        method="percentile",
        vectorized=False,
        rng=np.random.default_rng(7),
    )
    assert row["phi_ci_low"] == pytest.approx(ref.confidence_interval.low)
    assert row["phi_ci_high"] == pytest.approx(ref.confidence_interval.high)
    # and roughly what a plain numpy bootstrap within each gender group gives
    rng = np.random.default_rng(123)
    boot = [rng.choice(ef, len(ef)).mean() / rng.choice(em, len(em)).mean() for _ in range(4000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    assert row["phi_ci_low"] == pytest.approx(lo, rel=0.1)
    assert row["phi_ci_high"] == pytest.approx(hi, rel=0.1)


def test_errors_need_gold_and_the_gendered_contrast():
    with pytest.raises(ValueError, match="gold"):
        Q.errors(generated())
    result = Q.audit(generated(), thresholds=[0.8])
    assert result.errors is None


# ---------------------------------------------------------------------------------------------
# retention


def test_retention_shares_by_hand():
    scores = [(0.9, 0.95), (0.7, 0.85), (0.85, 0.8), (0.5, 0.6), (0.8, 0.8)]
    df = pairs(scores)
    ret = Q.retention(df, [0.8, 0.5, 0.99])
    t = ret.table[ret.table["lang"] == "pt"].set_index("threshold")
    # >= 0.8: feminine 0.9, 0.85, 0.8 -> 3/5; masculine 0.95, 0.85, 0.8, 0.8 -> 4/5
    assert t.loc[0.8, "share_f"] == pytest.approx(3 / 5) and t.loc[0.8, "share_m"] == pytest.approx(4 / 5)
    assert t.loc[0.8, "gap"] == pytest.approx(1 / 5)
    assert t.loc[0.5, "share_f"] == 1 and t.loc[0.5, "share_m"] == 1
    assert t.loc[0.99, "share_f"] == 0 and t.loc[0.99, "share_m"] == 0
    curve = ret.curves[(ret.curves["lang"] == "pt") & (ret.curves["form"] == "M")]
    assert list(curve["score"]) == [0.6, 0.8, 0.85, 0.95]
    assert list(curve["share"]) == pytest.approx([5 / 5, 4 / 5, 2 / 5, 1 / 5])
    assert list(ret.table["lang"].unique()) == ["pt", "mean", "pooled"]


def test_retention_checks_thresholds_and_defaults():
    with pytest.raises(ValueError, match="finite number"):
        Q.retention(pairs([(0.1, 0.2)]), [float("nan")])
    assert Q.default_thresholds(pairs([(0.1, 0.2), (0.9, 1.0)]))[0] == [0.8]
    ts, why = Q.default_thresholds(pairs([(10, 20), (30, 40)]))
    assert ts == [25.0] and "median" in why


# ---------------------------------------------------------------------------------------------
# scoring


def test_precomputed_scores_are_used_exactly_and_the_metric_never_runs():
    df = generated()
    scored = Q.score_pairs(df, metric=RaisingMetric())
    assert scored["score_f"].tolist() == df["score_f"].tolist()
    assert scored["score_m"].tolist() == df["score_m"].tolist()
    assert scored.attrs["qe_scoring"]["precomputed"] is True
    result = Q.audit(scored, thresholds=[0.8])
    assert any("was not run" in w for w in result.warnings)


def test_metric_scores_each_hypothesis_column_in_one_call():
    df = pd.DataFrame(
        {
            "instance_id": ["1", "2", "3"],
            "lang": "pt",
            "source": ["a", "b", "c"],
            "hyp_f": ["ela é", "ela foi lá", "a"],
            "hyp_m": ["ele é", "ele", "ab"],
        }
    )
    metric = FakeMetric()
    progress = []
    scored = Q.score_pairs(df, metric, progress=lambda f, d: progress.append(f))
    assert len(metric.calls) == 2
    assert metric.calls[0] == (["a", "b", "c"], ["ela é", "ela foi lá", "a"])
    assert scored["score_f"].tolist() == pytest.approx([0.05, 0.10, 0.01])
    assert scored["score_m"].tolist() == pytest.approx([0.05, 0.03, 0.02])
    assert scored.attrs["qe_scoring"]["metric"]["name"] == "fake-len"
    assert progress[-1] == 1.0
    result = Q.audit(scored, thresholds=[0.03])
    assert result.metric["name"] == "fake-len" and result.context == "none"


def test_context_variants_in_scoring():
    df = pd.DataFrame(
        {
            "instance_id": ["1", "2"],
            "lang": "pt",
            "source": ["She sings.", "He sings."],
            "hyp_f": ["Ela canta.", "Ela canta."],
            "hyp_m": ["Ele canta.", "Ele canta."],
            "context": ["Ana is a singer.", "Ana is a singer."],
            "gold": ["F", "F"],
        }
    )
    metric = FakeMetric()
    Q.score_pairs(df, metric, context="mon")
    assert metric.calls[0] == (
        ["Ana is a singer. She sings.", "Ana is a singer. He sings."],
        ["Ana is a singer. Ela canta.", "Ana is a singer. Ela canta."],
    )
    calls = []

    def mt(texts):
        calls.append(list(texts))
        return ["Ana é cantora."] * len(texts)

    metric = FakeMetric()
    scored = Q.score_pairs(df, metric, context="bil", translate=mt)
    assert calls == [["Ana is a singer."]]  # once, for both columns and both rows
    assert metric.calls[1][1] == ["Ana é cantora. Ele canta.", "Ana é cantora. Ele canta."]
    assert scored.attrs["qe_scoring"]["context"] == "bil"
    with pytest.raises(ValueError, match="needs a context column"):
        Q.score_pairs(df.drop(columns="context"), FakeMetric(), context="mon")


def test_metric_scores_are_cached_in_the_database(database):
    df = pd.DataFrame(
        {"instance_id": ["1", "2"], "lang": "pt", "source": ["a", "b"], "hyp_f": ["x", "xy"], "hyp_m": ["xyz", "x"]}
    )
    metric = FakeMetric()
    first = Q.score_pairs(df, metric, database=database)
    assert len(metric.calls) == 2
    again = Q.score_pairs(df, metric, database=database)
    assert len(metric.calls) == 2  # every score came from the cache
    pd.testing.assert_frame_equal(first, again)


def test_scoring_errors():
    df = generated().drop(columns=["score_f", "score_m"])
    with pytest.raises(ValueError, match="no metric"):
        Q.score_pairs(df)
    with pytest.raises(ValueError, match="run score_pairs first"):
        Q.ratios(df)

    class NoneMetric(FakeMetric):
        def score(self, sources, hypotheses, references=None, contexts=None):
            return [None] * len(sources)

    with pytest.raises(ValueError, match="no score at all"):
        Q.score_pairs(df, NoneMetric())


# ---------------------------------------------------------------------------------------------
# input validation


def base_frame(**extra) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "instance_id": ["1", "2", "3"],
            "lang": ["pt", "pt", "es"],
            "source": ["a", "b", "c"],
            "hyp_f": ["fa", "fb", "fc"],
            "hyp_m": ["ma", "mb", "mc"],
        }
    )
    for k, v in extra.items():
        df[k] = v
    return df


@pytest.mark.parametrize(
    "change, row, column, message",
    [
        (lambda d: d.drop(columns="source"), 1, "source", "missing column"),
        (lambda d: d.drop(columns="hyp_m"), 1, "hyp_m", "missing column"),
        (lambda d: d.assign(hyp_n=["n"] * 3, hyp_g=["g"] * 3), 1, "hyp_n", "both contrasts mixed"),
        (lambda d: d.assign(score_n=[0.1] * 3), 1, "score_n", "both contrasts mixed"),
        (lambda d: d.assign(score_f=[0.1] * 3), 1, "score_m", "need both"),
        (lambda d: d.assign(gold=["F", "X", "M"]), 3, "gold", "gold 'X' is not F or M"),
        (lambda d: d.assign(gold=["F", "", "M"]), 3, "gold", "blank gold"),
        (
            lambda d: d.assign(score_f=["0.5", "n/a", "0.1"], score_m=["0.5", "0.4", "0.3"]),
            3,
            "score_f",
            "score 'n/a' is not a number",
        ),
        (
            lambda d: d.assign(score_f=["0.5", "0.4", "inf"], score_m=["0.5", "0.4", "0.3"]),
            4,
            "score_f",
            "not a finite number",
        ),
        (
            lambda d: d.assign(instance_id=["1", "1", "1"]),
            3,
            "instance_id",
            "duplicate instance_id '1' in lang 'pt' (first at row 2)",
        ),
        (lambda d: d.assign(hyp_f=["fa", "  ", "fc"]), 3, "hyp_f", "blank hypothesis"),
        (lambda d: d.assign(lang=["pt", "", "es"]), 3, "lang", "empty value"),
    ],
)
def test_input_errors_name_row_and_column(change, row, column, message):
    with pytest.raises(Q.QEInputError) as info:
        Q.read_pairs(change(base_frame()))
    err = info.value
    assert (err.row, err.column) == (row, column)
    assert message in str(err)


def test_same_instance_id_in_two_languages_is_fine_and_blank_scores_are_nan():
    d = base_frame(instance_id=["1", "2", "1"], score_f=["0.5", "", "0.2"], score_m=["0.4", "0.3", "0.2"])
    out = Q.read_pairs(d)
    assert math.isnan(out.loc[1, "score_f"]) and out.loc[0, "score_f"] == 0.5
    # gold blank on every row = the ambiguous setting
    assert "gold" not in Q.read_pairs(base_frame(gold=["", "", ""])).columns
    assert list(Q.read_pairs(base_frame(gold=["f", "M", "m"]))["gold"]) == ["F", "M", "M"]


def test_read_pairs_from_csv(tmp_path):
    p = tmp_path / "PAIRS.csv"
    p.write_text(
        "\ufeffinstance_id,lang,source,hyp_f,hyp_m,gold,score_f,score_m\n"
        "1,pt,s,f,m,F,0.5,0.6\n2,pt,s2,f2,m2,M,abc,0.6\n",
        encoding="utf-8",
    )
    with pytest.raises(Q.QEInputError, match=r"PAIRS.csv, row 3, column 'score_f': score 'abc' is not a number"):
        Q.read_pairs(p)
    p.write_text("instance_id,lang,source,hyp_f,hyp_m\n", encoding="utf-8")
    with pytest.raises(Q.QEInputError, match="no instances"):
        Q.read_pairs(p)
    with pytest.raises(Q.QEInputError, match="file not found"):
        Q.read_pairs(tmp_path / "missing.csv")


# ---------------------------------------------------------------------------------------------
# the whole audit and its files


def test_audit_and_outputs(tmp_path):
    df = error_data(n=80)
    df["lang"] = np.where(np.arange(len(df)) < 40, "es", "pt")
    result = Q.audit(df, thresholds=[0.7, 0.8], metric="fake", context="mon")
    assert result.has_gold and result.contrast == "F/M" and result.languages == ["es", "pt"]
    assert result.metric == {"name": "fake"} and result.context == "mon"
    assert {"ratio", "ratio_status", "error", "tie"} <= set(result.scores.columns)
    paths = Q.write_outputs(result, tmp_path / "out")
    names = {p.name for p in paths}
    assert {
        "ratios.csv",
        "errors.csv",
        "retention.csv",
        "ccdf.csv",
        "scores.csv",
        "summary.json",
        "ratios.html",
        "ccdf.html",
        "errors.html",
    } <= names
    assert (tmp_path / "out" / "plotly.min.js").exists()  # offline: plotly.js written beside the HTML
    html = (tmp_path / "out" / "ratios.html").read_text(encoding="utf-8")
    assert "plotly.min.js" in html and "cdn.plot.ly" not in html
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_instances"] == 80 and summary["errors"][0]["lang"] == "mean"
    mean_any = result.ratios[(result.ratios["lang"] == "mean") & (result.ratios["source_gender"] == "any")]
    assert summary["ratio"][0]["mean_ratio"] == pytest.approx(mean_any.iloc[0]["mean_ratio"])
    back = pd.read_csv(tmp_path / "out" / "ratios.csv")
    assert back["mean_ratio"].tolist() == pytest.approx(result.ratios["mean_ratio"].tolist())
    assert "QE gender audit" in Q.summary(result)


def test_run_cli_with_precomputed_scores(tmp_path):
    p = tmp_path / "PAIRS.csv"
    generated().to_csv(p, index=False)
    text = Q.run_cli(p, tmp_path / "out", metric=RaisingMetric())
    assert "files written" in text and (tmp_path / "out" / "ratios.csv").exists()
    assert not (tmp_path / "out" / "errors.csv").exists()
