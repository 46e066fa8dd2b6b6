"""Issue 51, point 5 in headless Chromium at 1280 and 390 px: the admin's Finished participants
list shows the QC outcome column, in words, beside each finished participant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.browser import ARTIFACTS, CHROMIUM, FLAGS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_finished_list_says_the_qc_outcome(app_server, browser, width):
    pid = app_server.rows("SELECT id FROM participants WHERE role = 'validator' ORDER BY id LIMIT 1")[0][0]
    app_server.rows("UPDATE participants SET completed_at = '2026-01-02T03:04:05.000+00:00' WHERE id = ?", (pid,))
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(app_server.admin_url)
    page.get_by_text("Finished participants and the completion code", exact=True).click()
    table = page.locator("#completions table:visible").first
    table.locator("th", has_text="QC outcome").first.wait_for(timeout=30000)
    # (Gradio keeps a hidden copy of the table to measure columns: only the visible one counts)
    cell = page.locator("#completions").get_by_text("no QC for this role", exact=True).locator("visible=true").first
    cell.wait_for(timeout=15000)
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"admin-finished-qc-{width}.png"), full_page=True)
    box = cell.bounding_box()
    assert box["width"] > 40 and box["height"] < 120, box  # readable, not a column of letters
    page.close()
