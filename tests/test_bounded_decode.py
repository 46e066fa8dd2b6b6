"""Uploads are bounded before they are decoded (issue 17, point 2).

A few MB of compressed silence can hold hours of audio, gigabytes once decoded. The container's
duration is checked against the study's cap first; decoding stops one frame past the cap when
the header lies or says nothing; FFmpeg is told the format the bytes show and may use only the
file and pipe protocols, so an upload never becomes a playlist, an SDP session or a URL.

The memory figures are measured in a child process that only runs the refusal: VmHWM (peak
resident memory) after the refusal minus the resident memory just before it.
"""

from __future__ import annotations

import http.server
import io
import struct
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.common import audio_decode
from services.usability.audio_intake import IntakeError, store_recording
from tests.helpers.audio import voice, webm_bytes, write_audio
from tests.helpers.intake_memory import refuse_in_child

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

ROOT = Path(__file__).resolve().parents[1]
CAP = 30
PEAK_LIMIT_MB = 100
HOURS_12 = 12 * 3600


# ---------------------------------------------------------------- files, made once per session


def _flac_silence(path: Path, seconds: int, rate: int = 16000) -> Path:
    """Digital silence compresses to a few bytes per FLAC frame: 12 hours is about 2.3 MB."""
    block = np.zeros(rate * 600, np.int16)
    with sf.SoundFile(str(path), "w", rate, 1, "PCM_16", format="FLAC") as f:
        for _ in range(seconds // 600):
            f.write(block)
    return path


def _flac_claiming(src: Path, dest: Path, total_samples: int) -> Path:
    """The same FLAC with STREAMINFO's 36-bit total-samples field overwritten (0 means unknown).
    A test-side byte patch to build the attack; the server never parses containers by hand."""
    data = bytearray(src.read_bytes())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0  # first metadata block: STREAMINFO
    at = 8 + 10  # rate/channels/bps/total: 8 bytes
    word = int.from_bytes(data[at : at + 8], "big")
    word = (word & ~((1 << 36) - 1)) | total_samples
    data[at : at + 8] = word.to_bytes(8, "big")
    dest.write_bytes(bytes(data))
    return dest


def _opus_silence(path: Path, seconds: int, fmt: str, options: dict | None = None) -> Path:
    """Opus in 120 ms frames of silence, written with PyAV: an hour is well under 1 MB."""
    av = pytest.importorskip("av")
    buf = io.BytesIO()
    with av.open(buf, "w", format=fmt, options=options or {}) as out:
        stream = out.add_stream("libopus", rate=48000, layout="mono")
        stream.codec_context.options = {"frame_duration": "120", "application": "voip"}
        n = 48000 * 60
        pcm = np.zeros((1, n), np.int16)
        for i in range(seconds // 60):
            frame = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
            frame.sample_rate, frame.pts = 48000, i * n
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    path.write_bytes(buf.getvalue())
    return path


@pytest.fixture(scope="session")
def long_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("long-audio")
    flac = _flac_silence(d / "12h.flac", HOURS_12)
    files = {
        "flac_12h": flac,
        "flac_unknown_length": _flac_claiming(flac, d / "unknown.flac", 0),
        "flac_claims_10s": _flac_claiming(flac, d / "claims10.flac", 10 * 16000),
    }
    try:
        import av  # noqa: F401
    except ImportError:
        return files
    # a browser's MediaRecorder WebM gives no duration at all ("live": no cues, no Duration)
    files["webm_1h_no_duration"] = _opus_silence(d / "1h.webm", 3600, "webm", {"live": "1"})
    files["ogg_opus_1h"] = _opus_silence(d / "1h.ogg", 3600, "ogg")
    return files


def nothing_stored(tmp_path: Path) -> bool:
    rec = tmp_path / "media" / "recordings"
    return not rec.exists() or not any(rec.iterdir())


# ---------------------------------------------------------------- the length, before decoding


def test_a_12_hour_flac_is_refused_from_its_header_within_100_mb(long_files, tmp_path):
    flac = long_files["flac_12h"]
    assert flac.stat().st_size < 4 * 2**20  # a few MB on the wire (50 MB is allowed)
    assert sf.info(str(flac)).duration == HOURS_12
    peak, said = refuse_in_child(flac, tmp_path)
    # 43200 s is the header's figure: decoding never goes past 30 s, so it was refused undecoded
    assert said.startswith("The recording is too long (43200 s; the limit is 30 s)"), said
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB above idle"  # before: about 5,300 MB
    assert nothing_stored(tmp_path)


def test_a_flac_header_that_lies_cannot_get_past_the_cap(long_files, tmp_path):
    # STREAMINFO says "length unknown" (libsndfile then reports 2**63 frames): decoded, cut at 30 s
    peak, said = refuse_in_child(long_files["flac_unknown_length"], tmp_path)
    assert said.startswith("The recording is too long (more than 30 s; the limit is 30 s)"), said
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB above idle"  # before: about 7,900 MB
    # STREAMINFO says 10 s over 12 hours of frames: only the 10 s it claims are read (silent here)
    peak, said = refuse_in_child(long_files["flac_claims_10s"], tmp_path)
    assert "silent" in said and peak < PEAK_LIMIT_MB, (said, peak)
    assert nothing_stored(tmp_path)


def test_a_wav_whose_data_size_lies_is_measured_not_trusted(tmp_path):
    x, rate = voice(seconds=40, rate=16000)
    good = write_audio(tmp_path / "good.wav", x, rate, "WAV", "PCM_16").read_bytes()
    at = good.index(b"data") + 4

    def with_size(name, size):
        p = tmp_path / name
        p.write_bytes(good[:at] + struct.pack("<I", size) + good[at + 4 :])
        return p

    # a streaming recorder's 0xFFFFFFFF: the length is what the file holds, 40 s, too long
    with pytest.raises(IntakeError, match=r"too long \(40 s; the limit is 30 s\)"):
        store_recording(with_size("ffff.wav", 0xFFFFFFFF), tmp_path / "media", CAP)
    # a header claiming 10 s over 40 s of samples: no more than the 10 s it claims is read
    assert store_recording(with_size("ten.wav", 10 * rate * 2), tmp_path / "media", CAP).duration_s == 10.0
    # the stdlib fallback (WAVs libsndfile refuses) reads at most one frame past the cap
    read = []
    real = audio_decode.wave.Wave_read.readframes

    def counting(self, n):
        read.append(n)
        return real(self, n)

    with pytest.MonkeyPatch.context() as mp:

        def refused(*a, **k):
            raise RuntimeError("libsndfile refuses it")

        mp.setattr(sf, "SoundFile", refused)
        mp.setattr(audio_decode.wave.Wave_read, "readframes", counting)
        with pytest.raises(IntakeError, match=r"too long \(more than 30 s; the limit is 30 s\)"):
            store_recording(with_size("plain.wav", 40 * rate * 2), tmp_path / "media2", CAP)
    assert read and max(read) <= CAP * rate + 1


@pytest.mark.parametrize(
    "name,said",
    [
        ("webm_1h_no_duration", "The recording is too long (more than 30 s; the limit is 30 s)"),  # cut while decoding
        ("ogg_opus_1h", "The recording is too long (3600 s; the limit is 30 s)"),  # from the header
    ],
)
def test_an_hour_of_opus_is_refused_within_100_mb(long_files, tmp_path, name, said):
    if name not in long_files:
        pytest.skip("PyAV is not installed: no Opus writer")
    src = long_files[name]
    assert src.stat().st_size < 2**20
    peak, result = refuse_in_child(src, tmp_path)
    assert result.startswith(said), result
    assert peak < PEAK_LIMIT_MB, f"peak {peak:.0f} MB above idle"  # before: 2,000 / 1,300 MB
    assert nothing_stored(tmp_path)


# ---------------------------------------------------------------- the format, never probed


@pytest.fixture
def av_calls(monkeypatch):
    """Every av.open: its arguments and the demuxer FFmpeg actually used."""
    av = pytest.importorskip("av")
    calls = []
    real = av.open

    def spy(*a, **k):
        call = {"format": k.get("format"), "options": dict(k.get("options") or {}), "opened": None}
        calls.append(call)
        container = real(*a, **k)
        call["opened"] = container.format.name
        return container

    monkeypatch.setattr(av, "open", spy)
    return calls


def test_the_decoder_is_told_the_format_the_bytes_show(tmp_path, av_calls):
    x, rate = voice(seconds=2.5, rate=48000)
    # WebM named .wav: decoded as Matroska, named to FFmpeg (no probing), file/pipe protocols only
    src = tmp_path / "rec.wav"
    src.write_bytes(webm_bytes(x, rate))
    av_calls.clear()  # writing it was not a decode
    s = store_recording(src, tmp_path / "media", CAP)
    assert s.path_original.endswith(".webm") and s.duration_s == pytest.approx(2.5, abs=0.15)
    assert [c["format"] for c in av_calls] == ["matroska"]
    assert av_calls[0]["options"].get("protocol_whitelist") == "file,pipe"
    assert av_calls[0]["opened"].startswith("matroska")
    # FLAC named .wav is read as FLAC; text named .wav is refused
    flac = tmp_path / "flac.wav"
    flac.write_bytes(write_audio(tmp_path / "v.flac", x, rate, "FLAC").read_bytes())
    assert store_recording(flac, tmp_path / "media", CAP).path_original.endswith(".flac")
    (tmp_path / "text.wav").write_text("RIFF? no: just words")
    with pytest.raises(IntakeError, match="not an audio recording"):
        store_recording(tmp_path / "text.wav", tmp_path / "media", CAP)


def test_ffmpeg_never_opens_a_playlist_an_sdp_session_or_a_url(tmp_path, av_calls):
    hits = []

    class Counter(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        playlist = (
            f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n{url}/seg0.ts\n"
            f"#EXTINF:10,\n{url}/seg1.aac\n#EXT-X-ENDLIST\n"
        ).encode()
        concat = f"ffconcat version 1.0\nfile {url}/a.wav\n".encode()
        sdp = b"v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 47004 RTP/AVP 0\r\n"
        id3 = b"ID3\x03\x00\x00\x00\x00\x00\x00"  # an empty ID3 tag: sniffed as MP3
        uploads = {
            "list.m3u8": playlist,
            "list.txt": playlist,
            "tagged.mp3": id3 + playlist,
            "concat.wav": concat,
            "tagged-concat.mp3": id3 + concat,
            "session.mp3": id3 + sdp,
            "url.txt": f"{url}/audio.mp3\n".encode(),
        }
        for name, data in uploads.items():
            (tmp_path / name).write_bytes(data)
            with pytest.raises(IntakeError, match="not an audio recording|could not be decoded"):
                store_recording(tmp_path / name, tmp_path / "media", CAP)
    finally:
        server.shutdown()
        server.server_close()
    assert hits == []
    assert nothing_stored(tmp_path)
    for call in av_calls:  # old code let FFmpeg probe: the ID3-tagged SDP opened the sdp demuxer
        assert call["format"] == "mp3" and call["options"].get("protocol_whitelist") == "file,pipe", call
        assert call["opened"] in (None, "mp3"), call


def test_the_ffmpeg_program_is_given_the_format_the_whitelist_and_a_time_cap(tmp_path, monkeypatch, without_pyav):
    """Without PyAV the ffmpeg program decodes, through a pipe, with -f, the protocol whitelist
    and -t just past the cap; what comes back past the cap is refused."""
    monkeypatch.setattr(audio_decode.shutil, "which", lambda name: "/usr/bin/ffmpeg")
    runs = []

    def fake_run(cmd, input=None, **kw):
        runs.append(cmd)
        seconds = float(cmd[cmd.index("-t") + 1])  # ffmpeg stops its output at -t
        pcm = np.full(int(seconds * 16000), 0.0, np.float32)
        return subprocess.CompletedProcess(cmd, 0, pcm.tobytes(), b"")

    monkeypatch.setattr(subprocess, "run", fake_run)
    src = tmp_path / "rec.webm"
    src.write_bytes(b"\x1aE\xdf\xa3" + bytes(64))
    with pytest.raises(IntakeError, match=r"too long \(more than 30 s; the limit is 30 s\)"):
        store_recording(src, tmp_path / "media", CAP)
    (cmd,) = runs
    assert cmd[cmd.index("-protocol_whitelist") + 1] == "file,pipe"
    assert cmd[cmd.index("-f") + 1] == "matroska" and cmd.index("-f") < cmd.index("-i")
    assert cmd[cmd.index("-i") + 1] == "pipe:0"
    assert CAP < float(cmd[cmd.index("-t") + 1]) <= CAP + 1
