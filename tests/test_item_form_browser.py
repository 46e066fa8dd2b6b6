"""The item forms in headless Chromium (issue 21 point 3): after a submit the next item is in
view with "Saved." showing and the focus on its first input; the keyboard alone completes an
item (Tab through the form, Enter on the slider submits; Enter in a text box never does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.app import RunningApp
from harness.demo import DEMO
from tests.helpers.browser import ARTIFACTS, CHROMIUM, FLAGS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    a = RunningApp(tmp_path_factory.mktemp("forms"), env_extra={"TRADLAB_WORKER": "0"})
    assert a.setup_cli("import", str(DEMO)).returncode == 0
    for role, n in (("receiver", "1"), ("da", "3")):
        assert a.setup_cli("participants", "add", "--study", "demo", "--role", role, "--count", n).returncode == 0
    a.start()
    yield a
    a.stop()


@pytest.fixture
def page():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser.new_page(viewport={"width": 1200, "height": 700})
        browser.close()


def in_view(page, selector: str) -> bool:
    return page.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                                       return r.top >= 0 && r.bottom <= window.innerHeight; }""",
        selector,
    )


def focused(page) -> str:
    return page.evaluate(
        "document.activeElement ? (document.activeElement.id || document.activeElement.name || '') : ''"
    )


def test_receiver_next_item_in_view_and_focused(app, page):
    page.goto(app.links()["receiver"][0])
    page.locator("#receiver-form textarea").first.wait_for(timeout=30000)
    assert focused(page) == "answer-1"  # the first answer box has the focus from the start
    first = page.locator("#translation .translation-text").inner_text()
    boxes = page.locator("#receiver-form textarea")
    for i in range(boxes.count()):
        boxes.nth(i).fill(f"resposta {i + 1}")
    # Enter in an answer box adds nothing and submits nothing: the answer being typed is kept
    boxes.first.press("Enter")
    page.wait_for_timeout(500)
    assert page.locator(".msg.ok").count() == 0
    submit = page.get_by_role("button", name="Enviar respostas")
    submit.scroll_into_view_if_needed()
    assert not in_view(page, "#receiver-form .progress")  # the receiver is at the bottom of the form
    submit.click()
    page.locator(".msg.ok").wait_for(timeout=15000)
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'answer-1'", timeout=5000)
    assert page.locator("#translation .translation-text").inner_text() != first
    assert in_view(page, "#receiver-form .msg.ok") and in_view(page, "#receiver-form .progress")
    assert page.locator("#receiver-form textarea").first.input_value() == ""  # nothing carried over
    page.screenshot(path=str(ARTIFACTS / "receiver-next-item-focused.png"))


def test_da_by_keyboard_alone(app, page):
    page.goto(app.links()["da"][0])
    slider = page.locator("#da-slider input[type=range]")
    slider.wait_for(timeout=30000)
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'da-score'", timeout=5000)
    page.keyboard.press("Enter")  # not moved yet: refused, and it says why
    page.locator(".msg.error").wait_for(timeout=15000)
    assert "move the slider" in page.locator(".msg.error").inner_text()
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'da-score'", timeout=5000)
    for _ in range(7):
        page.keyboard.press("ArrowRight")
    assert page.locator(".msg.error").count() == 0  # the move clears the error at once
    assert page.locator("#da-slider output").inner_text() == "7"
    page.keyboard.press("Enter")
    page.locator(".msg.ok").wait_for(timeout=15000)
    assert "1 / " in page.locator(".progress").inner_text()
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'da-score'", timeout=5000)
    assert slider.input_value() == "0" and page.locator("#da-slider output").inner_text() == "–"
    [(score,)] = app.rows(DA_SCORES, [da_id(app, 0)])
    assert score == 7


DA_SCORES = (
    "SELECT j.score FROM da_judgments j JOIN assignments a ON a.id = j.assignment_id"
    " WHERE a.participant_id = ? ORDER BY j.id"
)


def da_id(app, k: int) -> int:
    from tests.helpers.app import token_of

    [(pid,)] = app.rows("SELECT id FROM participants WHERE token = ?", [token_of(app.links()["da"][k])])
    return pid


def test_answers_go_by_the_json_route_and_the_event_when_it_fails(app, page):
    """The page posts each answer to its form's JSON route (web/form_routes.py); when that
    fails (here: the request is cut), the same answer goes by the tab's Gradio event, once."""
    posts = []
    page.on("request", lambda r: posts.append(r.url.split("?")[0].split("/da/", 1)[-1]) if r.method == "POST" else None)
    page.goto(app.links()["da"][2])  # [1] hears the candidate (the demo's modality "both")
    slider = page.locator("#da-slider input[type=range]")
    slider.wait_for(timeout=30000)
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'da-score'", timeout=5000)

    def answer(n: int, score: int) -> None:
        for _ in range(score):
            page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        page.wait_for_function(f"() => /(^|\\D){n} \\/ /.test(document.querySelector('#da-form .progress').innerText)")
        page.wait_for_function("() => document.activeElement && document.activeElement.id === 'da-score'")

    posts.clear()
    answer(1, 3)
    assert posts == ["form/da/submit"]
    page.route("**/form/da/submit", lambda route: route.abort())
    posts.clear()
    answer(2, 5)
    assert posts == ["form/da/submit", "gradio_api/run/predict"]  # cut, then the event
    page.unroute("**/form/da/submit")
    posts.clear()
    answer(3, 8)
    assert posts == ["form/da/submit"]
    scores = app.rows(DA_SCORES, [da_id(app, 2)])
    assert [s for (s,) in scores] == [3, 5, 8]


def test_the_page_loads_only_hinted_scripts_each_once(app, page):
    """Every script and stylesheet the DA page loads before its first item is usable was named in
    its HTML (tabs/preload.py), and none is fetched twice (a hint that did not match Gradio's own
    request would be: the same file again)."""
    import re
    import urllib.request

    url = app.links()["da"][0]
    with urllib.request.urlopen(url, timeout=30) as r:
        html = r.read().decode()
    hinted = set(re.findall(r'<link rel="(?:modulepreload|preload)"[^>]*href="\./assets/([^"]+)"', html))
    page.goto(url)
    page.locator("#da-slider input[type=range]").wait_for(timeout=30000)
    loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    assets = [n.split("?")[0].rsplit("/", 1)[-1] for n in loaded if "/assets/" in n]
    assert assets and not set(assets) - hinted, sorted(set(assets) - hinted)
    assert len(assets) == len(set(assets)), sorted(a for a in assets if assets.count(a) > 1)
