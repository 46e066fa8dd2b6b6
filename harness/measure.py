"""Figures the load tests and the benchmarks report: peak memory of a process, percentiles."""

from __future__ import annotations

from pathlib import Path


def peak_rss_mb(pid: int) -> float | None:
    """A process's peak resident memory so far (VmHWM), in MB; None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]
