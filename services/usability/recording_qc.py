"""Recording QC (paper 000, section 3): does the recording say the starter's text?

One QC ASR transcribes every recording, whatever system translates it (the study's
[usability] qc_asr; a cascade whose ASR is that same config lends its transcript), so the
flag rate does not depend on the system. Both texts are normalised with Whisper's own English
text normaliser, as the paper compared Whisper large-v3 transcripts "after normalization":
lower case, no punctuation, numbers as digits ("ten" = "10", "912-345-678" = "912 345 678"),
British spellings made American, contractions spelled out, fillers (um, uh) dropped. Then
adjacent digit groups are joined ("912 345 678" = "912345678", as Whisper writes a phone
number either way). The recording is flagged when its first three or last three words differ
from the prompt's, or when WER > 0.6. Flagged recordings wait for a person's accept/reject in
the admin tab, which shows the word alignment (align()).

The normaliser is transformers' EnglishTextNormalizer; its British->American spelling list
is Whisper's english.json (MIT, OpenAI), read from the whisper-normalizer package, which
ships the same file byte for byte.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files

import jiwer

from services.models import systems

EDGE_WORDS = 3
MAX_WER = 0.6
MAX_REJECTED = 3          # a sender with more rejected recordings than this is excluded

# The QC ASR when a study names none: the best Whisper that runs offline here (tiny.en through
# faster-whisper, beam 5). A GPU host with the weights sets the paper's, e.g.
# qc_asr = {asr = "transformers-whisper", asr_model = "openai/whisper-large-v3", asr_dtype = "bfloat16"}
DEFAULT_QC_ASR = {"asr": "faster-whisper", "asr_model": "", "asr_beam_size": 5, "language": "en"}
# the fields of a cascade's ASR half (services/models/systems.py build_asr reads these)
QC_ASR_KEYS = ("asr", "asr_model", "asr_beam_size", "asr_dtype", "asr_base_url", "api_key_env", "language")
# what build_asr assumes for a field a config leaves out: two configs that differ only in
# spelling a default out make the same transcript
_ASR_FIELD_DEFAULTS = {"asr": "faster-whisper", "asr_model": "", "asr_beam_size": 5, "asr_dtype": "auto",
                       "asr_base_url": "", "api_key_env": "", "language": "en"}


@lru_cache(maxsize=1)
def normaliser():
    """Whisper's EnglishTextNormalizer, built once (importing transformers takes seconds)."""
    # lazy import (transformers): heavy model library; loaded only when a model runs
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    spelling = files("whisper_normalizer").joinpath("normalizers", "english.json").read_text(encoding="utf-8")
    return EnglishTextNormalizer(json.loads(spelling))


def words(text: str) -> list[str]:
    out: list[str] = []
    for w in normaliser()(text or "").split():
        # digit grouping is spelling, not speech: a phone number is "912 345 678", "912-345-678"
        # or, read digit by digit, "912345678" after the normaliser
        if w.isdigit() and out and out[-1].isdigit():
            out[-1] += w
        else:
            out.append(w)
    return out


@dataclass
class QCResult:
    wer: float
    flags: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "flagged" if self.flags else "passed"


def check(prompt: str, transcript: str, max_wer: float = MAX_WER, edge: int = EDGE_WORDS) -> QCResult:
    ref, hyp = words(prompt), words(transcript)
    if not hyp:
        return QCResult(1.0, ["empty_transcript"])
    wer = float(jiwer.wer(" ".join(ref), " ".join(hyp))) if ref else 1.0
    flags = []
    if hyp[:edge] != ref[:edge]:
        flags.append("start_differs")
    if hyp[-edge:] != ref[-edge:]:
        flags.append("end_differs")
    if wer > max_wer:
        flags.append("high_wer")
    return QCResult(round(wer, 4), flags)


def align(prompt: str, transcript: str) -> list[dict]:
    """The normalised prompt and transcript aligned word by word (jiwer's Levenshtein
    alignment, the one WER counts): chunks {"op": equal|substitute|delete|insert, "prompt":
    words, "transcript": words}, in order. The admin's review shows them side by side."""
    ref, hyp = words(prompt), words(transcript)
    if not ref or not hyp:
        return ([{"op": "delete", "prompt": " ".join(ref), "transcript": ""}] if ref else []) + \
               ([{"op": "insert", "prompt": "", "transcript": " ".join(hyp)}] if hyp else [])
    out = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return [{"op": c.type, "prompt": " ".join(ref[c.ref_start_idx:c.ref_end_idx]),
             "transcript": " ".join(hyp[c.hyp_start_idx:c.hyp_end_idx])} for c in out.alignments[0]]


def qc_asr_config(usability: dict | None) -> dict:
    """The study's QC ASR config ([usability] qc_asr over the default; a study imported before
    the setting existed gets the default)."""
    return {**DEFAULT_QC_ASR, **((usability or {}).get("qc_asr") or {})}


def qc_asr_problems(cfg) -> list[tuple[str, str]]:
    """(field, message) for each mistake in a [usability] qc_asr table; checked at import."""

    if not isinstance(cfg, dict):
        return [("", "must be a table, e.g. {asr = \"faster-whisper\", asr_beam_size = 5}")]
    out = [(k, f"unknown field (expected {', '.join(QC_ASR_KEYS)})") for k in cfg if k not in QC_ASR_KEYS]
    # the same rules as a cascade's ASR fields; the MT half is not there to check
    out += [(k, m) for k, m in systems.problems({"kind": "cascade", **DEFAULT_QC_ASR, **cfg})
            if k in QC_ASR_KEYS]
    return out


def same_asr(a: dict, b: dict) -> bool:
    """Whether two configs name the same ASR with the same settings (then a cascade's own
    transcript is the QC transcript and the recording is not transcribed twice)."""
    return all(a.get(k, d) == b.get(k, d) for k, d in _ASR_FIELD_DEFAULTS.items())


FLAG_TEXT = {"empty_transcript": "nothing was recognised", "start_differs": "the first three words differ",
             "end_differs": "the last three words differ", "high_wer": "word error rate above 0.6"}
