"""The remote (OpenAI-compatible) backends against a local server that runs the real offline
models (tests/openai_server.py): what they send, what they return, and how they fail."""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
import wave

import pytest

from harness.app import free_port
from services.models.backends import BackendUnavailable
from services.models.backends.remote import RemoteASR, RemoteMT, RemoteSpeechLLM
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

KEY_ENV = "TRADLAB_TEST_REMOTE_KEY"
KEY = "sk-test-123"
PROMPT = "Translate this English speech into Brazilian Portuguese. Reply with the translation only."
MT_PROMPT = "Translate into Brazilian Portuguese. Reply with the translation only.\nEnglish: {text}"


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(models={"voxtral", "whisper", "mt"}, api_key=KEY) as srv:
        yield srv


@pytest.fixture(autouse=True)
def api_key(monkeypatch, server):
    monkeypatch.setenv(KEY_ENV, KEY)
    server.requests.clear()
    yield
    server.delay_s, server.override = 0.0, None


SENTENCE = "I need a doctor tomorrow morning"


def _speak_english(text: str) -> bytes:
    """Piper (services/models/tts.py) when its voice is installed, else espeak-ng."""
    try:
        from services.models.tts import PiperTTS

        return PiperTTS().synthesize(text)
    except (ImportError, BackendUnavailable):
        if not shutil.which("espeak-ng"):
            pytest.skip("neither Piper nor espeak-ng is installed")
        res = subprocess.run(["espeak-ng", "-v", "en-us", "--stdout", text], check=True, capture_output=True)
        return res.stdout


def _pad_with_silence(wav: bytes, seconds: float = 0.4) -> bytes:
    # A real recording starts before the speech; intake refuses one that starts mid-word.
    with wave.open(io.BytesIO(wav), "rb") as r:
        params, frames = r.getparams(), r.readframes(r.getnframes())
    gap = b"\0" * (int(params.framerate * seconds) * params.sampwidth * params.nchannels)
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setparams(params)
        w.writeframes(gap + frames + gap)
    return out.getvalue()


@pytest.fixture(scope="module")
def wav16k(tmp_path_factory):
    """Spoken English, stored the way the app stores recordings (16 kHz mono PCM)."""
    from services.usability.audio_intake import store_recording

    tmp = tmp_path_factory.mktemp("speech")
    raw = tmp / "f.wav"
    raw.write_bytes(_pad_with_silence(_speak_english(SENTENCE)))
    return store_recording(raw, tmp / "media", 30).path_16k


def test_speech_llm_round_trip(server, wav16k):
    llm = RemoteSpeechLLM(server.base_url + "/", "voxtral", PROMPT, api_key_env=KEY_ENV, max_tokens=200)
    out = llm.translate_audio(wav16k)
    assert "médico" in out.lower()
    assert out == out.strip()

    (req,) = server.requests
    assert req.path == "/v1/chat/completions"  # the trailing slash in base_url is dropped
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["content-type"].startswith("application/json")
    body = req.json
    assert body["model"] == "voxtral" and body["temperature"] == 0 and body["max_tokens"] == 200
    (msg,) = body["messages"]
    assert msg["role"] == "user"
    audio, text = msg["content"]
    assert text == {"type": "text", "text": PROMPT}
    assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
    with open(wav16k, "rb") as f:
        assert base64.b64decode(audio["input_audio"]["data"], validate=True) == f.read()


def test_asr_round_trip(server, wav16k):
    text = RemoteASR(server.base_url, "whisper", api_key_env=KEY_ENV).transcribe(wav16k)
    assert "doctor" in text.lower() and "morning" in text.lower()
    (req,) = server.requests
    assert req.path == "/v1/audio/transcriptions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.form == {"model": "whisper", "language": "en", "response_format": "json"}
    with open(wav16k, "rb") as f:
        assert req.files["file"] == f.read()


def test_mt_round_trip_one_request_per_text(server):
    mt = RemoteMT(server.base_url, "mt", MT_PROMPT, api_key_env=KEY_ENV)
    out = mt.translate(["I need a doctor.", "", "The hospital is closed today."])
    assert "médico" in out[0].lower()
    assert out[1] == ""  # blank input: no request, blank output
    assert "hospital" in out[2].lower()
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    sent = server.requests[0].json
    assert sent["temperature"] == 0 and sent["model"] == "mt"
    assert sent["messages"] == [{"role": "user", "content": MT_PROMPT.replace("{text}", "I need a doctor.")}]


def test_no_key_variable_means_no_authorization_header(server):
    with OpenAIServer(models={"mt"}) as open_srv:  # a server without a key, like a LAN vLLM
        assert RemoteMT(open_srv.base_url, "mt", MT_PROMPT).translate(["Good morning."])[0]
        assert "authorization" not in open_srv.requests[0].headers


def test_server_not_running_names_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(BackendUnavailable) as e:
        RemoteMT(url, "mt", MT_PROMPT).translate(["Hello."])
    assert f"{url}/chat/completions" in str(e.value) and "running" in str(e.value)


def test_wrong_key_quotes_the_401(server, wav16k, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(RuntimeError) as e:
        RemoteSpeechLLM(server.base_url, "voxtral", PROMPT, api_key_env=KEY_ENV).translate_audio(wav16k)
    assert "401" in str(e.value) and "Incorrect API key provided." in str(e.value)
    assert server.requests[0].headers["authorization"] == "Bearer sk-wrong"


def test_unset_key_variable_is_a_configuration_error(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(BackendUnavailable, match=KEY_ENV):
        RemoteMT(server.base_url, "mt", MT_PROMPT, api_key_env=KEY_ENV).translate(["Hello."])


def test_unknown_model_quotes_the_server(server, wav16k):
    with pytest.raises(RuntimeError) as e:
        RemoteASR(server.base_url, "whisper-large", api_key_env=KEY_ENV).transcribe(wav16k)
    assert "404" in str(e.value) and "The model `whisper-large` does not exist." in str(e.value)


def test_non_wav_audio_is_refused_by_the_server(server, tmp_path):
    fake = tmp_path / "x.wav"
    fake.write_bytes(b"ID3 this is an mp3, not a wav")
    with pytest.raises(RuntimeError) as e:
        RemoteSpeechLLM(server.base_url, "voxtral", PROMPT, api_key_env=KEY_ENV).translate_audio(str(fake))
    assert "400" in str(e.value) and "not a readable WAV" in str(e.value)


@pytest.mark.parametrize(
    "reply", [{"choices": []}, {"object": "chat.completion"}, {"choices": [{"message": {"content": None}}]}]
)
def test_malformed_reply(server, reply):
    server.override = (200, json.dumps(reply).encode())
    with pytest.raises(RuntimeError, match="Malformed chat completion"):
        RemoteMT(server.base_url, "mt", MT_PROMPT, api_key_env=KEY_ENV).translate(["Hello."])


def test_server_error_body_is_quoted_and_capped(server):
    server.override = (500, json.dumps({"object": "error", "message": "CUDA out of memory " + "x" * 1000}).encode())
    with pytest.raises(RuntimeError) as e:
        RemoteMT(server.base_url, "mt", MT_PROMPT, api_key_env=KEY_ENV).translate(["Hello."])
    assert "HTTP 500" in str(e.value) and "CUDA out of memory" in str(e.value)
    assert len(str(e.value)) < 450


def test_timeout_names_the_limit(server):
    server.delay_s = 1.0
    with pytest.raises(RuntimeError, match=r"0\.3 s timeout"):
        RemoteMT(server.base_url, "mt", MT_PROMPT, api_key_env=KEY_ENV, timeout_s=0.3).translate(["Hello."])


def test_configuration_is_checked_up_front():
    with pytest.raises(BackendUnavailable, match="http"):
        RemoteASR("gpu-box:8000/v1", "whisper")
    with pytest.raises(BackendUnavailable, match=r"\{text\}"):
        RemoteMT("http://gpu-box:8000/v1", "mt", "Translate into Portuguese.")
