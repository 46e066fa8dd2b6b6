"""Wall and CPU time of a participant action's parts inside the running app, at 50 clients.

    .venv/bin/python benchmarks/usability/action_timing.py [--scales 1,2] [--clients 50]

For each scale the simulation runs to halfway and its HTTP sample runs at one level, the item
forms called by their JSON routes (`study_sim.py one --scale S --http`, SIM_HTTP_LEVELS=N,
SIM_HTTP_ROUTES=json). In the app's process only (a `sitecustomize` on PYTHONPATH that acts when
the process runs app.py) the functions of PARTS are wrapped once the server module is loaded:
each call's wall time and its thread's CPU time (time.thread_time) are kept, and written to a
file every two seconds. Where a part's wall time is far above its CPU time, the thread waited:
for the interpreter lock, or (safe_submit) in the participants' line of actions. Writes the
means and maxima per part and scale to --out. A profiler's samples (profile_http.py) say where
the interpreter is; this says how long each part takes as a participant waits for it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402

# (module, function): called through the module's global name, so the wrapper is what runs
PARTS = (
    ("tabs.common", "safe_submit"),
    ("services.participation.submissions", "_checked"),
    ("services.participation.submissions", "_save"),
    ("services.participation.submissions", "_refuse_in_write"),
    ("services.participation.submissions", "ready_next"),
    ("services.participation.submissions", "get_view"),
    ("services.participation.items", "take_and_show"),
    ("services.participation.items", "_view"),
)

SITECUSTOMIZE = """
import json, os, sys, threading, time
OUT, PARTS = os.environ.get("ACTION_TIMING_OUT"), %r
if OUT and sys.argv and sys.argv[0].endswith("app.py"):
    stats, lock = {}, threading.Lock()

    def wrap(module, name):
        fn = getattr(module, name)

        def timed(*a, **k):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
                with lock:
                    s = stats.setdefault(module.__name__ + "." + name, [0, 0.0, 0.0, 0.0])
                    s[0] += 1; s[1] += wall; s[2] += cpu; s[3] = max(s[3], wall)
        setattr(module, name, timed)

    def run():
        while "web.serving" not in sys.modules:
            time.sleep(0.05)
        import importlib
        for mod, name in PARTS:
            wrap(importlib.import_module(mod), name)
        while True:
            time.sleep(2)
            with lock:
                out = {k: {"n": n, "wall_ms_mean": round(1000 * w / n, 3), "cpu_ms_mean": round(1000 * c / n, 3),
                           "wall_ms_max": round(1000 * m, 1)} for k, (n, w, c, m) in stats.items()}
            with open(OUT + ".tmp", "w") as f:
                json.dump(out, f)
            os.replace(OUT + ".tmp", OUT)

    threading.Thread(target=run, daemon=True).start()
"""


def one_run(scale: float, clients: int, work: Path) -> dict:
    hook = work / "hook"
    hook.mkdir(parents=True, exist_ok=True)
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE % (PARTS,))
    out, timing = work / f"sim-{scale:g}.json", work / f"timing-{scale:g}.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "ACTION_TIMING_OUT": str(timing),
        "SIM_HTTP_LEVELS": str(clients),
        "SIM_HTTP_ROUTES": "json",
    }
    cmd = [sys.executable, "benchmarks/usability/study_sim.py", "one", "--scale", str(scale), "--http"]
    cmd += ["--no-analysis", "--workdir", str(work / f"sim-{scale:g}"), "--out", str(out)]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"the simulation at scale {scale} failed: {res.stderr[-2000:]}")
    level = json.loads(out.read_text())["http"]["levels"][0]
    mode = level["modes"]["json"]
    return {
        "parts": json.loads(timing.read_text()) if timing.exists() else {},
        "level": {
            "clients": level["clients"],
            "submits": mode["submits"],
            "submits_per_s": mode["submits_per_s"],
            "server_cpu_ms_per_call": mode["server_cpu_ms_per_call"],
        },
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="1,2", help="fractions of the paper's size")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "action_timing.json"))
    args = ap.parse_args(argv)
    result = {"machine": machine(), "clients": args.clients, "parts": [f"{m}.{n}" for m, n in PARTS], "runs": {}}
    with tempfile.TemporaryDirectory(prefix="action-timing-") as tmp:
        for scale in (float(s) for s in args.scales.split(",")):
            result["runs"][f"{scale:g}"] = run = one_run(scale, args.clients, Path(tmp))
            print(f"scale {scale:g}: {run['level']}")
            for name, t in sorted(run["parts"].items()):
                print(f"  {name:55s} n={t['n']:5d} wall {t['wall_ms_mean']:8.2f} ms  cpu {t['cpu_ms_mean']:6.2f} ms")
        left = glob.glob(str(Path(tmp) / "*.tmp"))
        assert not left, left
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
