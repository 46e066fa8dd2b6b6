"""The admin's review shows QC's second opinion beside the word diff (issue 31): how likely each
edge word of the prompt is under the audio, at a desktop's and a phone's width."""

from __future__ import annotations

import json
import wave

import pytest

from tests.helpers.browser import ARTIFACTS, BROKEN_WORDS, CHROMIUM, CLIPPED_HEADERS, FLAGS

pytestmark = pytest.mark.browser


def flag_one(app) -> tuple[int, str]:
    """A sender's recording as the worker stores a flagged one: the first word not heard and
    unlikely under the audio (the second opinion kept the paper's start flag)."""
    (sender,) = app.rows("SELECT id FROM participants WHERE role = 'sender' ORDER BY id LIMIT 1")[0:1]
    aid, eid, prompt = app.rows(
        "SELECT a.id, a.exchange_id, s.text FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
        "JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        "WHERE a.participant_id = ? AND a.phase = 'record' ORDER BY a.id LIMIT 1",
        sender,
    )[0]
    wav = app.tmp / "media" / "review-test.wav"
    wav.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(b"\0\1" * 16000)
    first, last = prompt.split()[0].strip(",."), prompt.split()[-1].strip(",.?!")
    edges = {"first_word": first, "first_p": 0.003, "last_word": last, "last_p": 0.87, "forgiven": []}
    app.rows(
        "INSERT INTO recordings (assignment_id, exchange_id, sha256, path_original, path_16k, duration_s, "
        "qc_status, transcript, wer, qc_flags, qc_edges, created_at) VALUES (?, ?, 'x', ?, ?, 1.0, 'flagged', "
        "?, 0.02, '[\"start_differs\"]', ?, '2026-01-01T00:00:00Z')",
        (aid, eid, str(wav), str(wav), " ".join(prompt.split()[1:]), json.dumps(edges)),
    )
    (rid,) = app.rows("SELECT id FROM recordings WHERE assignment_id = ?", (aid,))[0]
    return rid, first


@pytest.mark.parametrize("width", [1280, 390])
def test_the_review_shows_the_edge_words_probabilities(app_server, width):
    from playwright.sync_api import sync_playwright

    if not app_server.rows("SELECT id FROM recordings WHERE path_original LIKE '%review-test.wav'"):
        flag_one(app_server)
    (rid,) = app_server.rows("SELECT id FROM recordings WHERE path_original LIKE '%review-test.wav'")[0]
    first = json.loads(app_server.rows("SELECT qc_edges FROM recordings WHERE id = ?", (rid,))[0][0])["first_word"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(app_server.admin_url)
        page.locator("#admin-dashboard .dash").wait_for(timeout=30000)
        page.get_by_text("Recordings to review (flagged by QC)", exact=True).click()
        table = page.locator("#review-table")
        table.wait_for(timeout=30000)
        page.wait_for_function(
            "([el, t]) => el.innerText.includes(t)",
            timeout=30000,
            arg=[table.element_handle(), f"first word \u201c{first}\u201d p=0.00"],
        )
        assert "edge words" in table.inner_text()
        page.get_by_label("Recording id (click its row above)").fill(str(rid))
        page.get_by_role("button", name="Open", exact=True).click()
        shown = page.locator("#review-align .qc-edges")
        shown.wait_for(timeout=30000)
        assert "p=0.87" in shown.inner_text() and first in shown.inner_text()
        page.screenshot(path=str(ARTIFACTS / f"review-edges-{width}.png"), full_page=True)
        # issue 28: at both widths every word reads whole, in the table and in the aligned texts
        # (a phone broke "hotel" into "hote|l" and drew the three headers over each other), and
        # no header is cut off ("seconds" read "seconc", a WER of 0.020 took two lines)
        unread = {}
        for where in ("#review-table", "#review-align table.qc-align"):
            found = page.locator(where).first
            unread[where] = (found.evaluate(BROKEN_WORDS), found.evaluate(CLIPPED_HEADERS))
        assert all(v == ([], []) for v in unread.values()), (width, unread)
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # the page never scrolls sideways
        browser.close()
