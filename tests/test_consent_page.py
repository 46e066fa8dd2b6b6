"""The consent page and demographics form in the launched app: through gradio_client, and as a
participant in headless Chromium (screenshots in test-artifacts/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.app import RunningApp
from tests.helpers.app import AppClient, token_of
from tests.helpers.studies import study_with_consent

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="module")
def consent_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("consent")
    app = RunningApp(tmp)
    assert app.cli("import", str(study_with_consent(tmp))).returncode == 0
    assert app.cli("participants", "add", "--study", "demo", "--role", "receiver", "--count", "3").returncode == 0
    app.start()
    yield app
    app.stop()


def test_api_gates_items_until_consent_and_form(consent_app):
    client = AppClient(consent_app.url)
    tok = token_of(consent_app.links()["receiver"][0])
    view = client.predict(tok, "receiver", api_name="/view")
    assert view["status"] == "consent" and view["item_id"] is None and "translation" not in view["content"]
    assert client.predict("forged", True, api_name="/consent") == {
        "error": "This link is not valid. Please use the personal link you were given."
    }
    assert client.predict(tok, True, api_name="/consent") == {"pending": "demographics"}
    refused = client.predict(tok, {"age": 200, "first_language": "English"}, api_name="/demographics")
    assert "between 18 and 99" in refused["error"]
    assert client.predict(tok, {"age": 30, "first_language": "English"}, api_name="/demographics") == {"pending": None}
    view = client.predict(tok, "receiver", api_name="/view")
    assert view["status"] == "item" and view["content"]["translation"]


@pytest.mark.browser
def test_participant_consents_fills_the_form_and_reaches_the_first_item(consent_app):
    from playwright.sync_api import sync_playwright

    url = consent_app.links()["receiver"][1]
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(url)
        page.locator("#consent-text").wait_for(timeout=20000)
        assert "Your voice is stored for research" in page.locator("#consent-text").inner_text()
        assert page.get_by_role("tab", name="Receptor").count() == 0  # no tab before consent
        page.screenshot(path=str(ARTIFACTS / "consent-page.png"), full_page=True)
        page.get_by_role("button", name="Não concordo / I do not agree").click()
        page.get_by_text("Optou por não participar").wait_for(timeout=15000)  # the receiver's page is in Portuguese
        page.get_by_role("button", name="Concordo / I agree").click()
        page.locator("#demographics-submit").wait_for(timeout=15000)
        page.get_by_label("Age in years").fill("12")
        page.get_by_label("Portuguese").check()
        page.locator("#demographics-submit").click()
        # issue 29, point 9: the refusal in the page's language (before: "must be between 18 and 99")
        page.get_by_text("“Age in years” tem de estar entre 18 e 99.").wait_for(timeout=15000)
        page.screenshot(path=str(ARTIFACTS / "demographics-refused.png"), full_page=True)
        page.get_by_label("Age in years").fill("34")
        page.locator("#demographics-submit").click()
        page.locator("#translation").wait_for(timeout=15000)
        page.screenshot(path=str(ARTIFACTS / "consent-then-first-item.png"), full_page=True)
        page.reload()  # the decisions are on the server: straight to the item
        page.locator("#translation").wait_for(timeout=15000)
        assert not page.locator("#consent-text").is_visible()
        browser.close()
