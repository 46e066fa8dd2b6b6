"""A DA rater's arrival as the campaign grows: choosing the least-held HIT and modality.

    .venv/bin/python benchmarks/da/enrol.py [--sizes 10 100 1000]

The demo study's DA campaign (modality both, 24-item HITs) with 10, 100 and 1000 raters
enrolled (24 DA assignments each); at each size, the median of 20 calls of
storage.da.hits.da_hit_loads and the modality counts derived from it (one indexed row per rater:
the rater's first item of their HIT) against the same counts from every DA assignment of the
study (the two queries they replaced, run here as the before), and the median of 5 arrivals (add_participants of one
rater: the counts, the HIT's 24 assignments and its render job). Writes
benchmarks/results/da_enrol.json.
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

from benchmarks.common import machine  # noqa: E402
from services.da.campaign import modality_counts  # noqa: E402
from services.setup.enrolment import add_participants  # noqa: E402
from services.setup.importer import import_study  # noqa: E402
from storage import open_database  # noqa: E402
from storage.da import hits  # noqa: E402

WHOLE_PHASE = (
    "FROM assignments WHERE study_id = ? AND phase = 'da' AND status != 'withdrawn' AND participant_id "
    "NOT IN (SELECT participant_id FROM assignments WHERE study_id = ? AND phase = 'da' "
    "AND status = 'withdrawn')"
)


def before(db, sid: str):
    """The counts as they were read before: every DA assignment of the study."""
    loads = db.query(
        "SELECT json_extract(meta, '$.hit_id') AS hit, json_extract(meta, '$.modality') AS m, "
        "COALESCE(json_extract(meta, '$.run'), 1) AS run, COUNT(DISTINCT participant_id) AS n "
        f"{WHOLE_PHASE} GROUP BY hit, m, run",
        [sid, sid],
    )
    mods = db.query(
        f"SELECT json_extract(meta, '$.modality') AS m, COUNT(DISTINCT participant_id) AS n {WHOLE_PHASE} GROUP BY m",
        [sid, sid],
    )
    return ({(r["hit"], r["m"], r["run"]): r["n"] for r in loads}, {r["m"]: r["n"] for r in mods})


def after(db, sid: str):
    loads = hits.da_hit_loads(db, sid)
    return loads, modality_counts(loads)


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) * 1000, 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "da_enrol.json"))
    args = ap.parse_args()
    from harness.demo import DEMO

    db = open_database(str(Path(tempfile.mkdtemp()) / "enrol.db"))
    sid = import_study(db, DEMO).study_id
    rows, enrolled = [], 0
    for size in sorted(args.sizes):
        while enrolled < size:
            step = min(50, size - enrolled)
            add_participants(db, sid, "da", step)
            enrolled += step
        assert before(db, sid) == after(db, sid), "the counts differ from the whole-phase query"
        row = {
            "raters": enrolled,
            "da_assignments": db.scalar("SELECT COUNT(*) FROM assignments WHERE study_id = ? AND phase = 'da'", [sid]),
            "counts_before_ms": median_ms(lambda: before(db, sid), 20),
            "counts_after_ms": median_ms(lambda: after(db, sid), 20),
            "arrival_ms": median_ms(lambda: add_participants(db, sid, "da", 1), 5),
        }
        enrolled += 5
        rows.append(row)
        print(row, flush=True)
    Path(args.out).write_text(json.dumps({"machine": machine(), "sizes": rows}, indent=1) + "\n", encoding="utf-8")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
