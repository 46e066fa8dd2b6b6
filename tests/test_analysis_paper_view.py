"""Issue 28, point 2, in the Analysis tab itself: each protocol's results are laid out in its
paper's order, numbered and captioned as the paper does (the same Part the report writes:
services.report), empty parts replaced by the sentence saying what is missing, and the notes a
short box at the top (a few bullets, the rest folded), not a wall."""

from __future__ import annotations

import gradio as gr
import pytest

from services.report import da as da_report
from services.report import sd as sd_report
from services.report import usability as usability_report
from services.report.render import NOTES_SHOWN
from services.report.sections import Part, Section
from tabs import paper_view
from tests.helpers.team_page import TeamPage, rate_da_and_sd

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def test_the_notes_box_shows_a_few_notes_and_folds_the_rest():
    part = Part(
        "sd", "Semantic differential (paper 002)", summary="12 participants.", notes=[f"note {i} <b>" for i in range(7)]
    )
    text = paper_view.notes_markdown(part)
    lines = text.splitlines()
    assert lines[0] == "**Semantic differential (paper 002).** 12 participants."
    assert [x for x in lines if x.startswith("- ")] == [f"- note {i} <b>" for i in range(NOTES_SHOWN)]
    assert f"<summary>{7 - NOTES_SHOWN} more notes</summary>" in text
    assert "<li>note 6 &lt;b&gt;</li>" in text  # the folded ones escaped
    assert paper_view.notes_markdown(None) == ""


def test_a_caption_is_numbered_and_shows_the_papers_stars_as_written():
    s = Section("Figure 4", "z(row) - z(column), * p < .05, ** p < .01", where="3.1")
    shown = paper_view.caption(s)
    # Markdown would read "* p" as a bullet and "** p < .01" as emphasis: escaped, shown as written
    assert shown.startswith("**Figure 4.**") and "\\* p &lt; \\.05\\, \\*\\* p &lt; \\.01" in shown
    assert shown.endswith("*(paper section 3\\.1)*")


def _part(page: TeamPage, event: str, state_label: str) -> Part:
    fn = page.fn(event)
    out = page.click(event)
    (state,) = [c for c in fn.outputs if isinstance(c, gr.State)]
    part = page.state[state._id]
    notice = next(v for c, v in out.items() if isinstance(c, gr.Markdown) and "paper-notes" in (c.elem_classes or []))
    assert isinstance(part, Part) and notice == paper_view.notes_markdown(part), (state_label, notice)
    return part


def test_each_protocols_results_in_its_papers_order_after_a_study(mixed_study, tmp_path):  # noqa: F811
    """Paper 000: Table 1, Figures 2a-c, 3a-c, Table 2, Figure 4, then the appendix; paper 001:
    Tables 1-3, Figures 3-5, appendix A; paper 002: sections 4.1-4.2, Tables 1-2 (the report's
    ITEMS, one list for the tab and the file)."""
    db, _ = mixed_study
    rate_da_and_sd(db, tmp_path / "media")
    page = TeamPage(db)
    page.show()
    for event, module in (("run_usability", usability_report), ("run_da", da_report), ("run_sd", sd_report)):
        part = _part(page, event, module.TITLE)
        assert [s.number for s in part.sections] == [n for n, _, _ in module.ITEMS], event
        assert all(s.filled or s.missing.endswith(".") for s in part.sections), event
        assert part.summary and part.detail is not None and not isinstance(part.detail, str), event
    # this simulated study has results for paper 000's main tables and figures
    us = {s.number: s for s in _part(page, "run_usability", "usability").sections}
    assert us["Table 1"].table is not None and us["Table 4"].table is not None and us["Figure 2a"].figure
    # and no WMT22 official judgments (Table 6): the sentence says where they come from
    da = {s.number: s for s in _part(page, "run_da", "da").sections}
    assert not da["Table 6"].filled and "--wmt" in da["Table 6"].missing


def test_on_an_empty_study_every_section_says_what_would_fill_it(database, tmp_path):
    from tests.helpers.da import da_study

    db, _ = da_study(database, tmp_path, modality='"text"', keep_fast="true")
    page = TeamPage(db)
    page.show()
    for event, module in (("run_usability", usability_report), ("run_da", da_report), ("run_sd", sd_report)):
        part = _part(page, event, module.TITLE)
        assert [s.number for s in part.sections] == [n for n, _, _ in module.ITEMS], event
        empty = [s for s in part.sections if not s.filled]
        assert empty and all("this fills once" in s.missing or s.missing.endswith(".") for s in empty), event


def test_paper_003_in_its_order_from_the_sessions_audits_and_in_the_report(database, tmp_path):
    """Paper 003: Tables 1, 4-6, 8-9, Figures 2-5, from the audits run in the session. Before, the
    tab's QE section showed Table 8, Figure 4's points and Figures 6/9 unnumbered, and the tab's
    report said of every paper 003 item that it needs audit folders from the command line."""
    import re

    import pandas as pd

    from services.report import qe as qe_report
    from tests.helpers.da import da_study

    db, _ = da_study(database, tmp_path, modality='"text"', keep_fast="true")
    page = TeamPage(db)
    page.show()
    # counterfactual pairs with precomputed scores (no metric runs): each line's F-gold and M-gold rows
    rows = []
    for i, (ff, mm) in enumerate([(0.8, 0.9), (0.7, 0.75), (0.85, 0.88), (0.6, 0.66)]):
        rows += [(f"{i}F", f"she {i}", "F", ff, 0.1), (f"{i}M", f"he {i}", "M", 0.1, mm)]
    pairs = tmp_path / "cf.csv"
    frame = pd.DataFrame(rows, columns=["instance_id", "source", "gold", "score_f", "score_m"])
    frame.assign(lang="pt", hyp_f=[f"a {i // 2}" for i in range(8)], hyp_m=[f"o {i // 2}" for i in range(8)]).to_csv(
        pairs, index=False
    )
    page.click("do_audit", **{"PAIRS.csv": {"path": str(pairs), "meta": {"_type": "gradio.FileData"}}})
    part = _part(page, "do_paper", "qe")
    assert [s.number for s in part.sections] == [n for n, _, _ in qe_report.ITEMS]
    got = {s.number: s for s in part.sections}
    assert got["Table 1"].filled and got["Table 9"].filled
    assert got["Table 8"].filled and "⚠" in got["Table 8"].table.to_string()
    assert not got["Table 4"].filled and "context-aware" in got["Table 4"].missing
    # the tab's report holds the session's audit: paper 003's Table 1 drawn, not the CLI sentence
    out = page.click("run_report")
    (files,) = [v for c, v in out.items() if isinstance(c, gr.File)]
    html = open(files[0]["path"], encoding="utf-8").read()
    section = re.search(r'<section id="qe">(.*?)</section>', html, re.S).group(1)
    items = dict(re.findall(r'<figure id="[^"]*" data-item="([^"]+)">(.*?)</figure>', section, re.S))
    assert 'class="missing"' not in items["Table 1"] and 'class="missing"' not in items["Table 8"]
    assert qe_report.NO_AUDIT.split(":")[0] not in section
    # the .zip beside the HTML holds every file its links name, at the linked path (issue 51, point 9)
    import zipfile

    names = set(zipfile.ZipFile(files[1]["path"]).namelist())
    links = {h for h in re.findall(r'href="([^"#:]+)"', html) if not h.startswith("/")}
    assert any(x.startswith("qe/") for x in links) and links <= names, sorted(links - names)[:5]
