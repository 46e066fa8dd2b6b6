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

The second opinion (a study setting, on by default with the offline QC ASR): a small
ASR mishears a good reading's edge words ("Cascais" as "cast guys"), so the same ASR also scores
the prompt the sender was asked to read against the audio (teacher forcing: the probability it
gives each prompt token). A start mismatch is kept only when the prompt's first word is unlikely
(the probability of its first token below first_word_min_p), an end mismatch only when its last
word is (the mean probability of its tokens below last_word_min_p). Only the outermost words:
inner edge words hold names and numbers a small model does not know even in good readings.
WER > 0.6 and an empty transcript always flag; the second opinion only ever removes flags the
paper's rule raises.

A likely edge word is not enough on text the thresholds were not chosen on (issue 50, point 7):
under teacher forcing the ASR's language model makes "key" likely after "leave the" even when
the audio was cut before it. So the second opinion also reads the word alignment at each edge
(edge_evidence()): a mismatch is kept, whatever the probabilities, when the transcript lacks
the prompt's material there (its letters aligned to the prompt's edge words, inserted words
included, below qc_edge_min_cover of the prompt's letters: a cut or a word left out leaves
nothing, a misheard word leaves a word of about its length, "Lindqvist" as "Olympus") or when
it begins (ends) with the prompt's second or third word instead of its first (last): a word
left out or two swapped, not misheard. The defaults were chosen on the tune half of 24 starters
written for the benchmark, read by five voices, and scored on the other half
(benchmarks/usability/qc_flags.py --starters-file benchmarks/usability/qc_starters.csv; README).

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
MAX_REJECTED = 3  # a sender with more rejected recordings than this is excluded
# the second opinion's study settings ([usability] qc_second_opinion, qc_first_word_min_p,
# qc_last_word_min_p); "auto": on unless the QC ASR is the paper's Whisper large-v3, whose
# transcripts the paper's rule was made for
# qc_edge_min_cover: the share of an edge's letters the transcript must have for its mismatch
# to be forgiven (edge_evidence())
SECOND_OPINION_DEFAULTS = {
    "qc_second_opinion": "auto",
    "qc_first_word_min_p": 0.05,
    "qc_last_word_min_p": 0.15,
    "qc_edge_min_cover": 0.5,
}
# issue 51, point 12: tiny.en and greedy decoding turned a 56-word reading into a 6-word
# translation, and QC (which checks the recording) passed it. A translation with fewer words than
# qc_translation_min_ratio x the transcript's is flagged for review (0: never); English to
# Portuguese keeps about as many words, so half is far off. Transcripts under
# qc_translation_min_words are not checked: a short utterance's translation may be a word or two.
TRANSLATION_LENGTH_DEFAULTS = {"qc_translation_min_ratio": 0.5, "qc_translation_min_words": 20}

# The QC ASR when a study names none: the best Whisper that runs offline here (tiny.en through
# faster-whisper, beam 5). A GPU host with the weights sets the paper's, e.g.
# qc_asr = {asr = "transformers-whisper", asr_model = "openai/whisper-large-v3", asr_dtype = "bfloat16"}
DEFAULT_QC_ASR = {"asr": "faster-whisper", "asr_model": "", "asr_beam_size": 5, "language": "en"}
# the fields of a cascade's ASR half (services/models/systems.py build_asr reads these)
QC_ASR_KEYS = ("asr", "asr_model", "asr_beam_size", "asr_dtype", "asr_base_url", "api_key_env", "language")
# what build_asr assumes for a field a config leaves out: two configs that differ only in
# spelling a default out make the same transcript
_ASR_FIELD_DEFAULTS = {
    "asr": "faster-whisper",
    "asr_model": "",
    "asr_beam_size": 5,
    "asr_dtype": "auto",
    "asr_base_url": "",
    "api_key_env": "",
    "language": "en",
}


@lru_cache(maxsize=1)
def normaliser():
    """Whisper's EnglishTextNormalizer, built once (importing transformers takes seconds)."""
    # lazy import (transformers): heavy model library; loaded only when a model runs
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    spelling = files("whisper_normalizer").joinpath("normalizers", "english.json").read_text(encoding="utf-8")
    return EnglishTextNormalizer(json.loads(spelling))


def words(text: str) -> list[str]:
    return list(_words(text or ""))


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    # cached: every recording of a starter normalises the same prompt (the normaliser's
    # regular expressions take about a millisecond a text)
    out: list[str] = []
    for w in normaliser()(text).split():
        # digit grouping is spelling, not speech: a phone number is "912 345 678", "912-345-678"
        # or, read digit by digit, "912345678" after the normaliser
        if w.isdigit() and out and out[-1].isdigit():
            out[-1] += w
        else:
            out.append(w)
    return tuple(out)


def word_count(text: str | None) -> int:
    """Words of any language: whitespace tokens with a letter or digit (not a lone dash)."""
    return sum(1 for w in (text or "").split() if any(ch.isalnum() for ch in w))


def translation_short(
    transcript: str, translation: str | None, usability: dict | None = None
) -> tuple[int, int] | None:
    """(translation words, transcript words) when the translation is far shorter than the
    transcript (TRANSLATION_LENGTH_DEFAULTS, or the study's [usability] settings); None otherwise
    (also without a translation, or for a short transcript)."""
    us = {
        **TRANSLATION_LENGTH_DEFAULTS,
        **{k: v for k, v in (usability or {}).items() if k in TRANSLATION_LENGTH_DEFAULTS},
    }
    if translation is None:
        return None
    said, got = word_count(transcript), word_count(translation)
    if said < us["qc_translation_min_words"] or got >= us["qc_translation_min_ratio"] * said:
        return None
    return got, said


def translation_length_problems(usability: dict) -> list[tuple[str, str]]:
    """(field, message) for each wrong translation-length setting; checked at import."""
    out = []
    ratio = usability.get("qc_translation_min_ratio", TRANSLATION_LENGTH_DEFAULTS["qc_translation_min_ratio"])
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
        out.append(("qc_translation_min_ratio", "must be a share between 0 (no check) and 1, e.g. 0.5"))
    n = usability.get("qc_translation_min_words", TRANSLATION_LENGTH_DEFAULTS["qc_translation_min_words"])
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        out.append(("qc_translation_min_words", "must be a whole number of words >= 1"))
    return out


@dataclass
class QCResult:
    wer: float
    flags: list[str] = field(default_factory=list)
    forgiven: list[str] = field(default_factory=list)  # the paper's flags the second opinion removed
    edges: dict | None = None  # edge_probabilities(), when scored

    @property
    def status(self) -> str:
        return "flagged" if self.flags else "passed"

    def edges_record(self) -> dict | None:
        """What is stored beside the flags (recordings.qc_edges): the edge words' probabilities
        and the flags they removed."""
        return None if self.edges is None else {**self.edges, "forgiven": list(self.forgiven)}


def edge_probabilities(scored: list | None) -> dict | None:
    """From the QC ASR's score of the prompt ([(word, [token probabilities])], as the ASR's
    tokenizer splits it; punctuation may be words of its own): the first word with a letter or
    digit and the probability of its first token, the last such word and the mean probability
    of its tokens."""
    kept = [(w.strip(), ps) for w, ps in (scored or []) if ps and any(ch.isalnum() for ch in w)]
    if not kept:
        return None
    (first, fp), (last, lp) = kept[0], kept[-1]
    return {
        "first_word": first,
        "first_p": round(float(fp[0]), 4),
        "last_word": last,
        "last_p": round(float(sum(lp) / len(lp)), 4),
    }


def _letters(ws) -> int:
    return sum(len(w) for w in ws)


def _cover(ref: list[str], hyp: list[str], edge: int) -> tuple[float, int]:
    """The letters of hyp aligned to ref's first edge words (substituted, equal and inserted
    words), over those words' letters; and how many of those words hyp has as they are."""
    kept = same = 0
    for c in jiwer.process_words(" ".join(ref), " ".join(hyp)).alignments[0]:
        if c.ref_start_idx >= edge:
            break
        if c.type == "insert":
            kept += _letters(hyp[c.hyp_start_idx : c.hyp_end_idx])
        elif c.type in ("equal", "substitute"):
            n = min(c.ref_end_idx, edge) - c.ref_start_idx
            kept += _letters(hyp[c.hyp_start_idx : c.hyp_start_idx + n])
            same += n if c.type == "equal" else 0
    return round(kept / max(_letters(ref[:edge]), 1), 4), same


def edge_evidence(ref: list[str], hyp: list[str], edge: int = EDGE_WORDS) -> dict:
    """What the word alignment says at each edge of the normalised prompt (ref) and transcript
    (hyp): start_cover / end_cover, the transcript's letters aligned to the prompt's first
    (last) edge words over the prompt's letters there (a cut or a left-out word lowers it, a
    misheard word hardly does); start_shifted / end_shifted, whether the transcript begins
    (ends) with one of the prompt's next edge words instead of its first (last) word."""
    (start_cover, start_same), (end_cover, end_same) = _cover(ref, hyp, edge), _cover(ref[::-1], hyp[::-1], edge)
    return {
        "start_cover": start_cover,
        "end_cover": end_cover,
        "start_same": start_same,
        "end_same": end_same,
        "start_shifted": bool(hyp and ref and hyp[0] != ref[0] and hyp[0] in ref[1:edge]),
        "end_shifted": bool(hyp and ref and hyp[-1] != ref[-1] and hyp[-1] in ref[-edge:-1]),
    }


def forgiven_flags(flags: list[str], edges: dict, evidence: dict, settings: dict) -> list[str]:
    """The edge flags the second opinion removes: the edge word is likely under the audio, and
    the transcript has the prompt's material there, not shifted by a word."""
    out = []
    for flag, side, p, min_p in (
        ("start_differs", "start", edges["first_p"], settings["first_word_min_p"]),
        ("end_differs", "end", edges["last_p"], settings["last_word_min_p"]),
    ):
        if (
            flag in flags
            and p >= min_p
            and evidence[f"{side}_cover"] >= settings.get("edge_min_cover", 0.0)
            and not evidence[f"{side}_shifted"]
        ):
            out.append(flag)
    return out


def check(
    prompt: str,
    transcript: str,
    max_wer: float = MAX_WER,
    edge: int = EDGE_WORDS,
    edges: dict | None = None,
    settings: dict | None = None,
    translation: str | None = None,
    usability: dict | None = None,
) -> QCResult:
    """The paper's rule; with edges (edge_probabilities()) and settings (second_opinion())
    switched on, a start or end mismatch is kept only when that edge word is unlikely or the
    alignment shows prompt words missing or shifted there (forgiven_flags()). With the
    system's translation, one far shorter than the transcript is flagged too (translation_short)."""
    ref, hyp = words(prompt), words(transcript)
    if not hyp:
        return QCResult(1.0, ["empty_transcript"], edges=edges)
    wer = float(jiwer.wer(" ".join(ref), " ".join(hyp))) if ref else 1.0
    flags = []
    if hyp[:edge] != ref[:edge]:
        flags.append("start_differs")
    if hyp[-edge:] != ref[-edge:]:
        flags.append("end_differs")
    if wer > max_wer:
        flags.append("high_wer")
    forgiven = []
    if ref and edges is not None and settings and settings["on"] and {"start_differs", "end_differs"} & set(flags):
        forgiven = forgiven_flags(flags, edges, edge_evidence(ref, hyp, edge), settings)
    kept = [f for f in flags if f not in forgiven]
    if translation_short(transcript, translation, usability):
        kept.append("translation_short")
    return QCResult(round(wer, 4), kept, forgiven, edges)


def needs_second_opinion(result: QCResult) -> bool:
    """Whether scoring the prompt could change this result: only an edge flag can be removed."""
    return bool({"start_differs", "end_differs"} & set(result.flags))


def second_opinion(usability: dict | None) -> dict:
    """The study's second-opinion settings: {"on", "first_word_min_p", "last_word_min_p",
    "edge_min_cover"}."""
    us = {**SECOND_OPINION_DEFAULTS, **{k: v for k, v in (usability or {}).items() if k in SECOND_OPINION_DEFAULTS}}
    on = us["qc_second_opinion"]
    if on == "auto":
        asr = qc_asr_config(usability)
        on = "large-v3" not in str(asr.get("asr_model", "")).lower()
    return {
        "on": bool(on),
        "first_word_min_p": float(us["qc_first_word_min_p"]),
        "last_word_min_p": float(us["qc_last_word_min_p"]),
        "edge_min_cover": float(us["qc_edge_min_cover"]),
    }


def second_opinion_problems(usability: dict) -> list[tuple[str, str]]:
    """(field, message) for each wrong second-opinion setting; checked at import."""
    out = []
    on = usability.get("qc_second_opinion", "auto")
    if on != "auto" and not isinstance(on, bool):
        out.append(("qc_second_opinion", 'must be true, false or "auto" (on unless the QC ASR is Whisper large-v3)'))
    for k in ("qc_first_word_min_p", "qc_last_word_min_p"):
        v = usability.get(k, SECOND_OPINION_DEFAULTS[k])
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            out.append((k, "must be a probability between 0 and 1"))
    v = usability.get("qc_edge_min_cover", SECOND_OPINION_DEFAULTS["qc_edge_min_cover"])
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        out.append(("qc_edge_min_cover", "must be a share between 0 (not read) and 1, e.g. 0.5"))
    return out


def align(prompt: str, transcript: str) -> list[dict]:
    """The normalised prompt and transcript aligned word by word (jiwer's Levenshtein
    alignment, the one WER counts): chunks {"op": equal|substitute|delete|insert, "prompt":
    words, "transcript": words}, in order. The admin's review shows them side by side."""
    ref, hyp = words(prompt), words(transcript)
    if not ref or not hyp:
        return ([{"op": "delete", "prompt": " ".join(ref), "transcript": ""}] if ref else []) + (
            [{"op": "insert", "prompt": "", "transcript": " ".join(hyp)}] if hyp else []
        )
    out = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return [
        {
            "op": c.type,
            "prompt": " ".join(ref[c.ref_start_idx : c.ref_end_idx]),
            "transcript": " ".join(hyp[c.hyp_start_idx : c.hyp_end_idx]),
        }
        for c in out.alignments[0]
    ]


def qc_asr_config(usability: dict | None) -> dict:
    """The study's QC ASR config ([usability] qc_asr over the default; a study imported before
    the setting existed gets the default)."""
    return {**DEFAULT_QC_ASR, **((usability or {}).get("qc_asr") or {})}


def qc_asr_problems(cfg) -> list[tuple[str, str]]:
    """(field, message) for each mistake in a [usability] qc_asr table; checked at import."""

    if not isinstance(cfg, dict):
        return [("", 'must be a table, e.g. {asr = "faster-whisper", asr_beam_size = 5}')]
    out = [(k, f"unknown field (expected {', '.join(QC_ASR_KEYS)})") for k in cfg if k not in QC_ASR_KEYS]
    # the same rules as a cascade's ASR fields; the MT half is not there to check
    out += [(k, m) for k, m in systems.problems({"kind": "cascade", **DEFAULT_QC_ASR, **cfg}) if k in QC_ASR_KEYS]
    return out


def same_asr(a: dict, b: dict) -> bool:
    """Whether two configs name the same ASR with the same settings (then a cascade's own
    transcript is the QC transcript and the recording is not transcribed twice)."""
    return all(a.get(k, d) == b.get(k, d) for k, d in _ASR_FIELD_DEFAULTS.items())


FLAG_TEXT = {
    "empty_transcript": "nothing was recognised",
    "start_differs": "the first three words differ",
    "end_differs": "the last three words differ",
    "high_wer": "word error rate above 0.6",
    "translation_short": "translation far shorter than transcript",
}


def flags_text(flags: list[str], transcript: str | None = None, translation: str | None = None) -> str:
    """The flags in words for the reviewer; a short translation with its word counts, e.g.
    "translation far shorter than transcript (6 vs 56 words)"."""
    out = []
    for f in flags:
        text = FLAG_TEXT.get(f, f)
        if f == "translation_short" and translation is not None:
            text += f" ({word_count(translation)} vs {word_count(transcript)} words)"
        out.append(text)
    return ", ".join(out)


def edges_text(edges: dict | None) -> str:
    """The second opinion in words for the reviewer: each edge word's probability, and which
    of the paper's flags it removed."""
    if not edges:
        return ""
    out = (
        f"first word \u201c{edges['first_word']}\u201d p={edges['first_p']:.2f}; "
        f"last word \u201c{edges['last_word']}\u201d p={edges['last_p']:.2f}"
    )
    if edges.get("forgiven"):
        out += "; forgiven: " + ", ".join(FLAG_TEXT.get(f, f) for f in edges["forgiven"])
    return out
