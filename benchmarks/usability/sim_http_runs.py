"""The simulation's HTTP sample, several runs per size alternated, and the medians across runs.

    .venv/bin/python benchmarks/usability/sim_http_runs.py --runs 3 --scales 1,2 \
        --before <a worktree of the commit before> --out benchmarks/results/study_sim_http_X.json

Each run is `study_sim.py one --scale S --http --no-analysis` in its own process and folder (the
sizes alternated: 1, 2, 1, 2, ...), so that a drift of the machine falls on both sizes alike;
with --before, SIM_HTTP_BEFORE names that checkout (its app runs beside this one, on the same
database, mode "before"), called as SIM_HTTP_BEFORE_WAY says (--before-way). SIM_HTTP_COSTS
(--costs) adds each run's cost sample: every kind of call alone, its server CPU. Writes every
run's HTTP figures and, per size, level and way of calling the app, the medians across runs with
their ranges: submit p50 / p95, first view and view-again p95, submits/s, server CPU per call,
and each p95 over the no-op's p95 in the same run (submits and views again against its later
calls, first views against its first), for each kind of no-op; the cost sample's medians; and
every p95's 200% / 100% ratio. A single run's p95 over a few hundred calls moves by more than
10% between runs of the same size, so a 1.1 target needs several runs: besides the medians of the
runs' p95s, every run of a size is pooled (`pooled`: each p95 over all the size's calls, and the
200% / 100% ratios with 95% intervals from resampling whole runs, raw and over the no-op's).

--paired: each run is `study_sim.py pair`, both sizes simulated at once and their HTTP samples
taken in turn, round by round, beside one no-op (`paired`: each run's own 200% / 100% ratios).
--merge A.json B.json ...: no run; the given files' runs summarised together.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from benchmarks.usability.sim_http import is_submit  # noqa: E402

NUMBERS = re.compile(r"\[\s+([-0-9.e,\s]+?)\s+\]")  # a list of numbers, one to a line
NOOP_KINDS = {"noop": "", "noop_json": "_json", "noop_queued": "_queued"}


def one_run(scale: float, work: Path, env: dict) -> dict:
    out = work / f"run-{scale:g}.json"
    res = subprocess.run(
        [sys.executable, "benchmarks/usability/study_sim.py", "one", "--scale", str(scale), "--http",
         "--no-analysis", "--workdir", str(work / "sim"), "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if not out.exists():
        raise RuntimeError(f"the simulation at scale {scale} wrote nothing: {res.stderr[-3000:]}")
    run = json.loads(out.read_text())
    return {"scale": scale, "machine": run.get("machine"), "http": run["http"], "checks_ok": run["ok"],
            "n_problems": run["n_problems"], "problems": run["problems"][:10]}  # fmt: skip


def one_pair(scales: list[float], work: Path, env: dict, pair: int) -> list[dict]:
    """`study_sim.py pair`: the sizes simulated at once, their HTTP samples taken together."""
    out = work / "pair.json"
    res = subprocess.run(
        [sys.executable, "benchmarks/usability/study_sim.py", "pair", "--scales", ",".join(f"{s:g}" for s in scales),
         "--workdir", str(work / "sim"), "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if not out.exists():
        raise RuntimeError(f"the paired simulation wrote nothing: {res.stderr[-3000:]}")
    got = json.loads(out.read_text())
    return [
        {"scale": run["scale"], "pair": pair, "machine": got.get("machine"), "http": run.get("http") or {"levels": []},
         "checks_ok": run["ok"], "n_problems": run["n_problems"], "problems": run["problems"][:10]}
        for run in got["runs"]
    ]  # fmt: skip


def merged_runs(files: list[dict]) -> list[dict]:
    """The runs of several result files, a paired run's pair named by its file too (each file
    numbers its pairs from 0)."""
    return [
        {**run, "pair": f"{i}/{run['pair']}"} if "pair" in run else run
        for i, f in enumerate(files)
        for run in f["runs"]
    ]


def paired(runs: list[dict]) -> dict:
    """Each target's p95 at 200% over its p95 at 100% within one paired run (both sizes measured in
    turn, beside one no-op): per level and way, every pair's ratio, their median and range."""
    by: dict = {}
    for run in runs:
        if "pair" not in run:
            continue
        for level in run["http"]["levels"]:
            for mode, lat in (level.get("latencies_ms") or {}).items():
                if mode != "noop":
                    by.setdefault((run["pair"], level["clients"], mode), {})[f"{run['scale']:g}"] = lat
    ratios: dict = {}
    for (_, clients, mode), sizes in sorted(by.items()):
        if "1" not in sizes or "2" not in sizes:
            continue
        cell = ratios.setdefault(f"{clients}/{mode}", {})
        for what, _ in TARGETS:
            a, b = calls(sizes["2"], what), calls(sizes["1"], what)
            if a and b:
                cell.setdefault(what, []).append(round(p95(a) / p95(b), 3))
    return {
        key: {
            what: {"each": xs, "median": round(statistics.median(xs), 3), "range": [min(xs), max(xs)]}
            for what, xs in cell.items()
        }
        for key, cell in ratios.items()
    }


def figures(level: dict, mode: str) -> dict:
    """One run's figures for one level and way of calling the app."""
    mr = level["modes"][mode]
    pe = mr["per_endpoint"]
    noop = level["noop_per_call"]
    out = {
        "sub_p50": mr["submits"].get("p50_ms"),
        "sub_p95": mr["submits"].get("p95_ms"),
        "view_p95": pe.get("view", {}).get("p95_ms"),
        "view_again_p95": pe.get("view_again", {}).get("p95_ms"),
        "subs_s": mr["submits_per_s"],
        "cpu": mr["server_cpu_ms_per_call"],
    }
    for kind, suffix in NOOP_KINDS.items():
        nxt, first = noop.get(f"{kind}_next", {}).get("p95_ms"), noop.get(f"{kind}_first", {}).get("p95_ms")
        name = kind.replace("noop", "").lstrip("_") or "gradio"
        if nxt and out["sub_p95"]:
            out[f"sub_vs_{name}"] = round(out["sub_p95"] / nxt, 2)
        if nxt and out["view_again_p95"]:
            out[f"view_again_vs_{name}"] = round(out["view_again_p95"] / nxt, 2)
        if first and out["view_p95"]:
            out[f"view_vs_{name}"] = round(out["view_p95"] / first, 2)
    return out


def medians(rows: list[dict]) -> dict:
    keys = sorted({k for r in rows for k in r})
    out: dict = {"runs": len(rows)}
    for k in keys:
        xs = [r[k] for r in rows if r.get(k) is not None]
        if xs:
            out[k] = round(statistics.median(xs), 2)
            out.setdefault("ranges", {})[k] = [min(xs), max(xs)]
    return out


def cost_medians(runs: list[dict]) -> dict:
    """Per size, way and call kind: the median across runs of the cost sample's server CPU p50."""
    by: dict = {}
    for run in runs:
        for way, table in (run["http"].get("costs") or {}).items():
            for call, row in table.items():
                by.setdefault(f"{run['scale']:g}", {}).setdefault(way, {}).setdefault(call, []).append(
                    row["server_cpu_ms_p50"]
                )
    return {
        s: {w: {c: round(statistics.median(v), 2) for c, v in sorted(t.items())} for w, t in ways.items()}
        for s, ways in by.items()
    }


# the p95s the targets name, each over the no-op's p95 it is compared with (sim_http._mode_row)
TARGETS = (("sub", "noop_next"), ("view", "noop_first"), ("view_again", "noop_next"))


def p95(xs) -> float:
    """Nearest-rank p95 (harness.measure.percentile's definition): the smallest x with at least
    95% of the calls at or below it."""
    import numpy as np

    return float(np.percentile(np.asarray(xs, dtype=float), 95, method="inverted_cdf"))


def calls(latencies: dict, what: str) -> list[float]:
    """One way's latencies of a kind: "sub" (every submit endpoint), "view", "view_again"."""
    if what == "sub":
        return [x for k, xs in latencies.items() if is_submit(k) for x in xs]
    return list(latencies.get(what, []))


def _ci(runs: tuple, statistic, resamples: int, seed: int) -> list[float] | None:
    """95% percentile-bootstrap interval of statistic(*index arrays), resampling whole runs (each
    size's runs on their own, scipy.stats.bootstrap): the calls of one run share its machine's
    state, so resampling calls one by one would give an interval far too narrow. None with fewer
    than two runs of a size."""
    import numpy as np
    from scipy.stats import bootstrap

    if min(runs) < 2:
        return None
    res = bootstrap(
        tuple(np.arange(n) for n in runs), statistic, n_resamples=resamples, vectorized=False,
        paired=False, method="percentile", random_state=seed,
    )  # fmt: skip
    return [round(float(res.confidence_interval.low), 3), round(float(res.confidence_interval.high), 3)]


def pooled(runs: list[dict], resamples: int = 2000, seed: int = 1) -> dict:
    """Every run of a size pooled: per level and way, each target's p95 over all its calls and over
    the no-op's in the same runs; and between the sizes, each p95's 200% / 100% ratio, raw and over
    the no-op's, with 95% intervals from resampling the runs. A run's p95 at 16 clients is the
    sixth slowest of about 115 submits, and moved from 28 to 56 ms between runs of the same code
    and size (results/study_sim_http_issue34_s6_levels.json); the pool of five runs holds about
    575. And the load the closed loop offered: the calls in flight on average and the calls a
    participant made (one with less work left leaves the level early, and the others' calls wait
    on fewer)."""
    import numpy as np

    per_run: dict = {}  # (size, clients, way) -> [(its latencies by endpoint, the no-op's), one per run]
    busy: dict = {}  # (size, clients, way) -> [seconds of calls, seconds of levels, calls, participants]
    plan: dict = {}  # (size, clients) -> [submits planned, made], every way together (sim_http.matched)
    for run in runs:
        for level in run["http"]["levels"]:
            lat = level.get("latencies_ms")
            if not lat:
                continue
            if "submits_planned" in level:
                got = plan.setdefault((f"{run['scale']:g}", level["clients"]), [0, 0])
                got[0] += level["submits_planned"]
                got[1] += level["submits_made"]
            for mode, by in lat.items():
                if mode == "noop":
                    continue
                key = (f"{run['scale']:g}", level["clients"], mode)
                per_run.setdefault(key, []).append((by, lat.get("noop", {})))
                if mode in level.get("modes", {}):
                    # Little's law: the calls in flight on average, each call's time over the level's
                    load = busy.setdefault(key, [0.0, 0.0, 0, 0])
                    load[0] += sum(x for xs in by.values() for x in xs) / 1000
                    load[1] += level["modes"][mode]["app"]["wall_s"]
                    load[2] += sum(len(xs) for k, xs in by.items() if k != "upload")
                    load[3] += len(by.get("view", []))  # each participant's first call

    def arrays(key, what, against):
        """Per run: the target's calls and the no-op's it is compared with, as arrays."""
        return (
            [np.asarray(calls(by, what), dtype=float) for by, _ in per_run[key]],
            [np.asarray(noop.get(against, []), dtype=float) for _, noop in per_run[key]],
        )

    def p95_of(xs: list, idx) -> float:
        joined = np.concatenate([xs[i] for i in idx])
        return p95(joined) if joined.size else float("nan")

    out: dict = {"sizes": {}, "p95_200_over_100": {}}
    for scale, clients, mode in sorted(per_run):
        key = (scale, clients, mode)
        row = {"runs": len(per_run[key])}
        for what, against in TARGETS:
            xs, noops = arrays(key, what, against)
            everyone = range(len(xs))
            if sum(x.size for x in xs):
                row[f"{what}_p95"] = round(p95_of(xs, everyone), 2)
                row[f"{what}_n"] = int(sum(x.size for x in xs))
                if sum(x.size for x in noops):
                    row[f"{what}_vs_noop"] = round(p95_of(xs, everyone) / p95_of(noops, everyone), 2)
        if key in busy:
            calls_s, wall_s, n, people = busy[key]
            # what the closed loop offered the server: more calls a participant (more work left)
            # keep more of the level's clients in flight, each call's latency up as much
            row["in_flight"] = round(calls_s / wall_s, 1) if wall_s else None
            row["calls_per_participant"] = round(n / people, 2) if people else None
        if plan.get((scale, clients), [0])[0]:
            planned, made = plan[(scale, clients)]
            row["submits_planned"], row["submits_made"] = planned, made
        out["sizes"][f"{scale}/{clients}/{mode}"] = row
        big_key = ("2", clients, mode)
        if scale != "1" or big_key not in per_run:
            continue
        growth = {}
        for what, against in TARGETS:
            (a, na), (b, nb) = arrays(big_key, what, against), arrays(key, what, against)
            if not (sum(x.size for x in a) and sum(x.size for x in b)):
                continue

            def ratio(ia, ib, a=a, b=b):
                return p95_of(a, ia) / p95_of(b, ib)

            sizes = (len(a), len(b))
            g = {"ratio": round(ratio(range(len(a)), range(len(b))), 3), "ci95": _ci(sizes, ratio, resamples, seed)}
            if sum(x.size for x in na) and sum(x.size for x in nb):

                def over_noop(ia, ib, a=a, na=na, b=b, nb=nb):
                    return (p95_of(a, ia) / p95_of(na, ia)) / (p95_of(b, ib) / p95_of(nb, ib))

                g["over_noop"] = round(over_noop(range(len(a)), range(len(b))), 3)
                g["over_noop_ci95"] = _ci(sizes, over_noop, resamples, seed)
            growth[what] = g
        out["p95_200_over_100"][f"{clients}/{mode}"] = growth
    return out


def summarise(runs: list[dict]) -> dict:
    cells: dict = {}
    for run in runs:
        for level in run["http"]["levels"]:
            for mode in level.get("modes", {}):
                key = f"{run['scale']:g}/{level['clients']}/{mode}"
                cells.setdefault(key, []).append(figures(level, mode))
    summary = {k: medians(v) for k, v in sorted(cells.items())}
    growth: dict = {}
    for key, row in summary.items():
        scale, clients, mode = key.split("/")
        other = summary.get(f"2/{clients}/{mode}") if scale == "1" else None
        if other:
            growth[f"{clients}/{mode}"] = {
                p: round(other[p] / row[p], 2)
                for p in ("sub_p95", "view_p95", "view_again_p95")
                if row.get(p) and other.get(p)
            }
    out = {"summary": summary, "p95_200_over_100": growth, "pooled": pooled(runs), "costs": cost_medians(runs)}
    if any("pair" in r for r in runs):
        out["paired_p95_200_over_100"] = paired(runs)
    return out


def dumps(result: dict) -> str:
    """Indented JSON with each list of numbers (a level's latencies) on one line."""
    return (
        NUMBERS.sub(
            lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", json.dumps(result, indent=1)
        )
        + "\n"
    )


def keep(result: dict, runs: list[dict], out: str) -> None:
    """The result so far, written after each run (a long series stopped midway keeps its runs)."""
    result.update(summarise(runs), runs=runs, machine_after=machine())
    Path(out).write_text(dumps(result))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs per size")
    ap.add_argument("--scales", default="1,2", help="fractions of the paper's size, alternated")
    ap.add_argument("--before", default="", help="another checkout, run beside this one (mode 'before')")
    ap.add_argument("--before-way", default="gradio", choices=("gradio", "json-forms", "json"))
    ap.add_argument("--costs", type=int, default=30, help="participants per way in each run's cost sample (0: none)")
    ap.add_argument("--levels", default=None, help="SIM_HTTP_LEVELS (default 16,50; '' for the cost sample only)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--paired", action="store_true", help="each run simulates the sizes at once (study_sim.py pair)")
    ap.add_argument(
        "--merge", nargs="+", metavar="RESULTS", help="run nothing: summarise these files' runs together (pooled)"
    )
    args = ap.parse_args(argv)
    if args.merge:
        files = [json.loads(Path(f).read_text()) for f in args.merge]
        runs = merged_runs(files)
        result = {"merged": args.merge, "machine": files[0].get("machine"), **summarise(runs)}
        Path(args.out).write_text(dumps(result))
        print(json.dumps({k: result[k] for k in ("p95_200_over_100", "pooled") if k in result}, indent=1))
        return 0
    env = {**os.environ, "SIM_HTTP_COSTS": str(args.costs)}
    if args.levels is not None:
        env["SIM_HTTP_LEVELS"] = args.levels
    if args.before:
        env.update(SIM_HTTP_BEFORE=args.before, SIM_HTTP_BEFORE_WAY=args.before_way)
    scales = [float(s) for s in args.scales.split(",")]
    runs, result = [], {"machine": machine(), "runs_per_size": args.runs, "scales": scales}
    with tempfile.TemporaryDirectory(prefix="sim-http-runs-") as tmp:
        for i in range(args.runs):
            if args.paired:
                work = Path(tmp) / f"{i}"
                work.mkdir()
                got = one_pair(scales, work, env, i)
                runs += got
                ok = all(r["checks_ok"] for r in got)
                print(f"paired run {i + 1}: checks {'passed' if ok else 'FAILED'}", file=sys.stderr)
                keep(result, runs, args.out)
                continue
            for scale in scales:
                work = Path(tmp) / f"{i}-{scale:g}"
                work.mkdir()
                run = one_run(scale, work, env)
                runs.append(run)
                print(f"run {i + 1} at {scale:g}: checks {'passed' if run['checks_ok'] else 'FAILED'}", file=sys.stderr)
                keep(result, runs, args.out)
    print(
        json.dumps(
            {k: result[k] for k in ("summary", "p95_200_over_100", "pooled", "paired_p95_200_over_100") if k in result},
            indent=1,
        )
    )
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(r["checks_ok"] for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
