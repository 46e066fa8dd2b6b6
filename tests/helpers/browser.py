"""Headless Chromium for the browser tests: where it is, how it is launched, the widths pages are
checked at, and where screenshots go. Tests take it through conftest's `browser` and `page`
fixtures, or `chromium()` for a browser of their own."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# outside the checkout (tests/helpers/session.py sets it before this module is imported)
ARTIFACTS = Path(os.environ.get("TRADLAB_TEST_ARTIFACTS") or "/tmp/tradlab-test-artifacts")
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

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
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


# Words drawn across two lines (a column too narrow breaks them letter by letter: "hote|l"), in
# the text under the element given; a break at a space or a hyphen is reading, not breaking.
BROKEN_WORDS = """(root) => {
  const out = [], walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode()); ) {
    for (const m of n.data.matchAll(/[^\\s\\-]+/g)) {
      const r = document.createRange();
      r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
      if (tops.size > 1) out.push(m[0]);
    }
  }
  return out;
}"""
# Table headers whose text runs past their cell (cut off, or drawn over the next header)
CLIPPED_HEADERS = """(table) => [...table.querySelectorAll('th')].filter(th => {
  const r = document.createRange(); r.selectNodeContents(th);
  const text = r.getBoundingClientRect(), box = th.getBoundingClientRect();
  return text.width > 0 && (text.right > box.right + 0.5 || text.left < box.left - 0.5);
}).map(th => th.innerText.trim())"""
