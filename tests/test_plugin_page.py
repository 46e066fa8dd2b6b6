"""A protocol's own page code, end to end (issue 52): the Error Span Annotation-like plugin of
tests/plugins/spans_proof.py, loaded by the launched app through TRADLAB_PLUGINS, on its role's
page in headless Chromium. Its script (Tab.scripts) makes the sentence's characters markable: a
drag with the mouse across characters is an error span, stored as character offsets; its
stylesheet (Tab.styles) highlights the span; a refusal is marked in place and the spans are kept;
Enter on the slider submits; the next item is rendered by the script again (the item form's
`tradlab:item`). Then the admin's "A participant" page says the answer in words under the phase's
label, and the plugin's CLI command counts the spans. One app, one browser; screenshots in the
tests' artifacts folder."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import expect

from harness.app import RunningApp
from services.common import protocols
from tests.helpers.browser import ARTIFACTS, chromium
from tests.plugins import spans_proof

pytestmark = pytest.mark.browser

PLUGIN = "tests.plugins.spans_proof:PROTOCOL"
TEXTS = ["The cat sit on teh mat.", "A second sentence."]


@pytest.fixture
def registered():
    protocols.register(spans_proof.PROTOCOL)  # the CLI's setup commands run in this process
    yield
    protocols.unregister(spans_proof.NAME)


def drag(page, form, first: int, last: int) -> None:
    """The mouse pressed on character `first`, moved across to `last`, released."""
    a = form.locator(f'.spans-ch[data-i="{first}"]').bounding_box()
    b = form.locator(f'.spans-ch[data-i="{last}"]').bounding_box()
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=6)
    page.mouse.up()


def test_spans_marked_by_dragging_are_stored_as_offsets_and_said_to_the_admin(registered, tmp_path):
    app = RunningApp(tmp_path, {protocols.PLUGINS_ENV: PLUGIN})
    study = tmp_path / "study"
    study.mkdir()
    (study / "study.toml").write_text(
        '[study]\nid = "esa"\nname = "Spans"\nprotocols = ["spans"]\nseed = 1\n\n'
        f"[spans]\ntexts = {json.dumps(TEXTS)}\n",
        encoding="utf-8",
    )
    app.prepare(("import", str(study)), ("participants", "add", "--study", "esa", "--role", "spans", "--count", "1"))
    url = app.setup_cli("links", "--study", "esa").stdout.splitlines()[1].split("\t")[5]
    app.start()
    try:
        # the page code is the spans page's, once, and no other page's
        for role in protocols.roles():
            with urllib.request.urlopen(f"{app.url}/{role}/config", timeout=30) as r:
                config = json.load(r)
            head, css = config.get("head") or "", config.get("css") or ""
            mine = role == "spans"
            assert head.count('data-page-asset="spans_proof.js"') == (1 if mine else 0), role
            assert (".spans-ch.spans-major" in css) == mine, role
        with chromium() as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(url)
            form = page.locator("form.spans-item")
            # the plugin's script turned the sentence into one element per character
            form.locator('.spans-ch[data-i="0"]').wait_for(timeout=30000)
            first_text = form.locator(".spans-target").get_attribute("data-text")
            assert first_text in TEXTS and form.locator(".spans-ch").count() == len(first_text)
            words = first_text.split(" ")  # the item's own sentence (the order is seeded) gives the offsets
            w1 = first_text.index(words[1])  # a minor error: the second word
            drag(page, form, w1, w1 + len(words[1]) - 1)
            form.locator('input[name="severity"][value="major"]').check()
            w3 = first_text.index(words[3])  # a major error: the fourth word, dragged right to left
            drag(page, form, w3 + len(words[3]) - 1, w3)
            expected = sorted(
                [
                    {"start": w1, "end": w1 + len(words[1]), "severity": "minor"},
                    {"start": w3, "end": w3 + len(words[3]), "severity": "major"},
                ],
                key=lambda s: s["start"],
            )
            assert json.loads(form.locator('input[name="spans"]').input_value()) == expected
            # its stylesheet highlights the spans
            major = form.locator(f'.spans-ch[data-i="{w3}"]')
            assert major.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(252, 165, 165)"
            assert form.locator(".spans-list li").count() == 2
            # the score not given: refused, the slider's box marked in place, the spans kept
            form.locator("button[type=submit]").click()
            form.locator(".form-slider .field-error").wait_for(timeout=15000)
            assert "Move the slider" in form.locator(".form-slider .field-error").inner_text()
            assert json.loads(form.locator('input[name="spans"]').input_value()) == expected
            assert form.locator(f'.spans-ch[data-i="{w3}"].spans-major').count() == 1  # painted again
            page.screenshot(path=str(ARTIFACTS / "plugin-spans-marked.png"))
            # the score by the keyboard, and Enter on the slider submits
            slider = form.locator('input[name="score"]')
            slider.focus()
            page.keyboard.press("End")
            for _ in range(30):
                page.keyboard.press("ArrowLeft")
            page.keyboard.press("Enter")
            page.locator(".progress:visible").get_by_text("1 / 2").wait_for(timeout=15000)
            # the next item, rendered by the script: its own characters, nothing marked
            second = [t for t in TEXTS if t != first_text][0]
            page.wait_for_function(
                "t => document.querySelector('form.spans-item .spans-target')?.dataset.text === t "
                "&& document.querySelectorAll('form.spans-item .spans-ch').length === [...t].length",
                arg=second,
                timeout=15000,
            )
            assert form.locator(".spans-minor, .spans-major").count() == 0
            assert form.locator('input[name="spans"]').input_value() == "[]"
            page.screenshot(path=str(ARTIFACTS / "plugin-spans-next-item.png"))
            [(pid, data)] = app.rows(
                "SELECT a.participant_id, r.data FROM responses r JOIN assignments a ON a.id = r.assignment_id"
            )
            assert json.loads(data) == {"spans": expected, "score": 70}

            # the admin's "A participant" page: the role's and phase's labels, the answer in words
            admin = context.new_page()
            admin.goto(app.admin_url)
            admin.locator("#admin-dashboard .dash").wait_for(timeout=30000)
            admin.get_by_text("A participant", exact=True).click()
            admin.locator("#participant-query textarea").fill(str(pid))
            admin.get_by_role("button", name="Find", exact=True).click()
            status = admin.locator("#participant-view-status")
            status.get_by_text(f"Participant {pid} (span annotator), found by id").wait_for(timeout=15000)
            items = admin.locator("#participant-items")
            said = f'score 70; minor {w1}-{w1 + len(words[1])} "{words[1]}", '
            said += f'major {w3}-{w3 + len(words[3])} "{words[3]}"'
            expect(items).to_contain_text(said, timeout=15000)
            phases = [items.get_by_test_id(f"cell-{row}-0").inner_text().strip() for row in (0, 1)]
            assert phases == ["error spans", "error spans"]
            assert admin.locator("#participant-view-msg").inner_text().strip() == ""
            status.evaluate("e => e.scrollIntoView({block: 'start'})")
            admin.screenshot(path=str(ARTIFACTS / "plugin-spans-admin-participant.png"))
    finally:
        app.stop()
    # the plugin's own command, in a process that loads it as the app does (TRADLAB_PLUGINS)
    res = app.cli("spans-summary", "--study", "esa")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "study esa: 1 answers, 2 spans (1 minor, 1 major)"
