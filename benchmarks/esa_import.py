"""Issue 53, point 7: a campaign of 100,000 ESA segments imports in under 60 s and under 1 GB.

    .venv/bin/python benchmarks/esa_import.py [--sizes 10000 100000] [--out FILE]

For each size, in a fresh process each (so the peak memory is the import's own): a segments file
of documents of 10 segments, each translated by 4 systems (WMT-like: sizes count segment rows,
one per segment and system), written to a temporary study folder with HITs of 100; then
`import_study` into a new database file, timed, with the process's peak resident memory
(getrusage ru_maxrss) before and after. Figures go to benchmarks/results/esa_import.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
SYSTEMS = ("sysA", "sysB", "sysC", "sysD")
DOC_LEN = 10
WORDS = "the council approved a new budget for schools parks and roads on monday after long debate".split()


def write_study(folder: Path, rows: int) -> None:
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(
        '[study]\nid = "esa-scale"\nname = "ESA at scale"\nprotocols = ["esa"]\nseed = 1\n\n'
        '[esa]\nsegments = "segments.csv"\nhit_size = 100\n',
        encoding="utf-8",
    )
    docs = rows // (DOC_LEN * len(SYSTEMS))
    with open(folder / "segments.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["doc_id", "segment_id", "system", "source", "target", "source_lang", "target_lang"])
        for d in range(docs):
            for system in SYSTEMS:
                for k in range(DOC_LEN):
                    words = [WORDS[(d * 7 + k * 3 + i) % len(WORDS)] for i in range(18)]
                    source = " ".join(words).capitalize() + "."
                    target = f"{system}: " + " ".join(reversed(words)) + "."
                    w.writerow([f"doc{d}", f"doc{d}-{k}", system, source, target, "en", "pt"])


def one(rows: int) -> dict:
    """Runs in its own process: the import of `rows` segment rows, timed."""
    from services.common import protocols
    from services.setup.importer import import_study
    from storage import open_database

    with tempfile.TemporaryDirectory(prefix="esa-import-") as tmp:
        folder = Path(tmp) / "study"
        write_study(folder, rows)
        database = open_database(Path(tmp) / "esa.db", schemas=protocols.schemas())
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        res = import_study(database, folder)
        seconds = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        size = sum(p.stat().st_size for p in Path(tmp).glob("esa.db*"))  # the WAL too
    return {
        "segment_rows": rows,
        "counts": res.counts,
        "import_s": round(seconds, 2),
        "peak_rss_mb": round(peak / 1024, 1),
        "rss_before_import_mb": round(before / 1024, 1),
        "db_mb": round(size / 2**20, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--out", default=str(RESULTS / "esa_import.json"))
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    runs = []
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = runs[-1]
        print(f"{n:>8} rows: import {r['import_s']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB, db {r['db_mb']:.0f} MB")
    result = {
        "benchmark": "esa import at scale (issue 53, point 7)",
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
        "limits": {"import_s": 60, "peak_rss_mb": 1024},
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
