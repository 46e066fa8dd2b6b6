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


def commit_of(root) -> str:
    """The short commit of a checkout (another one's, measured beside this one: a benchmark's before)."""
    import subprocess

    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def machine(**extra) -> dict:
    """Cores, platform, Python, library versions and the load average (a busy machine skews figures)."""
    import numpy as np
    import pandas as pd

    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **extra,
    }


def start_script_server(script: str, flag: str, tmp, name: str):
    """A bare Gradio app that a benchmark script serves itself (`script flag PORT`), launched as
    a subprocess on a free loopback port: (process, log file, url) once it answers."""
    import subprocess
    import sys
    from pathlib import Path

    from harness.app import free_port, wait_until_up

    port = free_port()
    log_path = Path(tmp) / f"{name}.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, script, flag, str(port)],
        cwd=Path(script).resolve().parent.parent,
        env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    if not wait_until_up(url, 90):
        proc.kill()
        raise RuntimeError(f"the {name} app did not start: " + log_path.read_text()[-2000:])
    return proc, log, url
