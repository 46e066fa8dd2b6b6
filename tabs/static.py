"""The pages' JavaScript, kept in files under assets/js (not in Python strings, so that an editor,
a linter and `node --check` see it as code) and read from them once.

A folder per way the browser runs a script, as tools/check_scripts.py checks each:
- function/: a function expression, Gradio's js= (an event's, or the page's in launch()), which
  Gradio runs as `(text)(...args)`;
- on_load/: the body of a gr.HTML's js_on_load, which Gradio runs as
  Function("element", "trigger", "props", "server", "upload", "watch", text);
- script/: a classic script that a page's HTML holds in a <script> element.
A value a script needs from the server reaches it by the page (a data- attribute, the
component's value), never by formatting the script's text.

A protocol's own page code (Tab.scripts, Tab.styles: files of its package or plugin folder) is
loaded on its role's page only: its scripts as classic scripts in the page's head (page_head), its
stylesheets beside assets/style.css (web.app.mount_pages)."""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

JS_DIR = Path(__file__).resolve().parents[1] / "assets" / "js"
KINDS = ("function", "on_load", "script")


@lru_cache(maxsize=None)
def script(name: str) -> str:
    """The text of assets/js/<kind>/<name>.js, e.g. script("function/keyboard")."""
    kind, _, _ = name.partition("/")
    if kind not in KINDS:
        raise ValueError(f"{name!r}: a script is <kind>/<name>, its kind one of {', '.join(KINDS)}")
    return (JS_DIR / f"{name}.js").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _asset_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if re.search(r"</script", text, re.I):  # it would end its <script> element early
        raise ValueError(f"{path}: a page script may not hold '</script' (write '<\\/script')")
    return text


def page_head(scripts: tuple[Path, ...]) -> str:
    """A role page's head of its protocols' scripts: each file's text in a classic <script>,
    named by its data-page-asset (Gradio adds the page's head once, when the page starts, before
    its first item is rendered)."""
    return "".join(
        f'<script data-page-asset="{html.escape(path.name, quote=True)}">\n{_asset_text(path)}\n</script>'
        for path in scripts
    )
