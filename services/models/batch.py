"""Batch use from the command line: translate audio files with a system, speak a text.

Unlike a participant's recording, a file here is not held to the study's intake rules
(a synthesised file may start with speech): it is decoded and resampled to 16 kHz only.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from services.common.audio_decode import decode, to_16k_wav
from services.models import systems, tts
from services.models.cache import CACHE


def translate_files(paths: list[str], system: str = systems.DEFAULT_SYSTEM, cache=CACHE) -> list[dict]:
    st = systems.from_preset(system, cache)
    out = []
    with tempfile.TemporaryDirectory(prefix="tradlab-") as tmp:
        for i, path in enumerate(paths):
            t0 = time.perf_counter()
            samples, rate, fmt = decode(Path(path).read_bytes())
            wav16 = Path(tmp) / f"{i}.16k.wav"
            to_16k_wav(samples, rate, wav16)
            intake_s = time.perf_counter() - t0
            res = st.translate_audio(str(wav16))
            audio_s = len(samples) / rate
            seconds = {"intake": round(intake_s, 3), **res.seconds}
            total = sum(seconds.values())
            out.append(
                {
                    "file": str(path),
                    "system": system,
                    "audio_s": round(audio_s, 3),
                    "transcript": res.transcript,
                    "translation": res.translation,
                    "seconds": seconds,
                    "total_s": round(total, 3),
                    "real_time_factor": round(total / audio_s, 3) if audio_s else None,
                    "models": res.models,
                    "precision": res.precision,
                    **({"cut": res.cut} if res.cut else {}),
                }
            )
    return out


def speak_to_file(text: str, lang: str, out: str | Path, backend: str | None = None, voice: str | None = None) -> dict:
    if not text.strip():
        raise ValueError("nothing to say: the text is empty")
    engine = tts.choose(lang, backend, voice)
    t0 = time.perf_counter()
    wav = engine.synthesize(text)
    secs = time.perf_counter() - t0
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(wav)
    return {
        "out": str(out),
        "backend": engine.name,
        "voice": engine.voice,
        "seconds": round(secs, 3),
        "bytes": len(wav),
    }
