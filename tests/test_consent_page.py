"""The consent page and demographics form in the launched app: through gradio_client, and as a
participant in headless Chromium (screenshots: tests/helpers/browser.py ARTIFACTS)."""

from __future__ import annotations

import pytest

from harness.app import RunningApp
from tests.helpers.app import AppClient, token_of
from tests.helpers.browser import ARTIFACTS, WIDTHS
from tests.helpers.studies import study_with_consent


@pytest.fixture(scope="module")
def consent_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("consent")
    app = RunningApp(tmp)
    assert app.setup_cli("import", str(study_with_consent(tmp))).returncode == 0
    assert app.setup_cli("participants", "add", "--study", "demo", "--role", "receiver", "--count", "3").returncode == 0
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
@pytest.mark.parametrize("width", WIDTHS)
def test_participant_consents_fills_the_form_and_reaches_the_first_item(consent_app, browser, width):
    url = consent_app.links()["receiver"][1 if width == "desktop" else 2]
    ctx = browser.new_context(**WIDTHS[width])
    page = ctx.new_page()
    try:
        page.goto(url)
        page.locator("#consent-text").wait_for(timeout=20000)
        assert "Your voice is stored for research" in page.locator("#consent-text").inner_text()
        assert page.get_by_role("tab", name="Receptor").count() == 0  # no tab before consent
        page.screenshot(path=str(ARTIFACTS / f"consent-page-{width}.png"), full_page=True)
        page.get_by_role("button", name="Não concordo / I do not agree").click()
        page.get_by_text("Optou por não participar").wait_for(timeout=15000)  # the receiver's page is in Portuguese
        page.get_by_role("button", name="Concordo / I agree").click()
        page.locator("#demographics-submit").wait_for(timeout=15000)
        # an empty form: one refusal naming both required fields, each marked, the focus on the first
        page.locator("#demographics-submit").click()
        page.locator("#consent-msg .msg.error").wait_for(timeout=15000)
        said = page.locator("#consent-msg .msg.error").inner_text()
        assert "Responda a “Age in years”." in said and "Responda a “First language”." in said
        assert page.locator("#consent-page .field-invalid").count() == 2
        notes = page.locator("#consent-page .field-invalid .info-text")  # each field's problem under its label
        assert [notes.nth(i).inner_text() for i in range(2)] == [
            "Responda a “Age in years”.",
            "Responda a “First language”.",
        ]
        page.wait_for_function(
            "() => document.activeElement && document.activeElement.closest('.field-invalid') &&"
            " document.activeElement.type === 'number'",
            timeout=5000,
        )
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(ARTIFACTS / f"demographics-all-refused-{width}.png"), full_page=True)
        page.get_by_label("Age in years").fill("12")
        page.get_by_label("Portuguese").check()
        page.locator("#demographics-submit").click()
        # the refusal in the page's language (before: "must be between 18 and 99"); only age marked now
        page.locator("#consent-msg .msg.error", has_text="“Age in years” tem de estar entre 18 e 99.").wait_for(
            timeout=15000
        )
        assert "First language" not in page.locator("#consent-msg .msg.error").inner_text()
        page.wait_for_function("() => document.querySelectorAll('#consent-page .field-invalid').length === 1")
        assert page.locator("#consent-page .info-text", has_text="First language").count() == 0  # its note gone
        page.screenshot(path=str(ARTIFACTS / f"demographics-refused-{width}.png"), full_page=True)
        page.get_by_label("Age in years").fill("34")
        page.locator("#demographics-submit").click()
        page.locator("#translation").wait_for(timeout=15000)
        page.screenshot(path=str(ARTIFACTS / f"consent-then-first-item-{width}.png"), full_page=True)
        page.reload()  # the decisions are on the server: straight to the item
        page.locator("#translation").wait_for(timeout=15000)
        assert not page.locator("#consent-text").is_visible()
    finally:
        ctx.close()
