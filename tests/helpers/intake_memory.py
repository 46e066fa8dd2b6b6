"""Peak memory of a recording's intake, measured in a fresh process (tests of bounded decoding)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CAP = 30


CHILD = textwrap.dedent("""
    import json, resource, sys
    sys.path.insert(0, {root!r})
    import numpy, scipy.signal, soundfile                      # what an idle server has loaded
    try:
        import av
    except ImportError:
        pass
    from services.usability.audio_intake import IntakeError, store_recording

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    # the old, unbounded decode would take gigabytes: stop it at 1.5 GB instead of the machine
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + (3 << 29), hard))
    try:
        open("/proc/self/clear_refs", "w").write("5")          # VmHWM := VmRSS now
    except OSError:
        pass
    idle = status("VmRSS")
    try:
        s = store_recording({path!r}, {media!r}, {cap})
        result = "stored %.3f s" % s.duration_s
    except IntakeError as e:
        result = str(e)
    except MemoryError:
        result = "MemoryError"
    print(json.dumps({{"peak_mb": (status("VmHWM") - idle) / 2**20, "result": result}}))
""")


def refuse_in_child(path: Path, tmp_path: Path, cap: int = CAP) -> tuple[float, str]:
    """(peak resident memory above idle in MB, what store_recording said) in a fresh process."""
    code = CHILD.format(root=str(ROOT), path=str(path), media=str(tmp_path / "media"), cap=cap)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    return out["peak_mb"], out["result"]
