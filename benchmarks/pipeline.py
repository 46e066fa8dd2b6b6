"""Real-time factor per pipeline stage on the demo starters spoken by Piper, cold and warm.

    .venv/bin/python benchmarks/pipeline.py [--starters N] [--system offline-cascade]

Cold: the first starter in a fresh process, model loading included. Warm: the other
starters, models loaded. RTF = stage seconds / seconds of audio (TTS: of the audio made).
Writes benchmarks/results/pipeline.json.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from services.models import systems  # noqa: E402
from services.models.cache import CACHE  # noqa: E402
from services.models.tts import PiperTTS  # noqa: E402
from services.usability.audio_intake import store_recording  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--starters", type=int, default=12)
    ap.add_argument("--system", default=systems.DEFAULT_SYSTEM)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pipeline.json"))
    args = ap.parse_args()
    with open(ROOT / "assets" / "demo_study" / "starters.csv", newline="") as f:
        starters = list(csv.DictReader(f))[: args.starters]
    tts = PiperTTS()
    st = systems.from_preset(args.system)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, s in enumerate(starters):
            t0 = time.perf_counter()
            wav = tts.synthesize(s["text"])
            tts_s = time.perf_counter() - t0
            x, rate = sf.read(io.BytesIO(wav), dtype="float32")
            speech_s = len(x) / rate
            # a person pauses after pressing record; the intake refuses speech in the first 100 ms
            path = Path(tmp) / f"{s['id']}.wav"
            sf.write(str(path), np.concatenate([np.zeros(int(0.4 * rate), np.float32), x]), rate, subtype="PCM_16")
            t0 = time.perf_counter()
            stored = store_recording(path, Path(tmp) / "media", 60)
            intake_s = time.perf_counter() - t0
            res = st.translate_audio(stored.path_16k)
            audio_s = stored.duration_s
            rows.append(
                {
                    "starter": s["id"],
                    "audio_s": round(audio_s, 2),
                    "tts_s": round(tts_s, 3),
                    "intake_s": round(intake_s, 3),
                    **{f"{k}_s": v for k, v in res.seconds.items()},
                    "tts_rtf": round(tts_s / speech_s, 3),
                    "intake_rtf": round(intake_s / audio_s, 4),
                    **{f"{k}_rtf": round(v / audio_s, 3) for k, v in res.seconds.items()},
                    "cascade_rtf": round(sum(res.seconds.values()) / audio_s, 3),
                    "words": len(s["text"].split()),
                    "translation": res.translation,
                }
            )
            print(f"{s['id']}: {audio_s:.1f} s audio, cascade RTF {rows[-1]['cascade_rtf']}", flush=True)
    # warm cache lookup: a loaded model handed out again
    key = CACHE.report()[0]["model"]
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        CACHE.get(key, lambda: None)
    lookup_ms = (time.perf_counter() - t0) / n * 1000
    warm = rows[1:] or rows
    stages = [k[:-4] for k in rows[0] if k.endswith("_rtf")]
    summary = {
        "cold": {k: rows[0][f"{k}_rtf"] for k in stages},
        "warm_mean": {k: round(statistics.mean(r[f"{k}_rtf"] for r in warm), 4) for k in stages},
        "warm_max": {k: round(max(r[f"{k}_rtf"] for r in warm), 4) for k in stages},
    }
    out = {
        "system": args.system,
        "starters": len(rows),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "device": CACHE.device,
        },
        "rtf": summary,
        "warm_cache_lookup_ms": round(lookup_ms, 5),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "models": CACHE.report(),
        "targets": {"warm_cascade_rtf_max": 0.5, "warm_cache_lookup_ms_max": 1.0},
        "met": {"warm_cascade": summary["warm_mean"]["cascade"] <= 0.5, "warm_lookup": lookup_ms < 1.0},
        "per_starter": rows,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=2))
    print(json.dumps({k: out[k] for k in ("rtf", "warm_cache_lookup_ms", "peak_rss_mb", "met")}, indent=2))


if __name__ == "__main__":
    main()
