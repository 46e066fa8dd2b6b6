"""Recording intake: decode a submitted file, check it, and store it under the media folder.

Stores the original (named by content hash, original format) and a 16 kHz mono 16-bit PCM
WAV for ASR. Refusals are phrased for the sender, who records again; nothing is stored then.
Decoding, bounded before it starts, is services/common/audio_decode.py's (model batches decode
files with it too).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.common.audio_decode import IntakeError, decode, to_16k_wav, too_long
from services.common.media_files import atomic_write

SILENCE_DBFS = -45.0  # a recording whose loudest 50 ms window is quieter is silent
MIN_SECONDS = 1.0  # whatever the text, a recording shorter than this holds nothing
# A recording shorter than this many seconds per word of its text cannot hold it: half the
# fastest reading of the demo's starters by espeak-ng at 450 words per minute (0.116 s a word;
# benchmarks/usability/reading_floor.py), so no honest reading comes near it.
MIN_SECONDS_PER_WORD = 0.058
LEAD_S = 0.1  # the first 100 ms must not already be speech
LEAD_LOUD_DBFS = -30.0  # ... i.e. louder than this and close to the loudest part
LEAD_MARGIN_DB = 12.0


@dataclass
class StoredAudio:
    sha256: str
    path_original: str
    path_16k: str
    duration_s: float


def window_dbfs(samples: np.ndarray, rate: int, window_s: float = 0.05) -> np.ndarray:
    n = max(1, int(rate * window_s))
    usable = len(samples) // n * n
    if usable == 0:
        return np.array([-np.inf])
    rms = np.sqrt(np.mean(samples[:usable].reshape(-1, n) ** 2, axis=1))
    with np.errstate(divide="ignore"):
        return 20 * np.log10(rms)


def loudest_dbfs(samples: np.ndarray, rate: int, window_s: float = 0.05) -> float:
    return float(window_dbfs(samples, rate, window_s).max())


def starts_mid_speech(samples: np.ndarray, rate: int) -> bool:
    """Speech already loud in the first 100 ms: the recording began after the sender did."""
    lead = samples[: int(rate * LEAD_S)]
    if len(lead) == 0:
        return False
    with np.errstate(divide="ignore"):
        lead_db = 20 * np.log10(float(np.sqrt(np.mean(lead**2))))
    return lead_db > LEAD_LOUD_DBFS and lead_db > loudest_dbfs(samples, rate) - LEAD_MARGIN_DB


def words(text: str) -> int:
    return len(text.split())


def min_seconds_for(text: str | None) -> float:
    """The shortest recording that can hold a reading of the text (MIN_SECONDS_PER_WORD)."""
    return max(MIN_SECONDS, round(MIN_SECONDS_PER_WORD * words(text or ""), 1))


def check(samples: np.ndarray, rate: int, max_seconds: float, text: str | None = None) -> float:
    """The duration, or IntakeError with the reason a sender understands. With the text read,
    a recording too short to hold it is refused (min_seconds_for)."""
    duration = len(samples) / rate if rate else 0.0
    if duration == 0:
        raise IntakeError("The recording is empty. Please record again.")
    if duration > max_seconds:
        raise too_long(max_seconds, duration)
    if loudest_dbfs(samples, rate) < SILENCE_DBFS:
        raise IntakeError("The recording is silent. Check that your microphone is on and record again.")
    floor = min_seconds_for(text)
    if duration < floor:
        said = (
            f"; reading these {words(text)} words aloud takes well over {floor:.0f} s"
            if text and floor > MIN_SECONDS
            else ""
        )
        raise IntakeError(
            f"The recording is too short ({duration:.1f} s{said}), so it cannot hold the "
            "whole text. Nothing was saved: please record again, reading the whole text."
        )
    if starts_mid_speech(samples, rate):
        raise IntakeError(
            "The start of your recording is cut off: you were already speaking when it "
            "began. Press record, wait a moment, then start reading."
        )
    return duration


def store_recording(src: str | Path, media_dir: str | Path, max_seconds: float, text: str | None = None) -> StoredAudio:
    """text: what the sender read (a recording too short to hold it is refused)."""
    path = Path(src) if src else None
    if path is None or not path.is_file() or path.stat().st_size == 0:
        raise IntakeError("The recording is empty. Please record again.")
    data = path.read_bytes()
    samples, rate, fmt = decode(data, max_seconds)
    duration = check(samples, rate, max_seconds, text)
    digest = hashlib.sha256(data).hexdigest()
    folder = Path(media_dir) / "recordings"
    folder.mkdir(parents=True, exist_ok=True)
    original = folder / f"{digest}.{fmt}"
    if not original.exists():
        atomic_write(original, data)
    mono16 = folder / f"{digest}.16k.wav"
    if not mono16.exists():
        to_16k_wav(samples, rate, mono16)
    return StoredAudio(digest, str(original), str(mono16), round(duration, 3))
