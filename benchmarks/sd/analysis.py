"""Time services.sd.analysis.analyze() at the size of paper 002's study.

    .venv/bin/python benchmarks/sd/analysis.py [--repeats 5] [--seed 0]

Synthetic, seeded ratings: 141 participants (81 rate 5 sentences, 60 rate 4, of 45), 20 pairs
each plus 2 repeated pairs per sentence: 14,190 ratings, about the paper's 14,200. The pairs
follow 4 correlated factors (12 clean pairs, 4 cross-loading, 4 weak), so pruning has work to
do; 9 planted participants (too fast, straight-lining, inconsistent) exercise the cleansing.
Reports the median of the runs of analyze() without and with pruning (target: under 3 s
each), read_ratings() of the CSV and write_outputs(), and writes
benchmarks/results/sd_analysis.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks.common import machine, timed  # noqa: E402
from services.sd import analysis as S  # noqa: E402

TARGET_S = 3.0
PARTICIPANTS = 141
SENTENCES = 45
REPEATS_PER_SENTENCE = 2


def loadings(rng) -> tuple[np.ndarray, list[str]]:
    rows, names = [], []
    for f in range(4):
        for j in range(3):
            row = np.zeros(4)
            row[f] = rng.uniform(0.6, 0.85)
            rows.append(row)
            names.append(f"clean_{f + 1}{j + 1}")
    for f in range(4):
        row = np.zeros(4)
        row[f], row[(f + 1) % 4] = 0.45, 0.4
        rows.append(row)
        names.append(f"cross_{f + 1}")
    for f in range(4):
        row = np.zeros(4)
        row[f] = 0.3
        rows.append(row)
        names.append(f"weak_{f + 1}")
    return np.array(rows), names


def synthetic(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lam, names = loadings(rng)
    phi = np.full((4, 4), 0.35) + 0.65 * np.eye(4)
    unique_sd = np.sqrt(np.clip(1 - np.diag(lam @ phi @ lam.T), 0.05, None))
    rows = []
    for i in range(PARTICIPANTS):
        pid = f"P{i:03d}"
        kind = ("fast", "straight", "random")[i % 3] if i < 9 else "good"
        duration = float(rng.uniform(60, 240)) if kind == "fast" else float(rng.uniform(250, 900))
        for s in rng.choice(SENTENCES, 5 if i < 81 else 4, replace=False):
            f = rng.multivariate_normal(np.zeros(4), phi)
            v = np.clip(np.round(1.3 * (lam @ f + rng.normal(size=len(names)) * unique_sd)), -3, 3)
            if kind == "straight":
                v[:] = 0
            order = rng.permutation(len(names))
            for j in order:
                rows.append((pid, f"S{s:02d}", names[j], v[j], 0, duration))
            for j in order[:REPEATS_PER_SENTENCE]:
                rep = -v[j] if kind == "random" else v[j] + rng.choice([-1, 0, 0, 0, 1])
                rows.append(
                    (
                        pid,
                        f"S{s:02d}",
                        names[j],
                        float(np.clip(rep if kind != "random" or v[j] else 3, -3, 3)),
                        1,
                        duration,
                    )
                )
    return pd.DataFrame(rows, columns=S.REQUIRED)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sd_analysis.json"))
    args = ap.parse_args()
    df = synthetic(args.seed)
    t0 = time.perf_counter()
    first = S.analyze(df)  # warm-up: first-call imports (factor_analyzer pulls in scikit-learn)
    first_call = time.perf_counter() - t0
    runs = {f"prune={p}": timed(lambda p=p: S.analyze(df, prune=p), args.repeats) for p in (False, True)}
    pruned = S.analyze(df, prune=True)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "ratings.csv"
        df.to_csv(csv, index=False)
        read = timed(lambda: S.read_ratings(csv), args.repeats)
        write = timed(lambda: S.write_outputs(pruned, Path(tmp) / "out"), args.repeats)
    result = {
        "data": "synthetic",
        "ratings": len(df),
        "participants": int(df["participant_id"].nunique()),
        "pairs": int(df["pair_id"].nunique()),
        "repeats": args.repeats,
        "target_s": TARGET_S,
        "analyze_median_s": {k: round(statistics.median(v), 3) for k, v in runs.items()},
        "analyze_runs_s": {k: [round(x, 3) for x in v] for k, v in runs.items()},
        "first_call_with_imports_s": round(first_call, 3),
        "read_ratings_median_s": round(statistics.median(read), 3),
        "write_outputs_median_s": round(statistics.median(write), 3),
        "result": {
            "kept": first.n_kept,
            "efa_rows": first.efa.n_rows,
            "factors": first.efa.n_factors,
            "factors_source": first.efa.n_factors_source,
            "pruned": [s["item"] for s in pruned.efa.pruned],
            "kept_after_pruning": pruned.efa.items,
        },
        "machine": machine(),
    }
    result["meets_target"] = all(v < TARGET_S for v in result["analyze_median_s"].values())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for k, v in result["analyze_median_s"].items():
        print(
            f"analyze({k}) on {len(df)} ratings of {result['participants']} participants: median {v:.3f} s "
            f"over {args.repeats} runs (target < {TARGET_S} s)"
        )
    print(
        f"read_ratings: {result['read_ratings_median_s']:.3f} s; "
        f"write_outputs: {result['write_outputs_median_s']:.3f} s; "
        f"first call incl. imports: {first_call:.3f} s"
    )
    print(
        f"kept {first.n_kept}, {first.efa.n_factors} factors ({first.efa.n_factors_source}); "
        f"pruned {result['result']['pruned']}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
