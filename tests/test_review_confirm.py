"""Issue 51, point 7 (rest): Reject (recording review) and Deactivate (participants) ask for
confirmation before acting, and Reject asks a reason that is stored, exported and shown to the
sender on their Record page. The service half runs in process; the page half in headless
Chromium at 1280 and 390 px."""

from __future__ import annotations

import json

import pytest

from services.admin.usability_review import decide
from services.participation import items
from services.setup.enrolment import add_participants, link
from storage import assignments
from storage.usability import exports, recordings
from tests.helpers.admin_review import flag_two_recordings
from tests.helpers.browser import ARTIFACTS

SIZES = [pytest.param((1280, 900), id="1280"), pytest.param((390, 844), id="390")]
REASON = "The last sentence is cut off; please read it to the end."


def test_a_rejection_reason_is_stored_exported_and_shown_to_the_sender(demo_db):
    (s,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")
    a = assignments.open_assignments(demo_db, s.id)[0]
    with demo_db.write() as w:
        rid = recordings.insert_recording(w, a["id"], a["exchange_id"], "sha", "x.wav", "x16.wav", 3.0)
        recordings.set_recording_qc(w, rid, "flagged", "something else", 0.9, ["high_wer"])
    out = decide(demo_db, rid, "reject", "admin@test", f"  {REASON}\n")
    assert out.record_again
    assert demo_db.scalar("SELECT review_reason FROM recordings WHERE id = ?", [rid]) == REASON
    event = demo_db.one("SELECT detail FROM events WHERE action = 'review' AND entity_id = ?", [str(rid)])
    assert json.loads(event["detail"]) == {"decision": "rejected", "reason": REASON}
    [row] = [r for r in exports.recording_rows(demo_db, "demo") if r["recording_id"] == rid]
    assert row["review_reason"] == REASON
    view = items.get_view(demo_db, s.token, "record", limited=False)
    assert view.status == "item" and view.content["record_again"]
    assert view.content["record_again_reason"] == f"The study team's note: {REASON}"


def test_an_accept_keeps_no_reason(demo_db):
    (s,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")
    a = assignments.open_assignments(demo_db, s.id)[0]
    with demo_db.write() as w:
        rid = recordings.insert_recording(w, a["id"], a["exchange_id"], "sha", "x.wav", "x16.wav", 3.0)
        recordings.set_recording_qc(w, rid, "flagged", "something else", 0.9, ["high_wer"])
    decide(demo_db, rid, "accept", "admin@test", "ignored")
    assert demo_db.scalar("SELECT review_reason FROM recordings WHERE id = ?", [rid]) is None


@pytest.fixture(scope="module")
def flagged(app_server) -> list[int]:
    return flag_two_recordings(app_server)  # one per width


def open_section(page, name: str) -> None:
    page.get_by_text(name, exact=True).click()


@pytest.mark.parametrize("size", SIZES)
def test_reject_asks_first_with_a_reason_and_the_sender_reads_it(app_server, browser, flagged, size):
    w, h = size
    rid = flagged[0 if w == 1280 else 1]
    ctx = browser.new_context(viewport={"width": w, "height": h}, is_mobile=w < 600, has_touch=w < 600)
    page = ctx.new_page()
    try:
        page.goto(app_server.admin_url)
        open_section(page, "Recordings to review (flagged by QC)")
        field = page.get_by_label("Recording id (click its row above)")
        field.fill(str(rid))
        field.press("Enter")
        page.locator("#review-reject").click()
        yes = page.locator("#reject-yes")
        yes.wait_for(state="visible", timeout=15000)
        # asked, not done: the recording is still flagged, the button names it
        assert f"Yes, reject recording {rid}" in yes.inner_text()
        assert f"Reject recording {rid}?" in page.locator("#reject-question").inner_text()
        assert app_server.rows("SELECT qc_status FROM recordings WHERE id = ?", (rid,))[0][0] == "flagged"
        page.locator("#reject-reason textarea").fill(REASON)
        yes.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"review-reject-confirm-{w}.png"), full_page=False)
        assert yes.bounding_box()["x"] + yes.bounding_box()["width"] <= w
        yes.click()
        page.locator("#review-msg").get_by_text(f"Recording {rid} rejected").wait_for(timeout=15000)
        assert app_server.rows("SELECT qc_status, review_reason FROM recordings WHERE id = ?", (rid,))[0] == (
            "rejected",
            REASON,
        )
        page.locator("#reject-confirm").wait_for(state="hidden", timeout=15000)
        # the sender's Record page says why
        sender = app_server.rows(
            "SELECT p.token FROM recordings r JOIN exchanges e ON e.id = r.exchange_id "
            "JOIN participants p ON p.id = e.sender_id WHERE r.id = ?",
            (rid,),
        )[0][0]
        page.goto(link(app_server.url, sender))
        said = page.locator(".record-again-reason")
        said.wait_for(timeout=30000)
        assert REASON in said.inner_text()
        page.screenshot(path=str(ARTIFACTS / f"record-again-reason-{w}.png"), full_page=False)
    finally:
        ctx.close()


@pytest.mark.parametrize("size", SIZES)
def test_deactivate_asks_first_naming_the_participant(app_server, browser, size):
    w, h = size
    role = "receiver"
    pid = app_server.rows(
        "SELECT id FROM participants WHERE role = ? ORDER BY id LIMIT 1 OFFSET ?",
        (role, 0 if w == 1280 else 1),
    )[0][0]
    ctx = browser.new_context(viewport={"width": w, "height": h}, is_mobile=w < 600, has_touch=w < 600)
    page = ctx.new_page()
    try:
        page.goto(app_server.admin_url)
        open_section(page, "Participants")
        field = page.get_by_label("Participant id (click its row above)")
        field.fill(str(pid))
        field.press("Enter")
        page.locator("#deactivate").click()
        yes = page.locator("#deactivate-yes")
        yes.wait_for(state="visible", timeout=15000)
        assert f"Yes, deactivate participant {pid}" in yes.inner_text()
        assert f"Deactivate participant {pid} ({role})?" in page.locator("#deactivate-question").inner_text()
        assert app_server.rows("SELECT active FROM participants WHERE id = ?", (pid,))[0][0] == 1
        yes.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"deactivate-confirm-{w}.png"), full_page=False)
        # Cancel leaves them as they are
        page.locator("#deactivate-cancel").click()
        yes.wait_for(state="hidden", timeout=15000)
        assert app_server.rows("SELECT active FROM participants WHERE id = ?", (pid,))[0][0] == 1
        page.locator("#deactivate").click()
        yes.wait_for(state="visible", timeout=15000)
        yes.click()
        page.locator("#participants-msg").get_by_text(f"Participant {pid} ({role}) is deactivated").wait_for(
            timeout=15000
        )
        assert app_server.rows("SELECT active FROM participants WHERE id = ?", (pid,))[0][0] == 0
    finally:
        ctx.close()
