"""Preload hints for a participant page's scripts, so the first page is usable sooner.

Gradio's front end loads in steps, each waiting for the last: the page, then index.js, then the
app's chunks that index.js imports, then Blocks, then each component's chunk, then the load
event. On the 2-core machine the steps, not the bytes, were most of the first usable page. The
chunks have hashed names, so the page cannot name them itself; this module reads them from the
installed Gradio's bundle (the dependency lists Vite writes into each chunk: `m.f=[...]` and
`import(`./X.js`), __vite__mapDeps([...])`, and the component map in the core chunk) and gives
the <link> tags that let the browser fetch them all at once, from the page's first bytes.

If a Gradio release writes its bundle differently, the parse finds less or nothing and the page
loads as before, only without the head start (tests/test_preload.py fails on the version that
does, so it is noticed).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import gradio

ASSETS = Path(gradio.__file__).parent / "templates" / "frontend"

_DEPS_LIST = re.compile(r"m\.f=(\[[^\]]*\])")
# a dynamic import and the dependency indices Vite lists after it ([] when none)
_IMPORT = re.compile(r"import\(`\./([^`]+)`\)[^_\[]{0,80}?(?:__vite__mapDeps\(\[([\d,]*)\]\)|\[\])")
# an entry of the core chunk's component map: `name:{[base:...,][example:...,]component:()=>v(()=>import(...`
_ENTRY = re.compile(r"([a-z0-9_]+):\{(?=(?:base|example|component):\(\)=>)")
_COMPONENT = re.compile(r"component:\(\)=>\w+\(\(\)=>")


def _read(name: str) -> str:
    path = ASSETS / "assets" / name
    return path.read_text(encoding="utf-8") if path.is_file() else ""


@lru_cache(maxsize=None)
def imports(name: str) -> dict[str, list[str]]:
    """A chunk's dynamic imports: imported file -> the files Vite loads with it."""
    text = _read(name)
    m = _DEPS_LIST.search(text[:20000])
    deps = json.loads(m.group(1)) if m else []
    out = {}
    for target, idx in _IMPORT.findall(text):
        listed = [deps[int(i)] for i in idx.split(",") if i and int(i) < len(deps)] if idx else []
        out[target] = [d.removeprefix("./") for d in listed]
    return out


def entry() -> str:
    """index.js's file name, as the page's HTML names it."""
    m = re.search(r'src="\./assets/([^"]+\.js)"', (ASSETS / "index.html").read_text(encoding="utf-8"))
    return m.group(1) if m else ""


@lru_cache(maxsize=None)
def component_chunks() -> dict[str, list[str]]:
    """Component type -> its chunk and the files loaded with it, from the core chunk's map."""
    app = _app_chunk()
    core = next((f for f in imports(entry()).get(app, []) if f.startswith("core-") and f.endswith(".js")), "")
    text = _read(core)
    m = _DEPS_LIST.search(text[:20000])
    deps = json.loads(m.group(1)) if m else []
    out = {}
    heads = list(_ENTRY.finditer(text))
    for k, head in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        comp = _COMPONENT.search(text, head.end(), end)
        found = _IMPORT.match(text, comp.end()) if comp else None
        if not found:
            continue
        target, idx = found.groups()
        listed = [deps[int(i)].removeprefix("./") for i in idx.split(",") if i and int(i) < len(deps)] if idx else []
        out[head.group(1)] = [target, *listed]
    return out


def _app_chunk() -> str:
    """The chunk index.js imports for the app itself (the one that brings the core chunk)."""
    return next((t for t, d in imports(entry()).items() if any(f.startswith("core-") for f in d)), "")


def page_files(types: set[str]) -> list[str]:
    """Every file a page of these component types loads before its first item, in load order:
    the app chunk and its files, Blocks and its, then each component's."""
    app = _app_chunk()
    if not app:
        return []
    # the entry first: its <script> comes after these tags, and the browser fetches in order
    files = [entry(), app, *imports(entry())[app]]
    blocks = next((t for t in imports(app) if t.startswith("Blocks-")), "")
    if blocks:
        files += [blocks, *imports(app)[blocks]]
    chunks = component_chunks()
    for kind in sorted(types):
        files += chunks.get(kind, [])
    seen, ordered = set(), []
    for f in files:
        if f not in seen and f.endswith((".js", ".css")):
            seen.add(f)
            ordered.append(f)
    return ordered


def hint_html(types: set[str], theme_url: str = "") -> str:
    """The <link> tags for a page: modulepreload for scripts, preload for stylesheets (with the
    crossorigin Vite's own links use, so the browser reuses what it fetched)."""
    tags = []
    for f in page_files(types):
        if f.endswith(".js"):
            tags.append(f'<link rel="modulepreload" crossorigin href="./assets/{f}">')
        else:
            tags.append(f'<link rel="preload" as="style" crossorigin href="./assets/{f}">')
    if theme_url:
        tags.append(f'<link rel="preload" as="style" href="{theme_url}">')
    return "".join(tags)


def config_types(blocks) -> set[str]:
    """The component types in a Blocks' config (what the page will ask the core chunk for)."""
    return {c.get("type") for c in blocks.get_config_file().get("components", []) if c.get("type")}
