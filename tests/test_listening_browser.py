"""The listening test's page end to end (services/listening/protocol.py, tabs/listening.py,
assets/js/script/listening.js): one launched app, the example study made short (two clips to
rate, two digit triplets) with a completion code. At 1280 px a listener's Submit before the tone
is played is refused in place naming it, a played clip stays played over a reload, and the checks,
the rated clips and the gold and trapping clips lead to the completion code. At 390 px a second
listener does the same, nothing wider than the screen, and a third fails the device check and
is told politely that the study ends there, with no completion code; a MUSHRA page at 390 px
refuses a Submit before every sample is played and scored, naming each. The team's Analysis tab
shows the MOS per condition with that listener left out. Screenshots in the tests' artifacts
folder."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from harness.app import RunningApp
from tests.helpers.browser import ARTIFACTS, WIDTHS, chromium

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "listening"
STUDY = "listening-example"
CODE = "LISTEN-DONE-7"
MUSHRA = "listening-mushra"
PORTS = range(7900, 7950)  # this project's shared machine: the app's ports


def short_study(tmp_path) -> Path:
    folder = tmp_path / "listening"
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = toml.replace("seed = 7", f'seed = 7\ncompletion_code = "{CODE}"')
    toml = toml.replace("items_per_listener = 6", "items_per_listener = 2\nhearing_triplets = 2\nhearing_pass = 2")
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    return folder


def mushra_study(tmp_path) -> Path:
    """The example's clips as MUSHRA: two items, each its normal-rate clip as the reference, the fast
    one and the noisy one (the anchor) as samples, the hidden reference added; no checks."""
    folder = tmp_path / "mushra"
    shutil.copytree(EXAMPLE, folder)
    rows = ["item_id,stimulus_id,condition,audio,reference_audio,kind"]
    for k in (1, 2):
        rows.append(f"i{k},i{k}-fast,fast,audio/s{k}_fast.wav,audio/s{k}_normal.wav,")
        rows.append(f"i{k},i{k}-anchor,anchor,audio/gold_noisy.wav,audio/s{k}_normal.wav,anchor")
    (folder / "mushra.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "study.toml").write_text(
        f'[study]\nid = "{MUSHRA}"\nname = "MUSHRA"\nprotocols = ["listening"]\nseed = 3\n'
        f'completion_code = "{CODE}"\n\n[listening]\nstimuli = "mushra.csv"\nmethod = "mushra"\n'
        "items_per_listener = 2\ndevice_check = false\nhearing_test = false\n",
        encoding="utf-8",
    )
    return folder


def port_in_range() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail("no free port in 7900-7949")


def play_all(form) -> None:
    """Every clip of the page played to its end (the page marks it played)."""
    clips = form.locator(".lt-clip")
    for k in range(clips.count()):
        clips.nth(k).locator("audio").evaluate("a => a.play()")
        clips.nth(k).and_(form.page.locator(".lt-done")).wait_for(timeout=30000)


def answer(form, expected: dict, right: bool = True) -> None:
    kind = form.get_attribute("data-kind")
    if kind == "device":
        screen = expected["device"].pop(0)
        side = screen if right else ("left" if screen == "right" else "right")
        form.locator(f'input[name=side][value="{side}"]').check()
    elif kind == "hearing":
        form.locator("input[name=digits]").fill(" ".join(expected["hearing"].pop(0)))
    else:  # a gold or trapping clip answered as expected (known by its audio's name), else Fair
        src = form.locator("audio").first.get_attribute("src")
        value = next((v for name, v in expected["controls"] if name in src), 3)
        form.locator(f"input[name=rating][value='{value}']").check()


def listen(page, expected: dict, pages: int, *, right: bool = True, shots: str = "") -> None:
    for k in range(pages):
        form = page.locator("form.lt-item")
        form.wait_for(timeout=30000)
        page.locator(".progress:visible").get_by_text(f"{k} / ").wait_for(timeout=15000)
        play_all(form)
        answer(form, expected, right)
        if shots and k in (0, 2, 4):
            page.screenshot(path=str(ARTIFACTS / f"listening-{shots}-{k}.png"), full_page=True)
        form.locator("button[type=submit]").click()
        page.locator(".progress:visible").get_by_text(f"{k + 1} / ").wait_for(timeout=15000)


def test_a_listener_is_checked_then_rates_to_the_code_and_a_failed_check_ends_politely(tmp_path):
    app = RunningApp(tmp_path, {})
    app.port = port_in_range()
    app.url = f"http://127.0.0.1:{app.port}"
    app.env.update(TRADLAB_PORT=str(app.port), TRADLAB_PUBLIC_URL=app.url)
    app.prepare(
        ("import", str(short_study(tmp_path))),
        ("import", str(mushra_study(tmp_path))),
        ("participants", "add", "--study", STUDY, "--role", "listening", "--count", "3"),
        ("participants", "add", "--study", MUSHRA, "--role", "listening", "--count", "1"),
    )
    urls = [line.split("\t")[5] for line in app.setup_cli("links", "--study", STUDY).stdout.splitlines()[1:4]]
    mushra_url = app.setup_cli("links", "--study", MUSHRA).stdout.splitlines()[1].split("\t")[5]
    checks = app.rows("SELECT test, expected FROM listening_screens ORDER BY place")
    controls = app.rows("SELECT audio, expected FROM listening_stimuli WHERE kind != 'rating'")

    def expected() -> dict:
        return {"controls": controls, **{t: [e for tt, e in checks if tt == t] for t in ("device", "hearing")}}

    app.start()
    try:
        with chromium(["--autoplay-policy=no-user-gesture-required"]) as browser:
            context = browser.new_context(**WIDTHS["desktop"])
            page = context.new_page()
            page.goto(urls[0])
            form = page.locator("form.lt-item")
            form.wait_for(timeout=30000)
            assert form.get_attribute("data-kind") == "device"
            assert page.locator(".progress:visible").inner_text().endswith("0 / 8")
            form.locator("input[name=side][value=left]").check()
            form.locator("button[type=submit]").click()  # the tone not played: refused, naming it
            page.locator(".msg.error").get_by_text("not played yet: The tone").wait_for(timeout=15000)
            page.screenshot(path=str(ARTIFACTS / "listening-desktop-refused.png"), full_page=True)
            play_all(form)
            page.reload()  # the clip played stays played (the page's draft)
            form = page.locator("form.lt-item")
            form.locator(".lt-clip.lt-done").wait_for(timeout=30000)
            form.locator("input[name=side]").first.wait_for()
            assert app.rows("SELECT COUNT(*) FROM listening_answers") == [(0,)]
            want = expected()
            listen(page, want, 8, shots="desktop")
            page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
            page.screenshot(path=str(ARTIFACTS / "listening-desktop-done.png"), full_page=True)
            context.close()

            phone = browser.new_context(**WIDTHS["phone"])
            page = phone.new_page()
            page.goto(urls[1])
            page.locator("form.lt-item").wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            listen(page, expected(), 8, shots="phone")
            page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            page.screenshot(path=str(ARTIFACTS / "listening-phone-done.png"), full_page=True)

            page = phone.new_page()
            page.goto(urls[2])
            listen(page, expected(), 4, right=False)  # both ears wrong
            page.get_by_text("so it ends here for you").wait_for(timeout=30000)
            assert page.locator(":visible", has_text=CODE).count() == 0
            assert page.locator("form.lt-item").count() == 0
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
            page.screenshot(path=str(ARTIFACTS / "listening-phone-screened-out.png"), full_page=True)

            # MUSHRA on the phone: a submit before every sample is played is refused naming them
            page = phone.new_page()
            page.goto(mushra_url)
            for k in range(2):
                form = page.locator("form.lt-item")
                form.locator(".lt-sample").nth(2).wait_for(timeout=30000)
                assert form.locator(".lt-clip-label").all_inner_texts() == [
                    "Reference", "Sample 1", "Sample 2", "Sample 3",
                ]  # fmt: skip
                if k == 0:
                    form.locator(".lt-clip audio").first.evaluate("a => a.play()")
                    form.locator(".lt-clip.lt-done").first.wait_for(timeout=30000)
                    form.locator("button[type=submit]").tap()
                    error = page.locator(".msg.error")
                    error.get_by_text("not played yet: Sample 1, Sample 2, Sample 3").wait_for(timeout=15000)
                    assert "Rate Sample 1: move its slider" in error.inner_text()
                    page.screenshot(path=str(ARTIFACTS / "listening-phone-mushra-refused.png"), full_page=True)
                play_all(form)
                for j in range(3):
                    form.locator(f"#lt-score-{j}").press("End" if j == 0 else "ArrowRight")
                assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
                if k == 0:
                    page.screenshot(path=str(ARTIFACTS / "listening-phone-mushra.png"), full_page=True)
                form.locator("button[type=submit]").tap()
                page.locator(".progress:visible").get_by_text(f"{k + 1} / 2").wait_for(timeout=15000)
            page.locator(":visible", has_text=CODE).last.wait_for(timeout=30000)
            assert sorted(app.rows("SELECT score FROM listening_scores")) == [(1,), (1,), (1,), (1,), (100,), (100,)]
            phone.close()

            # the team's Analysis tab: the listening test's panel, the failed listener left out
            team = browser.new_context(**WIDTHS["desktop"])
            page = team.new_page()
            page.goto(app.admin_url)
            page.get_by_role("tab", name="Analysis").click()
            page.get_by_text("Listening test", exact=True).first.click()
            page.get_by_role("button", name="Analyse the listening-test ratings", exact=True).click()
            panel = page.locator("#listening-analysis")
            panel.get_by_text("The analysis's defaults and where they come from.").wait_for(timeout=60000)
            shown = panel.inner_text()
            assert all(f"Table {k}." in shown for k in (1, 2, 3)) and "espeak-160wpm" in shown
            assert "1 listener(s) failed a check (left out)" in shown
            assert page.locator(".toast-body").count() == 0
            panel.screenshot(path=str(ARTIFACTS / "listening-analysis-panel.png"))
            team.close()
        outcomes = app.rows("SELECT participant_id, test, passed FROM listening_outcomes ORDER BY participant_id, test")
        by = {}
        for pid, test, passed in outcomes:
            by.setdefault(pid, {})[test] = passed
        assert sorted(by.values(), key=len) == [
            {"device": 0, "hearing": 1},
            {"device": 1, "gold": 1, "hearing": 1, "trap": 1},
            {"device": 1, "gold": 1, "hearing": 1, "trap": 1},
        ]
        assert app.rows("SELECT COUNT(*) FROM listening_answers WHERE kind = 'rating'") == [(4,)]
    finally:
        app.stop()
