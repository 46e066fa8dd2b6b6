"""A syntax check of the pages' scripts (assets/js, loaded by tabs/static.py) with `node --check`.

    python tools/check_scripts.py     # exit status 1 on a syntax error, a script outside the
                                      # kinds' folders, or no node

A script is not always a program node can check as it is: a function expression (function/) is
one expression, and a js_on_load body (on_load/) may `return`. Each is checked as the browser runs
it: wrapped as Gradio wraps it (its text inside parentheses; the body of a function with
js_on_load's arguments), written to a temporary file, the wrapper's start on the script's first
line so that node's line numbers are the file's. A classic script (script/) is checked as it is.
A protocol's own page scripts (Tab.scripts: classic scripts, loaded in its role page's head)
are checked as they are too: every registered protocol's, and the test plugins' under
tests/plugins/, whose proof plugin is the example of docs/plugins.md.
Node is the only dependency: any version that has --check (v20 here).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JS_DIR = ROOT / "assets" / "js"

# how each kind of script is run (tabs/static.py): text before and after it
WRAP = {
    "function": ("(", "\n);\n"),
    "on_load": ("(function (element, trigger, props, server, upload, watch) {", "\n});\n"),
    "script": ("", ""),
}


def scripts(js_dir: Path = JS_DIR) -> list[Path]:
    return sorted(js_dir.rglob("*.js"))


def page_scripts() -> list[Path]:
    """The protocols' own page scripts (Tab.scripts) outside assets/js, and the test plugins'."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from services.common import protocols

    found = {protocols.asset_path(f) for p in protocols.protocols() for t in p.tabs for f in t.scripts}
    found |= set((ROOT / "tests" / "plugins").rglob("*.js"))
    return sorted(f.resolve() for f in found if not f.resolve().is_relative_to(JS_DIR))


def problems(js_dir: Path = JS_DIR, node: str | None = None) -> list[str]:
    """What is wrong with the scripts under js_dir: one line (or node's message) per script."""
    node = node or shutil.which("node")
    if not node:
        return ["node not found: the scripts' syntax cannot be checked (install Node.js)"]
    out = []
    with tempfile.TemporaryDirectory(prefix="tradlab-js-check-") as tmp:
        for path in scripts(js_dir):
            rel = path.relative_to(js_dir)
            kind = rel.parts[0] if len(rel.parts) == 2 else None
            if kind not in WRAP:
                out.append(f"{rel}: a script goes in one of {', '.join(f'{k}/' for k in WRAP)} (tabs/static.py)")
                continue
            before, after = WRAP[kind]
            checked = Path(tmp) / f"{kind}-{path.name}"
            checked.write_text(before + path.read_text(encoding="utf-8") + after, encoding="utf-8")
            done = subprocess.run([node, "--check", str(checked)], capture_output=True, text=True)
            if done.returncode:
                out.append(f"{rel}:\n" + (done.stderr or done.stdout).replace(str(checked), str(path)).strip())
        if js_dir == JS_DIR:
            for path in page_scripts():  # classic scripts, checked as they are
                done = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)
                if done.returncode:
                    out.append(f"{path.relative_to(ROOT)}:\n" + (done.stderr or done.stdout).strip())
    return out


def main() -> int:
    found = problems()
    for p in found:
        print(p, file=sys.stderr)
    if not found:
        print(
            f"{len(scripts())} scripts under {JS_DIR.relative_to(ROOT)} and {len(page_scripts())} "
            "protocols' page scripts beside them: syntax OK"
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
