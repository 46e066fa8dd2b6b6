"""Where a participant action's time goes on the running server, at N concurrent clients.

    .venv/bin/pip install py-spy          # the sampling profiler (not a test dependency)
    .venv/bin/python benchmarks/usability/profile_http.py [--scales 1,2] [--clients 50]

For each scale, the study simulation runs to halfway and its HTTP sample runs at one level
(`study_sim.py one --scale S --http`, SIM_HTTP_LEVELS=N: the app launched as `make run`
launches it, beside the bare Gradio no-op, every role's clients calling their tab's endpoints).
py-spy attaches to the app's process once it has started (ATTACH_S after it appears, so the
start-up is not in the profile) and samples it until it exits, twice, in two runs:

- CPU (`--gil`: the thread holding the interpreter lock), per call of the level, split by what
  the stack shows: the HTTP server, Starlette's and the app's middlewares and the event loop
  (no handler below), FastAPI's route matching, Gradio's process_api (its preprocess and
  postprocess, then the event's function: the services, storage and SQLite under them, the
  tabs' rendering of the item form);
- wall (`--idle`: every thread), the worker threads while inside an event's function: waiting
  for the participants' action lock (services/participation/serial.py), in SQLite, or working.

Writes the shares, the ms per call and the level's latency figures to --out. The samples are
statistical (250 a second): a share below about 2% is noise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402

RATE = 250
ATTACH_S = 10  # the app's start (about 6 s) and the no-op's, before the level's first call
STARTUP = re.compile(r"build_app|team_page|role_page|warm_pages|start_pages|_find_and_load")
CPU = (
    ("http server, middlewares, event loop (no handler below)", r"^(?!.*(process_api|_IncludedRouter\.matches)).*$"),
    ("route matching (FastAPI)", r"_IncludedRouter\.matches"),
    ("gradio process_api", r"Blocks\.process_api"),
    ("  preprocess", r"Blocks\.preprocess_data"),
    ("  postprocess", r"Blocks\.postprocess_data"),
    ("  the event's function", r"function_wrapper\.<locals>\.wrapper"),
    ("    services", r"\(services/"),
    ("      storage and sqlite", r"\(storage/"),
    ("    tabs' rendering", r"body_html|form_value|header_html|_html \(tabs/"),
)
WALL = (
    ("waiting for the action lock", r"FairLock\.__enter__ \(services/participation/serial\.py[^;]*$"),
    ("in sqlite or storage", r"\((storage/|sqlite_utils/)[^;]*$"),
    ("working (python)", r"."),
)


def samples(path: Path):
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            yield stack, int(n)


def cpu_split(path: Path, calls: int) -> dict:
    total, got = 0, {k: 0 for k, _ in CPU}
    for stack, n in samples(path):
        if STARTUP.search(stack):
            continue
        total += n
        for k, pat in CPU:
            if re.search(pat, stack):
                got[k] += n
    return {
        "samples": total,
        "ms_per_call": round(1000 * total / RATE / calls, 2),
        "split": {
            k: {"share": round(v / total, 3), "ms_per_call": round(1000 * v / RATE / calls, 2)} for k, v in got.items()
        },
    }


def wall_split(path: Path) -> dict:
    total, got = 0, {k: 0 for k, _ in WALL}
    for stack, n in samples(path):
        if "WorkerThread.run" not in stack or "function_wrapper" not in stack:
            continue  # threads waiting for work, the event loop
        total += n
        for k, pat in WALL:
            if re.search(pat, stack):
                got[k] += n
                break
    return {"samples": total, "split": {k: round(v / total, 3) for k, v in got.items()}}


def one_run(scale: float, clients: int, mode: str, work: Path) -> tuple[dict, Path]:
    """The simulation at `scale` with py-spy on its app; (the HTTP level's figures, profile)."""
    out, prof = work / f"sim-{scale}-{mode}.json", work / f"profile-{scale}-{mode}.txt"
    sim = subprocess.Popen(
        [sys.executable, "benchmarks/usability/study_sim.py", "one", "--scale", str(scale), "--http",
         "--no-analysis", "--workdir", str(work / f"sim-{scale}-{mode}"), "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "SIM_HTTP_LEVELS": str(clients),
             "SIM_HTTP_ROUTES": os.environ.get("SIM_HTTP_ROUTES", "json")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pid, deadline = None, time.time() + 900
    while pid is None and time.time() < deadline and sim.poll() is None:
        found = subprocess.run(["pgrep", "-P", str(sim.pid), "-f", "app.py"], capture_output=True, text=True)
        pid = int(found.stdout.split()[0]) if found.stdout.split() else None
        time.sleep(0.1)
    if pid is None:
        sim.wait()
        raise RuntimeError(f"the simulation at scale {scale} launched no app")
    time.sleep(ATTACH_S)
    spy = subprocess.Popen(
        [shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"), "record", f"--{mode}",
         "--pid", str(pid), "--rate", str(RATE), "--format", "raw", "-o", str(prof), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    if sim.wait(timeout=1800) != 0:
        raise RuntimeError(f"the simulation at scale {scale} failed")
    spy.wait(timeout=60)
    level = json.loads(out.read_text())["http"]["levels"][0]
    level = {**level, **next(iter(level["modes"].values()))}  # one way of calling the app: SIM_HTTP_ROUTES
    return level, prof


def level_figures(level: dict) -> dict:
    pe = level["per_endpoint"]
    submits = [k for k in pe if k.endswith("_submit")]
    n = sum(pe[k]["n"] for k in submits)
    return {
        "clients": level["clients"],
        "calls": level["app"]["n"],
        "submits_per_s": round(n / level["app"]["wall_s"], 1),
        "submit_p95_ms": {k: pe[k]["p95_ms"] for k in submits},
        "view_p95_ms": pe["view"]["p95_ms"],
        "noop_next_p95_ms": level["noop_per_call"]["noop_next"]["p95_ms"],
        "noop_first_p95_ms": level["noop_per_call"]["noop_first"]["p95_ms"],
        "submits_vs_later_noops_p95": level["submits_vs_later_noops_p95"],
        "view_vs_first_noop_p95": level["view_vs_first_noop_p95"],
        "server_cpu_ms_per_call": level["server_cpu_ms_per_call"],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="1,2", help="fractions of the paper's size")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "profile_http.json"))
    args = ap.parse_args(argv)
    if not (shutil.which("py-spy") or (Path(sys.executable).parent / "py-spy").exists()):
        print("py-spy is not installed: .venv/bin/pip install py-spy", file=sys.stderr)
        return 2
    result = {"machine": machine(), "clients": args.clients, "rate_hz": RATE, "attach_after_s": ATTACH_S, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="profile-http-") as tmp:
        for scale in (float(s) for s in args.scales.split(",")):
            cpu_level, cpu_prof = one_run(scale, args.clients, "gil", Path(tmp))
            wall_level, wall_prof = one_run(scale, args.clients, "idle", Path(tmp))
            result["runs"][f"{scale:g}"] = {
                "cpu": {**cpu_split(cpu_prof, cpu_level["app"]["n"]), "level": level_figures(cpu_level)},
                "wall": {**wall_split(wall_prof), "level": level_figures(wall_level)},
            }
            print(f"scale {scale:g}: {json.dumps(result['runs'][f'{scale:g}'], indent=1)}")
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
