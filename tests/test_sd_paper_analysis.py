"""The semantic-differential analysis runs as paper 002 ran it, by default (issue 27, point 6;
issue 28 for the Analysis tab).

Paper 002, section 4.2: "We conducted an Exploratory Factor Analysis (EFA) in SPSS ... The
extraction method used was Maximum Likelihood; The rotation method was PROMAX with Kaiser
Normalization ... Our data contained several adjective pairs with low communalities and/or
cross-loadings differing by less than 0.2 ... Thus, we removed those attributes for the sake of
interpretability. The dimension reduction revealed four factors for eight polar adjective pairs."
SPSS extracts as many factors as the correlation matrix has eigenvalues above 1 unless a number
is set. Section 4.1: "The data cleansing removed 6,800 ratings, resulting in 14,200 ratings."
"""

from __future__ import annotations

import json
import statistics

import gradio as gr
import numpy as np
import pandas as pd
import pytest

from services.admin import auth as admin
from services.participation.items import get_view
from services.sd import analysis as S
from services.sd import study_analysis as sd_study
from services.setup.enrolment import add_participants
from tabs.common import Ctx
from tests.helpers.app import run_cli
from tests.helpers.sd import answer_page, factor_data, rating_rows, same_partition
from tests.helpers.sd import sd_study as make_sd_study

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def planted_ratings(seed: int = 1, participants: int = 300, per: int = 3) -> tuple[pd.DataFrame, list[int]]:
    """Participants each rate `per` sentences on the 16 pairs of a 4-factor structure plus a weak
    pair (loading 0.25) and a cross-loading pair (0.5 on factors 1 and 2), values on -3..3; one
    pair repeated per sentence with +-1 noise; 500 s each (none too fast)."""
    data, groups = factor_data(n=participants * per, seed=seed, weak=True, cross=True)
    v = np.clip(np.round(1.3 * data.to_numpy()), -3, 3)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(participants):
        firsts, reps = {}, {}
        for s in range(per):
            row = v[i * per + s]
            firsts.update({(f"s{s}", name): float(row[j]) for j, name in enumerate(data.columns)})
            j = int(rng.integers(len(data.columns)))
            reps[(f"s{s}", data.columns[j])] = float(
                np.clip(row[j] + rng.integers(-1, 2) * (rng.random() < 0.3), -3, 3)
            )
        rows += rating_rows(f"P{i:03d}", 500.0, firsts, reps)
    return pd.DataFrame(rows), groups


@pytest.fixture(scope="module")
def planted():
    df, groups = planted_ratings()
    return df, groups, S.analyze(df)


def test_the_default_run_prunes_weak_and_cross_loading_pairs_and_keeps_four_factors(planted):
    """Section 4.2: pairs "with low communalities and/or cross-loadings differing by less than
    0.2" were removed, and four factors remained. The default run does the same: the weak and
    the cross-loading pair go, the 16 others keep the planted 4-factor partition."""
    df, groups, res = planted
    e = res.efa
    assert {s["item"] for s in e.pruned} == {"weak", "cross"}
    assert {s["reason"] for s in e.pruned} == {"low_communality", "cross_loading"}
    assert e.n_factors == 4 and len(e.items) == 16
    assert same_partition(e.loadings, e.items, groups[:16])
    assert e.prune and e.factor_rule == "kaiser" and e.n_factors_source == "eigenvalue > 1"
    text = S.summary(res)
    assert "4 factor(s) (eigenvalue > 1)" in text and "pruned 1: weak" in text and "pruned 2: cross" in text


def test_factor_rule_eigenvalue_above_one_is_numpys_count():
    """SPSS's default number of factors: the eigenvalues of the correlation matrix above 1,
    counted here with numpy.linalg.eigvals. On pure noise parallel analysis keeps 1 factor while
    the eigenvalue rule keeps several, so the default is told apart from parallel analysis."""
    cases = [
        np.random.default_rng(0).standard_normal((100, 20)),
        factor_data(n=500, seed=2)[0].to_numpy(),
        factor_data(n=400, seed=3, weak=True, cross=True)[0].to_numpy(),
    ]
    for x in cases:
        expected = int((np.linalg.eigvals(np.corrcoef(x.T)).real > 1).sum())
        e = S.efa(x, prune=False, pa_iterations=50)
        assert e.n_factors == expected and e.n_factors_source == "eigenvalue > 1"
        assert S.kaiser_count(x) == expected == e.kaiser_count
        pa = S.efa(x, prune=False, pa_iterations=50, factor_rule="parallel")
        assert pa.n_factors == max(1, S.parallel_analysis(x, 50)[2]) and pa.n_factors_source.startswith("parallel")
    noise = cases[0]
    assert S.efa(noise, prune=False, pa_iterations=50, factor_rule="parallel").n_factors == 1
    assert S.efa(noise, prune=False, pa_iterations=50).n_factors == S.kaiser_count(noise) >= 3
    with pytest.raises(S.EFAError, match="factor_rule must be one of kaiser, parallel"):
        S.efa(noise, factor_rule="scree")


def test_a_numpy_iteration_count_still_writes_summary_json():
    # the count is stored as a Python int: summary.json's parallel_analysis.iterations
    e = S.efa(np.random.default_rng(0).standard_normal((100, 6)), prune=False, pa_iterations=np.int64(5))
    assert json.loads(json.dumps({"iterations": e.pa_iterations})) == {"iterations": 5}
    with pytest.raises(ValueError, match="factor_rule"):
        S.analyze(planted_ratings(participants=10)[0], factor_rule="pa")


def test_cleansing_report_beside_the_papers_figure(tmp_path):
    """Section 4.1: "The data cleansing removed 6,800 ratings, resulting in 14,200 ratings"
    (6,800 of 21,000, 32 %). The report gives the cut-off, the raters and the ratings removed
    beside that figure."""
    df, _ = planted_ratings(participants=40)
    fast = df["participant_id"] == "P000"
    df.loc[fast, "duration_s"] = 200.0  # too fast (<= 240 s)
    flat = df["participant_id"] == "P001"
    df.loc[flat, "value"] = 1.0  # straight-liner
    rand = (df["participant_id"] == "P002") & (df["is_repeat"] == 1)
    df.loc[rand, "value"] = -3.0 * np.sign(
        df.loc[(df["participant_id"] == "P002") & (df["is_repeat"] == 0), "value"].sum() or 1
    )
    res = S.analyze(df, n_factors=4, prune=False)
    cl = res.cleansing.set_index("participant_id")
    # independent: the fence from statistics.quantiles, the counts from the ratings table
    q1, _, q3 = statistics.quantiles(cl["inconsistency"].dropna(), n=4, method="inclusive")
    fence = q3 + 1.5 * (q3 - q1)
    removed = set(cl.index[(cl["duration_s"] <= 240) | cl["straight_liner"] | (cl["inconsistency"] > fence)])
    assert {"P000", "P001"} <= removed
    ratings_removed = int(df["participant_id"].isin(removed).sum())
    rep = S.cleansing_report(res).set_index("step")
    assert list(rep.reset_index().columns) == S.CLEANSING_REPORT_COLUMNS
    assert rep.at["total", "raters_removed"] == len(removed)
    assert rep.at["total", "ratings_removed"] == ratings_removed
    assert rep.at["total", "ratings_removed_share"] == pytest.approx(ratings_removed / len(df))
    assert rep.at["too_fast", "ratings_removed"] == int(fast.sum())
    assert rep.at["straight_liner", "ratings_removed"] == int(flat.sum())
    assert f"{fence:.3f}" in rep.at["inconsistency", "rule"]
    assert "6,800 of 21,000 ratings removed (32%" in rep.at["total", "paper_002"]
    text = S.summary(res)
    assert f"cleansing removed {len(removed)} of 40 raters and {ratings_removed:,} of {len(df):,} ratings" in text
    assert f"inconsistency cut-off {fence:.3f}" in text and "paper 002: 6,800 of 21,000 ratings removed" in text
    S.write_outputs(res, tmp_path)
    csv = pd.read_csv(tmp_path / "cleansing_summary.csv").set_index("step")
    assert csv.at["total", "ratings_removed"] == ratings_removed
    c = json.loads((tmp_path / "summary.json").read_text())["cleansing"]
    assert c["raters_removed"] == len(removed) and c["ratings_removed"] == ratings_removed
    assert c["paper_002"] == {
        "ratings": 21000,
        "ratings_removed": 6800,
        "ratings_removed_share": 6800 / 21000,
        "participants": 141,
    }
    assert c["inconsistency_fence"] == pytest.approx(fence)


def test_cli_defaults_and_a_blank_factors(tmp_path):
    """`analyze sd` without --factors, with --factors "" and with --factors 0 runs paper 002's
    procedure (eigenvalue > 1, pruning on); --no-prune and --factor-rule parallel are options."""
    df, _ = planted_ratings()
    csv = tmp_path / "ratings.csv"
    df.to_csv(csv, index=False)
    for extra in ([], ["--factors", ""], ["--factors", "0"]):
        out = run_cli("analyze", "sd", csv, "--out", tmp_path / "out", *extra)
        assert out.returncode == 0, out.stderr
        assert "4 factor(s) (eigenvalue > 1)" in out.stdout and "pruned 2: cross" in out.stdout
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["factors"] == 4 and {p["item"] for p in s["pruned_items"]} == {"weak", "cross"}
    assert s["efa"]["factor_rule"] == "kaiser" and s["efa"]["pruning"]["on"] is True
    out = run_cli("analyze", "sd", csv, "--out", tmp_path / "o2", "--no-prune", "--factor-rule", "parallel")
    assert out.returncode == 0, out.stderr
    assert "(parallel analysis)" in out.stdout and "pruning off" in out.stdout and "pruned 1" not in out.stdout
    out = run_cli("analyze", "sd", csv, "--out", tmp_path / "o3", "--factors", "-2")
    assert out.returncode != 0 and "-2 is not a number of factors >= 1" in out.stderr


def test_the_tabs_button_runs_on_its_defaults(database, tmp_path):
    """Issue 28: "Analyse the ratings" on its defaults gave "Value 0 is less than minimum value 1"
    (the browser sends 0 for the empty Factors field). Each input is preprocessed as Gradio does
    with what the page sends on its defaults, then the handler runs paper 002's procedure."""
    from tabs import analysis, analysis_sd

    db = make_sd_study(database, tmp_path)
    rng = np.random.default_rng(6)
    for p in add_participants(db, "demo", "sd", 12):
        while (v := get_view(db, p.token, "sd")).status == "item":
            answer_page(db, p.token, v, lambda x: int(rng.integers(1, 8)))
    with db.write() as w:  # 14 pages of 100 s: not too fast
        w.execute("UPDATE assignments SET active_seconds = 100 WHERE phase = 'sd'")
    auth = admin.AdminAuth("pw")
    with gr.Blocks() as demo:
        session = gr.Textbox()
        analysis.build(Ctx(db, None, gr.Textbox(visible=False)), auth, session)
    (event,) = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "run_sd"]
    factors, prune, rule = event.inputs[2:5]
    # shown blank (issue 51: Gradio's Number drew 0), read as a number; 0 is blank, not "less than minimum"
    assert isinstance(factors, gr.Textbox) and "eigenvalue > 1" in factors.label
    assert factors.preprocess(0) is None and factors.preprocess("") is None and factors.preprocess("2") == 2
    assert prune.value is True and rule.value == "kaiser"
    assert analysis_sd.SD_FACTOR_CHOICES == sd_study.FACTOR_CHOICES
    sent = {factors: 0}  # what the browser sends for an empty field
    args = [c.preprocess(sent.get(c, c.value)) for c in (factors, prune, rule)]
    out = event.fn(auth.login("pw", None), "demo", *args, None)
    notice = [c for c in event.outputs if isinstance(c, gr.Markdown)][0]
    text = out[notice]
    assert "12 participants" in text and "(eigenvalue > 1)" in text and "pruning (section 4.2)" in text, text
    report = [c for c in event.outputs if isinstance(c, gr.Dataframe) and "paper 002" in (c.label or "")][0]
    (per_rater,) = [c for c in event.outputs if (c.label or "").startswith("Data cleansing per participant")]
    assert out[report].set_index("step").at["total", "raters_removed"] == int((~out[per_rater]["kept"]).sum())
    # "the number in Factors" with an empty field: a message, not an error
    assert "enter a number of factors" in event.fn(auth.login("pw", None), "demo", None, True, "given", None)[notice]
    given = event.fn(auth.login("pw", None), "demo", 2, True, "given", None)[notice]
    assert "2 factor(s) (given)" in given


def test_a_note_when_the_eigenvalue_rule_on_the_pruned_pairs_gives_another_k():
    """K stays fixed while pruning (the project's choice); an SPSS user re-running the EFA on the
    pairs left (section 4.2: "we removed those attributes") would get eigenvalue > 1 on them, so
    the result says when that count differs. Planted: 3 strong factors and a fourth carried only
    by weak pairs (loading 0.45, communality 0.2 < 0.3), all pruned."""
    rng = np.random.default_rng(0)
    lam = np.zeros((16, 4))
    for f in range(3):
        lam[4 * f : 4 * f + 4, f] = 0.8
    lam[12:, 3] = 0.45
    x = rng.standard_normal((1000, 4)) @ lam.T + rng.standard_normal((1000, 16)) * np.sqrt(1 - (lam**2).sum(1))
    e = S.efa(x, pa_iterations=20)
    assert e.n_factors == 4 == int((np.linalg.eigvals(np.corrcoef(x.T)).real > 1).sum())
    assert {s["item"] for s in e.pruned} == {"item_13", "item_14", "item_15", "item_16"}
    left = int((np.linalg.eigvals(np.corrcoef(x[:, :12].T)).real > 1).sum())
    assert left == 3
    assert any(f"eigenvalue > 1 on the 12 pairs left after pruning gives {left} factor(s)" in n for n in e.notes)
    assert not any("left after pruning" in n for n in S.efa(x, n_factors=4, pa_iterations=20).notes)
