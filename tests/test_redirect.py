"""Finishing every item sends a Prolific participant back to the completion URL (on the DA page
once the optional feedback is sent: it does not leave before)."""

from __future__ import annotations

import shutil

import pytest

from harness.app import RunningApp
from harness.demo import DEMO
from tests.helpers.app import AppClient, token_of
from tests.helpers.browser import ARTIFACTS, CHROMIUM, FLAGS, WIDTHS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def redirect_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("redirect")
    study = tmp / "study"
    shutil.copytree(DEMO, study)
    app = RunningApp(tmp)
    toml = (study / "study.toml").read_text()
    toml = toml.replace('redirect_url = ""', f'redirect_url = "{app.url}/?finished=DEMO-2026"')
    toml = toml.replace("hit_size = 24", "hit_size = 2").replace("controls = 4", "controls = 0")
    toml = toml.replace('modality = "both"', 'modality = "text"')
    (study / "study.toml").write_text(toml)
    res = app.setup_cli("import", str(study))
    assert res.returncode == 0, res.stderr
    assert app.setup_cli("participants", "add", "--study", "demo", "--role", "da", "--count", "2").returncode == 0
    app.start()
    yield app
    app.stop()


@pytest.mark.parametrize("width", WIDTHS)
def test_finished_queue_redirects_to_the_completion_url(redirect_app, width):
    from playwright.sync_api import sync_playwright

    url = redirect_app.links()["da"][0 if width == "desktop" else 1]
    tok = token_of(url)
    client = AppClient(redirect_app.url)
    view = client.predict(tok, "da", api_name="/view")
    assert view["total"] == 2
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(**WIDTHS[width])
        page.goto(url)
        page.locator(".progress:visible").first.wait_for(timeout=15000)
        assert "0 / 2" in page.locator(".progress:visible").first.inner_text()
        assert "finished=" not in page.url  # no redirect while items are open
        for _ in range(2):
            view = client.predict(tok, "da", api_name="/view")
            client.predict(tok, {"item_id": view["item_id"], "answer": {"score": 70}}, api_name="/da_submit")
        page.reload()
        page.get_by_text("DEMO-2026").first.wait_for(timeout=15000)
        # before the page follows it (3 s): the code and the link, each with its copy button
        copies = page.locator(".completion button.copy-btn").evaluate_all("bs => bs.map(b => b.dataset.copy)")
        assert copies == ["DEMO-2026", f"{redirect_app.url}/?finished=DEMO-2026"], copies
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(ARTIFACTS / f"redirect-{width}.png"), full_page=True)
        # the DA page offers an optional feedback box (paper 001): it waits for it (no redirect
        # 3 s on), and follows the link once the feedback is sent
        page.wait_for_timeout(4500)
        assert "finished=" not in page.url
        page.locator("#da-feedback textarea").fill("Clear task, thanks.")
        page.get_by_role("button", name="Send feedback").click()
        page.wait_for_url("**/?finished=DEMO-2026", timeout=15000)
        [(said,)] = redirect_app.rows(
            "SELECT f.text FROM da_feedback f JOIN participants p ON p.id = f.participant_id WHERE p.token = ?",
            (tok,),
        )
        assert said == "Clear task, thanks."
        browser.close()
