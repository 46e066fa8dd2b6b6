"""How anti-conservative the usability LMM's Wald z p-values are in small studies (issue 27 point 9).

    .venv/bin/python benchmarks/usability/small_sample.py [--reps 300] [--seed 0]

The paper fitted lme4 (pymer4), whose p-values are Satterthwaite t tests; statsmodels' MixedLM
gives Wald z (a normal reference). For the group and gender terms the unit of replication is the
sender (a between-sender factor), so with few senders a z reference is too narrow. This script
simulates studies with paper 000's crossed design (3 groups x 2 genders, k senders per cell, 10
exchanges each, receivers and validators in the paper's proportion to the senders: 60 and 69 per
174; the system/topic/source effects and variance components of benchmarks/usability/analysis.py)
under a NULL effect of group, gender and their interaction, fits the app's LMM
(services.usability.analysis.fit_lmm) and counts how often each of the five group/gender terms
has p < .05. The false-positive rate at alpha .05 is the independent check: a valid test gives
0.05. Writes benchmarks/results/usability_small_sample.json (rates per size, their Monte Carlo
SE, seconds; fits whose group/gender SEs are not finite are counted apart, as
"degenerate") and the smallest size whose pooled rate is at most RATE_OK.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import warnings  # noqa: E402

import numpy as np  # noqa: E402

import benchmarks.usability.analysis as sim  # noqa: E402
from benchmarks.common import machine  # noqa: E402
from services.usability import analysis as U  # noqa: E402

SIZES = (2, 3, 4, 6, 8, 12, 16)  # senders per group x gender cell (6 cells)
ALPHA = 0.05
RATE_OK = 0.06  # a pooled false-positive rate at or under this counts as close to 0.05
TERMS = ("group: USB", "group: USW", "gender: Woman", "group: USB x gender: Woman", "group: USW x gender: Woman")


def null_study(seed: int, k: int):
    """One simulated study of 6 k senders with no group or gender effect (the generator of
    benchmarks/usability/analysis.py with its group, gender and interaction effects set to 0)."""
    sim.GROUP_FX = {g: 0.0 for g in sim.GROUPS}
    sim.WOMAN = 0.0
    sim.INTERACTION = {g: 0.0 for g in sim.GROUPS}
    senders = 6 * k
    raw = sim.synthetic(
        seed,
        senders_per_cell=k,
        receivers=max(3, round(senders * 60 / 174)),
        validators=max(3, round(senders * 69 / 174)),
        drop=0,
        metrics=0,
    )
    return U.normalise(raw.drop(columns=["perspective"]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "usability_small_sample.json"))
    args = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # statsmodels' sqrt of a negative variance: counted
    rows = []
    for k in SIZES:
        t0 = time.perf_counter()
        hits = {t: 0 for t in TERMS}
        fits = failed = degenerate = 0
        for r in range(args.reps):
            d = null_study(args.seed * 100_000 + 1000 * k + r, k)
            try:
                p = U.fit_lmm(d, llf=False).table.set_index("term")["p_value"]
            except (U.UsabilityAnalysisError, np.linalg.LinAlgError, ValueError):
                failed += 1
                continue
            if not np.isfinite([p.get(t, np.nan) for t in TERMS]).all():
                degenerate += 1  # a boundary fit without SEs: neither a hit nor a miss
                continue
            fits += 1
            for t in TERMS:
                hits[t] += bool(p.get(t, 1.0) < ALPHA)
        rates = {t: hits[t] / fits for t in TERMS}
        pooled = sum(hits.values()) / (fits * len(TERMS))
        rows.append(
            {
                "senders_per_cell": k,
                "senders": 6 * k,
                "exchanges": 60 * k,
                "fits": fits,
                "failed": failed,
                "degenerate": degenerate,
                "rate_pooled": pooled,
                "mc_se_pooled_if_independent": math.sqrt(ALPHA * (1 - ALPHA) / (fits * len(TERMS))),
                "rate_per_term": rates,
                "seconds": time.perf_counter() - t0,
            }
        )
        print(
            f"{6 * k:4d} senders ({60 * k} exchanges): false-positive rate {pooled:.3f} "
            f"({', '.join(f'{v:.3f}' for v in rates.values())}) in {rows[-1]['seconds']:.0f} s",
            flush=True,
        )
    ok = [r["senders"] for r in rows if r["rate_pooled"] <= RATE_OK]
    out = {
        "what": "false-positive rate at alpha .05 of the usability LMM's Wald z tests of the group/gender "
        "terms under a null effect (paper 000's crossed design)",
        "alpha": ALPHA,
        "rate_ok": RATE_OK,
        "reps": args.reps,
        "seed": args.seed,
        "terms": list(TERMS),
        "sizes": rows,
        "smallest_ok_senders": min(
            (s for s in ok if all(r["rate_pooled"] <= RATE_OK for r in rows if r["senders"] >= s)), default=None
        ),
        "machine": machine(),
    }
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(
        f"smallest size with the rate at or under {RATE_OK} (and every larger one): "
        f"{out['smallest_ok_senders']} senders; written to {args.out}"
    )


if __name__ == "__main__":
    main()
