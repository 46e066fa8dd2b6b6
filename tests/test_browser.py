"""A participant in headless Chromium: the link, answering, and resuming after a reload."""

from __future__ import annotations

import re

import pytest

from tests.helpers.app import AppClient
from tests.helpers.browser import ARTIFACTS, WIDTHS, progress

pytestmark = pytest.mark.browser


def test_receiver_answers_and_resumes_after_reload(app_server, page):
    url = app_server.links()["receiver"][1]
    page.goto(url)
    assert "0 / 6" in progress(page)
    # only the receiver's tab is there: no admin, no other role
    assert page.get_by_role("tab", name="Admin").count() == 0
    assert page.get_by_role("tab", name="Validator").count() == 0
    first_text = page.locator("#translation").inner_text()
    boxes = page.get_by_label("Resposta")
    n = sum(1 for i in range(boxes.count()) if boxes.nth(i).is_visible())
    assert n >= 6
    page.screenshot(path=str(ARTIFACTS / "receiver-before.png"), full_page=True)
    # submitting with one answer missing is refused with a message, and nothing is lost
    for i in range(n - 1):
        boxes.nth(i).fill(f"resposta {i + 1}")
    page.get_by_role("button", name="Enviar respostas").click()
    page.locator(".msg.error").wait_for(timeout=15000)
    assert "Responda a todas as perguntas" in page.locator(".msg.error").inner_text()  # in Portuguese
    assert boxes.nth(0).input_value() == "resposta 1"
    page.get_by_label("Não é possível responder a partir do texto").nth(n - 1).check()
    page.get_by_role("button", name="Enviar respostas").click()
    page.locator(".msg.ok").wait_for(timeout=15000)
    assert page.locator(".msg.ok").inner_text() == "Guardado."
    assert "1 / 6" in progress(page)
    second_text = page.locator("#translation").inner_text()
    assert second_text != first_text
    page.screenshot(path=str(ARTIFACTS / "receiver-after-submit.png"), full_page=True)
    # reload: the same link resumes at the first unfinished item
    page.reload()
    assert "1 / 6" in progress(page)
    assert page.locator("#translation").inner_text() == second_text
    page.screenshot(path=str(ARTIFACTS / "receiver-after-reload.png"), full_page=True)


def test_admin_tab_on_localhost_without_password(app_server, page):
    page.goto(app_server.admin_url)  # the admin link the server printed
    # no password set: the admin opens at once, without a login form (issue 28)
    page.locator("#admin-dashboard .dash").wait_for(timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "admin.png"), full_page=True)
    page.get_by_text("Participants", exact=True).click()  # closed under the dashboard (issue 28)
    # clicking a participant's row picks it for the actions below the table
    first_cell = page.locator("#participants [data-testid='cell-1-0']")
    first_cell.wait_for(timeout=15000)
    pid = first_cell.inner_text().strip()
    page.locator("#participants [data-testid='cell-1-1']").click()  # any cell of the row
    field = page.get_by_label("Participant id (click its row above)")
    page.wait_for_function("([el, v]) => el.value === v", arg=[field.element_handle(), pid], timeout=15000)
    page.get_by_role("button", name="Show link").click()
    link = page.locator("#participant-link textarea")
    page.wait_for_function("el => el.value.includes('?t=')", arg=link.element_handle(), timeout=15000)
    [(token,)] = app_server.rows("SELECT token FROM participants WHERE id = ?", (int(pid),))
    assert link.input_value().strip().endswith("?t=" + token)
    page.screenshot(path=str(ARTIFACTS / "admin-participant-picked.png"), full_page=True)


def test_forged_link_says_so(app_server, page):
    page.goto(app_server.url + "/?t=forged-token")
    page.get_by_text("This link is not valid").wait_for(timeout=15000)
    assert page.get_by_role("tab", name="Admin").count() == 0


def test_prolific_url_enrols_into_an_open_slot(app_server, page):
    res = app_server.setup_cli("participants", "add", "--study", "demo", "--role", "da", "--self-enrol")
    assert res.returncode == 0, res.stderr
    signed = next(
        line.split("\t")[3]
        for line in app_server.setup_cli("links", "--study", "demo").stdout.splitlines()
        if line.startswith("da (")
    )
    url = (
        signed.replace("{{%PROLIFIC_PID%}}", "5f0c1a2b3c4d5e6f7a8b9c0d")
        .replace("{{%STUDY_ID%}}", "study42")
        .replace("{{%SESSION_ID%}}", "sess1")
    )
    page.goto(url)
    assert "0 / 24" in progress(page)  # one DA HIT of the demo campaign
    page.get_by_role("tab", name="Direct assessment").wait_for()
    # the same Prolific participant coming back (the same Prolific session) gets the same slot
    page.goto(url)
    assert "0 / 24" in progress(page)  # one DA HIT of the demo campaign
    rows = app_server.rows(
        "SELECT prolific_study_id, prolific_session_id FROM participants "
        "WHERE prolific_pid = '5f0c1a2b3c4d5e6f7a8b9c0d'"
    )
    assert rows == [("study42", "sess1")]


def test_semantic_differential_scale_stays_on_one_line_on_a_phone(app_server, page):
    """On a narrow screen the seven points stay on one line between the two adjectives, in the
    scale's order (a wrapped grid would lose it)."""
    phone = page.context.browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        phone.goto(app_server.links()["sd"][0])
        for _ in range(2):  # the welcome and the example pages come first
            if phone.locator(".sd-row:visible").count():
                break
            phone.get_by_role("button", name="Next").click()
            phone.wait_for_timeout(1500)
        row = phone.locator(".sd-row:visible").first
        row.wait_for(timeout=20000)
        # paper 002's slider (issue 29): its seven numbered points on one line, in order, the two
        # adjectives above its two ends
        boxes = [r.bounding_box() for r in row.locator(".sd-ticks span").all()]
        assert len(boxes) == 7
        assert max(b["y"] for b in boxes) - min(b["y"] for b in boxes) < 2, boxes  # one line
        assert [b["x"] for b in boxes] == sorted(b["x"] for b in boxes)
        left, right = row.locator(".sd-left").bounding_box(), row.locator(".sd-right").bounding_box()
        assert left["x"] <= boxes[0]["x"] + boxes[0]["width"] and boxes[-1]["x"] <= right["x"] + right["width"]
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
        phone.screenshot(path=str(ARTIFACTS / "sd-phone.png"), full_page=True)
    finally:
        phone.close()


def validator_with_an_item(app_server) -> str:
    """A validator's token with an item to validate (one answer set opens one)."""

    from tests.helpers.app import receiver_inputs, token_of

    client = AppClient(app_server.url)
    links = app_server.links()
    validators = [token_of(u) for u in links["validator"]]
    if all(client.predict(t, "validator", api_name="/view")["status"] != "item" for t in validators):
        tok = token_of(links["receiver"][-1])  # one answer set opens a validator item
        v = client.predict(tok, "receiver", api_name="/view")
        answers = [("sim", False)] * len(v["content"]["questions"])
        client.predict(*receiver_inputs(tok, v["item_id"], v, answers), api_name="/receiver_submit")
    return next(t for t in validators if client.predict(t, "validator", api_name="/view")["status"] == "item")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_receivers_page_is_in_portuguese_with_the_translation_set_apart(app_server, page, width):
    """Issue 18.5: everything around the item in European Portuguese (progress with how many are
    ready, the refusal, the buttons), the translation in its own box, larger than the instructions."""
    pg = page.context.browser.new_page(**WIDTHS[width])
    try:
        pg.goto(app_server.links()["receiver"][0])
        text = progress(pg)
        assert re.fullmatch(r"Progresso: \d+ / 6 \(\d+ prontos?\)", text.strip()), text
        box = pg.locator("#translation .translation-box")
        assert "Mensagem traduzida" in box.text_content()
        size = "el => parseFloat(getComputedStyle(el).fontSize)"
        words = pg.locator("p.receiver-instruction").first.evaluate(size)
        assert pg.locator("#translation .translation-text").evaluate(size) >= 1.2 * words
        assert box.evaluate("el => getComputedStyle(el).borderTopStyle") == "solid"
        assert pg.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["viewport"]["width"]
        pg.screenshot(path=str(ARTIFACTS / f"receiver-{width}.png"), full_page=True)
        pg.get_by_role("button", name="Enviar respostas").click()
        error = pg.locator(".msg.error")
        error.wait_for(timeout=15000)
        assert error.inner_text().startswith("Responda a todas as perguntas")
        assert "Progress:" not in pg.locator("#receiver-form").inner_text()
        pg.screenshot(path=str(ARTIFACTS / f"receiver-refused-{width}.png"), full_page=True)
    finally:
        pg.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_validator_ticks_are_numbered_on_the_0_to_100_score(app_server, page, width):
    """Issue 18.6: the seven SQM ticks read as places on the 0-100 score, not 0-6."""
    tok = validator_with_an_item(app_server)
    pg = page.context.browser.new_page(**WIDTHS[width])
    try:
        pg.goto(f"{app_server.url}/?t={tok}")
        pg.locator(".sqm-num").first.wait_for(timeout=20000)
        assert [n.inner_text() for n in pg.locator(".sqm-num").all()] == ["0", "17", "33", "50", "67", "83", "100"]
        assert "Score from 0 to 100" in pg.locator("#sqm-scale").inner_text()
        pg.screenshot(path=str(ARTIFACTS / f"validator-{width}.png"), full_page=True)
    finally:
        pg.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_validator_slider_error_goes_when_the_slider_moves(app_server, page, width):
    """Issue 18.6: "move the slider" disappears once the slider has moved (keyboard here: the
    slider's input event), and the move counts."""
    tok = validator_with_an_item(app_server)
    pg = page.context.browser.new_page(**WIDTHS[width])
    try:
        pg.goto(f"{app_server.url}/?t={tok}")
        send = pg.get_by_role("button", name="Submit validation")
        send.wait_for(timeout=20000)
        send.click()
        error = pg.locator(".msg.error:visible")
        error.wait_for(timeout=15000)
        assert "move the slider" in error.inner_text()
        pg.screenshot(path=str(ARTIFACTS / f"validator-error-{width}.png"), full_page=True)
        pg.locator("#sqm-slider input[type=range]").focus()
        pg.keyboard.press("ArrowRight")
        # the slider's words leave the message (issue 29: it names every field; the marks remain)
        pg.wait_for_function(
            "() => !document.querySelector('.msg.error') || "
            "!document.querySelector('.msg.error').textContent.includes('move the slider')",
            timeout=5000,
        )
        assert pg.locator("#sqm-slider .field-invalid, .form-slider.field-invalid").count() == 0
        pg.screenshot(path=str(ARTIFACTS / f"validator-moved-{width}.png"), full_page=True)
        # the move counted: Submit now asks for the marks, not the slider
        send.click()
        error.wait_for(timeout=15000)
        text = error.inner_text().lower()  # the summary, or the words of the fields still to fix
        assert ("mark every answer" in text or "mark this answer" in text) and "move the slider" not in text
    finally:
        pg.close()


def test_validator_scale_labels_do_not_overlap_on_a_phone(app_server, page):
    tok = validator_with_an_item(app_server)
    phone = page.context.browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        phone.goto(f"{app_server.url}/?t={tok}")
        phone.locator(".sqm-label").first.wait_for(timeout=20000)
        boxes = [b.bounding_box() for b in phone.locator(".sqm-label").all()]
        assert len(boxes) == 4

        def overlap(a, b):
            return not (
                a["x"] + a["width"] <= b["x"]
                or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"]
                or b["y"] + b["height"] <= a["y"]
            )

        assert not any(overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]), boxes
        assert all(0 <= b["x"] and b["x"] + b["width"] <= 390 for b in boxes), boxes
        phone.screenshot(path=str(ARTIFACTS / "validator-phone.png"), full_page=True)
    finally:
        phone.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_da_texts_keep_their_size_on_a_phone(app_server, page, width):
    """The DA item is an image of the texts (paper 001); scaled down whole to a phone's width its
    24 px text showed at about 9 px. Below 640 px of window the page takes the narrow copy."""
    from services.da.render import FONT_SIZE, NARROW_WIDTH

    pg = page.context.browser.new_page(**WIDTHS[width])
    try:
        pg.goto(app_server.links()["da"][0])  # the first rater has the text modality
        img = pg.locator("#da-image img")
        img.wait_for(timeout=30000)
        pg.wait_for_function(
            "() => { const i = document.querySelector('#da-image img'); "
            "return i && i.complete && i.naturalWidth > 0; }",
            timeout=15000,
        )
        natural, shown = img.evaluate("i => [i.naturalWidth, i.getBoundingClientRect().width]")
        assert natural == (NARROW_WIDTH if width == "phone" else 900), natural
        assert FONT_SIZE * shown / natural >= 18, (natural, shown)  # the text's size on the screen, px
        assert pg.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["viewport"]["width"]
        pg.screenshot(path=str(ARTIFACTS / f"da-{width}.png"), full_page=True)
    finally:
        pg.close()
