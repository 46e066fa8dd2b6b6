"""The sender's page in headless Chromium at 1280 and 390 px (issue 29, points 1 and 8): one
box around the starter, no "record again" before a recording, the microphone help with the
upload picked when the browser has no microphone, a recording too short for its text refused
at once (the item still there after a reload and in a second tab), and a recording rejected in
review back on the sender's page with why; the submit by the page's JSON route, and by the
Gradio event when the route fails."""

from __future__ import annotations

import time

import pytest

from harness.app import RunningApp
from harness.demo import DEMO
from tests.helpers.app import AppClient, admin_session
from tests.helpers.audio import write_wav
from tests.helpers.browser import ARTIFACTS, WIDTHS, progress

pytestmark = pytest.mark.browser
SENDER = {"desktop": 0, "phone": 1, "routes": 2}  # one sender per test width: their pages do not mix


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    app = RunningApp(tmp_path_factory.mktemp("record"))
    assert app.setup_cli("import", str(DEMO)).returncode == 0
    app.add_participants("sender", 3, "USW", "Woman")
    app.start()
    yield app
    app.stop()


def sender_url(app, width) -> str:
    return app.links()["sender"][SENDER[width]]


def upload(page, path) -> None:
    """The file picked in the recorder's upload, as a sender does when the microphone fails."""
    if page.locator("#recorder input[type=file]").count() == 0:
        page.locator('#recorder button[aria-label="Upload file"]').click()
    page.locator("#recorder input[type=file]").set_input_files(str(path))
    page.locator("#recorder a[data-testid=download-link][href*='/gradio_api/file=']").wait_for(timeout=30000)


def recordings(app, width) -> list[tuple]:
    token = sender_url(app, width).split("?t=", 1)[1]
    return app.rows(
        "SELECT r.id, r.qc_status FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
        "JOIN participants p ON p.id = e.sender_id WHERE p.token = ? ORDER BY r.id",
        (token,),
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_senders_page_before_recording(app, browser, width):
    ctx = browser.new_context(**WIDTHS[width])
    page = ctx.new_page()
    try:
        page.goto(sender_url(app, width))
        assert "0 / 4" in progress(page)
        page.locator("#starter .starter strong").first.wait_for(timeout=15000)
        # one box, one bar: no element inside the starter draws a second left border
        bars = page.locator("#starter").evaluate(
            "e => [e, ...e.querySelectorAll('*')].filter(x => getComputedStyle(x).borderLeftStyle !== 'none'"
            " && parseFloat(getComputedStyle(x).borderLeftWidth) > 0).length"
        )
        assert bars == 1
        # nothing speaks of recording again before there is a recording
        assert "record again" not in page.locator("body").inner_text().lower()
        assert "Your recording can be up to 30 s long." in page.locator("#record-instruction").inner_text()
        # headless Chromium has no microphone: the help says how to allow it, and the upload is picked
        help_box = page.locator("#mic-help .mic-help")
        help_box.wait_for(timeout=15000)
        words = help_box.inner_text()
        assert "No microphone found" in words and "choose Allow" in words and "upload" in words
        page.wait_for_function(
            "() => document.querySelector('#mic-help .mic-trouble, #mic-help.mic-trouble')", timeout=10000
        )
        page.locator("#recorder input[type=file]").wait_for(state="attached", timeout=10000)
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width]["viewport"]["width"]
        page.screenshot(path=str(ARTIFACTS / f"record-{width}.png"), full_page=True)
    finally:
        ctx.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_recording_too_short_for_its_text_is_refused_at_once(app, browser, width, tmp_path):
    """Then a reload and a second tab mid-item: the same item, nothing stored, and the recording
    made in the second tab saved once."""
    ctx = browser.new_context(**WIDTHS[width])
    page = ctx.new_page()
    try:
        page.goto(sender_url(app, width))
        assert "0 / 4" in progress(page)
        starter = page.locator("#starter").inner_text()
        # a recording made and not sent: leaving asks first, as a text form's draft does (issue 51,
        # point 6: it vanished on a reload without a word); the click is the sender's own gesture
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.type), d.accept()))
        page.locator("#starter").click()
        upload(page, write_wav(tmp_path / "unsent.wav", seconds=5.0))
        page.reload()
        assert "0 / 4" in progress(page) and dialogs == ["beforeunload"]
        upload(page, write_wav(tmp_path / "short.wav", seconds=1.5, lead_s=0.2))
        page.get_by_role("button", name="Submit recording").click()
        error = page.locator(".msg.error")
        error.wait_for(timeout=30000)
        said = error.inner_text()
        assert "too short (1.5 s" in said and "words aloud takes well over" in said and "Nothing was saved" in said
        assert "0 / 4" in progress(page) and page.locator("#starter").inner_text() == starter
        assert recordings(app, width) == []
        page.screenshot(path=str(ARTIFACTS / f"record-too-short-{width}.png"), full_page=True)
        page.reload()  # the refused recording was cleared: nothing to lose, no question
        assert "0 / 4" in progress(page) and dialogs == ["beforeunload"]
        assert page.locator("#starter").inner_text() == starter
        other = ctx.new_page()
        other.goto(sender_url(app, width))
        assert "0 / 4" in progress(other) and other.locator("#starter").inner_text() == starter
        upload(other, write_wav(tmp_path / "reading.wav", seconds=5.0))
        other.get_by_role("button", name="Submit recording").click()
        other.locator(".progress:visible", has_text="1 / 4").wait_for(timeout=30000)
        other.screenshot(path=str(ARTIFACTS / f"record-second-tab-{width}.png"), full_page=True)
        # the first tab, still on that item, sends it again: saved once, and it moves on too
        upload(page, write_wav(tmp_path / "again.wav", seconds=5.0))
        page.get_by_role("button", name="Submit recording").click()
        page.locator(".progress:visible", has_text="1 / 4").wait_for(timeout=30000)
        assert page.locator(".msg.error").count() == 0 or "Traceback" not in page.locator(".msg.error").inner_text()
        assert len(recordings(app, width)) == 1
    finally:
        ctx.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_recording_rejected_in_review_comes_back_to_its_sender(app, browser, width, tmp_path):
    """The worker's QC flags the tone recorded above (it is no reading); the team rejects it;
    the sender's page gives its text back first, saying why."""
    deadline = time.time() + 240
    while time.time() < deadline and not any(s == "flagged" for _, s in recordings(app, width)):
        time.sleep(1)
    [(rid, status)] = recordings(app, width)
    assert status == "flagged"
    client = AppClient(app.url)
    said = client.predict(admin_session(client), rid, "demo", "", api_name="/admin_reject_recording")[0]
    assert "asked to record it again" in str(said)
    ctx = browser.new_context(**WIDTHS[width])
    page = ctx.new_page()
    try:
        page.goto(sender_url(app, width))
        assert "1 / 5" in progress(page)
        notice = page.locator("#record-instruction .record-again")
        notice.wait_for(timeout=15000)
        assert "Please record this text again" in notice.inner_text()
        page.screenshot(path=str(ARTIFACTS / f"record-again-{width}.png"), full_page=True)
        upload(page, write_wav(tmp_path / "redo.wav", seconds=6.0))
        page.get_by_role("button", name="Submit recording").click()
        page.locator(".progress:visible", has_text="2 / 5").wait_for(timeout=30000)
        assert page.locator("#record-instruction .record-again").count() == 0
        assert [s for _, s in recordings(app, width)][0] == "rejected" and len(recordings(app, width)) == 2
    finally:
        ctx.close()


def test_the_submit_goes_by_the_json_route_and_by_gradio_when_the_route_fails(app, browser, tmp_path):
    """One POST per recording to the page's JSON route (web/form_routes.py), the next item shown
    from its answer and the recorder cleared; with the route gone (a proxy that drops it) the
    tab's Gradio event saves it; with nothing recorded the event says so."""
    page = browser.new_page()
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    try:
        page.goto(sender_url(app, "routes"))
        assert "0 / 4" in progress(page)
        upload(page, write_wav(tmp_path / "one.wav", seconds=5.0))
        posts.clear()
        page.get_by_role("button", name="Submit recording").click()
        page.locator(".progress:visible", has_text="1 / 4").wait_for(timeout=30000)
        assert [u.split("/", 3)[3] for u in posts] == ["sender/form/record/submit"], posts
        assert "Saved." in page.locator("#record-words").inner_text()
        assert page.locator("#recorder a[data-testid=download-link]").count() == 0  # cleared for the next
        assert len(recordings(app, "routes")) == 1
        page.route("**/form/record/submit", lambda route: route.abort())
        upload(page, write_wav(tmp_path / "two.wav", seconds=5.0))
        posts.clear()
        page.get_by_role("button", name="Submit recording").click()
        page.locator(".progress:visible", has_text="2 / 4").wait_for(timeout=30000)
        assert any("/sender/gradio_api/" in u for u in posts), posts  # the event, after the route failed
        assert len(recordings(app, "routes")) == 2
        page.get_by_role("button", name="Submit recording").click()  # nothing recorded
        error = page.locator(".msg.error")
        error.wait_for(timeout=30000)
        assert "2 / 4" in progress(page) and len(recordings(app, "routes")) == 2
        assert "recording is empty" in error.inner_text()
        page.screenshot(path=str(ARTIFACTS / "record-nothing-recorded.png"), full_page=True)
    finally:
        page.close()
