"""Error Span Annotation's page end to end (services/esa/protocol.py, tabs/esa.py,
assets/js/script/esa.js): one launched app with the example study (docs/examples/esa), one
annotator in headless Chromium. At 1280 px: a span dragged with the mouse and made major, the
[MISSING] token marked, a span marked with the keyboard (arrows, Shift+arrows, m), a severity
toggled, a span removed, the score refused while the slider is unmoved, then set by a click and
submitted; the stored offsets are the output's characters. At 390 px (a phone, touch): the next
item's document and controls fit the width, a tap marks [MISSING], and the rest of the HIT is
scored to the completion code. The welcome names the
segments of the annotator's HIT; the team's Analysis tab analyses the answer (its ESA section).
ESA-AI, in a second study of the same app pre-filled by the tiny xCOMET of
tests/tiny_metric_models.py: the pre-filled spans shown as such until touched, one resized by
re-marking, one re-graded, the rest removed, and the outcomes stored; then at 390 px a pre-filled span
removed by a tap and the HIT scored to its completion code. ESA on speech: a region of the
waveform marked at 390 px, the second segment's at 1280 px, to its completion code. The tutorial, in a fourth
study: a practice item's missed error said under the spans, then the same answer goes on.
Screenshots in the tests' artifacts folder."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from harness.app import RunningApp
from harness.span_page import drag, spans_of
from services.common import protocols
from services.esa import prefill, prefill_store
from services.metrics import registry as metrics
from services.models.cache import ModelCache
from storage import open_database
from tests.helpers.browser import ARTIFACTS, WIDTHS, chromium

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_metric_models as tmm  # noqa: E402

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "esa"
STUDY = "esa-example"
CODE = "ESA-EXAMPLE-DONE"  # the example's completion code


AI_STUDY = "esa-ai-example"


def score_to_the_code(page, form, code: str) -> int:
    """Each segment left scored by a click on its slider and submitted, until the completion code
    shows; how many were submitted."""
    done = 0
    while not page.locator(":visible", has_text=code).count():
        shown = form.locator(".esa-output").get_attribute("data-text")
        slider = form.locator('input[name="score"]')
        slider.scroll_into_view_if_needed()  # the mouse clicks where the viewport shows it
        sb = slider.bounding_box()
        page.mouse.click(sb["x"] + sb["width"] * 0.5, sb["y"] + sb["height"] / 2)
        form.locator("button[type=submit]").click()
        done += 1
        page.wait_for_function(
            "([t, c]) => document.body.innerText.includes(c)"
            " || (document.querySelector('form.esa-item .esa-output')?.dataset.text || t) !== t",
            arg=[shown, code],
            timeout=15000,
        )
        assert done < 50
    return done


def prefilled_study(app: RunningApp, tmp_path: Path) -> str:
    """The example as a second study with prefill = "xcomet", pre-filled before the app starts by
    the tiny xCOMET (the job's own code, prefill_store.run); its annotator's link."""
    folder = tmp_path / "esa-ai"
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8").replace(f'id = "{STUDY}"', f'id = "{AI_STUDY}"')
    (folder / "study.toml").write_text(toml.replace("hit_size = 4\n", 'hit_size = 4\nprefill = "xcomet"\n'))
    app.prepare(("import", str(folder)), ("participants", "add", "--study", AI_STUDY, "--role", "esa", "--count", "1"))
    with tmm.offline():
        checkpoint = tmm.build_comet(tmp_path / "comet")["xcomet"]
    backend = prefill.XcometPrefill(metrics.get("xcomet", checkpoint=str(checkpoint), cache=ModelCache(device="cpu")))
    database = open_database(Path(app.env["TRADLAB_DB"]), schemas=protocols.schemas())
    assert prefill_store.run(database, AI_STUDY, backend=backend) == 10
    return app.setup_cli("links", "--study", AI_STUDY).stdout.splitlines()[1].split("\t")[5]


def edit_prefilled(app: RunningApp, browser, url: str) -> None:
    """The first segment's pre-filled spans: each shown as pre-filled; one resized by a drag over
    part of it (edited), another re-graded (severity), the others removed (deleted)."""
    context = browser.new_context(**WIDTHS["desktop"])
    page = context.new_page()
    page.goto(url)
    form = page.locator("form.esa-item")
    form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
    pre = json.loads(form.locator(".esa-output").get_attribute("data-prefill"))
    assert pre and spans_of(form) == pre and [s["prefill"] for s in pre] == list(range(len(pre)))
    assert form.locator(".esa-spans li .esa-origin").count() == len(pre)
    covered = sum(s["end"] - s["start"] for s in pre if not s["missing"])
    assert form.locator(".esa-output .esa-prefilled").count() == covered
    page.screenshot(path=str(ARTIFACTS / "esa-ai-prefilled.png"), full_page=True)
    outcomes = ["deleted"] * len(pre)
    # resized: the first span of two characters or more, its first character left out
    r = next(k for k, s in enumerate(pre) if s["end"] - s["start"] >= 2 and not s["missing"])
    drag(page, form, pre[r]["start"] + 1, pre[r]["end"] - 1)
    page.keyboard.press("M" if pre[r]["severity"] == "major" else "m")
    assert "Resized the pre-filled error" in form.locator(".esa-note").inner_text()
    outcomes[r] = "edited"
    g = next((k for k in range(len(pre)) if k != r), None)
    if g is not None:  # another one re-graded
        other = "minor" if pre[g]["severity"] == "major" else "major"
        label = "“" + pre[g]["text"] + "”" if not pre[g]["missing"] else "[MISSING]"
        form.get_by_role("button", name=f"Make {label} a {other} error").click()
        outcomes[g] = "severity"
    assert form.locator(".esa-spans li .esa-origin").count() == len(pre) - sum(o != "deleted" for o in outcomes)
    while form.locator(".esa-spans li.esa-span-prefilled .esa-remove").count():  # the untouched ones
        form.locator(".esa-spans li.esa-span-prefilled .esa-remove").first.click()
    page.screenshot(path=str(ARTIFACTS / "esa-ai-edited.png"), full_page=True)
    slider = form.locator('input[name="score"]')
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    form.locator("button[type=submit]").click()
    page.locator(".progress:visible").get_by_text("1 / ").wait_for(timeout=15000)
    [(record,)] = app.rows(
        "SELECT a.prefill FROM esa_answers a JOIN assignments s ON s.id = a.assignment_id WHERE s.study_id = ?",
        (AI_STUDY,),
    )
    assert [r["outcome"] for r in json.loads(record)["spans"]] == outcomes
    context.close()
    # the rest of the HIT at 390 px: the next segment's pre-filled spans shown, the first removed
    # by a tap, then every segment scored to the completion code
    phone = browser.new_context(**WIDTHS["phone"])
    page = phone.new_page()
    page.goto(url)
    form = page.locator("form.esa-item")
    form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    before = len(spans_of(form))
    if form.locator(".esa-spans li.esa-span-prefilled .esa-remove").count():
        form.locator(".esa-spans li.esa-span-prefilled .esa-remove").first.tap()
        assert len(spans_of(form)) == before - 1
    page.screenshot(path=str(ARTIFACTS / "esa-ai-phone.png"), full_page=True)
    assert score_to_the_code(page, form, CODE) >= 1
    page.screenshot(path=str(ARTIFACTS / "esa-ai-phone-done.png"), full_page=True)
    n = app.rows("SELECT COUNT(*) FROM esa_answers a JOIN assignments s ON s.id = a.assignment_id WHERE s.study_id = ?",
                 (AI_STUDY,))[0][0]  # fmt: skip
    assert n == app.rows("SELECT COUNT(*) FROM assignments WHERE study_id = ?", (AI_STUDY,))[0][0]
    phone.close()


SPEECH_STUDY = "esa-speech"
SPEECH_CODE = "ESA-SPEECH-DONE"


def speech_study(app: RunningApp, tmp_path: Path) -> str:
    """A third study of the same app: one segment whose output is speech (espeak-ng, made here)
    with word times spread over it; its annotator's link."""
    folder = tmp_path / "esa-speech"
    folder.mkdir()
    said = "O gato dorme no sofá."
    subprocess.run(["espeak-ng", "-v", "pt", "-w", str(folder / "out.wav"), said], check=True)
    seconds = sf.info(str(folder / "out.wav")).duration
    words = said.split()
    step = seconds / (len(words) + 1)
    times = [
        {"word": w, "start": round((k + 0.5) * step, 3), "end": round((k + 1.4) * step, 3)} for k, w in enumerate(words)
    ]
    with open(folder / "segments.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["doc_id", "segment_id", "system", "source", "target", "target_audio", "target_words"])
        w.writerow(["d1", "1", "tts", "The cat sleeps on the sofa.", said, "out.wav", json.dumps(times)])
        w.writerow(["d1", "2", "tts", "The cat sleeps on the sofa.", said, "out.wav", json.dumps(times)])
    (folder / "study.toml").write_text(
        f'[study]\nid = "{SPEECH_STUDY}"\nname = "Speech"\nprotocols = ["esa"]\ncompletion_code = "{SPEECH_CODE}"\n\n'
        '[esa]\nsegments = "segments.csv"\n'
    )
    app.prepare(
        ("import", str(folder)), ("participants", "add", "--study", SPEECH_STUDY, "--role", "esa", "--count", "1")
    )
    return app.setup_cli("links", "--study", SPEECH_STUDY).stdout.splitlines()[1].split("\t")[5]


def mark_on_the_waveform(app: RunningApp, browser, url: str) -> None:
    """At 390 px: the output's waveform drawn, a region dragged across it, made major, played
    from the list; scored and submitted; the stored span in seconds within the audio's duration,
    mapped to the words it covers."""
    phone = browser.new_context(**WIDTHS["phone"])
    page = phone.new_page()
    page.goto(url)
    form = page.locator("form.esa-item")
    box = form.locator('.esa-wave[data-ready="true"]')
    box.wait_for(timeout=30000)
    duration = float(form.locator(".esa-audio").get_attribute("data-duration"))
    b = box.bounding_box()
    assert b["x"] >= 0 and b["x"] + b["width"] <= 390, b
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    y = b["y"] + b["height"] / 2
    page.mouse.move(b["x"] + b["width"] * 0.2, y)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] * 0.6, y, steps=10)
    page.mouse.up()
    assert form.locator(".esa-picked").inner_text().endswith(" s of the audio")
    form.get_by_role("button", name="Major (M)").click()
    [marked] = spans_of(form)
    assert 0.1 * duration < marked["start_s"] < marked["end_s"] < 0.7 * duration and marked["severity"] == "major"
    assert form.locator(".esa-spans li.esa-span-time").count() == 1
    form.locator(".esa-spans .esa-play-span").click()
    page.wait_for_function("() => document.querySelector('.esa-play')?.textContent === 'Pause'", timeout=10000)
    page.screenshot(path=str(ARTIFACTS / "esa-speech-phone.png"), full_page=True)
    slider = form.locator('input[name="score"]')
    sb = slider.bounding_box()
    page.mouse.click(sb["x"] + sb["width"] * 0.4, sb["y"] + sb["height"] / 2)
    form.locator("button[type=submit]").click()
    page.locator(".progress:visible").get_by_text("1 / 2").wait_for(timeout=15000)
    [(stored, seconds)] = app.rows(
        "SELECT a.spans, g.target_audio_s FROM esa_answers a JOIN assignments s ON s.id = a.assignment_id"
        " JOIN esa_segments g ON g.study_id = s.study_id AND g.segment_row = a.segment_row WHERE s.study_id = ?",
        (SPEECH_STUDY,),
    )
    [span] = json.loads(stored)
    assert 0 <= span["start_s"] < span["end_s"] <= seconds and span["severity"] == "major"
    assert span["start_s"] == pytest.approx(marked["start_s"]) and span["words"]
    phone.close()
    # the second segment at 1280 px: a region dragged on its waveform, minor, to the completion code
    desktop = browser.new_context(**WIDTHS["desktop"])
    page = desktop.new_page()
    page.goto(url)
    form = page.locator("form.esa-item")
    box = form.locator('.esa-wave[data-ready="true"]')
    box.wait_for(timeout=30000)
    b = box.bounding_box()
    y = b["y"] + b["height"] / 2
    page.mouse.move(b["x"] + b["width"] * 0.5, y)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] * 0.8, y, steps=10)
    page.mouse.up()
    form.get_by_role("button", name="Minor (m)").click()
    assert [s["severity"] for s in spans_of(form)] == ["minor"]
    assert score_to_the_code(page, form, SPEECH_CODE) == 1
    page.screenshot(path=str(ARTIFACTS / "esa-speech-desktop-done.png"), full_page=True)
    desktop.close()


PRACTICE_STUDY = "esa-practice"


def practice_study(app: RunningApp, tmp_path: Path) -> str:
    """The example as a fourth study with the built-in tutorial (docs/esa.md, "Quality control");
    its annotator's link."""
    folder = tmp_path / "esa-practice"
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8").replace(f'id = "{STUDY}"', f'id = "{PRACTICE_STUDY}"')
    (folder / "study.toml").write_text(toml.replace("hit_size = 4\n", 'hit_size = 4\ntutorial = "default"\n'))
    app.prepare(
        ("import", str(folder)), ("participants", "add", "--study", PRACTICE_STUDY, "--role", "esa", "--count", "1")
    )
    return app.setup_cli("links", "--study", PRACTICE_STUDY).stdout.splitlines()[1].split("\t")[5]


def practice_feedback(app: RunningApp, browser, url: str) -> None:
    """The first practice item, scored with nothing marked: refused with what was missed, then
    the same answer sent again goes on, and the item is recorded as not right."""
    context = browser.new_context(**WIDTHS["desktop"])
    page = context.new_page()
    page.goto(url)
    form = page.locator("form.esa-item")
    form.locator('.esa-output .esa-ch[data-i="0"]').wait_for(timeout=30000)
    assert "Practice." in form.locator(".esa-instructions").inner_text()
    slider = form.locator('input[name="score"]')
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
    form.locator("button[type=submit]").click()
    error = page.locator(".msg.error:visible")  # the refusal's words above the item
    error.wait_for(timeout=15000)
    assert 'you missed an error. "Abend" is a major error' in error.inner_text()
    assert form.locator('input[name="practice_tries"]').input_value() == "1"
    page.screenshot(path=str(ARTIFACTS / "esa-practice-feedback.png"), full_page=True)
    form.locator("button[type=submit]").click()
    page.locator(".progress:visible").get_by_text("1 / ").wait_for(timeout=15000)
    [(n, right)] = app.rows("SELECT n_checks, n_passed FROM esa_qc WHERE study_id = ?", (PRACTICE_STUDY,))
    assert (n, right) == (1, 0)
    context.close()


def test_an_annotator_marks_spans_by_mouse_and_keyboard_and_scores(tmp_path):
    app = RunningApp(tmp_path, {})
    app.prepare(("import", str(EXAMPLE)), ("participants", "add", "--study", STUDY, "--role", "esa", "--count", "1"))
    url = app.setup_cli("links", "--study", STUDY).stdout.splitlines()[1].split("\t")[5]
    ai_url = prefilled_study(app, tmp_path)
    speech_url = speech_study(app, tmp_path)
    practice_url = practice_study(app, tmp_path)
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
                " WHERE t.study_id = ?",
                (STUDY,),
            )
            assert page.get_by_text(f"about {held} segments").first.is_visible()
            n_items = held  # played to the completion code below, the last ones at 390 px
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
            # the rest of the HIT at 390 px, each scored by a tap on its slider, to the completion code
            for k in range(2, 1 + n_items):
                shown = form.locator(".esa-output").get_attribute("data-text")
                slider = form.locator('input[name="score"]')
                slider.scroll_into_view_if_needed()  # the mouse clicks where the viewport shows it
                sb = slider.bounding_box()
                page.mouse.click(sb["x"] + sb["width"] * 0.5, sb["y"] + sb["height"] / 2)
                form.locator("button[type=submit]").tap()
                if k < n_items:
                    page.locator(".progress:visible").get_by_text(f"{k} / ").wait_for(timeout=15000)
                    page.wait_for_function(
                        "t => document.querySelector('form.esa-item .esa-output')?.dataset.text !== t",
                        arg=shown,
                        timeout=15000,
                    )
            page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            page.screenshot(path=str(ARTIFACTS / "esa-phone-done.png"), full_page=True)
            assert app.rows("SELECT COUNT(*) FROM esa_answers")[0][0] == n_items
            phone.close()

            # the team's Analysis tab: the ESA section on the one answer (tabs/analysis_esa.py)
            team = browser.new_context(**WIDTHS["desktop"])
            page = team.new_page()
            page.goto(app.admin_url)
            page.get_by_role("tab", name="Analysis").click()
            page.get_by_text("Error span annotation (ESA, Kocmi et al. 2024)").first.click()
            page.get_by_role("button", name="Analyse the ESA answers", exact=True).click()
            page.get_by_text(f"{n_items} judgments by 1 annotator,").first.wait_for(timeout=60000)
            panel = page.locator("#esa-analysis")
            panel.get_by_text("The analysis's defaults and where they come from.").wait_for(timeout=30000)
            shown = panel.inner_text()
            assert "Agreement: no segment has two annotators yet" in shown
            assert all(f"Table {k}." in shown for k in (1, 2, 3, 4))  # as the report's part
            assert page.locator(".toast-body").count() == 0
            panel.screenshot(path=str(ARTIFACTS / "esa-analysis-panel.png"))
            team.close()

            edit_prefilled(app, browser, ai_url)
            mark_on_the_waveform(app, browser, speech_url)
            practice_feedback(app, browser, practice_url)
    finally:
        app.stop()
