"""Issue 28 (point 2 and done-when) in headless Chromium: the Analysis page of the demo after a
simulated study, at 1280 and 390 px. Each protocol's button lays its results out in its paper's
order, numbered and captioned, the notes a short box; no output errors, the page does not scroll
sideways on a phone; and the admin's dashboard stops re-reading itself while the Analysis tab is
in front (point 4)."""

from __future__ import annotations

import re

import pytest

from harness.app import RunningApp
from services.report import da as da_report
from services.report import sd as sd_report
from services.report import usability as usability_report
from services.report.render import NOTES_SHOWN
from tabs.admin_dashboard import EVERY_S
from tests.helpers.browser import ARTIFACTS, CHROMIUM, FLAGS
from tests.helpers.team_page import rate_da_and_sd

pytestmark = pytest.mark.browser
RUNS = (
    ("Usability of the four-phase study (paper 000)", "Analyse the exchanges", usability_report),
    ("Direct assessment (paper 001)", "Analyse the campaign", da_report),
    ("Semantic differential (paper 002)", "Analyse the ratings", sd_report),
)


# Gradio puts a Markdown's classes on its block and on the prose inside: the outermost only
CAPTIONS = "[...document.querySelectorAll('.paper-caption')].filter(e => !e.parentElement.closest('.paper-caption'))"


@pytest.fixture(scope="module")
def simulated_app(tmp_path_factory):
    """The app serving the demo after its participants did every phase, DA and SD included; one
    for the module (the dashboard test only watches it: 50 s of set-up once, not twice)."""
    from harness.demo import DEMO
    from services.setup.importer import import_study
    from storage import open_database
    from tests.helpers import workflow

    tmp_path = tmp_path_factory.mktemp("paper-view")
    db = open_database(tmp_path / "test.db")
    import_study(db, DEMO)
    workflow.mixed_study(db, tmp_path)
    rate_da_and_sd(db, tmp_path / "media")
    app = RunningApp(
        tmp_path,
        {"TRADLAB_DB": str(tmp_path / "test.db"), "TRADLAB_MEDIA": str(tmp_path / "media"), "TRADLAB_WORKER": "0"},
    )
    app.start()
    yield app
    app.stop()


# figures wider than their block whose block does not scroll (Gradio's block hides overflow)
CUT_FIGURES = """() => [...document.querySelectorAll('#analysis-panel .js-plotly-plot')].filter(e => e.offsetParent)
  .map(e => [e.closest('.block'), e.querySelector('svg.main-svg')])
  .filter(([b, svg]) => svg && svg.getBoundingClientRect().width > b.clientWidth + 1
    && !['auto', 'scroll'].includes(getComputedStyle(b).overflowX))
  .map(([b, svg]) => `${Math.round(svg.getBoundingClientRect().width)} px in ${b.clientWidth} px`)"""


def _run_every_analysis(pg, width: int) -> None:
    pg.get_by_role("tab", name="Analysis").click()
    done = 0
    for title, button, module in RUNS:
        if module is not usability_report:  # the first section is open already
            pg.get_by_text(title, exact=True).first.click()
        pg.get_by_role("button", name=button, exact=True).first.click()
        done += len(module.ITEMS)
        pg.wait_for_function(f"() => {CAPTIONS}.length >= {done}", timeout=180000)
    pg.wait_for_timeout(1500)
    pg.screenshot(path=str(ARTIFACTS / f"analysis-paper-{width}.png"), full_page=True)


def _captions(pg) -> list[str]:
    texts = pg.evaluate(f"() => {CAPTIONS}.map(e => e.innerText)")
    return [re.match(r"^(.+?)\.\s", t.strip()).group(1) for t in texts]


def test_the_analysis_page_reads_like_the_papers_at_desktop_and_phone_width(simulated_app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        for width, height, phone in ((1280, 900, False), (390, 844, True)):
            context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone)
            pg = context.new_page()
            pg.goto(simulated_app.admin_url)
            pg.locator("#admin-dashboard .dash").wait_for(timeout=30000)
            _run_every_analysis(pg, width)
            # the paper's numbering and order, protocol after protocol, on the page itself
            assert _captions(pg) == [n for _, _, m in RUNS for n, _, _ in m.ITEMS]
            body = pg.locator("body").inner_text()
            assert "Error" not in [line.strip() for line in body.splitlines()], body[:2000]
            assert pg.locator(".toast-body").count() == 0
            assert "Table 6" in body and "--wmt" in body  # a missing part says what fills it
            # results, not only sentences: paper 000's Table 1 and Figure 2a are drawn
            assert pg.locator("#analysis-panel .js-plotly-plot").count() >= 3
            # each notes box is short: a few bullets, the rest folded
            for box in pg.locator(".paper-notes").all():
                assert box.locator("ul:not(details ul) > li").count() <= NOTES_SHOWN
            # an untouched field does not look refused: the DA level's empty field (sent as 0)
            # was drawn red under its minimum 0.0001
            assert pg.locator("#analysis-panel input:invalid").count() == 0
            # every figure can be seen whole: it fits its box, or the box scrolls sideways (on a
            # phone the figures, 500-900 px wide, were cut at 300 px with no way to the rest)
            assert pg.evaluate(CUT_FIGURES) == [], width
            if phone:
                assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1
            context.close()
        browser.close()


def test_the_dashboard_rereads_itself_only_while_the_admin_tab_is_in_front(simulated_app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 800})
        calls: list[str] = []
        pg.on("request", lambda r: calls.append(r.url) if r.method == "POST" and "/queue/join" in r.url else None)
        pg.goto(simulated_app.admin_url)
        pg.locator("#admin-dashboard .dash").wait_for(timeout=30000)

        def ticks_in(seconds: float) -> int:
            pg.wait_for_timeout(1500)  # the tab switch's own event
            calls.clear()
            pg.wait_for_timeout(seconds * 1000)
            return len(calls)

        assert ticks_in(EVERY_S + 3) >= 1  # in front: it re-reads
        pg.get_by_role("tab", name="Analysis").click()
        assert ticks_in(EVERY_S + 3) == 0  # behind the Analysis tab: quiet
        pg.get_by_role("tab", name="Admin").click()
        assert ticks_in(EVERY_S + 3) >= 1
        browser.close()
