"""Error Span Annotation's page end to end (services/esa/protocol.py, tabs/esa.py,
assets/js/script/esa.js): one launched app with the example study (docs/examples/esa), one
annotator in headless Chromium. At 1280 px: a span dragged with the mouse and made major, the
[MISSING] token marked, a span marked with the keyboard (arrows, Shift+arrows, m), a severity
toggled, a span removed, the score refused while the slider is unmoved, then set by a click and
submitted; the stored offsets are the output's characters. At 390 px (a phone, touch): the next
item's document and controls fit the width, and a tap marks [MISSING]. The welcome names the
segments of the annotator's HIT; the team's Analysis tab analyses the answer (its ESA section).
Screenshots in the tests' artifacts folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.app import RunningApp
from tests.helpers.browser import ARTIFACTS, WIDTHS, chromium

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "esa"
STUDY = "esa-example"


def drag(page, form, first: int, last: int) -> None:
    """The mouse pressed on character `first`, moved across to `last`, released."""
    a = form.locator(f'.esa-output .esa-ch[data-i="{first}"]').bounding_box()
    b = form.locator(f'.esa-output .esa-ch[data-i="{last}"]').bounding_box()
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=8)
    page.mouse.up()


def spans_of(form) -> list[dict]:
    return json.loads(form.locator('input[name="spans"]').input_value())


def test_an_annotator_marks_spans_by_mouse_and_keyboard_and_scores(tmp_path):
    app = RunningApp(tmp_path, {})
    app.prepare(("import", str(EXAMPLE)), ("participants", "add", "--study", STUDY, "--role", "esa", "--count", "1"))
    url = app.setup_cli("links", "--study", STUDY).stdout.splitlines()[1].split("\t")[5]
    app.start()
    try:
        with chromium() as browser:
            context = browser.new_context(**WIDTHS["desktop"])
            page = context.new_page()
            page.goto(url)
            form = page.locator("form.esa-item")
            form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
            text = form.locator(".esa-output").get_attribute("data-text")
            n = len(text)
            # the welcome names the segments of the annotator's own HIT (whole documents), not hit_size
            [(held,)] = app.rows(
                "SELECT h.n_segments FROM esa_takers t JOIN esa_hits h ON h.study_id = t.study_id AND h.hit = t.hit"
            )
            assert page.get_by_text(f"about {held} segments").first.is_visible()
            assert form.locator(".esa-output .esa-ch").count() == n + 1  # the characters and [MISSING]
            assert form.locator(".esa-seg.esa-current").count() == 1
            words = text.split(" ")
            w1 = text.index(words[1])
            # a drag across the second word, right to left, then Major
            drag(page, form, w1 + len(words[1]) - 1, w1)
            assert form.locator(".esa-picked").inner_text() == f"Selected: “{words[1]}”"
            form.get_by_role("button", name="Major (M)").click()
            assert spans_of(form) == [
                {"start": w1, "end": w1 + len(words[1]), "text": words[1], "severity": "major", "missing": False}
            ]
            major = form.locator(f'.esa-output .esa-ch[data-i="{w1}"]')
            assert major.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(252, 165, 165)"
            # an overlapping drag is refused in place, naming the span it overlaps
            drag(page, form, w1, w1 + len(words[1]) + 2)
            form.get_by_role("button", name="Minor (m)").click()
            assert "overlaps the error “" + words[1] + "”" in form.locator(".esa-note").inner_text()
            assert len(spans_of(form)) == 1
            # the [MISSING] token: a click, then Minor
            form.locator(".esa-output .esa-missing").click()
            form.get_by_role("button", name="Minor (m)").click()
            # the keyboard: focus the output, Home, then the first word with Shift+arrows, m
            form.locator(".esa-output").focus()
            page.keyboard.press("Home")
            for _ in range(len(words[0]) - 1):
                page.keyboard.press("Shift+ArrowRight")
            assert form.locator(".esa-output .esa-sel").count() == len(words[0])
            page.keyboard.press("m")
            # the last word too, by Ctrl+ArrowLeft from the end, then removed again
            page.keyboard.press("End")
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("Shift+ArrowLeft")
            page.keyboard.press("Shift+ArrowLeft")
            page.keyboard.press("Shift+M")
            spans = spans_of(form)
            assert [(s["start"], s["end"], s["severity"], s["missing"]) for s in spans] == [
                (0, len(words[0]), "minor", False),
                (w1, w1 + len(words[1]), "major", False),
                (n - 3, n, "major", False),
                (n, n, "minor", True),
            ]
            assert all(s["text"] == text[s["start"] : s["end"]] for s in spans)
            items = form.locator(".esa-spans li")
            assert items.count() == 4 and items.nth(3).inner_text().startswith("Minor [MISSING]")
            # toggle the first span's severity, remove the third
            form.get_by_role("button", name=f"Make “{words[0]}” a major error").click()
            form.get_by_role("button", name=f"Remove the major error “{text[n - 3 :]}”").click()
            expected = [
                {"start": 0, "end": len(words[0]), "text": words[0], "severity": "major", "missing": False},
                {"start": w1, "end": w1 + len(words[1]), "text": words[1], "severity": "major", "missing": False},
                {"start": n, "end": n, "text": "", "severity": "minor", "missing": True},
            ]
            assert spans_of(form) == expected
            # Submit with the slider unmoved: refused in place, the spans kept and painted again
            form.locator("button[type=submit]").click()
            form.locator(".form-slider .field-error").wait_for(timeout=15000)
            assert "Move the slider" in form.locator(".form-slider .field-error").inner_text()
            assert spans_of(form) == expected
            assert form.locator(".esa-output .esa-major").count() == len(words[0]) + len(words[1])
            page.screenshot(path=str(ARTIFACTS / "esa-desktop-marked.png"), full_page=True)
            # a click on the slider at the "Good" tick (66) sets the score
            slider = form.locator('input[name="score"]')
            box = slider.bounding_box()
            page.mouse.click(box["x"] + box["width"] * 0.66, box["y"] + box["height"] / 2)
            score = int(slider.input_value())
            assert 60 <= score <= 72
            form.locator("button[type=submit]").click()
            page.locator(".progress:visible").get_by_text("1 / ").wait_for(timeout=15000)
            page.wait_for_function(
                "t => document.querySelector('form.esa-item .esa-output')?.dataset.text !== t",
                arg=text,
                timeout=15000,
            )
            [(stored, saved_score)] = app.rows("SELECT spans, score FROM esa_answers")
            assert saved_score == score
            assert [{k: s[k] for k in ("start", "end", "text", "severity", "missing")} for s in json.loads(stored)] == (
                expected
            )
            # the next item: nothing marked, a neighbour above it (the same document) or a new one
            assert form.locator(".esa-output .esa-minor, .esa-output .esa-major").count() == 0
            assert form.locator('input[name="spans"]').input_value() == "[]"
            page.screenshot(path=str(ARTIFACTS / "esa-desktop-next.png"), full_page=True)
            context.close()

            # a phone: the same link, the next item at 390 px
            phone = browser.new_context(**WIDTHS["phone"])
            page = phone.new_page()
            page.goto(url)
            form = page.locator("form.esa-item")
            form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 390, width
            for part in (".esa-output", ".esa-tools", ".esa-ticks", "button[type=submit]"):
                b = form.locator(part).bounding_box()
                assert b["x"] >= 0 and b["x"] + b["width"] <= 390, (part, b)
            # the source above the translation (one column)
            src, out = form.locator(".esa-current .esa-src").bounding_box(), form.locator(".esa-output").bounding_box()
            assert out["y"] >= src["y"] + src["height"] - 1
            form.locator(".esa-output .esa-missing").tap()
            form.get_by_role("button", name="Major (M)").tap()
            assert [s["missing"] for s in spans_of(form)] == [True]
            page.screenshot(path=str(ARTIFACTS / "esa-phone.png"), full_page=True)
            phone.close()

            # the team's Analysis tab: the ESA section on the one answer (tabs/analysis_esa.py)
            team = browser.new_context(**WIDTHS["desktop"])
            page = team.new_page()
            page.goto(app.admin_url)
            page.get_by_role("tab", name="Analysis").click()
            page.get_by_text("Error span annotation (ESA, Kocmi et al. 2024)").first.click()
            page.get_by_role("button", name="Analyse the ESA answers", exact=True).click()
            page.get_by_text("1 judgments by 1 annotators").first.wait_for(timeout=60000)
            panel = page.locator("#esa-analysis")
            panel.get_by_text("The analysis's defaults and where they come from.").wait_for(timeout=30000)
            shown = panel.inner_text()
            assert "Agreement: no segment has two annotators yet" in shown
            assert all(f"Table {k}." in shown for k in (1, 2, 3, 4))  # as the report's part
            assert page.locator(".toast-body").count() == 0
            panel.screenshot(path=str(ARTIFACTS / "esa-analysis-panel.png"))
            team.close()
    finally:
        app.stop()
