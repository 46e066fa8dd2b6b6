"""Issue 49's "done when": an honest participant beside a stranger who does everything the third
review found at once, and the server's memory meanwhile.

    .venv/bin/python benchmarks/hardening_round3.py [--rounds 4] [--views 60] [--out results/hardening_round3.json]

The app runs as `python app.py` (the load tests' study with every role, TRADLAB_WORKER=0, the
per-client shares at their defaults). An honest DA rater asks for its item `--views` times (40 ms
apart) quiet, then beside the stranger, round after round. The stranger, in its own process and
from addresses of its own (127.0.0.2, and 127.0.0.3 for its streams, which would otherwise fill
its own share of connections; the honest client is on 127.0.0.1), runs four loops at once, each
as fast as it is answered:

- the worst recording: a 161 KB FLAC of 29 s silence at 655,350 Hz in 8 channels, uploaded once
  to the sender's page and submitted again and again on the record tab's JSON route with a real
  sender link (before: +252 MB and 4.1-4.7 s per decode, on the event loop);
- streams: 150 heartbeat streams of made-up sessions, reopened when closed (before: 999 held
  every connection and participants got 503);
- DA feedback in a loop with a real DA link, a new text each time (before: 216-336 writes a
  second);
- the team page's load events with wrong `?admin=` secrets, through the queue (before: 120 of them
  held the real admin link 71 s).

Memory: the server's resident memory sampled every 0.1 s during each round; the figure is the
peak above the idle server's (after a warm-up). The target: the honest view's p95 within 1.5x of
quiet, memory under 100 MB above idle.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from benchmarks.hardening import pct, rss_mb, view_summary, views_ms  # noqa: E402

STRANGER = r"""
import json, socket, sys, threading, time, uuid
import httpx
url, port, seconds, sender, da, flac = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:7]
loads, rate = json.loads(sys.argv[7]), float(sys.argv[8])  # rate: each loop's requests a second (0: flat out)
only = sys.argv[9].split(",")  # the loops to run
SRC, STREAMS_SRC = "127.0.0.2", "127.0.0.3"  # streams from an address of their own: else they fill SRC's share
end = time.time() + seconds
counts = {}

def note(loop, what):
    key = f"{loop} {what}"
    counts[key] = counts.get(key, 0) + 1

def paced(k, start):
    if rate:
        time.sleep(max(0.0, start + k / rate - time.time()))

def client():
    return httpx.Client(base_url=url, timeout=30, transport=httpx.HTTPTransport(local_address=SRC))

def recording():
    with client() as c:
        up = c.post("/sender/gradio_api/upload", files=[("files", ("w.flac", open(flac, "rb").read(), "audio/flac"))])
        if up.status_code != 200:
            note("recording", f"upload {up.status_code} {up.text[:80]}")
            return
        path = up.json()[0]
        item = c.post("/sender/form/record/view", json={"token": sender}).json()["value"]["item_id"]
        k, start = 0, time.time()
        while time.time() < end:
            k += 1
            paced(k, start)
            r = c.post("/sender/form/record/submit", json={"token": sender, "value": {"item_id": item, "audio": path}})
            said = r.json().get("value", {}).get("error", "") if r.status_code == 200 else ""
            note("recording", f"{r.status_code} {said[:40]}")

def streams():
    held = []
    while time.time() < end:
        while len(held) < 150 and time.time() < end:
            s = socket.socket()
            s.bind((STREAMS_SRC, 0))
            s.settimeout(2)
            try:
                s.connect(("127.0.0.1", port))
                s.sendall(f"GET /gradio_api/heartbeat/{uuid.uuid4().hex[:11]} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                held.append(s)
                note("streams", "opened")
            except OSError:
                s.close()
                note("streams", "refused to connect")
        time.sleep(0.5)
        alive = []
        for s in held:
            s.setblocking(False)
            try:
                data = s.recv(64)
                if not data:
                    s.close(); note("streams", "closed by server"); continue
                note("streams", data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP") else "data")
                if data.startswith(b"HTTP") and b" 200 " not in data[:16]:
                    s.close(); continue
            except BlockingIOError:
                pass
            except OSError:
                s.close(); note("streams", "reset"); continue
            alive.append(s)
        held = alive
    for s in held:
        s.close()

def feedback():
    with client() as c:
        k, start = 0, time.time()
        while time.time() < end:
            k += 1
            paced(k, start)
            r = c.post("/da/gradio_api/api/da_feedback", json={"data": [da, f"Feedback number {k}."]})
            note("feedback", r.status_code)

def admin_loads():
    with client() as c:
        k, start = 0, time.time()
        while time.time() < end:
            k += 1
            paced(k, start)
            for fn in loads:
                body = {"data": [], "fn_index": fn, "session_hash": f"flood{k % 50}"}
                body.update(event_data=None, trigger_id=None)
                r = c.post(f"/gradio_api/queue/join?admin=wrong-{k}", json=body)
                note("admin loads", r.status_code)

loops = {"recording": recording, "streams": streams, "feedback": feedback, "admin_loads": admin_loads}
threads = [threading.Thread(target=loops[name]) for name in only]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(counts))
"""


def wide_flac(path: Path) -> Path:
    import numpy as np
    import soundfile as sf

    with sf.SoundFile(str(path), "w", 655_350, 8, "PCM_16", format="FLAC") as f:
        block = np.zeros((655_350, 8), np.int16)
        for _ in range(29):
            f.write(block)
    return path


def cpu_s(pid: int) -> float:
    """A process's user + system CPU seconds so far (/proc/<pid>/stat)."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sampled_peak(pid: int, stop: threading.Event, out: list) -> None:
    peak = 0.0
    while not stop.is_set():
        peak = max(peak, rss_mb(pid))
        time.sleep(0.1)
    out.append(peak)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--views", type=int, default=60)
    ap.add_argument("--rate", type=float, default=4.0, help="the stranger's requests a second per loop")
    ap.add_argument("--loops", default="recording,streams,feedback,admin_loads", help="the stranger's loops")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hardening_round3.json"))
    args = ap.parse_args()

    import httpx

    from harness.load_app import prepared_app

    tmp = Path(tempfile.mkdtemp(prefix="hardening3-"))
    flac = wide_flac(tmp / "wide.flac")
    shares = {  # the defaults, which the tests' RunningApp raises
        "TRADLAB_UPLOADS_PER_MINUTE": "10",
        "TRADLAB_CONNECTIONS_PER_CLIENT": "100",
        "TRADLAB_STRANGER_REQUESTS_PER_MINUTE": "120",
        "TRADLAB_REFUSAL_PAUSE_MS": "500",
    }
    app = prepared_app(tmp, 2, extra_roles=True, env_extra={"TRADLAB_WORKER": "0", **shares})
    app.start()
    try:
        honest, stranger_da = app.tokens("da")[:2]
        sender = app.tokens("sender")[0]
        config = httpx.get(app.url + "/config", timeout=30).json()
        loads = [
            d["id"] for d in config["dependencies"] if d["backend_fn"] and any(t[1] == "load" for t in d["targets"])
        ]
        views_ms(app.url, honest, 20)  # warm
        time.sleep(2)
        idle = rss_mb(app.proc.pid)
        conditions = {"quiet": None, f"stranger, {args.rate:g} a second per loop": args.rate, "stranger, flat out": 0.0}
        times: dict[str, list[float]] = {k: [] for k in conditions}
        peaks: dict[str, list[float]] = {k: [] for k in list(conditions)[1:]}
        said: dict[str, list[dict]] = {k: [] for k in list(conditions)[1:]}
        # CPU seconds a second of wall: the server's, and the stranger's own (on the same 2 cores)
        server_cpu: dict[str, list[float]] = {k: [] for k in conditions}
        stranger_cpu: dict[str, list[float]] = {k: [] for k in list(conditions)[1:]}
        for r in range(args.rounds):
            for name, rate in conditions.items():
                c0, w0 = cpu_s(app.proc.pid), time.time()
                if rate is None:
                    t = views_ms(app.url, honest, args.views)
                    server_cpu[name].append(round((cpu_s(app.proc.pid) - c0) / (time.time() - w0), 3))
                    times[name] += t
                    print(f"round {r + 1} {name}: p50 {statistics.median(t):.1f} p95 {pct(t, 95)} ms", flush=True)
                    continue
                seconds = args.views * 0.06 + 6
                stranger = subprocess.Popen(
                    [sys.executable, "-c", STRANGER, app.url, str(app.port), str(seconds), sender, stranger_da,
                     str(flac), json.dumps(loads), str(rate), args.loops],
                    stdout=subprocess.PIPE,
                    text=True,
                )  # fmt: skip
                stop, peak = threading.Event(), []
                sampler = threading.Thread(target=sampled_peak, args=(app.proc.pid, stop, peak))
                sampler.start()
                time.sleep(3)  # the stranger's loops under way, its streams open
                c0, w0, s0 = cpu_s(app.proc.pid), time.time(), cpu_s(stranger.pid)
                t = views_ms(app.url, honest, args.views)
                wall = time.time() - w0
                server_cpu[name].append(round((cpu_s(app.proc.pid) - c0) / wall, 3))
                stranger_cpu[name].append(round((cpu_s(stranger.pid) - s0) / wall, 3))
                times[name] += t
                said[name].append(json.loads(stranger.communicate(timeout=300)[0]))
                stop.set()
                sampler.join()
                peaks[name].append(round(peak[0] - idle, 1))
                print(
                    f"round {r + 1} {name}: p50 {statistics.median(t):.1f} p95 {pct(t, 95)} ms, "
                    f"peak +{peaks[name][-1]} MB; stranger {said[name][-1]}",
                    flush=True,
                )
                time.sleep(2)
        views = view_summary(times)
        result = {
            "machine": machine(),
            "args": vars(args),
            "honest_views": views,
            "p95_ratios": {k: round(views[k]["p95_ms"] / views["quiet"]["p95_ms"], 2) for k in peaks},
            "server_idle_rss_mb": round(idle, 1),
            "server_peak_above_idle_mb": peaks,
            "server_cpu_s_per_s_while_measured": server_cpu,
            "stranger_cpu_s_per_s_while_measured": stranger_cpu,
            "stranger": said,
            "recordings_stored": app.db("SELECT COUNT(*) FROM recordings")[0][0],
            "feedback_rows": app.db("SELECT COUNT(*) FROM da_feedback")[0][0],
            "feedback_audit_rows": app.db("SELECT COUNT(*) FROM events WHERE action = 'feedback'")[0][0],
        }
        print(
            json.dumps({k: result[k] for k in ("honest_views", "p95_ratios", "server_peak_above_idle_mb")}), flush=True
        )
    finally:
        app.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
