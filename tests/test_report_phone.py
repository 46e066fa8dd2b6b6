"""The report read on a phone (issue 51.9): figures as wide as the page (their layout's fixed
width dropped), their titles as text that wraps, tables scrolling inside their own box, and a
dash with a sentence where a small sample leaves a statistic blank; figure files' long titles
broken into lines instead of cut at the figure's edge ("... (system outpu")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from services.common.figure_files import wrapped_title
from services.report.render import BLANK_WHY, render
from services.report.sections import Part, Section

LONG = "Score distributions of reliable workers per item type (system outputs and quality controls)"


def page() -> str:
    fig = go.Figure(go.Bar(x=list("abcdefghij"), y=list(range(10))))
    fig.update_layout(
        title=LONG + "<br><sup>REML, 120 exchanges; each term against its reference level</sup>", width=950
    )
    wide = pd.DataFrame({f"column_{i}": [1.5, np.nan] for i in range(14)})
    part = Part(
        "da",
        "Direct assessment (paper 001)",
        [Section("Figure 1", "A figure.", figure=fig), Section("Table 1", "A wide table.", table=wide)],
    )
    return render("Report", [], [part], {"study": {"id": "x"}}, {"app": "test", "python": "3.11"}, [])


def test_figures_fill_the_page_and_blank_cells_say_why():
    html = page()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert 'style="height:450px; width:100%;"' in html and '"width":950' not in html
    assert f'<p class="fig-title">{LONG}<br><small>REML, 120 exchanges;' in html
    assert '<div class="table-wrap"><table' in html
    assert "<td>–</td>" in html and BLANK_WHY in html


def test_a_figure_files_long_title_is_broken_into_lines_with_room_above_the_plot():
    fig = go.Figure(go.Bar(x=[1], y=[1]))
    fig.update_layout(title=LONG, width=520)
    lines = wrapped_title(fig).layout.title.text.split("<br>")
    assert len(lines) > 1 and all(len(x) <= 520 / 9 for x in lines) and " ".join(lines) == LONG
    assert fig.layout.margin.t >= 30 + 24 * len(lines)
    short = go.Figure(layout={"title": {"text": "Short"}, "width": 520})
    assert wrapped_title(short).layout.title.text == "Short"


@pytest.mark.browser
@pytest.mark.parametrize("width", (1280, 390))
def test_nothing_runs_off_the_page_at_either_width(tmp_path, browser, width):
    from tests.helpers.browser import ARTIFACTS

    out = tmp_path / "report.html"
    out.write_text(page(), encoding="utf-8")
    ctx = browser.new_context(viewport={"width": width, "height": 844}, is_mobile=width < 640)
    try:
        pg = ctx.new_page()
        pg.goto(out.as_uri())
        pg.locator(".plotly-graph-div .main-svg").first.wait_for(timeout=20000)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        plot = pg.locator(".plotly-graph-div").first.bounding_box()
        assert plot["x"] >= 0 and plot["x"] + plot["width"] <= width
        pg.screenshot(path=str(ARTIFACTS / f"report-phone-{width}.png"), full_page=True)
    finally:
        ctx.close()
