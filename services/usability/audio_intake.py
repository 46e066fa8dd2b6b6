"""Recording intake: decode a submitted file, check it, and store it under the media folder.

Stores the original (named by content hash, original format) and a 16 kHz mono 16-bit PCM
WAV for ASR. Refusals are phrased for the sender, who records again; nothing is stored then.
Decoding, bounded before it starts, is services/common/audio_decode.py's (model batches decode
files with it too), one decode per link and two in the process at a time (decode_slot); the same
bytes refused once are refused again without decoding (REFUSED).

A participant's recording is staged: its files are written under unique names and moved to their
content names by the save that stores the row naming them (place), or removed when the save does
not take them (discard: a double submit, a refusal in the write). Six concurrent submits of one
item had left ten files that no row named, a person's voice no export or deletion would reach;
sweep() removes any such file left by a crash.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from services.common.audio_decode import IntakeError, decode, decode_slot, to_16k_wav, too_long
from services.common.media_files import atomic_write

STAGED_PREFIX = ".staged-"  # a staged file's name: .staged-<uuid>-<content name>
SWEEP_AFTER_S = 3600.0  # a file no row names is swept once this old (no intake takes this long)
REFUSED_KEPT = 256  # refusals remembered by (content hash, cap, text)

SILENCE_DBFS = -45.0  # a recording whose loudest 50 ms window is quieter is silent
MIN_SECONDS = 1.0  # whatever the text, a recording shorter than this holds nothing
# A recording shorter than this many seconds per word of its text cannot hold it: half the
# fastest reading of the demo's starters by espeak-ng at 450 words per minute (0.116 s a word;
# benchmarks/usability/reading_floor.py), so no honest reading comes near it.
MIN_SECONDS_PER_WORD = 0.058
LEAD_S = 0.1  # the first 100 ms must not already be speech
LEAD_LOUD_DBFS = -30.0  # ... i.e. louder than this and close to the loudest part
LEAD_MARGIN_DB = 12.0


@dataclass(frozen=True)
class StoredAudio:
    sha256: str
    path_original: str
    path_16k: str
    duration_s: float
    # (staged file, its content-named path) still to place (place) or remove (discard)
    staged: tuple[tuple[str, str], ...] = ()


class _Refused:
    """The last REFUSED_KEPT refusals by (content hash, cap, text): the same bytes sent again are
    refused at once, not decoded again."""

    def __init__(self, kept: int = REFUSED_KEPT):
        self.kept, self.lock = kept, threading.Lock()
        self.seen: OrderedDict[tuple, str] = OrderedDict()

    def get(self, key) -> str | None:
        with self.lock:
            return self.seen.get(key)

    def add(self, key, message: str) -> None:
        with self.lock:
            self.seen[key] = message
            while len(self.seen) > self.kept:
                self.seen.popitem(last=False)


REFUSED = _Refused()


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


def store_recording(
    src: str | Path,
    media_dir: str | Path,
    max_seconds: float,
    text: str | None = None,
    key=None,
    staged: bool = False,
) -> StoredAudio:
    """text: what the sender read (a recording too short to hold it is refused); key: whose
    recording it is (one decode per key at a time); staged: the files written under unique names,
    for the save to place (or discard), else at their content names."""
    path = Path(src) if src else None
    if path is None or not path.is_file() or path.stat().st_size == 0:
        raise IntakeError("The recording is empty. Please record again.")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    seen = (digest, max_seconds, text)
    refused = REFUSED.get(seen)
    if refused is not None:
        raise IntakeError(refused)
    try:
        with decode_slot(key if key is not None else object()):
            samples, rate, fmt = decode(data, max_seconds)
            duration = check(samples, rate, max_seconds, text)
    except IntakeError as e:
        if type(e) is IntakeError:  # a busy server is no verdict on the bytes
            REFUSED.add(seen, str(e))
        raise
    folder = Path(media_dir) / "recordings"
    folder.mkdir(parents=True, exist_ok=True)
    original, mono16 = folder / f"{digest}.{fmt}", folder / f"{digest}.16k.wav"
    if not staged:
        if not original.exists():
            atomic_write(original, data)
        if not mono16.exists():
            to_16k_wav(samples, rate, mono16)
        return StoredAudio(digest, str(original), str(mono16), round(duration, 3))
    stage = f"{STAGED_PREFIX}{uuid.uuid4().hex}-"
    staged_original, staged_16k = folder / (stage + original.name), folder / (stage + mono16.name)
    try:
        atomic_write(staged_original, data)
        to_16k_wav(samples, rate, staged_16k)
    except BaseException:
        staged_original.unlink(missing_ok=True)
        staged_16k.unlink(missing_ok=True)
        raise
    pairs = ((str(staged_original), str(original)), (str(staged_16k), str(mono16)))
    return StoredAudio(digest, str(original), str(mono16), round(duration, 3), pairs)


def place(audio: StoredAudio) -> StoredAudio:
    """The staged files moved to their content names (atomic; identical bytes if one is there)."""
    for staged, final in audio.staged:
        os.replace(staged, final)
    return replace(audio, staged=())


def discard(audio: StoredAudio, named: bool) -> None:
    """A recording the save did not take: its staged files removed, and its content-named files
    too when no row names them (named: whether one does, read in the line of saves)."""
    for staged, _ in audio.staged:
        Path(staged).unlink(missing_ok=True)
    if not named:
        Path(audio.path_original).unlink(missing_ok=True)
        Path(audio.path_16k).unlink(missing_ok=True)


def sweep(media_dir: str | Path, named: set[str], older_than_s: float = SWEEP_AFTER_S, clock=time.time) -> int:
    """Remove the recording files (staged, placed or half-written) that no row names (named: the
    file names the recordings rows hold; names, since they are content hashes and a row's folder
    may be written another way), once older_than_s old (an intake under way is never that old);
    how many were removed."""
    folder = Path(media_dir) / "recordings"
    if not folder.is_dir():
        return 0
    removed = 0
    for f in folder.iterdir():
        if not f.is_file() or f.name in named:
            continue
        try:
            if clock() - f.stat().st_mtime >= older_than_s:
                f.unlink()
                removed += 1
        except FileNotFoundError:
            pass
    return removed
