"""Issue 52, point 6, the proof: ONE plugin kept outside the packages (tests/plugins/proof/) that
uses every hook it has a use for, loaded by the launched app through TRADLAB_PLUGINS and driven in
headless Chromium. Its study is imported by the command line (the summary counts its corpus,
stored in its own table); a participant marks error spans by dragging across characters (its
script and stylesheet), a refusal is marked in place, the score is given by the keyboard; the
answers land in its own tables with the exact offsets; the admin's "A participant" page says them
in words under its phase's label; its Admin section lists them; its Analysis panel sums them up;
the Finished list shows its QC outcome; then its report part, its export (its tables alone, in
the README's data dictionary) and its own command. One app, one browser context; screenshots at
1280 px (the participant's page at 390 px too) in the tests' artifacts folder."""

from __future__ import annotations

import csv
import json
import urllib.request

import pytest
from playwright.sync_api import expect

from harness.app import RunningApp
from services.common import protocols
from tests.helpers.browser import ARTIFACTS, WIDTHS, chromium
from tests.plugins import proof

pytestmark = pytest.mark.browser

PLUGIN = "tests.plugins.proof:PROTOCOL"
BUILT_IN_TABLES = {t for p in ("usability", "da", "sd") for t in protocols.protocol(p).export_tables}


@pytest.fixture
def registered():
    protocols.register(proof.PROTOCOL)  # the setup commands (import, export, report) run in this process
    yield
    protocols.unregister(proof.NAME)


def drag(page, form, first: int, last: int) -> None:
    """The mouse pressed on character `first`, moved across to `last`, released."""
    a = form.locator(f'.proof-ch[data-i="{first}"]').bounding_box()
    b = form.locator(f'.proof-ch[data-i="{last}"]').bounding_box()
    page.mouse.move(a["x"] + a["width"] / 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2, steps=6)
    page.mouse.up()


def word_span(text: str, n: int, severity: str) -> dict:
    word = text.split(" ")[n]
    start = text.index(word)
    return {"start": start, "end": start + len(word), "severity": severity}


def score_by_keyboard(page, form, left_of_max: int) -> None:
    form.locator('input[name="score"]').focus()
    page.keyboard.press("End")
    for _ in range(left_of_max):
        page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")  # Enter on the slider submits


def test_one_plugin_uses_every_hook_in_the_browser(registered, tmp_path):
    app = RunningApp(tmp_path, {protocols.PLUGINS_ENV: PLUGIN, "TRADLAB_WORKER": "0"})
    res = app.setup_cli("import", str(proof.STUDY))
    assert res.returncode == 0, res.stderr
    assert "study 'proof': created" in res.stdout and "proof_segments 2" in res.stdout  # count_corpus
    assert app.rows("SELECT segment_id FROM proof_segments WHERE study_id = 'proof' ORDER BY 1") == [("s1",), ("s2",)]
    app.prepare(("participants", "add", "--study", "proof", "--role", "proof", "--count", "1"))
    url = app.setup_cli("links", "--study", "proof").stdout.splitlines()[1].split("\t")[5]
    targets = dict(app.rows("SELECT segment_id, target FROM proof_segments"))
    app.start()
    try:
        # its page code goes to its role's page, once, and to no other
        for role in protocols.roles():
            with urllib.request.urlopen(f"{app.url}/{role}/config", timeout=30) as r:
                config = json.load(r)
            mine = role == proof.NAME
            assert (config.get("head") or "").count('data-page-asset="proof.js"') == (1 if mine else 0), role
            assert (".proof-ch.proof-major" in (config.get("css") or "")) == mine, role
        with chromium() as browser:
            context = browser.new_context(**WIDTHS["desktop"])
            page = context.new_page()
            page.goto(url)
            form = page.locator("form.proof-item")
            # its script turned the target into one element per character
            form.locator('.proof-ch[data-i="0"]').wait_for(timeout=30000)
            first = form.locator(".proof-target").get_attribute("data-text")
            assert first in targets.values() and form.locator(".proof-ch").count() == len(first)
            minor, major = word_span(first, 1, "minor"), word_span(first, 2, "major")
            drag(page, form, minor["start"], minor["end"] - 1)
            form.locator('input[name="severity"][value="major"]').check()
            drag(page, form, major["end"] - 1, major["start"])  # right to left
            expected = sorted([minor, major], key=lambda s: s["start"])
            assert json.loads(form.locator('input[name="spans"]').input_value()) == expected
            cell = form.locator(f'.proof-ch[data-i="{major["start"]}"]')
            assert cell.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(252, 165, 165)"  # its stylesheet
            # no score: refused, the slider's box marked in place, the spans kept and painted again
            form.locator("button[type=submit]").click()
            form.locator(".form-slider .field-error").wait_for(timeout=15000)
            assert "Move the slider" in form.locator(".form-slider .field-error").inner_text()
            assert json.loads(form.locator('input[name="spans"]').input_value()) == expected
            assert form.locator(f'.proof-ch[data-i="{major["start"]}"].proof-major').count() == 1
            page.screenshot(path=str(ARTIFACTS / "plugin-proof-marked-1280.png"))
            score_by_keyboard(page, form, 30)
            page.locator(".progress:visible").get_by_text("1 / 2").wait_for(timeout=15000)
            # the next item, rendered by the script again, nothing marked; at a phone's width
            second = next(t for t in targets.values() if t != first)
            page.set_viewport_size(WIDTHS["phone"]["viewport"])
            page.wait_for_function(
                "t => document.querySelector('form.proof-item .proof-target')?.dataset.text === t "
                "&& document.querySelectorAll('form.proof-item .proof-ch').length === [...t].length",
                arg=second,
                timeout=15000,
            )
            assert form.locator(".proof-minor, .proof-major").count() == 0
            last = word_span(second, -1, "minor")
            last["end"] -= 1  # the full stop is no error
            drag(page, form, last["start"], last["end"] - 1)
            page.screenshot(path=str(ARTIFACTS / "plugin-proof-marked-390.png"), full_page=True)
            score_by_keyboard(page, form, 55)
            page.locator(".progress:visible").get_by_text("2 / 2").wait_for(timeout=15000)
            # its own tables hold the answers, the spans with their exact offsets, the QC decided
            stored = app.rows(
                "SELECT a.item_id, s.start_char, s.end_char, s.severity FROM proof_spans s "
                "JOIN assignments a ON a.id = s.assignment_id ORDER BY a.item_id, s.start_char"
            )
            item_of = {t: i for i, t in targets.items()}
            assert stored == [(item_of[first], s["start"], s["end"], s["severity"]) for s in expected] + [
                (item_of[second], last["start"], last["end"], "minor")
            ]
            [(pid, scores)] = app.rows(
                "SELECT participant_id, group_concat(score, ',') FROM proof_answers GROUP BY participant_id"
            )
            assert sorted(map(int, scores.split(","))) == [45, 70]
            assert app.rows("SELECT participant_id, spans, outcome FROM proof_qc") == [(pid, 3, "passed")]

            # the admin: "A participant" says the answers in words under the phase's label
            admin = context.new_page()
            admin.goto(app.admin_url)
            admin.locator("#admin-dashboard .dash").wait_for(timeout=30000)
            admin.get_by_text("A participant", exact=True).click()
            admin.locator("#participant-query textarea").fill(str(pid))
            admin.get_by_role("button", name="Find", exact=True).click()
            admin.locator("#participant-view-status").get_by_text(
                f"Participant {pid} (span annotator), found by id"
            ).wait_for(timeout=15000)
            items = admin.locator("#participant-items")
            words = ", ".join(
                f'{s["severity"]} {s["start"]}-{s["end"]} "{first[s["start"] : s["end"]]}"' for s in expected
            )
            expect(items).to_contain_text(f"score 70; {words}", timeout=15000)
            assert [items.get_by_test_id(f"cell-{row}-0").inner_text().strip() for row in (0, 1)] == ["error spans"] * 2
            items.scroll_into_view_if_needed()
            admin.screenshot(path=str(ARTIFACTS / "plugin-proof-admin-participant.png"))
            # its Admin section lists the answers (filled on login)
            admin.get_by_text("Error spans (proof plugin)", exact=True).locator("visible=true").first.click()
            section = admin.locator("#proof-admin-answers")
            expect(section).to_contain_text(words, timeout=15000)
            expect(section).to_contain_text(f"minor {last['start']}-{last['end']}", timeout=15000)
            section.scroll_into_view_if_needed()
            admin.screenshot(path=str(ARTIFACTS / "plugin-proof-admin-section.png"))
            # a protocol the study does not list keeps its sections off the page (the usability study's;
            # tests/test_admin_review_browser.py opens them for the demo study, which lists it)
            expect(admin.get_by_text("Exchanges and their phase", exact=True)).to_have_count(0)
            # the Finished list: its Role.qc outcome
            admin.get_by_text("Finished participants and the completion code", exact=True).click()
            done = admin.locator("#completions").get_by_text("passed (3 spans)", exact=True).locator("visible=true")
            done.first.wait_for(timeout=15000)
            done.first.scroll_into_view_if_needed()
            admin.screenshot(path=str(ARTIFACTS / "plugin-proof-finished-qc.png"))
            # its Analysis panel, computed from its tables
            admin.get_by_role("tab", name="Analysis").click()
            admin.get_by_text("Error spans (proof plugin)", exact=True).locator("visible=true").first.click()
            admin.locator("#proof-analyse").click()
            summed = "study proof: 2 answers by 1 participant, mean score 57.5; 3 error spans (2 minor, 1 major)"
            expect(admin.locator("#proof-analysis")).to_contain_text(summed, timeout=15000)
            admin.locator("#proof-analysis").scroll_into_view_if_needed()
            admin.screenshot(path=str(ARTIFACTS / "plugin-proof-analysis.png"))
    finally:
        app.stop()

    # its part of the report
    res = app.setup_cli("report", "--study", "proof", "--out", str(tmp_path / "report"))
    assert res.returncode == 0, res.stderr
    report = (tmp_path / "report" / "report-proof.html").read_text(encoding="utf-8")
    assert "Error spans (the proof plugin)" in report and summed in report
    # its export: its tables and their README entries, no built-in protocol's
    res = app.setup_cli("export", "--study", "proof", "--out", str(tmp_path / "export"))
    assert res.returncode == 0, res.stderr
    written = {p.name for p in (tmp_path / "export").iterdir()}
    assert {"proof_segments.csv", "proof_answers.csv", "proof_spans.csv"} <= written
    assert not {f"{t}.csv" for t in BUILT_IN_TABLES} & written
    with open(tmp_path / "export" / "proof_spans.csv", encoding="utf-8") as f:
        exported = [(r["item_id"], int(r["start_char"]), int(r["end_char"]), r["marked"]) for r in csv.DictReader(f)]
    assert exported == [(i, s, e, targets[i][s:e]) for i, s, e, _ in stored]
    readme = (tmp_path / "export" / "README.md").read_text(encoding="utf-8")
    assert "### `proof_spans.csv`" in readme and "| `marked` | string |" in readme
    assert "### `da_judgments.csv`" not in readme and "### `recordings.csv`" not in readme
    # its own command, in a process that loads it as the app does (TRADLAB_PLUGINS)
    res = app.cli("proof-summary", "--study", "proof")
    assert (res.returncode, res.stdout.strip()) == (0, summed), res.stderr
