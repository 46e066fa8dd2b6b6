"""Decoding an uploaded recording to mono samples, bounded, and the 16 kHz WAV that ASR reads.

Decoding: libsndfile (soundfile) reads WAV, FLAC, OGG and MP3. Browser formats such as
WebM/Opus or M4A need FFmpeg: FFmpeg's libraries through PyAV (installed with faster-whisper),
else the ffmpeg program. Without either the sender is told so.

Bounded before decoded: the upload is at most TRADLAB_MAX_UPLOAD_MB, but a few MB of compressed
audio can hold hours. The container's own duration is checked against the study's cap first;
decoding then reads block by block and stops one frame past the cap, so a header that lies (or
gives no length, as a browser's WebM does) cannot get further. A cap in seconds is not one in
samples: 29 s of FLAC silence at 655,350 Hz in 8 channels is 161 KB and 152 million samples, so
the header's sample rate and channel count are bounded too (MAX_RATE, MAX_CHANNELS: what any
microphone or recorder app makes), before a sample is read. FFmpeg is told the format the
bytes show (no probing: a file cannot turn into a playlist or an SDP session) and may use only
the file and pipe protocols. At most DECODES_AT_ONCE recordings decode at a time in a process,
one per key (a participant's link) at a time (decode_slot).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import threading
import wave
from contextlib import contextmanager
from math import gcd
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

TARGET_RATE = 16000
MAX_RATE = 96_000  # Hz: studio recorders go to 96 kHz; browsers record at 44.1 or 48 kHz
MAX_CHANNELS = 2  # a phone, headset or laptop microphone is mono or stereo
DECODES_AT_ONCE = 2  # recordings decoding at a time in the process (the 2-core reference machine)
DECODE_WAIT_S = 20.0  # how long a recording waits for a turn before the sender is asked to retry
HEADER_SLACK_S = 0.5  # a container duration this close to the cap is decoded and measured instead
DECODE_MARGIN_S = 0.5  # the ffmpeg program decodes at most cap + this (-t), so "too long" is seen
_SF_UNKNOWN_FRAMES = 1 << 62  # libsndfile's frame count for a FLAC whose header gives no length
# the formats libsndfile reads, as _sniff names them -> what libsndfile must find in the bytes
_SNDFILE_FORMATS = {"wav": ("WAV", "WAVEX", "RF64"), "flac": ("FLAC",), "ogg": ("OGG",), "mp3": ("MP3", "MPEG")}
# FFmpeg demuxer for each sniffed format: it is named, never probed (no playlist, SDP or concat)
_FFMPEG_DEMUXERS = {"wav": "wav", "flac": "flac", "ogg": "ogg", "mp3": "mp3", "webm": "matroska", "m4a": "mp4"}


class IntakeError(ValueError):
    """The recording cannot be used; the message tells the sender why."""


def too_long(max_seconds: float, duration: float | None = None) -> IntakeError:
    said = f"{duration:.0f} s" if duration is not None else f"more than {max_seconds:.0f} s"
    return IntakeError(
        f"The recording is too long ({said}; the limit is {max_seconds:.0f} s). Please record again, a little faster."
    )


def unusual_format(rate: int, channels: int) -> IntakeError | None:
    """The refusal of a header beyond any ordinary recording (None: it may be decoded)."""
    if 0 < rate <= MAX_RATE and 0 < channels <= MAX_CHANNELS:
        return None
    return IntakeError(
        f"This recording's format is not one we take ({rate:,} Hz, {channels} channels; at most "
        f"{MAX_RATE:,} Hz and {MAX_CHANNELS} channels). Please record again with the page's recorder."
    )


def _bounded(rate: int, channels: int) -> None:
    refusal = unusual_format(rate, channels)
    if refusal is not None:
        raise refusal


class Busy(IntakeError):
    """No decoding turn came in time, or the same link is decoding another recording."""


_turns = threading.BoundedSemaphore(DECODES_AT_ONCE)
_decoding: set = set()  # the keys with a decode under way
_decoding_lock = threading.Lock()


@contextmanager
def decode_slot(key, wait_s: float = DECODE_WAIT_S):
    """A turn to decode: one at a time per key (a second recording from the same link while the
    first decodes is refused at once) and at most DECODES_AT_ONCE in the process, waiting up to
    wait_s for one. A burst from many links then queues here instead of decoding side by side
    (six at once had taken +1.3 GB before the header bounds; now each is at most ~40 MB)."""
    with _decoding_lock:
        if key in _decoding:
            raise Busy("Your previous recording is still being checked. Please wait a moment before submitting again.")
        _decoding.add(key)
    try:
        if not _turns.acquire(timeout=wait_s):
            raise Busy("The server is busy checking other recordings. Please submit again in a minute.")
        try:
            yield
        finally:
            _turns.release()
    finally:
        with _decoding_lock:
            _decoding.discard(key)


def _cap_frames(rate: int, max_seconds: float | None) -> int | None:
    """Frames beyond which a recording is too long (check() refuses len / rate > max_seconds)."""
    return None if max_seconds is None else int(max_seconds * rate)


class _Mono:
    """Mono float32 blocks gathered up to a frame cap: one frame past it refuses the recording."""

    def __init__(self, cap: int | None, max_seconds: float | None):
        self.cap, self.max_seconds, self.n = cap, max_seconds, 0
        self.blocks: list[np.ndarray] = []

    def add(self, block: np.ndarray) -> None:
        self.blocks.append(block)
        self.n += len(block)
        if self.cap is not None and self.n > self.cap:
            self.blocks.clear()
            assert self.max_seconds is not None  # the cap is made from it (_cap_frames)
            raise too_long(self.max_seconds)

    def samples(self) -> np.ndarray:
        return np.concatenate(self.blocks).astype(np.float32, copy=False) if self.blocks else np.zeros(0, np.float32)


def _header_check(seconds: float | None, max_seconds: float | None) -> None:
    """Refuse from the container's own duration, before anything is decoded."""
    if max_seconds is not None and seconds is not None and seconds > max_seconds + HEADER_SLACK_S:
        raise too_long(max_seconds, seconds)


def _decode_sndfile(data: bytes, fmt: str, max_seconds: float | None) -> tuple[np.ndarray, int]:
    """libsndfile, read block by block up to the cap; the length in the header is checked first."""
    # lazy import (soundfile): audio decoding; loaded only when a file is decoded
    import soundfile as sf

    with sf.SoundFile(io.BytesIO(data)) as f:
        if f.format not in _SNDFILE_FORMATS[fmt]:
            raise ValueError(f"libsndfile reads it as {f.format}")
        rate = int(f.samplerate)
        if rate <= 0:
            raise ValueError("no sample rate")
        _bounded(rate, int(f.channels))
        known = f.frames if 0 < f.frames < _SF_UNKNOWN_FRAMES else None  # FLAC may say "unknown"
        _header_check(known / rate if known else None, max_seconds)
        cap = _cap_frames(rate, max_seconds)
        out = _Mono(cap, max_seconds)
        block = max(1, rate * 5)
        while True:
            want = block if cap is None else min(block, cap + 1 - out.n)
            x = f.read(want, dtype="float32", always_2d=True)
            if len(x) == 0:
                break
            out.add(x.mean(axis=1))
    return out.samples(), rate


def _decode_pyav(data: bytes, fmt: str, max_seconds: float | None) -> tuple[np.ndarray, int]:
    """FFmpeg's libraries: the demuxer named (never probed), no protocols beyond file and pipe,
    the container's duration checked first, and decoding stopped one frame past the cap."""
    # lazy import (av): audio decoding; loaded only when a file is decoded
    import av

    with av.open(
        io.BytesIO(data), mode="r", format=_FFMPEG_DEMUXERS[fmt], options={"protocol_whitelist": "file,pipe"}
    ) as container:
        stream = next(iter(container.streams.audio), None)
        if stream is None:
            raise ValueError("no audio stream")
        if stream.duration and stream.time_base:
            seconds = float(stream.duration * stream.time_base)
        elif container.duration:
            seconds = container.duration / av.time_base
        else:
            seconds = None  # a browser's WebM has none: the cap below decides
        _header_check(seconds, max_seconds)
        rate = int(stream.rate or 48000)
        _bounded(rate, int(stream.channels or 1))
        resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
        out = _Mono(_cap_frames(rate, max_seconds), max_seconds)
        for frame in container.decode(stream):
            for piece in resampler.resample(frame):
                out.add(piece.to_ndarray().reshape(-1))
        for piece in resampler.resample(None):
            out.add(piece.to_ndarray().reshape(-1))
    return out.samples(), rate


def _decode_ffmpeg_program(data: bytes, fmt: str, max_seconds: float | None) -> tuple[np.ndarray, int]:
    """The ffmpeg program, fed through a pipe: the demuxer named with -f, protocols limited to
    file and pipe, output cut with -t just past the cap and converted to 16 kHz mono float (so its
    output is bounded whatever the input's rate and channels; it streams, holding little)."""
    cmd = [
        "ffmpeg",
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-protocol_whitelist",
        "file,pipe",
        "-f",
        _FFMPEG_DEMUXERS[fmt],
        "-i",
        "pipe:0",
        "-map",
        "0:a:0",
        "-ac",
        "1",
        "-ar",
        str(TARGET_RATE),
        "-c:a",
        "pcm_f32le",
    ]
    if max_seconds is not None:
        cmd += ["-t", f"{max_seconds + DECODE_MARGIN_S:.3f}"]
    cmd += ["-f", "f32le", "pipe:1"]
    run = subprocess.run(cmd, input=data, capture_output=True, timeout=120, check=False)
    if run.returncode != 0:
        raise ValueError(run.stderr.decode("utf-8", "replace").strip()[-200:] or f"ffmpeg exit {run.returncode}")
    x = np.frombuffer(run.stdout[: len(run.stdout) // 4 * 4], dtype="<f4")
    cap = _cap_frames(TARGET_RATE, max_seconds)
    if max_seconds is not None and cap is not None and len(x) > cap:
        raise too_long(max_seconds)
    return x.astype(np.float32), TARGET_RATE


def _ffmpeg_decoder():
    """A function decoding through FFmpeg, or None when there is none: PyAV (in process) first,
    else the ffmpeg program."""
    try:
        import av  # noqa: F401

        return _decode_pyav
    except ImportError:
        pass
    if shutil.which("ffmpeg"):
        return _decode_ffmpeg_program
    return None


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


def decode(data: bytes, max_seconds: float | None = None) -> tuple[np.ndarray, int, str]:
    """(mono float32 samples in -1..1, sample rate, format) or IntakeError.

    With max_seconds, a recording is refused from its container's duration before it is decoded,
    and decoding stops one frame past the cap whatever the header said (a few MB of compressed
    silence can hold hours). The format is the one its bytes show; the decoder is told it."""
    fmt = _sniff(data)
    if fmt == "bin":
        raise IntakeError("This file is not an audio recording we can read. Please record again, or upload a WAV file.")
    if fmt in _SNDFILE_FORMATS:
        try:
            x, rate = _decode_sndfile(data, fmt, max_seconds)
            return x, rate, fmt
        except IntakeError:
            raise
        except Exception:
            if fmt == "wav":
                return (*_read_wav_stdlib(data, max_seconds), fmt)
    decoder = _ffmpeg_decoder()
    if decoder is None:
        raise IntakeError(
            f"This recording is in {fmt.upper()} format, which needs FFmpeg on the server, "
            "and it is not installed. Please upload a WAV file instead, or ask the study "
            "team to install ffmpeg."
        )
    try:
        x, rate = decoder(data, fmt, max_seconds)
    except IntakeError:
        raise
    except Exception as e:
        raise IntakeError(
            f"This {fmt.upper()} file could not be decoded ({type(e).__name__}). "
            "Please record again, or upload a WAV file."
        ) from e
    return x.astype(np.float32, copy=False), int(rate), fmt


def _read_wav_stdlib(data: bytes, max_seconds: float | None = None) -> tuple[np.ndarray, int]:
    """WAV variants libsndfile refuses (e.g. a header with a wrong length) still decode here,
    never more than one frame past the cap."""
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
            _bounded(rate, channels)
            cap = _cap_frames(rate, max_seconds)
            n = w.getnframes() if cap is None else min(w.getnframes(), cap + 1)
            raw = w.readframes(n)
    except (wave.Error, EOFError) as e:
        detail = f" ({e})" if str(e) else ""  # a cut-off header raises EOFError without a message
        raise IntakeError(f"This file is not a readable WAV recording{detail}. Please record again.") from e
    if width != 2:
        raise IntakeError(f"Unsupported WAV sample width ({width * 8} bit). Please record again.")
    raw = raw[: len(raw) // (2 * channels) * 2 * channels]
    x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
    x = x.reshape(-1, channels).mean(axis=1)
    if cap is not None and max_seconds is not None and len(x) > cap:  # (a cap comes with its limit)
        raise too_long(max_seconds)
    return x, rate


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
