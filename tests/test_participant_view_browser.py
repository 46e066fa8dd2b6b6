"""The admin's "A participant" section in headless Chromium: a pasted link finds the participant
and the page shows their status block and items table (a screenshot)."""

from __future__ import annotations

import pytest

from tests.helpers.browser import ARTIFACTS

pytestmark = pytest.mark.browser


def test_a_pasted_link_shows_the_participant(app_server, page):
    url = app_server.links()["sd"][0]
    [(pid,)] = app_server.rows("SELECT id FROM participants WHERE token = ?", (url.split("?t=", 1)[1],))
    page.goto(app_server.admin_url)  # the admin link the server printed
    # no password set: the admin opens at once (issue 28), its dashboard first
    page.locator("#admin-dashboard .dash").wait_for(timeout=30000)
    page.get_by_text("A participant", exact=True).click()
    page.locator("#participant-query textarea").fill(url)
    page.get_by_role("button", name="Find", exact=True).click()
    status = page.locator("#participant-view-status")
    status.get_by_text(f"Participant {pid} (SD participant), found by link").wait_for(timeout=15000)
    assert "not started" in status.inner_text()
    page.locator("#participant-items").get_by_text("welcome page").first.wait_for(timeout=15000)
    page.locator("#participant-view-status").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "admin-participant-view.png"), full_page=False)
