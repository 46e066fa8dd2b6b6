"""Recording QC on text it was not tuned on (issue 50, point 7): the benchmark's held-out
starters (benchmarks/usability/qc_starters.csv, q13-q24), read by Piper's joe. The second
opinion's thresholds were chosen on the tune starters (q01-q12) only."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks.usability import qc_flags
from services.models import systems
from services.models.cache import ModelCache
from services.usability import recording_qc
from services.usability.recording_qc import check, second_opinion, words

STARTERS = Path(__file__).resolve().parents[1] / "benchmarks" / "usability" / "qc_starters.csv"


def starter(sid: str) -> str:
    with open(STARTERS, newline="", encoding="utf-8") as f:
        return next(r["text"] for r in csv.DictReader(f) if r["id"] == sid)


# What tiny.en (beam 5) heard and scored when joe read the held-out starters
# (benchmarks/results/qc_flags_new_texts.json): a whole reading whose second word it mishears,
# and a reading with its first two words swapped whose first word it still finds likely.
Q21_GOOD = (
    "Morning, since on day I have had a burning pain when I pass urine and I need to go every hour. I am 45 "
    "And I have never had this before. I am allergic to penicillin. It gives me a rash. My pharmacy has boots "
    "on King Street. Do I need antibiotics?",
    {"first_word": "Morning", "first_p": 0.2387, "last_word": "antibiotics", "last_p": 0.9953},
)
Q24_SWAPPED = (
    "Good I am calling from Westfield Primary School about the coach for our trip on the 9th of May. We are 52 "
    "children and 6 adults going to the Science Museum in London. The coach should leave at 815 and come back "
    "by 330. Can you confirm the price?",
    {"first_word": "Good", "first_p": 0.524, "last_word": "price", "last_p": 0.9836},
)


def test_a_misheard_inner_word_at_the_start_of_a_whole_reading_passes():
    text, (heard, edges) = starter("q21"), Q21_GOOD
    assert check(text, heard).flags == ["start_differs"]
    qc = check(text, heard, edges=edges, settings=second_opinion({}))
    assert qc.status == "passed" and qc.forgiven == ["start_differs"], qc


def test_a_word_left_out_at_the_start_stays_flagged_though_the_first_word_is_likely():
    """Teacher forcing finds "Good" likely at the start of "Good I am calling" (the language
    model expects it): the alignment shows "morning" missing, so the mismatch is kept."""
    text, (heard, edges) = starter("q24"), Q24_SWAPPED
    ev = recording_qc.edge_evidence(words(text), words(heard))
    assert ev["start_cover"] < recording_qc.SECOND_OPINION_DEFAULTS["qc_edge_min_cover"], ev
    assert check(text, heard, edges=edges, settings=second_opinion({})).flags == ["start_differs"]


@pytest.mark.parametrize(
    "prompt,heard,side",
    [
        # two words swapped: the transcript begins with the prompt's second word
        ("good evening i am calling about my order", "evening good i am calling about my order", "start"),
        # the last word left out: the end is shifted by a word and its letters are missing
        ("please leave the key at the reception desk", "please leave the key at the reception", "end"),
    ],
)
def test_edge_evidence_tells_a_missing_or_shifted_word_from_a_misheard_one(prompt, heard, side):
    least = recording_qc.SECOND_OPINION_DEFAULTS["qc_edge_min_cover"]
    ev = recording_qc.edge_evidence(words(prompt), words(heard))
    assert ev[f"{side}_shifted"] or ev[f"{side}_cover"] < least, ev
    misheard = recording_qc.edge_evidence(words(prompt), words(prompt.replace("good", "but").replace("desk", "disk")))
    assert misheard[f"{side}_cover"] >= least and not misheard[f"{side}_shifted"], misheard


def test_a_wrong_edge_cover_setting_is_refused():
    assert recording_qc.second_opinion_problems({"qc_edge_min_cover": 1.5})[0][0] == "qc_edge_min_cover"
    assert recording_qc.second_opinion_problems({"qc_edge_min_cover": 0.5}) == []
    assert second_opinion({"qc_edge_min_cover": 0.5})["edge_min_cover"] == 0.5


@pytest.mark.slow
def test_held_out_readings_by_a_real_voice(tmp_path):
    """The same two held-out starters read by Piper's joe (deterministic) and checked by the
    default QC ASR: the whole q21 reading passes, q24 with its first two words swapped and q21
    with its last 1.5 s cut are flagged."""
    asr = systems.build_asr(recording_qc.DEFAULT_QC_ASR, ModelCache(device="cpu"))
    tts = qc_flags.voice("joe")
    settings = second_opinion({})
    q21, q24 = starter("q21"), starter("q24")
    x, rate = qc_flags.speech(tts, q21)
    good = qc_flags.read_and_score(asr, q21, x, rate, tmp_path, "good")
    cut = qc_flags.read_and_score(asr, q21, x[: -int(1.5 * rate)], rate, tmp_path, "cut")
    w = q24.split()
    swapped = qc_flags.read_and_score(
        asr, q24, qc_flags.speech(tts, " ".join([w[1], w[0]] + w[2:]))[0], rate, tmp_path, "swapped"
    )
    assert check(q21, good["transcript"]).flags, "the paper's rule alone passes it: not the case tested"
    assert check(q21, good["transcript"], edges=good["edges"], settings=settings).status == "passed", good
    assert check(q21, cut["transcript"], edges=cut["edges"], settings=settings).status == "flagged", cut
    assert check(q24, swapped["transcript"], edges=swapped["edges"], settings=settings).status == "flagged", swapped


def test_an_empty_prompt_is_flagged_without_an_alignment():
    edges = {"first_word": "Hi", "first_p": 0.9, "last_word": "day", "last_p": 0.9}
    assert "high_wer" in check("", "hello there", edges=edges, settings=second_opinion({})).flags
