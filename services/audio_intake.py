"""Recording intake: check a submitted file and store it under the media folder.

Stores the original (named by content hash) and a 16 kHz mono 16-bit PCM copy for ASR.
Refusals are phrased for the sender, who records again.
"""
from __future__ import annotations

import hashlib
import shutil
import wave
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

SILENCE_DBFS = -45.0      # a recording whose loudest 50 ms window is quieter is silent
MIN_SECONDS = 1.0


class IntakeError(ValueError):
    """The recording cannot be used; the message tells the sender why."""


@dataclass
class StoredAudio:
    sha256: str
    path_original: str
    path_16k: str
    duration_s: float


def _read_wav(path: Path) -> tuple[np.ndarray, int]:
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, channels, frames = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
            raw = w.readframes(frames)
    except (wave.Error, EOFError) as e:
        raise IntakeError(f"This file is not a readable WAV recording ({e}). Please record again.") from e
    if width == 2:
        data = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    elif width == 1:
        data = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 4:
        data = np.frombuffer(raw, dtype="<i4").astype(np.float32) / 2147483648.0
    else:
        raise IntakeError(f"Unsupported WAV sample width ({width * 8} bit). Please record again.")
    if channels > 1:
        data = data.reshape(-1, channels).mean(axis=1)
    return data, rate


def loudest_dbfs(samples: np.ndarray, rate: int, window_s: float = 0.05) -> float:
    n = max(1, int(rate * window_s))
    usable = len(samples) // n * n
    if usable == 0:
        return -np.inf
    rms = np.sqrt(np.mean(samples[:usable].reshape(-1, n) ** 2, axis=1))
    peak = float(rms.max())
    return 20 * np.log10(peak) if peak > 0 else -np.inf


def store_recording(src: str | Path, media_dir: str | Path, max_seconds: float) -> StoredAudio:
    src = Path(src)
    if not src.is_file() or src.stat().st_size == 0:
        raise IntakeError("The recording is empty. Please record again.")
    samples, rate = _read_wav(src)
    duration = len(samples) / rate if rate else 0.0
    if duration < MIN_SECONDS:
        raise IntakeError(f"The recording is too short ({duration:.1f} s). Please record the whole text.")
    if duration > max_seconds:
        raise IntakeError(f"The recording is too long ({duration:.0f} s; the limit is {max_seconds:.0f} s). "
                          "Please record again, a little faster.")
    if loudest_dbfs(samples, rate) < SILENCE_DBFS:
        raise IntakeError("The recording is silent. Check that your microphone is on and record again.")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    media = Path(media_dir)
    (media / "recordings").mkdir(parents=True, exist_ok=True)
    original = media / "recordings" / f"{digest}.wav"
    if not original.exists():
        shutil.copyfile(src, original)
    mono16 = media / "recordings" / f"{digest}.16k.wav"
    if not mono16.exists():
        g = gcd(16000, rate)
        pcm = resample_poly(samples, 16000 // g, rate // g) if rate != 16000 else samples
        pcm16 = (np.clip(pcm, -1, 1) * 32767).astype("<i2")
        tmp = mono16.with_suffix(".tmp")
        with wave.open(str(tmp), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(pcm16.tobytes())
        tmp.replace(mono16)
    return StoredAudio(digest, str(original), str(mono16), round(duration, 3))
