"""Time services.da.analysis.analyze() on the WMT22 de-en crowd DA judgments (26,154 rows).

    .venv/bin/python benchmarks/da/analysis.py [FOLDER] [--repeats 5]

FOLDER defaults to ../shared/data/wmt22-deen-da next to the repository; when it is absent a
synthetic set of the same size is generated (recorded as data: synthetic). Reports the median
of the runs for wmt=True and wmt=False (target: under 3 s each) and the conversion time, and
writes benchmarks/results/da_analysis.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks.common import machine, timed  # noqa: E402
from services.da.analysis import analyze  # noqa: E402
from services.da.importer import from_wmt_tsv  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "data" / "wmt22-deen-da"
TARGET_S = 3.0


def synthetic(n: int = 26154, seed: int = 0) -> pd.DataFrame:
    """WMT-shaped stand-in: 150 workers, 10 systems, 2000 segments, ~70/10/10/10 item mix."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(["system", "ask_again", "bad_reference", "reference"], size=n, p=[0.7, 0.1, 0.1, 0.1])
    worker = rng.integers(0, 150, n)
    df = pd.DataFrame(
        {
            "worker_id": [f"W{w:03d}" for w in worker],
            "hit_id": [f"H{w:03d}" for w in worker],
            "modality": "text",
            "system": [f"S{s}" for s in rng.integers(0, 10, n)],
            "segment_id": rng.integers(0, 2000, n).astype(str),
            "item_type": kinds,
            "score": rng.integers(0, 101, n).astype(float),
            "run": 1,
            "duration_s": rng.uniform(2, 60, n),
        }
    )
    # make the controls pair: copy (worker, system, segment) from a system item of the same worker
    sys_rows = df[df.item_type == "system"].groupby("worker_id")
    firsts = {w: g[["system", "segment_id"]].to_numpy() for w, g in sys_rows}
    for i in np.flatnonzero(df.item_type.isin(["ask_again", "bad_reference"]).to_numpy()):
        pool = firsts[df.at[i, "worker_id"]]
        df.loc[i, ["system", "segment_id"]] = pool[rng.integers(len(pool))]
    return df


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "da_analysis.json"))
    args = ap.parse_args()
    tsv = Path(args.folder) / "ad-deen-good-raw-reconstructed.tsv"
    if tsv.exists():
        convert = timed(lambda: from_wmt_tsv(tsv), args.repeats)
        df, data = from_wmt_tsv(tsv), "wmt22-deen-da/ad-deen-good-raw-reconstructed.tsv"
    else:
        convert, df, data = [], synthetic(), "synthetic"
    analyze(df, wmt=True)  # warm-up: first-call imports and caches
    runs = {f"wmt={w}": timed(lambda w=w: analyze(df, wmt=w), args.repeats) for w in (True, False)}
    result = {
        "data": data,
        "judgments": len(df),
        "workers": int(df["worker_id"].nunique()),
        "systems": int(df["system"].nunique()),
        "repeats": args.repeats,
        "target_s": TARGET_S,
        "analyze_median_s": {k: round(statistics.median(v), 3) for k, v in runs.items()},
        "analyze_runs_s": {k: [round(x, 3) for x in v] for k, v in runs.items()},
        "convert_wmt_tsv_median_s": round(statistics.median(convert), 3) if convert else None,
        "machine": machine(),
    }
    result["meets_target"] = all(v < TARGET_S for v in result["analyze_median_s"].values())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    for k, v in result["analyze_median_s"].items():
        print(f"analyze({k}) on {len(df)} judgments: median {v:.3f} s over {args.repeats} runs (target < {TARGET_S} s)")
    if convert:
        print(f"from_wmt_tsv: median {result['convert_wmt_tsv_median_s']:.3f} s")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
