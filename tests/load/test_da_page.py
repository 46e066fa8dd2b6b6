"""The DA tab in headless Chromium across submits: from one item to the next the tab sends only
new values (no layout updates: they cost Gradio a component per update and made a submit 3x a
no-op event at 50 raters, see benchmarks/load.py), so this checks the page still moves on
right: the next image or audio, the slider back at 0 and untouched (audio: locked until the
candidate has played), a double submit, and the full page again at the end (feedback box)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from harness.app import RunningApp
from harness.demo import DEMO
from tests.helpers.app import AppClient
from tests.helpers.browser import CHROMIUM, FLAGS
from tests.helpers.da_page import move, slider, submit, wait_progress

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo_app(tmp_path_factory):
    """The demo study (modality both: the first rater rates text, the second audio), with the
    audio slider locked until the candidate has played (da.lock_until_played; paper 001 and the
    default do not lock it)."""
    import shutil

    root = tmp_path_factory.mktemp("dapage")
    study = root / "study"
    shutil.copytree(DEMO, study)
    toml = (study / "study.toml").read_text()
    (study / "study.toml").write_text(toml.replace("[da]\n", "[da]\nlock_until_played = true\n", 1))
    app = RunningApp(root)
    assert app.setup_cli("import", str(study)).returncode == 0
    assert app.setup_cli("participants", "add", "--study", "demo", "--role", "da", "--count", "2").returncode == 0
    app.start()
    yield app
    app.stop()


@pytest.fixture
def page():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=FLAGS + ["--autoplay-policy=no-user-gesture-required"]
        )
        yield browser.new_page(viewport={"width": 1200, "height": 1000})
        browser.close()


def rater(app, modality: str) -> str:
    return app.rows(
        "SELECT p.token FROM participants p JOIN assignments a ON a.participant_id = p.id "
        "WHERE a.phase = 'da' AND json_extract(a.meta, '$.modality') = ? LIMIT 1",
        (modality,),
    )[0][0]


def progress(page) -> str:
    loc = page.locator(".progress:visible").first
    loc.wait_for(timeout=15000)
    return loc.inner_text()


def test_text_items_follow_each_other_and_the_last_shows_the_feedback_box(demo_app, page):

    tok = rater(demo_app, "text")
    page.goto(f"{demo_app.url}/?t={tok}")
    total = int(progress(page).split("/")[1])
    for k in range(2):
        src = page.locator("#da-image img").first.get_attribute("src")
        move(page, 10 + k)
        submit(page)
        wait_progress(page, k + 1)
        assert page.locator(".msg.ok:visible").first.inner_text() == "Saved."
        assert page.locator("#da-image img").first.get_attribute("src") != src
        assert slider(page).input_value() == "0"
        submit(page)  # the slider is untouched again
        page.locator(".msg.error:visible").first.wait_for(timeout=15000)
        assert "move the slider" in page.locator(".msg.error:visible").first.inner_text()
    # another tab rates all but the last item; this page's item was saved there meanwhile
    client = AppClient(demo_app.url)
    for _ in range(total - 3):
        v = client.predict(tok, "da", api_name="/view")
        out = client.predict(tok, {"item_id": v["item_id"], "answer": {"score": 50}}, api_name="/da_submit")
        assert out[0]["notice"] == "Saved."
    move(page, 3)
    submit(page)
    wait_progress(page, total - 1)
    assert "already saved" in page.locator(".msg.ok:visible").first.inner_text()
    move(page, 4)
    submit(page)
    wait_progress(page, total)
    page.get_by_text("DEMO-2026").first.wait_for(timeout=15000)
    page.get_by_label("Any comments on this task? (optional)").wait_for(timeout=15000)
    assert not page.get_by_role("button", name="Submit").is_visible()
    assert not page.locator("#da-image img").first.is_visible()


def test_audio_items_lock_the_slider_again_for_each_candidate(demo_app, page):
    tok = rater(demo_app, "audio")
    page.goto(f"{demo_app.url}/?t={tok}")
    deadline = time.time() + 120  # the HIT's audio is rendered by the worker
    while "being prepared" in page.content() and time.time() < deadline:
        time.sleep(1)
    progress(page)
    for k in range(2):
        reference = page.locator("#da-image img").first.get_attribute("src")  # the reference's image
        assert slider(page).is_disabled()
        page.locator("#da-audio audio").evaluate("a => a.play()")
        for _ in range(150):  # unlocked when the candidate has played to its end
            if not slider(page).is_disabled():
                break
            time.sleep(0.2)
        move(page, 7)
        submit(page)
        wait_progress(page, k + 1)
        assert page.locator(".msg.ok:visible").first.inner_text() == "Saved."
        assert page.locator("#da-image img").first.get_attribute("src") != reference
        assert slider(page).input_value() == "0" and slider(page).is_disabled()
