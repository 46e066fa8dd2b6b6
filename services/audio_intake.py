"""Recording intake: decode a submitted file, check it, and store it under the media folder.

Stores the original (named by content hash, original format) and a 16 kHz mono 16-bit PCM
WAV for ASR. Refusals are phrased for the sender, who records again; nothing is stored then.

Decoding: libsndfile (soundfile) reads WAV, FLAC, OGG and MP3. Browser formats such as
WebM/Opus or M4A need FFmpeg: the ffmpeg program through pydub, or FFmpeg's libraries
through PyAV (installed with faster-whisper). Without either the sender is told so.
"""
from __future__ import annotations

import hashlib
import io
import shutil
import wave
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

from services.media_files import atomic_write

SILENCE_DBFS = -45.0      # a recording whose loudest 50 ms window is quieter is silent
MIN_SECONDS = 1.0
LEAD_S = 0.1              # the first 100 ms must not already be speech
LEAD_LOUD_DBFS = -30.0    # ... i.e. louder than this and close to the loudest part
LEAD_MARGIN_DB = 12.0
TARGET_RATE = 16000


class IntakeError(ValueError):
    """The recording cannot be used; the message tells the sender why."""


@dataclass
class StoredAudio:
    sha256: str
    path_original: str
    path_16k: str
    duration_s: float


def _ffmpeg_decoder():
    """A function decoding compressed audio through FFmpeg, or None when there is none."""
    if shutil.which("ffmpeg"):
        def with_pydub(data: bytes):
            from pydub import AudioSegment
            seg = AudioSegment.from_file(io.BytesIO(data))
            x = np.array(seg.get_array_of_samples(), dtype=np.float32) / float(1 << (8 * seg.sample_width - 1))
            return x.reshape(-1, seg.channels).mean(axis=1), seg.frame_rate
        return with_pydub
    try:
        import av  # noqa: F401
    except ImportError:
        return None

    def with_pyav(data: bytes):
        import av
        with av.open(io.BytesIO(data)) as container:
            stream = next((s for s in container.streams if s.type == "audio"), None)
            if stream is None:
                raise ValueError("no audio stream")
            resampler = av.AudioResampler(format="flt", layout="mono", rate=stream.rate or 48000)
            chunks = []
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
            rate = resampler.rate
        return (np.concatenate(chunks) if chunks else np.zeros(0, np.float32)), rate
    return with_pyav


def _sniff(data: bytes) -> str:
    """The container by its magic bytes: the extension a browser gives is not trusted."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:4] == b"fLaC":
        return "flac"
    if data[:4] == b"OggS":
        return "ogg"
    if data[:4] == b"\x1aE\xdf\xa3":
        return "webm"
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "mp3"
    if data[4:8] == b"ftyp":
        return "m4a"
    return "bin"


def decode(data: bytes) -> tuple[np.ndarray, int, str]:
    """(mono float32 samples in -1..1, sample rate, format) or IntakeError."""
    fmt = _sniff(data)
    if fmt in ("wav", "flac", "ogg", "mp3"):
        import soundfile as sf
        try:
            x, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
            return x.mean(axis=1), int(rate), fmt
        except Exception:
            if fmt == "wav":
                return (*_read_wav_stdlib(data), fmt)
    if fmt == "bin":
        raise IntakeError("This file is not an audio recording we can read. "
                          "Please record again, or upload a WAV file.")
    decoder = _ffmpeg_decoder()
    if decoder is None:
        raise IntakeError(f"This recording is in {fmt.upper()} format, which needs FFmpeg on the server, "
                          "and it is not installed. Please upload a WAV file instead, or ask the study "
                          "team to install ffmpeg.")
    try:
        x, rate = decoder(data)
    except Exception as e:
        raise IntakeError(f"This {fmt.upper()} file could not be decoded ({type(e).__name__}). "
                          "Please record again, or upload a WAV file.") from e
    return x.astype(np.float32), int(rate), fmt


def _read_wav_stdlib(data: bytes) -> tuple[np.ndarray, int]:
    """WAV variants libsndfile refuses (e.g. a header with a wrong length) still decode here."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as e:
        detail = f" ({e})" if str(e) else ""     # a cut-off header raises EOFError without a message
        raise IntakeError(f"This file is not a readable WAV recording{detail}. Please record again.") from e
    if width != 2:
        raise IntakeError(f"Unsupported WAV sample width ({width * 8} bit). Please record again.")
    x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    return x.reshape(-1, channels).mean(axis=1), rate


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
        lead_db = 20 * np.log10(float(np.sqrt(np.mean(lead ** 2))))
    return lead_db > LEAD_LOUD_DBFS and lead_db > loudest_dbfs(samples, rate) - LEAD_MARGIN_DB


def check(samples: np.ndarray, rate: int, max_seconds: float) -> float:
    """The duration, or IntakeError with the reason a sender understands."""
    duration = len(samples) / rate if rate else 0.0
    if duration == 0:
        raise IntakeError("The recording is empty. Please record again.")
    if duration > max_seconds:
        raise IntakeError(f"The recording is too long ({duration:.0f} s; the limit is {max_seconds:.0f} s). "
                          "Please record again, a little faster.")
    if loudest_dbfs(samples, rate) < SILENCE_DBFS:
        raise IntakeError("The recording is silent. Check that your microphone is on and record again.")
    if duration < MIN_SECONDS:
        raise IntakeError(f"The recording is too short ({duration:.1f} s). Please record the whole text.")
    if starts_mid_speech(samples, rate):
        raise IntakeError("The start of your recording is cut off: you were already speaking when it "
                          "began. Press record, wait a moment, then start reading.")
    return duration


def to_16k_wav(samples: np.ndarray, rate: int, dest: Path) -> None:
    g = gcd(TARGET_RATE, rate)
    pcm = resample_poly(samples, TARGET_RATE // g, rate // g) if rate != TARGET_RATE else samples
    pcm16 = (np.clip(pcm, -1, 1) * 32767).astype("<i2")
    tmp = dest.with_suffix(".tmp")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(TARGET_RATE)
        w.writeframes(pcm16.tobytes())
    tmp.replace(dest)


def store_recording(src: str | Path, media_dir: str | Path, max_seconds: float) -> StoredAudio:
    src = Path(src) if src else None
    if src is None or not src.is_file() or src.stat().st_size == 0:
        raise IntakeError("The recording is empty. Please record again.")
    data = src.read_bytes()
    samples, rate, fmt = decode(data)
    duration = check(samples, rate, max_seconds)
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
