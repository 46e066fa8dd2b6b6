"""Click to next item, and first usable page, as a participant's browser sees them.

    .venv/bin/python benchmarks/browser.py [--items 20] [--runs 2] [--out benchmarks/results/browser.json]

The app is launched the way `make run` launches it (`python app.py`, a subprocess on a free
loopback port, TRADLAB_WORKER=0 so no model job competes with the page), with three studies: the
demo (its DA campaign in text mode: one HIT of 24 items per rater), a 30-item receiver study
(the demo's 12 starters copied under three ids each, their human translations imported as
exchanges, ten questions each) and an Error Span Annotation study (`esa`: docs/examples/esa's
segments cycled into documents of five, --items + 1 segments or a few more, all in one HIT,
attention_share = 0; each annotator marks the first word Major by a mouse drag and clicks the
slider before the timed Submit; the next segment counts as usable once the page's script has
drawn its characters and [MISSING] token, with the slider and Submit enabled). Beside it run the
same app with TRADLAB_FAST_PAGES=0 (no preload hints, Gradio serving its own bundle files: first
loads only, the before/after of tabs/preload.py and web.fast_pages.StaticAssets in one run) and
the floor: a bare Gradio page with one slider and one button whose click returns the next
progress line (this script with --floor-server). Each run loads every page once, in turn, so a
slow spell of the machine falls on all pages alike.

In one headless Chromium (the project's, /usr/bin/chromium), per page and run:
- first usable page: from navigation start to the first item's input being shown and enabled
  (performance.now() in the page), with the requests, bytes transferred and long tasks
  (PerformanceObserver 'longtask', registered before any script runs) of that load;
- click to next item, over `--items` items: the answer is filled in first (not timed), then in
  the page the Submit button is clicked and a MutationObserver waits for the progress line to
  show the next count with the next item's input enabled; the time between, in the page's clock.
Writes p50/p95 per page to --out, with the machine's description and load average.

Potato beside the app (benchmarks/potato_tasks.py): when Potato 2.12.1 is installed in its own
venv (`.venv/bin/python -m venv .potato && .potato/bin/pip install potato-annotation==2.12.1`;
env POTATO_PYTHON names another Python), each run also loads three Potato tasks, each served by
`potato start CONFIG` on a free loopback port, config and data written into the temp folder:
potato_da (the demo DA campaign's 36 candidates, one 0-100 slider), potato_receiver (36
Portuguese texts, ten text boxes each with a "cannot be answered" checkbox) and potato_esa (the
ESA study's segments, each translation alone: Potato's `span` scheme with labels minor and
major, and a 0-100 slider; the answer: Major checked, the first word selected with the mouse,
the slider clicked). A participant logs in by URL (`?participant=NAME`, no password), which
redirects to the first item: first usable page is timed the same way, from that navigation's
start. Potato's Next saves the answer and asks for the next item (two POSTs), then reloads the
page; the click is timed in the browser's clock across the load: Date.now() before the click,
kept in sessionStorage, and in the new page an init script's MutationObserver that notes
Date.now() when the next item's text is shown with its first input enabled
(click_to_navigation_ms: the part before the new page's navigation start). The result's
vs_potato block sets the app's click p50s against Potato's and every first usable page median
against the floor's. Without Potato the run says how to install it and goes on without its
pages. --screenshots DIR keeps each Potato page's first item.

--before CHECKOUT: that checkout's app too (a git worktree of an older commit, its .venv a link
to this one's), with the same two studies: its DA and receiver pages are measured in turn with
the others (da_before, receiver_before), so a change to the pages has its before and after in
one run.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import potato_tasks  # noqa: E402
from benchmarks.common import commit_of, machine, start_script_server  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RECEIVER_ITEMS = 30
COPIES = tuple("abcdefghijklmnopqrstuvwxyz")

# Registered before the page's own scripts: long tasks of the first load.
INIT_SCRIPT = """
window.__longtasks = [];
try {
  new PerformanceObserver(l => { for (const e of l.getEntries()) window.__longtasks.push(e.duration); })
    .observe({type: 'longtask', buffered: true});
} catch (e) {}
"""

# Shared by the timing functions: is the page showing item `n` (progress "n / ") with its
# first input enabled and visible? sel: a selector, or a list of them that must all be shown
# and enabled (the ESA page's output, slider and Submit)
READY_JS = """
(sel, n) => {
  const prog = [...document.querySelectorAll('.progress')].find(e => e.offsetParent);
  if (!prog || !new RegExp('(^|\\\\D)' + n + ' / ').test(prog.innerText)) return false;
  return [].concat(sel).every(s => {
    const inp = [...document.querySelectorAll(s)].find(e => e.offsetParent);
    return !!inp && !inp.disabled;
  });
}
"""

CLICK_JS = """
async ([button, sel, n, ready]) => {
  const isReady = eval(ready);
  const btn = [...document.querySelectorAll(button)].find(e => e.offsetParent);
  const t0 = performance.now();
  return await new Promise((resolve, reject) => {
    const obs = new MutationObserver(() => {
      if (isReady(sel, n)) { obs.disconnect(); resolve(performance.now() - t0); }
      const err = [...document.querySelectorAll('.msg.error')].find(e => e.offsetParent);
      if (err) { obs.disconnect(); reject(new Error('the page refused the answer: ' + err.innerText)); }
    });
    obs.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
    setTimeout(() => { obs.disconnect(); reject(new Error('next item not shown within 20 s')); }, 20000);
    btn.click();
  });
}
"""


# Potato's pages have no progress line to wait on, and its Next reloads the page: is the page
# showing an item other than `prev` (the hidden #instance_id), its text shown and its first
# input shown and enabled? Potato shows the item (#main-content) only once its script has read
# the item and its saved answers.
POTATO_READY_JS = """
(sel, prev) => {
  const id = document.getElementById('instance_id');
  if (!id || !id.value || id.value === prev) return false;
  const text = document.getElementById('instance-text');
  if (!text || !text.offsetParent || !text.innerText.trim()) return false;
  return [].concat(sel).every(s => {
    const inp = [...document.querySelectorAll(s)].find(e => e.offsetParent);
    return !!inp && !inp.disabled;
  });
}
"""

# Before the click: the browser's clock (Date.now(), the same clock in both documents) and the
# item shown, kept in sessionStorage across Next's page load.
POTATO_CLICK_JS = """
([button, sel]) => {
  delete window.__benchClickMs;
  const btn = [...document.querySelectorAll(button)].find(e => e.offsetParent);
  sessionStorage.setItem('__benchClick', JSON.stringify(
    {t0: Date.now(), prev: document.getElementById('instance_id').value, sel}));
  btn.click();
}
"""

# In every document of a Potato context, before its scripts: after a click, a MutationObserver
# notes when the next item is usable (click to then, and click to this document's navigation
# start: Next's two requests before the reload).
POTATO_NEXT_SCRIPT = (
    """
(() => {
  const pending = sessionStorage.getItem('__benchClick');
  if (!pending) return;
  sessionStorage.removeItem('__benchClick');
  const {t0, prev, sel} = JSON.parse(pending);
  const isReady = """
    + POTATO_READY_JS.strip()
    + """;
  const obs = new MutationObserver(() => {
    if (!isReady(sel, prev)) return;
    obs.disconnect();
    const now = Date.now();
    window.__benchNavMs = now - performance.now() - t0;
    window.__benchClickMs = now - t0;
  });
  obs.observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
})();
"""
)

LOAD_JS = """() => {
      const res = performance.getEntriesByType('resource');
      const nav = performance.getEntriesByType('navigation')[0];
      return {requests: res.length + 1,
              transfer_kb: Math.round((res.reduce((a, e) => a + (e.transferSize || 0), 0)
                                      + (nav ? nav.transferSize : 0)) / 1024),
              long_tasks: window.__longtasks.length,
              long_task_ms: Math.round(window.__longtasks.reduce((a, b) => a + b, 0))};
    }"""


# --- the pages: how to reach them, fill an item, and what to wait for -----------------------------


class Page:
    """One participant page: its URL, the selector of the item's first input (or a list of
    selectors, all to be shown and enabled), the Submit button."""

    name = ""
    first_input: str | list[str] = ""
    button = ""

    def fill(self, page, i: int) -> None:
        raise NotImplementedError


class DAPage(Page):
    name = "da"
    first_input = "#da-slider input[type=range]"
    button = "#da-form button.submit-btn"

    def fill(self, page, i: int) -> None:
        # keyboard moves count as a rating (the slider's input event), as a real rater's would
        s = page.locator(self.first_input).first
        s.focus()
        for _ in range(1 + i % 5):
            page.keyboard.press("ArrowRight")


class ReceiverPage(Page):
    name = "receiver"
    first_input = "#receiver-form textarea"
    button = "#receiver-form button.submit-btn"

    def fill(self, page, i: int) -> None:
        boxes = page.locator(self.first_input)
        for k in range(boxes.count()):
            boxes.nth(k).fill(f"resposta {i}.{k}")


def _click_slider(page, slider, i: int) -> None:
    """A click on a slider's track, as a rater's mouse would (the ESA page refuses an unmoved one)."""
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    slider.click(position={"x": box["width"] * (0.1 + (i % 8) / 10), "y": box["height"] / 2})


class ESAPage(Page):
    """The ESA page (tabs/esa.py, assets/js/script/esa.js): the item is usable once the script has
    drawn the output's characters and its [MISSING] token (the last), with the slider and Submit
    enabled. The answer: the first word dragged across with the mouse and made Major, the slider
    clicked (tests/test_esa_browser.py drives it the same way)."""

    name = "esa"
    first_input = [
        "form.esa-item .esa-output .esa-ch.esa-missing",
        'form.esa-item input[name="score"]',
        "form.esa-item button[type=submit]",
    ]
    button = "form.esa-item button[type=submit]"

    def fill(self, page, i: int) -> None:
        from harness.span_page import drag

        form = page.locator("form.esa-item")
        text = form.locator(".esa-output").get_attribute("data-text")
        drag(page, form, 0, len(text.split(" ")[0]) - 1)
        form.get_by_role("button", name="Major (M)").click()
        assert '"major"' in form.locator('input[name="spans"]').input_value(), "no span marked"
        _click_slider(page, form.locator('input[name="score"]'), i)


class FloorPage(Page):
    name = "floor"
    first_input = "#floor-slider input[type=range]"
    button = "#floor-submit"

    def fill(self, page, i: int) -> None:
        DAPage.fill(self, page, i)


class PotatoPage(Page):
    """A Potato task's annotation page (benchmarks/potato_tasks.py): the server renders each item;
    Next saves the answer (POST /updateinstance), asks for the next item (POST /annotate) and
    reloads the page."""

    button = "#next-btn"


class PotatoDAPage(PotatoPage):
    name = "potato_da"
    first_input = "input.custom-slider-input[type=range]"

    def fill(self, page, i: int) -> None:
        # a click on the slider's track, as a rater's mouse would: Potato registers a slider's
        # answer on its click (keyboard moves change the value, which its save does not read)
        s = page.locator(self.first_input).first
        box = s.bounding_box()
        s.click(position={"x": box["width"] * (0.1 + (i % 8) / 10), "y": box["height"] / 2})


class PotatoReceiverPage(PotatoPage):
    name = "potato_receiver"
    first_input = "textarea.annotation-input"

    def fill(self, page, i: int) -> None:
        ReceiverPage.fill(self, page, i)


# The rectangle of the first word of Potato's item text (#text-content's first text node).
POTATO_FIRST_WORD_JS = """() => {
  const node = document.getElementById('text-content').firstChild, s = node.textContent;
  const r = document.createRange();
  r.setStart(node, 0);
  r.setEnd(node, s.indexOf(' ') > 0 ? s.indexOf(' ') : s.length);
  const b = r.getBoundingClientRect();
  return {x: b.x, y: b.y, width: b.width, height: b.height};
}"""


class PotatoESAPage(PotatoPage):
    """Potato's span task: the label checked first, then the words selected with the mouse
    (Potato makes the span on the mouse's release), then the slider clicked."""

    name = "potato_esa"
    first_input = ["input.shadcn-span-checkbox", "input.custom-slider-input[type=range]"]

    def fill(self, page, i: int) -> None:
        page.locator("#errors_major").check()
        w = page.evaluate(POTATO_FIRST_WORD_JS)
        y = w["y"] + w["height"] / 2
        page.mouse.move(w["x"] + 1, y)
        page.mouse.down()
        page.mouse.move(w["x"] + w["width"] - 1, y, steps=5)
        page.mouse.up()
        page.locator('#span-overlays [data-label="major"]').first.wait_for(state="attached", timeout=5000)
        _click_slider(page, page.locator("input.custom-slider-input[type=range]").first, i)


def measure(browser, url: str, spec: Page, items: int) -> dict:
    """First usable page, then click-to-next-item over `items` items."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.add_init_script(INIT_SCRIPT)
    page = ctx.new_page()
    page.goto(url)
    start = _progress_count(page)
    page.wait_for_function(f"({READY_JS})({json.dumps(spec.first_input)}, {start})", timeout=30000)
    first = page.evaluate("performance.now()")
    load = page.evaluate(LOAD_JS)
    # the page's scripts may still be wiring events when its input first shows: let them settle
    # before the first answer (not part of the timed click)
    if items:
        page.wait_for_load_state("load")
        page.wait_for_timeout(1000)
    button = spec.button
    clicks = []
    for i in range(items):
        spec.fill(page, i)
        clicks.append(page.evaluate(CLICK_JS, [button, spec.first_input, start + i + 1, READY_JS]))
    ctx.close()
    return {"first_usable_ms": round(first, 1), **load, "click_ms": [round(x, 1) for x in clicks]}


def _progress_count(page) -> int:
    loc = page.locator(".progress").first
    loc.wait_for(timeout=30000)
    m = re.search(r"(\d+) / \d+", loc.inner_text())
    return int(m.group(1)) if m else 0


def measure_potato(browser, url: str, spec: PotatoPage, items: int, shot: Path | None = None) -> dict:
    """measure()'s figures on a Potato page: first usable page the same way; each click timed
    from the click to the next page's item being usable (POTATO_NEXT_SCRIPT)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.add_init_script(INIT_SCRIPT)
    ctx.add_init_script(POTATO_NEXT_SCRIPT)
    page = ctx.new_page()
    page.goto(url)  # logs in (?participant=) and redirects to the first item: both in the load
    page.wait_for_function(f"({POTATO_READY_JS})({json.dumps(spec.first_input)}, '')", timeout=30000)
    first = page.evaluate("performance.now()")
    load = page.evaluate(LOAD_JS)
    if shot:
        page.screenshot(path=str(shot), full_page=True)
    if items:
        page.wait_for_load_state("load")
        page.wait_for_timeout(1000)
    clicks, navs = [], []
    for i in range(items):
        # each item is a fresh page: let its loads finish before the answer (not timed)
        page.wait_for_load_state("networkidle")
        spec.fill(page, i)
        page.evaluate(POTATO_CLICK_JS, [spec.button, spec.first_input])
        page.wait_for_function("window.__benchClickMs !== undefined", timeout=20000)
        click, nav = page.evaluate("[window.__benchClickMs, window.__benchNavMs]")
        clicks.append(click)
        navs.append(nav)
    ctx.close()
    return {
        "first_usable_ms": round(first, 1),
        **load,
        "click_ms": [round(x, 1) for x in clicks],
        "click_to_navigation_ms": [round(x, 1) for x in navs],
    }


# --- the studies and the servers --------------------------------------------------------------------


def receiver_study(dest: Path, receivers: int) -> Path:
    """The demo study with its 12 starters copied under enough ids that every receiver has 30
    items (12 x copies imported exchanges) and 30 items a receiver."""
    from harness.demo import demo_with_exchanges

    folder = demo_with_exchanges(dest)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    toml = re.sub(r'(?m)^id = "demo"$', 'id = "recv30"', toml, count=1)
    toml = re.sub(r"(?m)^items_per_receiver = \d+$", f"items_per_receiver = {RECEIVER_ITEMS}", toml)
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    for name, key in (("starters.csv", "id"), ("questions.csv", "starter_id"), ("exchanges.csv", "starter_id")):
        path = folder / name
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        fields = list(rows[0])
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fields, lineterminator="\n")
            w.writeheader()
            for copy in COPIES[: max(3, -(-receivers * RECEIVER_ITEMS // 12) + 1)]:
                for r in rows:
                    w.writerow({**r, key: r[key] + copy})
    return folder


def floor_server(port: int) -> None:
    """The floor: one slider, one button, one progress line; the click returns the next line."""
    import gradio as gr

    with gr.Blocks() as demo:
        progress = gr.HTML('<div class="progress">0 / 20</div>')
        score = gr.Slider(0, 100, step=1, value=0, elem_id="floor-slider")
        go = gr.Button("Submit", elem_id="floor-submit")
        count = gr.State(0)

        def nxt(n, s):
            return n + 1, f'<div class="progress">{n + 1} / 20</div>', 0

        go.click(nxt, [count, score], [count, progress, score], api_name="next")
    demo.queue(default_concurrency_limit=16)
    demo.launch(server_name="127.0.0.1", server_port=port)


def start_floor(tmp: Path):
    return start_script_server(__file__, "--floor-server", tmp, "floor")


def da_text_study(dest: Path) -> Path:
    """The demo study with its DA campaign in text mode only (the demo's "both" gives every
    second rater audio, whose slider waits for the candidate to play)."""
    from harness.demo import DEMO

    shutil.copytree(DEMO, dest)
    toml = (dest / "study.toml").read_text(encoding="utf-8")
    assert 'modality = "both"' in toml, "the demo's DA modality changed: update da_text_study"
    (dest / "study.toml").write_text(toml.replace('modality = "both"', 'modality = "text"'), encoding="utf-8")
    return dest


ESA_STUDY = "esa-bench"


def esa_study(dest: Path, items: int) -> Path:
    """An ESA study of at least `items` segments (potato_tasks.esa_segments: the example's
    segments in documents of five), all in one HIT, with no attention items: every annotator
    gets the same HIT."""
    dest.mkdir(parents=True)
    rows = potato_tasks.esa_segments(items)
    with open(dest / "esa_segments.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    (dest / "study.toml").write_text(
        f'[study]\nid = "{ESA_STUDY}"\nname = "ESA benchmark"\nprotocols = ["esa"]\nseed = 7\n\n'
        f'[esa]\nsegments = "esa_segments.csv"\nhit_size = {len(rows)}\nattention_share = 0\n',
        encoding="utf-8",
    )
    return dest


def start_app(tmp: Path, runs: int, fast: bool = True, root: Path | None = None, esa_items: int = 0):
    """The app with its two studies (three with esa_items: the ESA study of esa_study); root:
    another checkout's app (--before)."""
    from harness.app import RunningApp

    tmp.mkdir(parents=True, exist_ok=True)
    app = RunningApp(
        tmp,
        env_extra={"TRADLAB_WORKER": "0", "TRADLAB_RATE_LIMIT": "0", "TRADLAB_FAST_PAGES": "1" if fast else "0"},
        root=root,
    )
    folders = [da_text_study(tmp / "demo"), receiver_study(tmp / "recv30", runs)]
    roles = [("demo", "da"), ("recv30", "receiver")]
    if esa_items:
        folders.append(esa_study(tmp / "esa", esa_items))
        roles.append((ESA_STUDY, "esa"))
    for folder in folders:
        res = app.cli("import", str(folder))
        assert res.returncode == 0, res.stderr
    for study, role in roles:
        res = app.cli("participants", "add", "--study", study, "--role", role, "--count", str(runs))
        assert res.returncode == 0, res.stderr
    app.start()
    return app


def links(app, study: str, role: str) -> list[str]:
    res = app.cli("links", "--study", study)
    assert res.returncode == 0, res.stderr
    return [
        p[5]
        for p in (line.split("\t") for line in res.stdout.splitlines()[1:])
        if len(p) == 6 and p[1] == role and p[5].startswith("http")
    ]


def summarise(runs: list[dict]) -> dict:
    import numpy as np

    clicks = [c for r in runs for c in r["click_ms"]]
    first = [r["first_usable_ms"] for r in runs]
    pct = (lambda q: round(float(np.percentile(clicks, q)), 1)) if clicks else (lambda q: None)
    return {
        "click_p50_ms": pct(50),
        "click_p95_ms": pct(95),
        "first_usable_ms": first,
        "first_usable_median_ms": round(float(np.median(first)), 1),
        "requests": [r["requests"] for r in runs],
        "transfer_kb": [r["transfer_kb"] for r in runs],
        "long_tasks": [r["long_tasks"] for r in runs],
        "long_task_ms": [r["long_task_ms"] for r in runs],
        "runs": runs,
    }


def start_potato(tmp: Path, esa_items: int) -> dict:
    """Potato's three tasks, each its own server: {task: (process, log file, url)}; {} when Potato
    is not installed (the run goes on without its pages). esa_items: potato_esa's segments."""
    from harness.app import free_port

    python = potato_tasks.potato_python()
    if python is None:
        print(
            "Potato is not installed: the run has no Potato pages. To add them, from the repository root:\n  "
            + potato_tasks.INSTALL
            + "\n(or set POTATO_PYTHON to a Python with potato-annotation installed)",
            flush=True,
        )
        return {}
    servers: dict = {}
    try:
        for task in potato_tasks.TASKS:
            config = potato_tasks.write_task(tmp / "potato", task, esa_items)
            servers[task] = potato_tasks.start(python, config, free_port())
    except BaseException:
        for proc, log, _ in servers.values():
            proc.terminate()
            log.close()
        raise
    return servers


def vs_potato(out: dict) -> dict | None:
    """The app's pages against Potato's: click p50s, and first usable page medians each against
    the floor's (a ratio over 1: slower than the floor)."""
    if "potato_da" not in out:
        return None

    def ratio(a, b):
        return round(a / b, 2) if a is not None and b else None

    clicks = {
        "da": out["da"]["click_p50_ms"],
        "potato_da": out["potato_da"]["click_p50_ms"],
        "da_over_potato_da": ratio(out["da"]["click_p50_ms"], out["potato_da"]["click_p50_ms"]),
        "receiver": out["receiver"]["click_p50_ms"],
        "potato_receiver": out["potato_receiver"]["click_p50_ms"],
        "receiver_over_potato_receiver": ratio(out["receiver"]["click_p50_ms"], out["potato_receiver"]["click_p50_ms"]),
    }
    names = ["da", "potato_da", "receiver", "potato_receiver"]
    if "esa" in out and "potato_esa" in out:
        clicks["esa"] = out["esa"]["click_p50_ms"]
        clicks["potato_esa"] = out["potato_esa"]["click_p50_ms"]
        clicks["esa_over_potato_esa"] = ratio(clicks["esa"], clicks["potato_esa"])
        names += ["esa", "potato_esa"]
    floor = out["floor"]["first_usable_median_ms"]
    first: dict = {"floor": floor}
    for name in names:
        first[name] = out[name]["first_usable_median_ms"]
        first[f"{name}_over_floor"] = ratio(first[name], floor)
    return {"potato_version": potato_tasks.POTATO_VERSION, "click_p50_ms": clicks, "first_usable_median_ms": first}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--runs", type=int, default=2, help="participants per page (each a fresh browser context)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "browser.json"))
    ap.add_argument("--screenshots", help="a folder for a screenshot of each Potato page's first item (first run)")
    ap.add_argument(
        "--before", help="another checkout of the app: its DA and receiver pages too (da_before, receiver_before)"
    )
    ap.add_argument("--floor-server", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor_server:
        floor_server(args.floor_server)
        return
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="tradlab-browser-bench-"))
    app = plain = floor = old = None
    potato: dict = {}
    try:
        # the ESA study: one segment more than the clicks (each click shows the next one)
        app = start_app(tmp / "app", args.runs, esa_items=args.items + 1)
        # the same app without the preload hints and the in-memory bundle (TRADLAB_FAST_PAGES=0):
        # first loads only, the before/after of both in the same run
        plain = start_app(tmp / "plain", args.runs, fast=False)
        floor = start_floor(tmp)
        potato = start_potato(tmp, args.items + 1)
        if args.before:
            old = start_app(tmp / "before", args.runs, root=Path(args.before))
        pages = {
            "floor": (FloorPage(), [floor[2]] * args.runs, args.items),
            "da": (DAPage(), links(app, "demo", "da")[: args.runs], args.items),
            "receiver": (ReceiverPage(), links(app, "recv30", "receiver")[: args.runs], args.items),
            "esa": (ESAPage(), links(app, ESA_STUDY, "esa")[: args.runs], args.items),
            "da_fast_pages_off": (DAPage(), links(plain, "demo", "da")[: args.runs], 0),
            "receiver_fast_pages_off": (ReceiverPage(), links(plain, "recv30", "receiver")[: args.runs], 0),
        }
        if old is not None:
            pages["da_before"] = (DAPage(), links(old, "demo", "da")[: args.runs], args.items)
            pages["receiver_before"] = (ReceiverPage(), links(old, "recv30", "receiver")[: args.runs], args.items)
        potato_specs = {
            "potato_da": PotatoDAPage(),
            "potato_receiver": PotatoReceiverPage(),
            "potato_esa": PotatoESAPage(),
        }
        for task, (_, _, url) in potato.items():
            pages[task] = (potato_specs[task], potato_tasks.participant_urls(url, task, args.runs), args.items)
        shots = Path(args.screenshots) if args.screenshots else None
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
        out: dict = {name: [] for name in pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            # one load of each page in turn, run after run, so a slow spell of the machine falls on
            # every page alike rather than on one page's loads
            for i in range(args.runs):
                for name, (spec, urls, items) in pages.items():
                    if isinstance(spec, PotatoPage):
                        shot = shots / f"{name}.png" if shots and i == 0 else None
                        out[name].append(measure_potato(browser, urls[i], spec, items, shot))
                    else:
                        out[name].append(measure(browser, urls[i], spec, items))
            browser.close()
        for name in pages:
            out[name] = summarise(out[name])
            print(name, {k: v for k, v in out[name].items() if k != "runs"}, flush=True)
        result = {
            "machine": machine(),
            "items": args.items,
            "runs": args.runs,
            "pages": out,
            "targets": {"click_p50_ms": 250, "click_p95_ms": 400, "first_usable_ms": 1500},
            "vs_potato": vs_potato(out),
        }
        if old is not None:
            result["before"] = {"code": args.before, "commit": commit_of(args.before)}
        if result["vs_potato"]:
            print("vs_potato", result["vs_potato"], flush=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print("wrote", args.out)
    finally:
        for server in [floor, *potato.values()]:
            if server:
                server[0].terminate()
                server[0].wait(10)
                server[1].close()
        for a in (app, plain, old):
            if a:
                a.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
