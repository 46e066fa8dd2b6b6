"""The shortest time the demo's starters can be read aloud: the floor of a recording's length.

Each starter of assets/demo_study/starters.csv is read by the project's espeak-ng TTS
(services/models/tts.py) at 450 words per minute, the top of the range espeak-ng documents
(above it, its sonic speed-up makes speech nobody speaks), and at 175 (its default) for
comparison. The speech's span (first to last 50 ms window above the silence level that intake
uses) over the starter's word count gives seconds per word; the floor that intake applies
(services/usability/audio_intake.MIN_SECONDS_PER_WORD) is half the fastest of them, so no
honest reading, however fast, comes near it. Writes benchmarks/results/reading_floor.json.

    .venv/bin/python benchmarks/usability/reading_floor.py
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from services.models.tts import EspeakTTS  # noqa: E402
from services.usability.audio_intake import MIN_SECONDS_PER_WORD, SILENCE_DBFS, window_dbfs, words  # noqa: E402

FASTEST_WPM = 450
SAFETY = 0.5  # the floor is this share of the fastest reading measured


def speech_span(wav: bytes) -> float:
    import soundfile as sf

    x, rate = sf.read(io.BytesIO(wav), dtype="float32")
    loud = np.flatnonzero(window_dbfs(x, rate) > SILENCE_DBFS)
    return float((loud[-1] - loud[0] + 1) * 0.05) if len(loud) else 0.0


def main() -> int:
    with open(ROOT / "assets" / "demo_study" / "starters.csv", encoding="utf-8", newline="") as f:
        starters = list(csv.DictReader(f))
    rows = []
    for s in starters:
        n = words(s["text"])
        row = {"starter": s["id"], "words": n}
        for wpm in (175, FASTEST_WPM):
            span = speech_span(EspeakTTS(voice="en-us", speed=wpm).synthesize(s["text"]))
            row[f"seconds_at_{wpm}"] = round(span, 2)
            row[f"seconds_per_word_at_{wpm}"] = round(span / n, 4)
        rows.append(row)
        print(row)
    fastest = min(r[f"seconds_per_word_at_{FASTEST_WPM}"] for r in rows)
    floor = round(SAFETY * fastest, 3)
    out = {
        "tts": "espeak-ng en-us",
        "fastest_wpm": FASTEST_WPM,
        "safety": SAFETY,
        "fastest_seconds_per_word": fastest,
        "floor_seconds_per_word": floor,
        "constant_in_code": MIN_SECONDS_PER_WORD,
        "starters": rows,
        "machine": machine(),
    }
    print(
        f"fastest {fastest} s/word at {FASTEST_WPM} wpm -> floor {floor} s/word "
        f"(audio_intake.MIN_SECONDS_PER_WORD = {MIN_SECONDS_PER_WORD})"
    )
    (ROOT / "benchmarks" / "results" / "reading_floor.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
