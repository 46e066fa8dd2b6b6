"""The side-by-side page end to end (services/compare/protocol.py, tabs/compare.py,
assets/js/script/compare.js): one launched app with two studies, the example (score mode) and a
copy of it in prefer mode with a completion code. At 1280 px: the two outputs side by side, a
submit with both sliders unmoved refused in place naming each, then one scored by a click at 70
and the other by a click on 0, saved with the positions shown. At 390 px: the outputs stacked and
the page no wider than the screen, a tie chosen, then A preferred, to the completion code.
The team's Analysis tab analyses the answers (its side-by-side section). Screenshots in the
tests' artifacts folder."""

from __future__ import annotations

import json
import shutil
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


def test_scores_side_by_side_and_a_preference_with_a_tie_on_a_phone(tmp_path):
    app = RunningApp(tmp_path, {})
    app.prepare(
        ("import", str(EXAMPLE)),
        ("import", str(prefer_study(tmp_path))),
        ("participants", "add", "--study", "sxs-example", "--role", "sxs", "--count", "1"),
        ("participants", "add", "--study", "sxs-prefer", "--role", "sxs", "--count", "1"),
    )
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
    finally:
        app.stop()
