"""Every intake refusal, every accepted format, and what is stored."""

from __future__ import annotations

import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.common import audio_decode
from services.usability import audio_intake
from services.usability.audio_intake import IntakeError, store_recording
from tests.helpers.audio import voice, webm_bytes, write_audio


@pytest.mark.parametrize(
    "name,make,msg",
    [
        ("empty.wav", lambda p: p.write_bytes(b""), "empty"),
        ("zero-frames.wav", lambda p: write_audio(p, np.zeros(0, np.float32), 16000), "empty"),
        ("silent.wav", lambda p: write_audio(p, np.zeros(48000, np.float32), 16000), "silent"),
        (
            "hiss.wav",
            lambda p: write_audio(p, (np.random.default_rng(1).normal(0, 0.001, 48000)).astype(np.float32), 16000),
            "silent",
        ),
        ("short.wav", lambda p: write_audio(p, *voice(seconds=0.6, lead_s=0.2)), "too short"),
        ("long.wav", lambda p: write_audio(p, *voice(seconds=31)), "too long"),
        ("clipped-start.wav", lambda p: write_audio(p, *voice(lead_s=0.0)), "cut off"),
        ("notes.wav", lambda p: p.write_text("this is not audio at all"), "not an audio recording"),
        ("image.png", lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200)), "not an audio recording"),
        ("broken.wav", lambda p: p.write_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt " + bytes(8)), "not a readable WAV"),
    ],
)
def test_refusals_store_nothing(tmp_path, name, make, msg):
    src = tmp_path / name
    make(src)
    media = tmp_path / "media"
    with pytest.raises(IntakeError, match=msg):
        store_recording(src, media, 30)
    assert not (media / "recordings").exists() or not any((media / "recordings").iterdir())


def test_the_cap_is_the_studys(tmp_path):
    src = write_audio(tmp_path / "a.wav", *voice(seconds=12))
    with pytest.raises(IntakeError, match="limit is 10 s"):
        store_recording(src, tmp_path / "m", 10)
    assert store_recording(src, tmp_path / "m", 15).duration_s == pytest.approx(12, abs=0.01)


@pytest.mark.parametrize(
    "fmt,subtype,ext",
    [
        ("WAV", "PCM_16", "wav"),
        ("WAV", "FLOAT", "wav"),
        ("FLAC", None, "flac"),
        ("OGG", "VORBIS", "ogg"),
        ("MP3", None, "mp3"),
    ],
)
def test_formats_libsndfile_reads(tmp_path, fmt, subtype, ext):
    x, rate = voice(seconds=3, rate=48000)
    src = write_audio(tmp_path / f"in.{ext}", np.stack([x, x], axis=1), rate, fmt, subtype)
    s = store_recording(src, tmp_path / "media", 30)
    assert s.path_original.endswith(f"{s.sha256}.{ext}")
    assert Path(s.path_original).read_bytes() == src.read_bytes()
    with wave.open(s.path_16k) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        assert abs(w.getnframes() / 16000 - 3.0) < 0.1
    assert s.duration_s == pytest.approx(3.0, abs=0.1)


def test_webm_from_a_browser_decodes_through_ffmpeg(tmp_path):
    x, rate = voice(seconds=2.5, rate=48000)
    src = tmp_path / "rec.webm"
    src.write_bytes(webm_bytes(x, rate))
    s = store_recording(src, tmp_path / "media", 30)
    assert s.path_original.endswith(".webm")
    data, sr = sf.read(s.path_16k)
    assert sr == 16000 and abs(len(data) / sr - 2.5) < 0.15
    assert audio_intake.loudest_dbfs(data, sr) > -20


def test_without_ffmpeg_a_webm_gets_a_clear_message(tmp_path, monkeypatch, without_pyav):
    x, rate = voice(seconds=2.5, rate=48000)
    src = tmp_path / "rec.webm"
    src.write_bytes(webm_bytes(x, rate))
    monkeypatch.setattr(audio_decode.shutil, "which", lambda name: None)
    with pytest.raises(IntakeError, match="WEBM format, which needs FFmpeg.*upload a WAV"):
        store_recording(src, tmp_path / "media", 30)
    # a WAV still works without FFmpeg
    wav = write_audio(tmp_path / "ok.wav", *voice())
    assert store_recording(wav, tmp_path / "media", 30).duration_s == pytest.approx(2.0, abs=0.01)


def test_same_content_is_stored_once(tmp_path):
    src = write_audio(tmp_path / "a.wav", *voice())
    a = store_recording(src, tmp_path / "media", 30)
    b = store_recording(src, tmp_path / "media", 30)
    assert a == b
    assert len(list((tmp_path / "media" / "recordings").iterdir())) == 2  # original + 16 kHz copy


def test_speech_synthesised_without_lead_in_is_cut_off_and_with_lead_in_accepted(tmp_path):
    raw = tmp_path / "espeak.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(raw), "I need a doctor tomorrow morning."], check=True)
    with pytest.raises(IntakeError, match="cut off"):
        store_recording(raw, tmp_path / "media", 30)
    x, rate = sf.read(raw, dtype="float32")
    padded = write_audio(tmp_path / "padded.wav", np.concatenate([np.zeros(int(0.4 * rate), np.float32), x]), rate)
    assert store_recording(padded, tmp_path / "media", 30).duration_s > 1.5
