"""The side-by-side page end to end (services/compare/protocol.py, tabs/compare.py,
assets/js/script/compare.js): one launched app with two studies, the example (score mode) and a
copy of it in prefer mode with a completion code. At 1280 px: the two outputs side by side, a
submit with both sliders unmoved refused in place naming each, then one scored by a click at 70
and the other by a click on 0, saved with the positions shown. At 390 px: the outputs stacked and
the page no wider than the screen, a tie chosen, then A preferred, to the completion code.
The team's Analysis tab analyses the answers (its side-by-side section). A third study in ABX mode
(recordings made by espeak-ng): at 390 px a submit refused until A, B and X are played, then both
items to the completion code. Screenshots in the
tests' artifacts folder."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.app import RunningApp
from tests.helpers.browser import ARTIFACTS, WIDTHS, chromium

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "sxs"
CODE = "SXS-DONE-42"


def prefer_study(tmp_path) -> Path:
    folder = tmp_path / "prefer"
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace('id = "sxs-example"', f'id = "sxs-prefer"\ncompletion_code = "{CODE}"')
    (folder / "study.toml").write_text(toml.replace('mode = "score"', 'mode = "prefer"'), encoding="utf-8")
    return folder


ABX_CODE = "ABX-DONE-7"


def abx_study(tmp_path) -> Path:
    """Two items whose two outputs are recordings (espeak-ng, made here, two voices), in ABX mode."""
    folder = tmp_path / "abx"
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace('id = "sxs-example"', f'id = "sxs-abx"\ncompletion_code = "{ABX_CODE}"')
    (folder / "study.toml").write_text(toml.replace('mode = "score"', 'mode = "abx"'), encoding="utf-8")
    rows = [["item_id", "source", "system", "output", "audio"]]
    for i, said in enumerate(("Bom dia.", "Boa noite.")):
        for system, voice in (("tts-a", "pt"), ("tts-b", "pt-br")):
            name = f"{system}-{i}.wav"
            subprocess.run(["espeak-ng", "-v", voice, "-w", str(folder / name), said], check=True)
            rows.append([f"i{i}", f"Line {i}.", system, "", name])
    with open(folder / "sxs_outputs.csv", "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    return folder


def play_to_the_end(page, form, key: str) -> None:
    """A recording of the form played through (its own controls' play, sped up), as a listener would."""
    page.evaluate(
        "([f, k]) => { const a = document.querySelector(f + ' audio[data-clip=\"' + k + '\"]');"
        " a.playbackRate = 4; return a.play(); }",
        ["form.sxs-item", key],
    )
    form.locator(f'[data-clip-box="{key}"].sxs-heard').wait_for(timeout=15000)


def abx_to_the_end(app: RunningApp, browser, url: str) -> None:
    """At 390 px: refused before the recordings were played (naming them), then A, B and X played
    and X named on each item, to the completion code; each answer stored with the X it had."""
    phone = browser.new_context(**WIDTHS["phone"])
    page = phone.new_page()
    page.goto(url)
    form = page.locator("form.sxs-item")
    form.locator('audio[data-clip="X"]').wait_for(timeout=30000)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    form.get_by_text("X is A").tap()
    form.locator("button[type=submit]").tap()
    page.locator(".msg.error").get_by_text("not played yet: A, B, X").wait_for(timeout=15000)
    page.screenshot(path=str(ARTIFACTS / "sxs-abx-refused.png"), full_page=True)
    for k in (1, 2):
        for key in ("A", "B", "X"):
            play_to_the_end(page, form, key)
        form.get_by_text("X is B").tap()
        form.locator("button[type=submit]").tap()
        if k == 1:
            page.locator(".progress:visible").get_by_text("1 / 2").wait_for(timeout=15000)
    page.locator(":visible", has_text=ABX_CODE).last.wait_for(timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "sxs-abx-done.png"), full_page=True)
    rows = app.rows("SELECT shown, preferred, x FROM sxs_answers WHERE mode = 'abx' ORDER BY assignment_id")
    assert len(rows) == 2 and all(p == json.loads(shown)[1] and x for shown, p, x in rows)
    phone.close()


def test_scores_side_by_side_and_a_preference_with_a_tie_on_a_phone(tmp_path):
    app = RunningApp(tmp_path, {})
    app.prepare(
        ("import", str(EXAMPLE)),
        ("import", str(prefer_study(tmp_path))),
        ("import", str(abx_study(tmp_path))),
        ("participants", "add", "--study", "sxs-example", "--role", "sxs", "--count", "1"),
        ("participants", "add", "--study", "sxs-prefer", "--role", "sxs", "--count", "1"),
        ("participants", "add", "--study", "sxs-abx", "--role", "sxs", "--count", "1"),
    )
    abx_url = app.setup_cli("links", "--study", "sxs-abx").stdout.splitlines()[1].split("\t")[5]
    score_url = app.setup_cli("links", "--study", "sxs-example").stdout.splitlines()[1].split("\t")[5]
    prefer_url = app.setup_cli("links", "--study", "sxs-prefer").stdout.splitlines()[1].split("\t")[5]
    app.start()
    try:
        with chromium() as browser:
            context = browser.new_context(**WIDTHS["desktop"])
            page = context.new_page()
            page.goto(score_url)
            form = page.locator("form.sxs-item")
            form.locator(".sxs-output").nth(1).wait_for(timeout=30000)
            a, b = (form.locator(".sxs-output").nth(k).bounding_box() for k in (0, 1))
            assert abs(a["y"] - b["y"]) < 2 and b["x"] >= a["x"] + a["width"]  # side by side
            assert form.locator(".sxs-label").all_inner_texts() == ["Translation A", "Translation B"]
            form.locator("button[type=submit]").click()
            form.locator(".form-slider .field-error").nth(1).wait_for(timeout=15000)
            errors = form.locator(".form-slider .field-error").all_inner_texts()
            assert [("translation A" in e, "translation B" in e) for e in errors] == [(True, False), (False, True)]
            page.screenshot(path=str(ARTIFACTS / "sxs-desktop-refused.png"), full_page=True)
            sliders = form.locator("input[type=range]")
            box = sliders.nth(0).bounding_box()
            page.mouse.click(box["x"] + box["width"] * 0.7, box["y"] + box["height"] / 2)
            box = sliders.nth(1).bounding_box()
            page.mouse.click(box["x"] + 1, box["y"] + box["height"] / 2)  # on 0, where the unmoved slider sits
            first = int(sliders.nth(0).input_value())
            assert 64 <= first <= 76 and sliders.nth(1).input_value() == "0"
            assert form.locator(".field-error").count() == 0  # the marks go once the sliders move
            form.locator('textarea[name="comment-1"]').fill("Drops a word.")
            page.screenshot(path=str(ARTIFACTS / "sxs-desktop-scored.png"), full_page=True)
            form.locator("button[type=submit]").click()
            page.locator(".progress:visible").get_by_text("1 / 2").wait_for(timeout=15000)
            [(shown,)] = app.rows("SELECT shown FROM sxs_answers")
            rated = app.rows("SELECT system, position, score, comment FROM sxs_ratings ORDER BY position")
            order = json.loads(shown)
            assert rated == [(order[0], 0, first, ""), (order[1], 1, 0, "Drops a word.")]
            context.close()

            phone = browser.new_context(**WIDTHS["phone"])
            page = phone.new_page()
            page.goto(prefer_url)
            form = page.locator("form.sxs-item")
            form.locator(".sxs-output").nth(1).wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            a, b = (form.locator(".sxs-output").nth(k).bounding_box() for k in (0, 1))
            assert b["y"] >= a["y"] + a["height"] - 1  # stacked
            for part in (".sxs-output", ".sxs-choice", "button[type=submit]"):
                r = form.locator(part).first.bounding_box()
                assert r["x"] >= 0 and r["x"] + r["width"] <= 390, (part, r)
            form.get_by_text("Equally good (tie)").tap()
            page.screenshot(path=str(ARTIFACTS / "sxs-phone-prefer.png"), full_page=True)
            form.locator("button[type=submit]").tap()
            page.locator(".progress:visible").get_by_text("1 / 2").wait_for(timeout=15000)
            form.get_by_text("A is better").tap()
            form.locator("button[type=submit]").tap()
            page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            page.screenshot(path=str(ARTIFACTS / "sxs-phone-done.png"), full_page=True)
            phone.close()
            answers = app.rows("SELECT shown, preferred FROM sxs_answers WHERE mode = 'prefer' ORDER BY assignment_id")
            assert [p for _, p in answers] == ["tie", json.loads(answers[1][0])[0]]

            # the team's Analysis tab: the side-by-side section on the study shown first
            team = browser.new_context(**WIDTHS["desktop"])
            page = team.new_page()
            page.goto(app.admin_url)
            page.get_by_role("tab", name="Analysis").click()
            page.get_by_text("Side-by-side comparison").first.click()
            page.get_by_role("button", name="Analyse the side-by-side answers", exact=True).click()
            panel = page.locator("#sxs-analysis")
            panel.get_by_text("The analysis's defaults and where they come from.").wait_for(timeout=60000)
            shown = panel.inner_text()
            assert all(f"Table {k}." in shown for k in (1, 2, 3, 4)) and "Position bias" in shown
            assert page.locator(".toast-body").count() == 0
            panel.screenshot(path=str(ARTIFACTS / "sxs-analysis-panel.png"))
            team.close()

            abx_to_the_end(app, browser, abx_url)
    finally:
        app.stop()
