"""Model backends, one small interface per role.

Every backend loads its weights through services.models.cache.CACHE (never at import time)
and raises BackendUnavailable, naming what to install or configure, when it cannot run.

Roles:
- ASR:  transcribe(wav16k_path) -> str                       (16 kHz mono PCM WAV)
- MT:   translate(texts: list[str]) -> list[str]             (batched, one direction)
- ST:   translate_audio(wav16k_path) -> STResult             (a whole speech-translation system)
- TTS:  synthesize(text) -> bytes                            (a complete WAV file)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from services.common.unavailable import BackendUnavailable


class ServerUnreachable(BackendUnavailable):
    """A remote model server did not answer the connection: it may come back, so jobs retry."""

    transient = True


@dataclass
class STResult:
    translation: str
    transcript: str | None = None  # cascades have one; direct systems do not
    seconds: dict[str, float] = field(default_factory=dict)  # per stage: asr, mt, st
    system: str = ""
    models: dict[str, str] = field(default_factory=dict)  # stage -> model id, for provenance
    # pt-PT, pt-BR, or "" when nothing asked for one (services/common/variants.py)
    variant: str = ""
    # what a guard cut from the model's output (a run-on into a new prompt turn), "" when nothing
    cut: str = ""
    # stage -> the precision its weights ran in ("bfloat16", "float32", "int8 ..."; "" as served)
    precision: dict[str, str] = field(default_factory=dict)


def require(module: str, install: str):
    """Import an optional dependency or say exactly what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise BackendUnavailable(f"{module} is not installed: pip install {install}") from e
