"""One report per study (services/report, `app.py report`): each protocol's tables and figures
in its paper's order, numbered as the paper numbers them, each with its content or the sentence
saying what is missing; one self-contained HTML file (plotly's JS inlined once, nothing fetched);
numbers to the paper's precision; the analyses' CSVs beside it."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

from benchmarks.usability import study_sim
from services.participation.items import get_view
from services.report import build as report_build
from services.report import da as report_da
from services.report import qe as report_qe
from services.report import sd as report_sd
from services.report import usability as report_usability
from services.sd import analysis as sd_analysis
from services.setup.enrolment import add_participants
from services.usability import export as usability_export
from storage import open_database
from tests.helpers.app import run_cli
from tests.helpers.da import careful_raters, da_study
from tests.helpers.sd import answer_page

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

ITEMS = {"usability": report_usability.ITEMS, "da": report_da.ITEMS, "sd": report_sd.ITEMS, "qe": report_qe.ITEMS}
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def items_in(page: str, protocol: str) -> dict[str, str]:
    """number -> the HTML of that item inside the protocol's section."""
    sec = re.search(rf'<section id="{protocol}">(.*?)</section>', page, re.S).group(1)
    return dict(re.findall(r'<figure id="[^"]*" data-item="([^"]+)">(.*?)</figure>', sec, re.S))


def table_rows(item_html: str) -> list[list[str]]:
    return [re.findall(r"<td>(.*?)</td>", tr, re.S) for tr in re.findall(r"<tr>(.*?)</tr>", item_html, re.S)]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """The simulated usability study (5% of paper 000's size) and its report."""
    work = tmp_path_factory.mktemp("sim")
    study_sim.simulate(work, scale=0.05, seed=1, analyse=False, log=lambda *a: None)
    db = open_database(work / "sim.db")
    rep = report_build.build_report(db, study_sim.STUDY_ID, work / "report")
    return db, rep, rep.html.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo study with a text-only DA campaign done by careful raters and SD ratings of twelve
    participants, and its report."""
    tmp = tmp_path_factory.mktemp("demo")
    # 10 control pairs: careful raters pass at p < .05
    db, media = da_study(
        open_database(tmp / "t.db"), tmp, modality='"text"', keep_fast="true", controls="10", min_gap="2"
    )
    careful_raters(db, "demo", 4, media)
    rng = np.random.default_rng(5)
    base = {}
    for p in add_participants(db, "demo", "sd", 12):
        while (v := get_view(db, p.token, "sd")).status == "item":
            # a latent quality per sentence: pairs correlate, so the factor analysis has something to find
            answer_page(
                db,
                p.token,
                v,
                lambda x: int(
                    np.clip(round(base.setdefault(v.item_id, rng.normal(4, 1.5)) + rng.normal(0, 0.7)), 1, 7)
                ),
            )
    # simulated SD raters take no time: the cleansing's too-fast rule (40% of the expected time)
    # would remove them all
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sd_analysis, "FAST_SHARE", 0.0)
        rep = report_build.build_report(db, "demo", tmp / "report")
    return db, rep, rep.html.read_text(encoding="utf-8")


def test_sim_report_holds_every_item_of_paper_000_in_order(sim):
    """Paper 000's results in its order (sections 2.5-5, appendix C): Table 1, Figures 2a-c, 3a-c,
    Table 2, Figure 4, then Table 3, Figures 10, 11 and Table 4; with a simulated study every one
    has content, none the missing sentence."""
    _, rep, page = sim
    found = items_in(page, "usability")
    assert list(found) == [n for n, _, _ in report_usability.ITEMS]
    empty = [n for n, h in found.items() if 'class="missing"' in h]
    assert empty == []
    assert {p.protocol: p.summary for p in rep.parts}["da"].startswith("This study has no da part")


def test_sim_table1_is_rounded_to_the_paper_precision(sim):
    """Paper 000, Table 1 ("5-point Likert usability scores by language group ... we report the
    group mean mu(u), standard deviation sigma(u), and mean shift"): two decimals, as printed
    (USW 3.91 3.84 3.86 3.87 1.15 -0.19). Checked against pandas on the exported exchanges."""
    db, _, page = sim
    df = usability_export.exchanges_frame(db, study_sim.STUDY_ID)
    df["u"] = df[["satisfaction", "trust", "reliance"]].astype(float).mean(axis=1)
    df["u_b"] = df[["satisfaction_b", "trust_b", "reliance_b"]].astype(float).mean(axis=1)
    rows = {r[0]: r for r in table_rows(items_in(page, "usability")["Table 1"]) if r and r[0] != "b"}
    assert set(rows) == set(df["group"])
    for group, g in df.groupby("group"):
        r = rows[group]
        assert r[1] == f"{g['satisfaction'].astype(float).mean():.2f}"
        assert r[4] == f"{g['u'].mean():.2f}" and r[5] == f"{g['u'].std():.2f}"
        assert r[6] == f"{g['u'].mean() - g['u_b'].mean():.2f}"
    lmm = table_rows(items_in(page, "usability")["Table 4"])  # Table 4: three decimals
    # a p-value under .001 reads "<0.001" (HTML-escaped), never 0.000
    assert lmm and all(re.fullmatch(r"-?\d+\.\d{3}|&lt;0\.001", c) for r in lmm for c in r[1:7] if c)


def test_report_is_self_contained_and_the_csvs_are_beside_it(sim):
    _, rep, page = sim
    from plotly.offline import get_plotlyjs

    assert page.count(get_plotlyjs()[:300]) == 1  # the bundle once, every figure after it
    # nothing fetched: no external src or href outside the bundle (whose own strings are map
    # attributions and the logo's link, never loaded), and no script by src at all
    rest = page.replace(get_plotlyjs(), "")
    assert not EXTERNAL.search(rest), EXTERNAL.search(rest)
    assert not re.search(r"<script[^>]*\bsrc=", rest)
    assert page.count('class="plotly-graph-div"') == sum(n.startswith("Figure") for n, _, _ in report_usability.ITEMS)
    assert "@media print" in page
    names = {p.name for p in rep.files}
    assert {"groups.csv", "lmm.csv", "metric_effects.csv", "starter_statistics.csv"} <= names
    assert all(p.is_file() for p in rep.files)
    assert 'id="settings"' in page and "&quot;items_per_sender&quot;" in page and "statsmodels" in page


def test_demo_report_has_da_and_sd_items_and_says_what_is_missing(demo):
    """Paper 001: Tables 1-3, Figures 3-5, appendix A's Tables 4-6; paper 002: the cleansing
    (4.1), the scree plot (4.2), Tables 1-2. The demo without exchanges: every paper 000 item is
    the sentence naming what fills it; text-only DA: no multimodal matrix (Table 5) and no
    second modality or run (Figure 5), each said; WMT22's Table 6 is never a study's."""
    _, rep, page = demo
    for protocol in ("usability", "da", "sd", "qe"):
        assert list(items_in(page, protocol)) == [n for n, _, _ in ITEMS[protocol]]
    us = items_in(page, "usability")
    assert all(report_usability.NO_DATA in h for n, h in us.items() if n != "Table 3")
    assert 'class="missing"' not in us["Table 3"]  # the starters are there
    da_items = items_in(page, "da")
    missing = {n for n, h in da_items.items() if 'class="missing"' in h}
    assert missing == {"Figure 5", "Table 5", "Table 6"}
    assert "No audio judgments" in da_items["Table 5"] and "WMT22" in da_items["Table 6"]
    h2h = table_rows(da_items["Table 4"])  # appendix A's layout: "0.19**"
    assert all(re.fullmatch(r"–|-?\d+\.\d{2}\**", c) for r in h2h for c in r[1:-1])
    sd_items = items_in(page, "sd")
    assert {n for n, h in sd_items.items() if 'class="missing"' in h} == set()
    assert all(report_qe.NO_AUDIT.split(":")[0] in h for h in items_in(page, "qe").values())


def test_da_table3_is_the_analysis_ranking_to_two_decimals(demo):
    """Paper 001, Table 3: "raw ave.", "ave. z" and "order", "ordered by their average
    standardized (z) scores" to two decimals; checked against the campaign's judgments: the
    kept raters' z per rater (sample sd), mean per segment, then per system."""
    db, _, page = demo
    from services.da import campaign

    j = campaign.judgments_frame(db, "demo")
    j = j[j["modality"] == "text"]
    z = j.groupby("worker_id")["score"].transform(lambda s: (s - s.mean()) / s.std())
    sysj = j.assign(z=z)[j["item_type"] == "system"]
    seg = sysj.groupby(["system", "segment_id"])[["score", "z"]].mean().groupby("system").mean()
    rows = table_rows(items_in(page, "da")["Table 3"])
    got = {r[0]: (r[1], r[2], r[3]) for r in rows}
    assert set(got) == set(seg.index)
    for system, r in seg.iterrows():
        assert got[system][:2] == (f"{r['score']:.2f}", f"{r['z']:.2f}")
    assert [r[0] for r in rows] == sorted(got, key=lambda s: int(got[s][2]))


def test_an_empty_study_says_what_is_missing_everywhere(demo_db, tmp_path):
    rep = report_build.build_report(demo_db, "demo", tmp_path)
    page = rep.html.read_text(encoding="utf-8")
    for protocol in ("usability", "da", "sd", "qe"):
        found = items_in(page, protocol)
        assert list(found) == [n for n, _, _ in ITEMS[protocol]]
        assert all(
            'class="missing"' in h
            for n, h in found.items()
            if (protocol, n) not in {("usability", "Table 3"), ("da", "Table 1")}
        )
    text = html.unescape(page)
    assert report_da.NO_DATA in text and report_sd.NO_DATA in text
    assert rep.seconds < 20


def test_a_failing_analysis_says_so_and_the_report_is_still_written(demo_db, tmp_path, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("the SD analysis broke")

    monkeypatch.setattr(report_sd, "build", broken)
    page = report_build.build_report(demo_db, "demo", tmp_path).html.read_text(encoding="utf-8")
    assert all("the SD analysis broke" in h for h in items_in(page, "sd").values())
    assert len(items_in(page, "da")) == len(report_da.ITEMS)


def test_unknown_study_and_bad_audit_folder_are_named(demo_db, tmp_path):
    with pytest.raises(report_build.ReportError, match="no study 'nope'"):
        report_build.build_report(demo_db, "nope", tmp_path)
    page = report_build.build_report(
        demo_db, "demo", tmp_path, inputs={"qe_audits": [str(tmp_path / "missing")]}
    ).html.read_text(encoding="utf-8")
    assert "not a folder" in items_in(page, "qe")["Table 1"]


def test_the_cli_writes_the_report(demo_db, tmp_path):
    db_file = demo_db.path
    res = run_cli("report", "--study", "demo", "--out", str(tmp_path / "out"), "--db", str(db_file))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "report-demo.html").is_file()
    res = run_cli("report", "--study", "nope", "--out", str(tmp_path / "out"), "--db", str(db_file))
    assert res.returncode == 2 and "no study 'nope'" in res.stderr


def test_qe_part_from_audit_folders(tmp_path):
    """Paper 003 from audit output folders: Table 8 from a counterfactual run ("⚠" where
    QE(s_F, h_F) is significantly lower, section B.5), Table 1 from its errors.csv (ER, Phi)."""
    from services.qe import audit as Q
    from tests.helpers.qe import SPEC, counterfactual

    frame = counterfactual({"pt": SPEC["pt"] * 2})
    Q.write_outputs(Q.audit(frame, n_resamples=50), tmp_path / "run")
    part = report_qe.build([str(tmp_path / "run")], tmp_path / "out")
    got = {s.number: s for s in part.sections}
    assert [s.number for s in part.sections] == [n for n, _, _ in report_qe.ITEMS]
    assert got["Table 8"].filled and "⚠" in got["Table 8"].table.to_string()
    t1 = got["Table 1"].table
    assert t1 is not None and set(t1["lang"]) >= {"pt"}
    assert pd.api.types.is_float_dtype(t1["er"])


def test_the_analysis_tab_report_button_writes_the_report(demo_db):
    import gradio as gr

    from services.admin import auth as admin
    from tabs import analysis
    from tabs.common import Ctx

    auth = admin.AdminAuth("pw")
    with gr.Blocks() as page:
        session = gr.Textbox()
        analysis.build(Ctx(demo_db, None, gr.Textbox(visible=False)), auth, session)
    (event,) = [f for f in page.fns.values() if getattr(f.fn, "__name__", "") == "run_report"]
    files = [c for c in event.outputs if isinstance(c, gr.File)]
    out = event.fn(auth.login("pw", None), "demo", None, None, None)
    paths = out[files[0]]
    assert paths[0].endswith("report-demo.html") and "Table 1" in open(paths[0], encoding="utf-8").read()
    notice = [c for c in event.outputs if isinstance(c, gr.Markdown)][0]
    assert "no study 'nope'" in event.fn(auth.login("pw", None), "nope", None, None, None)[notice]


def test_da_items_say_when_reliable_raters_were_left_out_for_speed(database, tmp_path):
    """Paper 001, Ethics: HITs "completed in an unrealistically short time" were rejected. Raters
    who pass the reliability test but only did fast HITs (simulated raters take no time) leave
    no scores; before, the items said "no judgments from reliable raters yet: this fills once a
    rater passes the reliability test" beside a Table 2 counting the raters who passed."""
    db, media = da_study(database, tmp_path, modality='"text"', controls="10", min_gap="2")
    careful_raters(db, "demo", 2, media)
    part = report_da.build(db, "demo", tmp_path / "out")
    got = {s.number: s for s in part.sections}
    passed = int(got["Table 2"].table["workers pass QC"].sum())
    assert passed == 2
    for number in ("Figure 3", "Table 3", "Figure 4", "Table 4"):
        why = got[number].missing
        assert "2 rater(s) passed the reliability test" in why and "unrealistically fast" in why, (number, why)
    assert "once an audio rater passes" in got["Table 5"].missing
