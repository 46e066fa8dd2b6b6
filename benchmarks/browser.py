"""Click to next item, and first usable page, as a participant's browser sees them.

    .venv/bin/python benchmarks/browser.py [--items 20] [--runs 2] [--out benchmarks/results/browser.json]

The app is launched the way `make run` launches it (`python app.py`, a subprocess on a free
loopback port, TRADLAB_WORKER=0 so no model job competes with the page), with two studies:
the demo (its DA campaign in text mode: one HIT of 24 items per rater) and a 30-item receiver study (the
demo's 12 starters copied under three ids each, their human translations imported as
exchanges, ten questions each). Beside it run the same app with TRADLAB_FAST_PAGES=0 (no
preload hints, Gradio serving its own bundle files: first loads only, the before/after of
tabs/preload.py and web.fast_pages.StaticAssets in one run) and the floor: a bare Gradio page with one
slider and one button whose click returns the next progress line (this script with
--floor-server). Each run loads every page once, in turn, so a slow spell of the machine falls
on all pages alike.

In one headless Chromium (the project's, /usr/bin/chromium), per page and run:
- first usable page: from navigation start to the first item's input being shown and enabled
  (performance.now() in the page), with the requests, bytes transferred and long tasks
  (PerformanceObserver 'longtask', registered before any script runs) of that load;
- click to next item, over `--items` items: the answer is filled in first (not timed), then in
  the page the Submit button is clicked and a MutationObserver waits for the progress line to
  show the next count with the next item's input enabled; the time between, in the page's clock.
Writes p50/p95 per page to --out, with the machine's description and load average.
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

from benchmarks.common import machine, start_script_server  # noqa: E402

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
# first input enabled and visible?
READY_JS = """
(sel, n) => {
  const prog = [...document.querySelectorAll('.progress')].find(e => e.offsetParent);
  if (!prog || !new RegExp('(^|\\\\D)' + n + ' / ').test(prog.innerText)) return false;
  const inp = [...document.querySelectorAll(sel)].find(e => e.offsetParent);
  return !!inp && !inp.disabled;
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


# --- the pages: how to reach them, fill an item, and what to wait for -----------------------------


class Page:
    """One participant page: its URL, the selector of the item's first input, the Submit button."""

    name = ""
    first_input = ""
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


class FloorPage(Page):
    name = "floor"
    first_input = "#floor-slider input[type=range]"
    button = "#floor-submit"

    def fill(self, page, i: int) -> None:
        DAPage.fill(self, page, i)


def measure(browser, url: str, spec: Page, items: int) -> dict:
    """First usable page, then click-to-next-item over `items` items."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.add_init_script(INIT_SCRIPT)
    page = ctx.new_page()
    page.goto(url)
    start = _progress_count(page)
    page.wait_for_function(f"({READY_JS})({json.dumps(spec.first_input)}, {start})", timeout=30000)
    first = page.evaluate("performance.now()")
    load = page.evaluate("""() => {
      const res = performance.getEntriesByType('resource');
      const nav = performance.getEntriesByType('navigation')[0];
      return {requests: res.length + 1,
              transfer_kb: Math.round((res.reduce((a, e) => a + (e.transferSize || 0), 0)
                                      + (nav ? nav.transferSize : 0)) / 1024),
              long_tasks: window.__longtasks.length,
              long_task_ms: Math.round(window.__longtasks.reduce((a, b) => a + b, 0))};
    }""")
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


def start_app(tmp: Path, runs: int, fast: bool = True):
    from harness.app import RunningApp

    tmp.mkdir(parents=True, exist_ok=True)
    app = RunningApp(
        tmp, env_extra={"TRADLAB_WORKER": "0", "TRADLAB_RATE_LIMIT": "0", "TRADLAB_FAST_PAGES": "1" if fast else "0"}
    )
    for folder in (da_text_study(tmp / "demo"), receiver_study(tmp / "recv30", runs)):
        res = app.cli("import", str(folder))
        assert res.returncode == 0, res.stderr
    for study, role in (("demo", "da"), ("recv30", "receiver")):
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--runs", type=int, default=2, help="participants per page (each a fresh browser context)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "browser.json"))
    ap.add_argument("--floor-server", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor_server:
        floor_server(args.floor_server)
        return
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="tradlab-browser-bench-"))
    app = plain = floor = None
    try:
        app = start_app(tmp / "app", args.runs)
        # the same app without the preload hints and the in-memory bundle (TRADLAB_FAST_PAGES=0):
        # first loads only, the before/after of both in the same run
        plain = start_app(tmp / "plain", args.runs, fast=False)
        floor = start_floor(tmp)
        pages = {
            "floor": (FloorPage(), [floor[2]] * args.runs, args.items),
            "da": (DAPage(), links(app, "demo", "da")[: args.runs], args.items),
            "receiver": (ReceiverPage(), links(app, "recv30", "receiver")[: args.runs], args.items),
            "da_fast_pages_off": (DAPage(), links(plain, "demo", "da")[: args.runs], 0),
            "receiver_fast_pages_off": (ReceiverPage(), links(plain, "recv30", "receiver")[: args.runs], 0),
        }
        out: dict = {name: [] for name in pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            # one load of each page in turn, run after run, so a slow spell of the machine falls on
            # every page alike rather than on one page's loads
            for i in range(args.runs):
                for name, (spec, urls, items) in pages.items():
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
        }
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print("wrote", args.out)
    finally:
        if floor:
            floor[0].terminate()
            floor[1].close()
        for a in (app, plain):
            if a:
                a.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
