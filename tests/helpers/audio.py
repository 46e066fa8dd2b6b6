"""Audio for tests: WAV files of a voice-like tone, raw samples, WebM/Opus as a browser records it."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf


def write_wav(path, seconds=4.0, rate=44100, amplitude=0.3, channels=1, lead_s=0.3):
    """A voice-like tone after a short silence (a sender starts speaking after pressing record)."""
    t = np.arange(int(seconds * rate)) / rate
    sig = amplitude * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    sig[: int(lead_s * rate)] = 0.0
    pcm = (np.repeat(sig[:, None], channels, axis=1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return path


def voice(seconds=2.0, rate=44100, lead_s=0.3, amplitude=0.3):
    t = np.arange(int(seconds * rate)) / rate
    x = amplitude * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    x[: int(lead_s * rate)] = 0.0
    return x.astype(np.float32), rate


def write_audio(path: Path, x, rate, fmt=None, subtype=None) -> Path:
    sf.write(str(path), x, rate, format=fmt, subtype=subtype)
    return path


def webm_bytes(x, rate) -> bytes:
    """A WebM/Opus file like the one a browser's MediaRecorder makes, encoded with PyAV."""
    av = pytest.importorskip("av")
    buf = io.BytesIO()
    with av.open(buf, "w", format="webm") as out:
        stream = out.add_stream("libopus", rate=48000, layout="mono")
        pcm = (x * 32767).astype(np.int16)
        for start in range(0, len(pcm), 960):
            frame = av.AudioFrame.from_ndarray(pcm[None, start : start + 960], format="s16", layout="mono")
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buf.getvalue()


# -- recordings --------------------------------------------------------------------------------
def wav_bytes(x: np.ndarray, rate: int = 16000) -> bytes:
    b = io.BytesIO()
    sf.write(b, x.astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return b.getvalue()


def tone(seconds: float, lead: float = 0.5, rate: int = 16000) -> np.ndarray:
    """A loud warbling tone (speech-like level) after `lead` seconds of near silence."""
    t = np.arange(int(seconds * rate)) / rate
    x = 0.3 * np.sin(2 * np.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * t))
    n = int(lead * rate)
    x[:n] = 0.001 * np.random.default_rng(0).standard_normal(n)
    return x
