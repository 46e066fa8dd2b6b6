"""What every benchmark script shares: repeated timing and a description of the machine."""
from __future__ import annotations

import os
import platform
import time


def timed(fn, repeats: int) -> list[float]:
    """Wall seconds of `repeats` calls of fn()."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def machine(**extra) -> dict:
    """Cores, platform, Python, library versions and the load average (a busy machine skews figures)."""
    import numpy as np
    import pandas as pd

    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "pandas": pd.__version__, "numpy": np.__version__,
            "load_average": [round(x, 2) for x in os.getloadavg()], **extra}
