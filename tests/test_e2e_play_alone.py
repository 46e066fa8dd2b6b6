"""One person plays the whole demo to the end from the links `make run` prints (issue 29,
point 3; README, "Play the whole study alone").

`app.py --demo` adds, beside one participant per role, a sender who dropped out after reading
two starters (services/setup/demo.py), so the rater has work. Here the sender uploads a reading
of each of their four starters (Piper), the worker transcribes and translates all six
recordings, the admin accepts any QC flagged (the Admin tab's review), then the receiver answers
all six translations, the validator validates all six answer sets, the sender answers their
eight surveys, the rater their four and the DA rater their HIT of 24: each page ends with the
completion code. The last page of each role is also shot at 390 px (alone-*.png).
The SD rater moves every slider of every page by keyboard.
"""

from __future__ import annotations

import html
import re
import time

import pytest

from harness.app import RunningApp
from harness.demo import DEMO_ASSETS
from speech import spoken_wav
from tests.helpers.app import AppClient, admin_session
from tests.helpers.browser import ARTIFACTS, CHROMIUM, FLAGS, WIDTHS
from tests.helpers.e2e import printed_links, rows

# every role to its end in one test (the demo's start counted in: 58 + 242 s on a loaded CI run):
# twice the suite's hang guard (pytest.ini's 300 s)
pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
CODE = "DEMO-2026"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    app = RunningApp(tmp_path_factory.mktemp("alone"), {"TRADLAB_DEMO_STUDY": str(DEMO_ASSETS)})
    app.start("--demo")
    yield app
    app.stop()


def progress_is(page, text, timeout=30000):
    page.locator(".progress:visible", has_text=text).first.wait_for(timeout=timeout)


def finished(page, browser, url, name, tab=None):
    """The completion code on the page, at 1280 px and (the same link again) at 390 px."""
    page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
    page.screenshot(path=str(ARTIFACTS / f"alone-{name}-desktop.png"), full_page=True)
    ctx = browser.new_context(**WIDTHS["phone"])
    try:
        phone = ctx.new_page()
        phone.goto(url)
        if tab:
            phone.get_by_role("tab", name=tab).click()
        phone.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.screenshot(path=str(ARTIFACTS / f"alone-{name}-phone.png"), full_page=True)
    finally:
        ctx.close()


def visible(locator) -> list:
    return [locator.nth(i) for i in range(locator.count()) if locator.nth(i).is_visible()]


def answer_surveys(page, n):
    for k in range(n):
        progress_is(page, f"{k} / {n}")
        page.locator(".likert:visible").first.wait_for(timeout=30000)
        for group in visible(page.locator(".likert")):
            group.locator("label", has_text=re.compile(r"^\s*4 ")).click()
        page.get_by_role("button", name="Submit").click()
    progress_is(page, f"{n} / {n}")


def test_one_person_plays_every_role_to_the_end(demo, tmp_path):
    from playwright.sync_api import sync_playwright

    links = printed_links(demo)
    assert {"sender", "receiver", "validator", "rater"} <= set(links)
    text = (demo.tmp / "server.log").read_text()
    links.update(re.findall(r"^\s+(da|sd)\s+(http\S+)", text, flags=re.M))
    log = (demo.tmp / "server.log").read_text()
    assert "dropped out: the rater answers their surveys" in log, log
    client = AppClient(demo.url)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        ctx = browser.new_context(**WIDTHS["desktop"])
        page = ctx.new_page()

        # -- the sender reads their four starters (uploads: headless Chromium has no microphone)
        page.goto(links["sender"])
        for k in range(4):
            progress_is(page, f"{k} / 4")
            text = html.unescape(re.sub(r"<[^>]+>", "", page.locator("#starter .starter").inner_html()))
            wav = spoken_wav(text, tmp_path / f"reading-{k}.wav", lead_s=0.6)
            page.locator("#recorder input[type=file]").set_input_files(str(wav))
            page.locator("#recorder a[data-testid=download-link][href*='/gradio_api/file=']").wait_for(timeout=30000)
            page.get_by_role("button", name="Submit recording").click()
        progress_is(page, "4 / 4")
        page.get_by_text("Please continue on the Survey tab at the top of this page").first.wait_for(timeout=15000)
        page.screenshot(path=str(ARTIFACTS / "alone-sender-recorded.png"), full_page=True)

        # -- the worker: six recordings checked and translated; the admin accepts what QC flagged
        deadline = time.time() + 420
        while time.time() < deadline:
            recs = rows(demo, "SELECT id, qc_status FROM recordings")
            if (
                len(recs) == 6
                and all(r["qc_status"] != "pending" for r in recs)
                and len(rows(demo, "SELECT id FROM translations")) == 6
            ):
                break
            time.sleep(1)
        assert len(rows(demo, "SELECT id FROM translations")) == 6
        session = admin_session(client)
        for r in rows(demo, "SELECT id FROM recordings WHERE qc_status = 'flagged'"):
            client.predict(session, r["id"], "demo", api_name="/admin_accept_recording")

        # -- the receiver answers all six translations
        page.goto(links["receiver"])
        for k in range(6):
            progress_is(page, f"{k} / 6")
            page.locator("#translation").wait_for(timeout=30000)
            for box in visible(page.get_by_label("Resposta")):
                box.fill("sim")
            page.get_by_role("button", name="Enviar respostas").click()
        progress_is(page, "6 / 6")
        finished(page, browser, links["receiver"], "receiver")

        # -- the validator validates the six answer sets
        page.goto(links["validator"])
        for k in range(6):
            progress_is(page, f"{k} / 6")
            page.locator("#val-source").wait_for(timeout=30000)
            page.locator("#sqm-slider input[type=range]").focus()
            for _ in range(60):
                page.keyboard.press("ArrowRight")
            for mark in visible(page.locator(".answer-mark")):
                mark.get_by_label("correct", exact=True).check()
            page.get_by_role("button", name="Submit validation").click()
        progress_is(page, "6 / 6")
        finished(page, browser, links["validator"], "validator")

        # -- the sender's eight surveys (baseline and informed of each of their exchanges)
        page.goto(links["sender"])
        page.get_by_role("tab", name="Survey").click()
        answer_surveys(page, 8)
        finished(page, browser, links["sender"], "sender", tab="Survey")

        # -- the rater: the dropped-out sender's two exchanges, baseline and informed
        page.goto(links["rater"])
        answer_surveys(page, 4)
        finished(page, browser, links["rater"], "rater")

        # -- the DA rater: their whole HIT by keyboard (the slider has the focus; Enter submits)
        page.goto(links["da"])
        for k in range(24):
            progress_is(page, f"{k} / 24")
            page.wait_for_function(
                "() => document.activeElement && document.activeElement.id === 'da-score'", timeout=30000
            )
            for _ in range(10 + 3 * k):
                page.keyboard.press("ArrowRight")
            page.keyboard.press("Enter")
        progress_is(page, "24 / 24")
        finished(page, browser, links["da"], "da")

        # -- the SD rater: past the welcome and the example (not progress), then each page of
        # sliders, every slider moved by keyboard (an unmoved one is unanswered)
        page.goto(links["sd"])
        page.locator("#sd-form form").wait_for(timeout=20000)
        for _ in range(2):
            progress_is(page, "0 / 12")
            page.get_by_role("button", name="Next").click()
            page.wait_for_timeout(1200)
        for k in range(12):
            progress_is(page, f"{k} / 12")
            sliders = page.locator(".sd-row input[type=range]")
            sliders.first.wait_for(timeout=20000)
            for i in range(sliders.count()):
                sliders.nth(i).focus()
                page.keyboard.press("ArrowRight" if (i + k) % 2 else "ArrowLeft")
            page.get_by_role("button", name="Next").click()
        progress_is(page, "12 / 12")
        finished(page, browser, links["sd"], "sd")
        browser.close()

    surveys = rows(
        demo, "SELECT s.perspective, a.participant_id FROM surveys s JOIN assignments a ON a.id = s.assignment_id"
    )
    assert sorted(s["perspective"] for s in surveys) == ["first"] * 8 + ["third"] * 4
    assert len(rows(demo, "SELECT id FROM da_judgments")) == 24
    done = rows(demo, "SELECT role FROM participants WHERE completed_at IS NOT NULL ORDER BY role")
    assert [d["role"] for d in done] == ["da", "rater", "receiver", "sd", "sender", "validator"]
    assert len(rows(demo, "SELECT value FROM sd_ratings")) > 0
