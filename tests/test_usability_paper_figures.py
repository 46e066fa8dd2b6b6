"""Paper 000's Table 3, Figure 2b and Figure 10 from the app's own data
(services/usability/paper_figures.py), each against an independent pandas/scipy computation
written here."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from services.usability import paper_figures as P

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

DEMO = Path(__file__).resolve().parents[1] / "assets" / "demo_study"

STARTERS = pd.DataFrame(
    [
        {
            "id": "a",
            "domain": "health",
            "source": "natural",
            "corpus": "MED-MT",
            "text": "one two three four",
            "key_spans": ["one", "two"],
        },
        {
            "id": "b",
            "domain": "health",
            "source": "natural",
            "corpus": "MED-MT",
            "text": "one two",
            "key_spans": ["one"],
        },
        {
            "id": "c",
            "domain": "health",
            "source": "synthetic",
            "corpus": "Gemini",
            "text": "a b c d e f",
            "key_spans": ["a", "b", "c"],
        },
        {
            "id": "d",
            "domain": "everyday",
            "source": "natural",
            "corpus": "BConTrasT",
            "text": "x  y\nz",
            "key_spans": [],
        },
        {
            "id": "e",
            "domain": "everyday",
            "source": "natural",
            "corpus": "BConTrasT",
            "text": "x y z w v",
            "key_spans": ["x", "y", "z", "w"],
        },
    ]
)
COUNTS = pd.DataFrame({"starter_id": ["a", "b", "c", "e"], "questions": [10, 8, 6, 9]})  # d has none


def expected_table3(starters: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    s = starters.copy()
    s["words"] = [len(t.split()) for t in s["text"]]
    s["spans"] = [len(k) for k in s["key_spans"]]
    s["q"] = [int(counts.set_index("starter_id")["questions"].get(i, 0)) for i in s["id"]]
    g = (
        s.groupby(["domain", "corpus", "source"])
        .agg(
            starters=("id", "size"),
            words_mean=("words", "mean"),
            words_sd=("words", "std"),
            key_spans_mean=("spans", "mean"),
            key_spans_sd=("spans", "std"),
            questions_mean=("q", "mean"),
            questions_sd=("q", "std"),
            questions_total=("q", "sum"),
        )
        .reset_index()
    )
    return g, s


def test_table3_is_the_starter_statistics_per_domain_and_corpus():
    """Section 2.2: "we sample 50 items each from both MT-MED and BConTrasT and generate 100
    samples per domain (50 from each LLM) ... Appendix Table 3 reports examples and
    statistics": one row per domain x corpus, then all starters."""
    got = P.starter_statistics(STARTERS, COUNTS)
    want, s = expected_table3(STARTERS, COUNTS)
    body = got[got["domain"] != P.ALL].reset_index(drop=True)
    pd.testing.assert_frame_equal(body[list(want.columns)], want, check_dtype=False)
    everything = got[got["domain"] == P.ALL].iloc[0]
    assert everything["starters"] == 5 and everything["questions_total"] == 33
    assert everything["words_mean"] == pytest.approx(s["words"].mean())
    assert everything["key_spans_sd"] == pytest.approx(np.std(s["spans"], ddof=1))
    # d's text has a double space and a line break: three words; it has no questions row: zero
    assert body.loc[body["corpus"] == "BConTrasT", "questions_mean"].item() == 4.5


def test_table3_of_the_stored_demo_study(demo_db):
    """From storage: the demo's starters and its questions in use (assets/demo_study, read here
    with pandas)."""
    starters = pd.read_csv(DEMO / "starters.csv")
    starters["key_spans"] = starters["key_spans"].map(lambda v: [x.strip() for x in v.split("|")])
    questions = pd.read_csv(DEMO / "questions.csv")
    counts = questions.groupby("starter_id").size().rename("questions").reset_index()
    want, _ = expected_table3(starters, counts)
    got = P.study_starter_statistics(demo_db, "demo")
    body = got[got["domain"] != P.ALL].reset_index(drop=True)
    pd.testing.assert_frame_equal(body[list(want.columns)], want, check_dtype=False)
    assert got["starters"].iloc[-1] == len(starters) and got["questions_total"].iloc[-1] == len(questions)


def test_table3_says_what_is_missing(database):
    with pytest.raises(P.PaperTableError, match="missing column.*key_spans"):
        P.starter_statistics(STARTERS.drop(columns="key_spans"))
    with pytest.raises(P.PaperTableError, match="'nope' has no starters"):
        P.study_starter_statistics(database, "nope")


def test_table3_written_for_the_cli(demo_db, tmp_path):
    path = P.write_study_starter_statistics(demo_db, "demo", tmp_path)
    assert path.name == "starter_statistics.csv"
    assert list(pd.read_csv(path).columns) == P.STARTER_COLUMNS


EXCHANGES = pd.DataFrame(
    {
        "system": ["DeSTA2"] * 3 + ["Voxtral"] * 4 + ["Phi 4"],
        "u": [3.0, 2.0, 3.0 + 1 / 3, 4.0, 4.0 + 2 / 3, 5.0, 3.0, 1.0],
    }
)


def test_figure10_is_the_mean_usability_per_model_with_its_t_interval():
    """Section 4.2: "Voxtral and Tower+ yielding the best scores ... see per-model mu(u) in
    Appendix Figure 10": mean u per model, best first, 95% t interval of the mean."""
    got = P.model_means(EXCHANGES)
    assert list(got["system"]) == ["Voxtral", "DeSTA2", "Phi 4"]
    g = EXCHANGES.groupby("system")["u"]
    for r in got.itertuples():
        u = g.get_group(r.system)
        assert r.n == len(u) and r.mu_u == pytest.approx(u.mean())
        if len(u) == 1:
            assert math.isnan(r.ci_low) and math.isnan(r.ci_high)
            continue
        half = stats.t.ppf(0.975, len(u) - 1) * u.std(ddof=1) / math.sqrt(len(u))
        assert (r.ci_low, r.ci_high) == pytest.approx((u.mean() - half, u.mean() + half))
    with pytest.raises(P.PaperTableError, match="missing column 'u'"):
        P.model_means(EXCHANGES.drop(columns="u"))


LMM_TABLE = pd.DataFrame(
    {
        "term": ["Intercept", "group: USB", "gender: Woman", "system: Voxtral", "u_b", "group: USB x gender: Woman"],
        "estimate": [1.5, 0.1, -0.2, 0.7, 0.47, 0.07],
        "std_error": [0.2, 0.1, 0.1, 0.07, 0.03, 0.17],
        "p_value": [0.0, 0.3, 0.09, 0.0, 0.0, 0.68],
    }
)
LMM_TABLE["ci_low"] = LMM_TABLE["estimate"] - 1.96 * LMM_TABLE["std_error"]
LMM_TABLE["ci_high"] = LMM_TABLE["estimate"] + 1.96 * LMM_TABLE["std_error"]


def test_figure2b_draws_the_usability_lmm_coefficients_with_their_cis():
    """Section 4.2: "Figure 2(b) shows some of the resulting coefficients" of the LMM of u
    (appendix C.2, Table 4: "CIs are 95% Wald intervals"): every term but the intercept, Table
    4's first on top, each bar from its CI; the caption says what it shows."""
    fit = SimpleNamespace(table=LMM_TABLE, n=120, reference={"group": "Hindi", "gender": "Man"})
    result = SimpleNamespace(lmm=fit, data=EXCHANGES)
    figs = P.figures(result)
    assert set(figs) == {"lmm_coefficients", "model_means"}
    tr = figs["lmm_coefficients"].data[0]
    want = LMM_TABLE[LMM_TABLE["term"] != "Intercept"].iloc[::-1]
    assert list(tr.y) == list(want["term"]) and "Intercept" not in tr.y
    assert np.allclose(np.array(tr.x) + np.array(tr.error_x.array), want["ci_high"])
    assert np.allclose(np.array(tr.x) - np.array(tr.error_x.arrayminus), want["ci_low"])
    title = figs["lmm_coefficients"].layout.title.text
    assert "Figure 2b" in title and "95% Wald" in title and "group Hindi" in title
    bars = figs["model_means"].data[0]
    assert list(bars.x) == ["Voxtral", "DeSTA2", "Phi 4"]
    assert "Figure 10" in figs["model_means"].layout.title.text
    # without a fitted LMM only Figure 10
    assert set(P.figures(SimpleNamespace(lmm=None, data=EXCHANGES))) == {"model_means"}


def test_the_analysis_draws_and_writes_them(tmp_path):
    """The hook: analysis.figures() carries Figure 2b from the fitted usability LMM (its table,
    term for term) and Figure 10, and write_outputs writes both and model_means.csv."""
    from services.usability import analysis as U
    from tests.helpers.usability import generate

    res = U.analyze(
        generate(seed=2, senders_per_cell=4, per_sender=6, receivers=8, validators=8),
        pa_iterations=20,
        metric_lmm=False,
    )
    figs = U.figures(res)
    t = res.lmm.table[res.lmm.table["term"] != "Intercept"].iloc[::-1]
    assert list(figs["lmm_coefficients"].data[0].y) == list(t["term"])
    np.testing.assert_allclose(figs["lmm_coefficients"].data[0].x, t["estimate"])
    paths = {p.name for p in U.write_outputs(res, tmp_path, png=False)}
    assert {"lmm_coefficients.html", "model_means.html", "model_means.csv"} <= paths
    written = pd.read_csv(tmp_path / "model_means.csv")
    means = res.data.groupby("system")["u"].mean().sort_values(ascending=False)
    assert list(written["system"]) == list(means.index)
    np.testing.assert_allclose(written["mu_u"], means.to_numpy())


def test_the_command_line_writes_table3_from_the_stored_study(tmp_path, monkeypatch, capsys):
    """`python app.py analyze usability FILE --out DIR --study ID`: the analysis of the file and
    Table 3 of the stored study; an unknown study is named."""
    import cli
    from services.setup.importer import import_study
    from storage import open_database
    from tests.helpers.usability import generate

    monkeypatch.setenv("TRADLAB_DB", str(tmp_path / "app.db"))
    import_study(open_database(tmp_path / "app.db"), DEMO)
    generate(seed=3, senders_per_cell=3, per_sender=6, receivers=6, validators=6).to_csv(
        tmp_path / "x.csv", index=False
    )
    assert (
        cli.main(["analyze", "usability", str(tmp_path / "x.csv"), "--out", str(tmp_path / "out"), "--study", "demo"])
        == 0
    )
    assert "Table 3" in capsys.readouterr().out
    table = pd.read_csv(tmp_path / "out" / "starter_statistics.csv")
    assert table["starters"].iloc[-1] == len(pd.read_csv(DEMO / "starters.csv"))
    assert (tmp_path / "out" / "model_means.html").exists()
    assert (
        cli.main(["analyze", "usability", str(tmp_path / "x.csv"), "--out", str(tmp_path / "o2"), "--study", "nope"])
        != 0
    )
    assert "'nope' has no starters" in capsys.readouterr().err


def test_the_analysis_tab_path_writes_table3(demo_db, monkeypatch):
    """services/usability/study_analysis.analyse (the Analysis tab's call) writes
    starter_statistics.csv beside the analysis files."""
    from services.usability import export as usability_export
    from services.usability import study_analysis
    from tests.helpers.usability import generate

    frame = generate(seed=4, senders_per_cell=3, per_sender=6, receivers=6, validators=6)
    monkeypatch.setattr(usability_export, "exchanges_frame", lambda database, study_id: frame)
    res, figs, files = study_analysis.analyse(demo_db, "demo")
    assert "lmm_coefficients" in dict(figs) and "model_means" in dict(figs)
    table3 = [f for f in files if f.endswith("starter_statistics.csv")]
    assert len(table3) == 1
    assert pd.read_csv(table3[0])["questions_total"].iloc[-1] == len(pd.read_csv(DEMO / "questions.csv"))
