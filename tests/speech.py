"""Speech for tests: a text read by Piper, after a short pause like a person who pressed record."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import soundfile as sf


def spoken_wav(text: str, path: Path, lead_s: float = 0.4, cache=None) -> Path:
    from services.models.tts import PiperTTS

    # deterministic: the same text gives the same audio, so ASR-based assertions are stable
    tts = PiperTTS(cache=cache, deterministic=True) if cache is not None else PiperTTS(deterministic=True)
    x, rate = sf.read(io.BytesIO(tts.synthesize(text)), dtype="float32")
    sf.write(str(path), np.concatenate([np.zeros(int(lead_s * rate), np.float32), x]), rate, subtype="PCM_16")
    return path
