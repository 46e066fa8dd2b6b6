"""The QC rule of paper 000: first/last three words and WER > 0.6, on normalised text."""
from __future__ import annotations

import jiwer
import pytest

from services.recording_qc import check, words

PROMPT = "Hello, Doctor Silva! My daughter Ana is allergic to penicillin; she needs 250 mg of amoxicillin."


def test_normalisation_lowercases_and_strips_punctuation():
    assert words("Hello, Doctor Silva!  Ana's dose: 250 mg.") == ["hello", "doctor", "silva", "anas", "dose", "250", "mg"]


def test_a_faithful_reading_passes_despite_case_and_punctuation():
    r = check(PROMPT, "hello doctor silva my daughter ana is allergic to penicillin she needs 250 mg of amoxicillin")
    assert r.flags == [] and r.wer == 0.0 and r.status == "passed"


def test_a_middle_error_changes_wer_only():
    hyp = "Hello doctor Silva, my daughter Anna is allergic to penicilin, she needs 250 mg of amoxicillin."
    r = check(PROMPT, hyp)
    expected = jiwer.wer(" ".join(words(PROMPT)), " ".join(words(hyp)))
    assert r.wer == pytest.approx(expected, abs=1e-4) and r.wer == pytest.approx(2 / 16, abs=1e-4)
    assert r.flags == []


@pytest.mark.parametrize("hyp,flags", [
    ("Hi doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg of amoxicillin", ["start_differs"]),
    ("Hello doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg", ["end_differs"]),
    ("Hello doctor Silva I want a big pizza with cheese and ham tonight please 250 mg of amoxicillin",
     ["high_wer"]),
    ("Good morning, can I book a table for two tonight?", ["start_differs", "end_differs", "high_wer"]),
    ("", ["empty_transcript"]),
])
def test_flags(hyp, flags):
    r = check(PROMPT, hyp)
    assert r.flags == flags and r.status == "flagged"


def test_wer_threshold_is_strictly_greater_than_06():
    ref = "one two three four five six seven eight nine ten"
    # six substitutions in the middle of ten words: WER exactly 0.6, not flagged for WER
    hyp = "one two three a b c d e f ten"
    r = check(ref, hyp, edge=1)
    assert r.wer == pytest.approx(0.6) and "high_wer" not in r.flags
    assert "high_wer" in check(ref, "one two a b c d e f g ten", edge=1).flags
