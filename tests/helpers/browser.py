"""Headless Chromium for the browser tests: where it is, how it is launched, the widths pages are
checked at, and where screenshots go. Tests take it through conftest's `browser` and `page`
fixtures, or `chromium()` for a browser of their own."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTHS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


@contextlib.contextmanager
def chromium(args: list[str] | None = None, **launch):
    """Playwright's Chromium (the installed one, FLAGS plus `args`), closed when the block ends;
    the test fails, not skips, where Chromium is missing: `make test` installs it."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS + (args or []), **launch)
        try:
            yield browser
        finally:
            browser.close()


def progress(page) -> str:
    loc = page.locator(".progress:visible").first
    loc.wait_for(timeout=15000)
    return loc.inner_text()
