"""Submit-to-next-item latency of /da_submit under concurrent raters, against a bare Gradio no-op.

    .venv/bin/python benchmarks/load.py [--clients 1,10,50] [--out benchmarks/results/load.json]

The app is launched the way `make run` launches it (`python app.py`, a subprocess on a free
loopback port, its own database with the load tests' study and one DA rater per client); the
no-op is a separate tiny gr.Blocks app with one event of the same inputs (token, item, moved,
score) returning a dict, queued and launched the same way on another port (this script with
--noop-server), so the product app carries no benchmark code. Each client is one browser
session (harness/gradio_http.py GradioHTTP: the page's session hash, POST /call then the SSE
stream) that first opens its view, then submits its 20 items one after another; the latency
is the time from sending /da_submit to holding the response, which carries the next item.
The raters' HITs are drawn before the timing, as the app's worker draws them when raters are
assigned (render_hits). At each concurrency the no-op runs first and /da_submit second, the same clients doing the
same number of calls. The app runs with TRADLAB_WORKER=0, so the metric jobs the study import
queues (model loading) do not compete with the requests being timed.

Writes benchmarks/results/load.json: p50/p95 per concurrency and p95(da_submit)/p95(no-op)
(target <= 1.5 at 50 clients).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, start_script_server  # noqa: E402

ITEMS = 20


def asyncio_loop() -> None:
    """uvicorn on asyncio's own loop, as the app runs (web/gradio_patches.slow_clients_cut_off),
    whether or not uvloop is installed: the no-op's figures do not depend on the machine's packages
    (until 2026-12-06 the no-op ran on uvloop, as the app did then)."""
    import uvicorn

    class Config(uvicorn.Config):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("loop", "asyncio")
            super().__init__(*args, **kwargs)

    uvicorn.Config = Config  # type: ignore[misc]


def noop_server(port: int) -> None:
    """The bare Gradio app: one event, no state, the same inputs as /da_submit (the token and
    the item form's JSON value), outside the queue as the app's participant events are
    (tabs/common.PARTICIPANT_EVENT); the same through the queue (/noop_queued); and as a plain
    JSON route beside them (POST /form/noop/submit, as web/form_routes.py serves the forms)."""
    import gradio as gr
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def noop(t, f):
        return {"status": "item", "item_id": (f or {}).get("item_id"), "notice": "Saved."}

    async def noop_json(request):
        import json

        call = json.loads(await request.body())
        # on the event loop, as the app's routes run an action (web/action_line.py)
        return JSONResponse({"value": noop(call.get("token"), call.get("value"))})

    with gr.Blocks() as demo:
        token, form = gr.Textbox(visible=False), gr.JSON(visible=False)
        out = gr.JSON(visible=False)
        go, queued = gr.Button("Submit"), gr.Button("Submit (queued)")
        go.click(noop, [token, form], out, api_name="noop", queue=False)
        # through Gradio's queue (a join, then the event stream): the no-op these benchmarks
        # compared with until 2026-12-03, while the app's events went outside the queue
        queued.click(noop, [token, form], out, api_name="noop_queued")
    demo.queue(default_concurrency_limit=16)
    asyncio_loop()
    demo.launch(
        server_name="127.0.0.1",
        server_port=port,
        app_kwargs={"routes": [Route("/form/noop/submit", noop_json, methods=["POST"])]},
    )


def start_noop(tmp: Path):
    return start_script_server(__file__, "--noop-server", tmp, "noop")


def stop_noop(proc, log) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def run_level(url: str, tokens: list[str], api: str) -> tuple[list[float], float, list[str]]:
    """Every client on its own thread: open the view (a session), then ITEMS submits in turn.
    Returns (latencies, wall seconds, errors)."""
    from harness.gradio_http import GradioHTTP

    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(len(tokens))

    def client(tok: str):
        mine = []
        with GradioHTTP(url, timeout=120) as c:
            try:
                if api == "da_submit":
                    item = c.predict(tok, "da", api_name="/view")["item_id"]
                else:
                    c.predict(tok, {"item_id": "0", "answer": {"score": 1}}, api_name="/noop")  # the session exists
                    item = "1"
                start.wait(60)
                for k in range(ITEMS):
                    t0 = time.perf_counter()
                    out = c.predict(tok, {"item_id": item, "answer": {"score": 1 + k}}, api_name=f"/{api}")
                    mine.append(time.perf_counter() - t0)
                    state = out[0] if isinstance(out, list) else out
                    if api == "da_submit" and state.get("notice") != "Saved.":
                        raise RuntimeError(f"not saved: {str(state)[:200]}")
                    item = state.get("item_id") if api == "da_submit" else str(k + 2)
            except Exception as e:  # reported, never hidden
                with lock:
                    errors.append(f"{type(e).__name__}: {e}")
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, args=(t,), daemon=True) for t in tokens]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    return lat, time.perf_counter() - t0, errors


def render_hits(app) -> int:
    """What the app's worker does once raters are assigned (services/da/campaign.assign_hit
    queues it): draw each HIT's text images, so a submit does not draw the next one. Run here,
    before the timing, because the app runs without its worker (see the module docstring)."""
    from services.common.jobs_worker import Worker
    from services.participation import worker_jobs
    from storage import open_database

    database = open_database(app.env["TRADLAB_DB"])
    media = Path(app.env["TRADLAB_MEDIA"])
    handler = worker_jobs.handlers(database, media_dir=media)["render_da_images"]
    done = Worker(database, {"render_da_images": handler}).run_until_idle()
    assert all(j["status"] == "done" for j in done), done
    return len(done)


def summary(lat: list[float], wall: float) -> dict:
    from harness.measure import percentile

    return {
        "n": len(lat),
        "p50_ms": round(1000 * percentile(lat, 50), 1),
        "p95_ms": round(1000 * percentile(lat, 95), 1),
        "max_ms": round(1000 * max(lat), 1) if lat else None,
        "wall_s": round(wall, 2),
        "calls_per_s": round(len(lat) / wall, 1) if wall else None,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", default="1,10,50", help="concurrency levels, comma-separated")
    ap.add_argument("--repeat-single", type=int, default=3, help="sequential raters at concurrency 1 (more samples)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "load.json"))
    ap.add_argument("--noop-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.noop_server:
        noop_server(args.noop_server)
        return 0

    from harness.load_app import prepared_app

    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    need = sum(c * (args.repeat_single if c == 1 else 1) for c in levels)
    tmp = Path(tempfile.mkdtemp(prefix="tradlab-load-"))
    app = prepared_app(tmp, need, env_extra={"TRADLAB_WORKER": "0"})
    rendered = render_hits(app)
    noop = None
    results = []
    try:
        t0 = time.time()
        app.start()
        app_start_s = time.time() - t0
        noop, noop_log, noop_url = start_noop(tmp)
        tokens = app.tokens("da")
        for c in levels:
            runs = args.repeat_single if c == 1 else 1
            app_lat, app_wall, noop_lat, noop_wall, errors = [], 0.0, [], 0.0, []
            for _ in range(runs):
                group, tokens = tokens[:c], tokens[c:]
                lat, wall, err = run_level(noop_url, group, "noop")
                noop_lat += lat
                noop_wall += wall
                errors += err
                lat, wall, err = run_level(app.url, group, "da_submit")
                app_lat += lat
                app_wall += wall
                errors += err
            row = {
                "clients": c,
                "da_submit": summary(app_lat, app_wall),
                "noop": summary(noop_lat, noop_wall),
                "errors": errors[:10],
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
            row["ratio_p95"] = round(row["da_submit"]["p95_ms"] / row["noop"]["p95_ms"], 2)
            row["ratio_p50"] = round(row["da_submit"]["p50_ms"] / row["noop"]["p50_ms"], 2)
            results.append(row)
            print(
                f"{c:3d} clients: da_submit p50 {row['da_submit']['p50_ms']:.0f} ms "
                f"p95 {row['da_submit']['p95_ms']:.0f} ms"
                f" | no-op p50 {row['noop']['p50_ms']:.0f} ms p95 {row['noop']['p95_ms']:.0f} ms"
                f" | p95 ratio {row['ratio_p95']:.2f}" + (f" | {len(errors)} errors" if errors else ""),
                flush=True,
            )
    finally:
        app.stop()
        if noop is not None:
            stop_noop(noop, noop_log)
        if any(r["errors"] for r in results):
            print(f"errors: the server logs are kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    at50 = next((r for r in results if r["clients"] == 50), None)
    out = {
        "benchmark": "load",
        "what": "submit-to-next-item latency of /da_submit vs a bare Gradio no-op event, "
        "same clients and calls, one session per client",
        "machine": machine(),
        "app_start_s": round(app_start_s, 1),
        "items_per_client": ITEMS,
        "hits_rendered_before": rendered,
        "levels": results,
        "target": "p95(da_submit) / p95(no-op) <= 1.5 at 50 clients",
        "target_met": None if at50 is None else at50["ratio_p95"] <= 1.5,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
