"""MQM's page end to end (services/esa/mqm_protocol.py, tabs/mqm.py, the category picker of
assets/js/script/esa.js): one launched app with the example study (docs/examples/mqm, HITs of 3
segments), one annotator in headless Chromium, played to its completion code. At 1280 px: a
span dragged with the mouse, its category picked and made major; a span marked with the keyboard
(arrows, Shift, c to the picker, Tab to a severity, Enter); a Non-translation beside them refused
in place; submitted, the stored offsets, categories and MQM score checked; the next segment
submitted without errors. At 390 px (a phone, touch): the last segment fits the width, one
character tapped, a category picked and Minor tapped, submitted: the completion code. A second
study's output is speech: at 390 px a region of its waveform marked with a speech category
(Pronunciation), to its completion code. Screenshots in the tests' artifacts folder."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest

from harness.app import RunningApp
from harness.span_page import drag, spans_of
from tests.helpers.browser import ARTIFACTS, WIDTHS, chromium

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "mqm"
STUDY = "mqm-example"
CODE = "MQM-EXAMPLE-DONE"


def next_item(page, form, text: str, done: int) -> str:
    page.locator(".progress:visible").get_by_text(f"{done} / 3").wait_for(timeout=15000)
    page.wait_for_function(
        "t => document.querySelector('form.mqm-item .esa-output')?.dataset.text !== t", arg=text, timeout=15000
    )
    return form.locator(".esa-output").get_attribute("data-text")


SPEECH_STUDY = "mqm-speech"
SPEECH_CODE = "MQM-SPEECH-DONE"


def speech_study(app: RunningApp, tmp_path: Path) -> str:
    """A second study of the same app: one segment whose output is speech (espeak-ng, made here);
    its annotator's link."""
    folder = tmp_path / "mqm-speech"
    folder.mkdir()
    said = "O gato dorme no sofá."
    subprocess.run(["espeak-ng", "-v", "pt", "-w", str(folder / "out.wav"), said], check=True)
    with open(folder / "segments.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["doc_id", "segment_id", "system", "source", "target", "target_audio"])
        w.writerow(["d1", "1", "tts", "The cat sleeps on the sofa.", said, "out.wav"])
    (folder / "study.toml").write_text(
        f'[study]\nid = "{SPEECH_STUDY}"\nname = "Speech"\nprotocols = ["mqm"]\ncompletion_code = "{SPEECH_CODE}"\n\n'
        '[mqm]\nsegments = "segments.csv"\n'
    )
    app.prepare(
        ("import", str(folder)), ("participants", "add", "--study", SPEECH_STUDY, "--role", "mqm", "--count", "1")
    )
    return app.setup_cli("links", "--study", SPEECH_STUDY).stdout.splitlines()[1].split("\t")[5]


def mark_a_speech_error(app: RunningApp, browser, url: str) -> None:
    """At 390 px: a region dragged across the output's waveform, a speech category (Pronunciation,
    offered because the output is audio) picked, made major, submitted: the completion code; the
    stored span in seconds with its category, scored 5."""
    phone = browser.new_context(**WIDTHS["phone"])
    page = phone.new_page()
    page.goto(url)
    form = page.locator("form.mqm-item")
    box = form.locator('.esa-wave[data-ready="true"]')
    box.wait_for(timeout=30000)
    b = box.bounding_box()
    assert b["x"] >= 0 and b["x"] + b["width"] <= 390, b
    y = b["y"] + b["height"] / 2
    page.mouse.move(b["x"] + b["width"] * 0.2, y)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] * 0.6, y, steps=10)
    page.mouse.up()
    picker = form.locator("select.mqm-category")
    values = picker.locator("option").evaluate_all("os => os.map(o => o.value)")
    speech = [v for v in values if v.startswith("Pronunciation")]
    assert speech, values
    picker.select_option(speech[0])
    form.get_by_role("button", name="Major (M)").click()
    [marked] = spans_of(form)
    assert marked["end_s"] > marked["start_s"] and marked["category"].startswith("Pronunciation")
    page.screenshot(path=str(ARTIFACTS / "mqm-speech-phone.png"), full_page=True)
    form.locator("button[type=submit]").click()
    page.locator(":visible", has_text=SPEECH_CODE).last.wait_for(timeout=30000)
    [(stored, mqm)] = app.rows(
        "SELECT a.spans, a.mqm FROM mqm_answers a JOIN assignments s ON s.id = a.assignment_id WHERE s.study_id = ?",
        (SPEECH_STUDY,),
    )
    [span] = json.loads(stored)
    assert span["category"] == marked["category"] and span["severity"] == "major" and mqm == 5.0
    phone.close()


def test_an_annotator_marks_typed_errors_by_mouse_keyboard_and_touch_to_the_end(tmp_path):
    app = RunningApp(tmp_path, {})
    app.prepare(("import", str(EXAMPLE)), ("participants", "add", "--study", STUDY, "--role", "mqm", "--count", "1"))
    url = app.setup_cli("links", "--study", STUDY).stdout.splitlines()[1].split("\t")[5]
    speech_url = speech_study(app, tmp_path)
    app.start()
    try:
        with chromium() as browser:
            context = browser.new_context(**WIDTHS["desktop"])
            page = context.new_page()
            page.goto(url)
            form = page.locator("form.mqm-item")
            form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
            text = form.locator(".esa-output").get_attribute("data-text")
            assert form.locator(".esa-slider").count() == 0  # no score to give
            words = text.split(" ")
            w1 = text.index(words[1])
            picker = form.locator("select.mqm-category")
            # a drag across the second word; Major before a category is refused in place
            drag(page, form, w1, w1 + len(words[1]) - 1)
            form.get_by_role("button", name="Major (M)").click()
            assert "Pick the error’s category first" in form.locator(".esa-note").inner_text()
            assert spans_of(form) == []
            picker.select_option("Accuracy/Mistranslation")
            form.get_by_role("button", name="Major (M)").click()
            assert spans_of(form) == [
                {
                    "start": w1,
                    "end": w1 + len(words[1]),
                    "text": words[1],
                    "severity": "major",
                    "missing": False,
                    "category": "Accuracy/Mistranslation",
                }
            ]
            assert picker.input_value() == ""  # the picker empties for the next error
            # the keyboard: the first word with Home and Shift+arrows, c to the picker, Tab, Enter
            form.locator(".esa-output").focus()
            page.keyboard.press("Home")
            for _ in range(len(words[0]) - 1):
                page.keyboard.press("Shift+ArrowRight")
            page.keyboard.press("c")
            assert page.evaluate("document.activeElement.classList.contains('mqm-category')")
            picker.select_option("Fluency/Grammar")
            page.keyboard.press("Tab")  # Major
            page.keyboard.press("Tab")  # Minor
            page.keyboard.press("Enter")
            # Non-translation beside them: refused in place, naming why
            picker.select_option("Non-translation")
            assert form.locator(".esa-picked").inner_text() == f"Selected: “{text}”"
            form.get_by_role("button", name="Major (M)").click()
            assert "replaces every other error" in form.locator(".esa-note").inner_text()
            picker.select_option("")
            expected = [
                (0, len(words[0]), "Fluency/Grammar", "minor"),
                (w1, w1 + len(words[1]), "Accuracy/Mistranslation", "major"),
            ]
            assert [(s["start"], s["end"], s["category"], s["severity"]) for s in spans_of(form)] == expected
            items = form.locator(".esa-spans li")
            assert items.count() == 2 and items.nth(0).inner_text().startswith("Minor Fluency/Grammar “")
            page.screenshot(path=str(ARTIFACTS / "mqm-desktop-marked.png"), full_page=True)
            form.locator("button[type=submit]").click()
            text2 = next_item(page, form, text, 1)
            [(stored, score)] = app.rows("SELECT spans, mqm FROM mqm_answers")
            assert [(s["start"], s["end"], s["category"], s["severity"]) for s in json.loads(stored)] == expected
            assert all(s["text"] == text[s["start"] : s["end"]] for s in json.loads(stored))
            assert score == 5 + 1  # a major and a minor error (Freitag et al. 2021)
            # the second segment: no errors
            assert spans_of(form) == []
            form.locator("button[type=submit]").click()
            next_item(page, form, text2, 2)
            context.close()

            # a phone: the same link, the last segment at 390 px
            phone = browser.new_context(**WIDTHS["phone"])
            page = phone.new_page()
            page.goto(url)
            form = page.locator("form.mqm-item")
            form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            box = form.locator(".esa-current").bounding_box()  # the segment's box holds its controls
            for part in (".esa-output", ".mqm-category", ".mqm-severities", "button[type=submit]"):
                b = form.locator(part).bounding_box()
                assert b["x"] >= 0 and b["x"] + b["width"] <= 390, (part, b)
                if part != "button[type=submit]":
                    assert b["x"] + b["width"] <= box["x"] + box["width"], (part, b, box)
            text3 = form.locator(".esa-output").get_attribute("data-text")
            form.locator('.esa-output .esa-ch[data-i="0"]').tap()
            form.locator("select.mqm-category").select_option("Fluency/Spelling")
            form.get_by_role("button", name="Minor (m)").tap()
            assert [(s["start"], s["end"], s["category"]) for s in spans_of(form)] == [(0, 1, "Fluency/Spelling")]
            page.screenshot(path=str(ARTIFACTS / "mqm-phone.png"), full_page=True)
            form.locator("button[type=submit]").tap()
            page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            page.screenshot(path=str(ARTIFACTS / "mqm-phone-done.png"), full_page=True)
            phone.close()
            rows = app.rows("SELECT segment_row, spans, mqm FROM mqm_answers ORDER BY assignment_id")
            assert [r[2] for r in rows] == [6.0, 0.0, 1.0]
            assert json.loads(rows[2][1])[0]["text"] == text3[0]
            mark_a_speech_error(app, browser, speech_url)
    finally:
        app.stop()
