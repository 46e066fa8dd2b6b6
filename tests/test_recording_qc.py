"""The QC rule of paper 000: first/last three words and WER > 0.6, on text normalised by
Whisper's English normaliser."""

from __future__ import annotations

import jiwer
import pytest

from services.usability.recording_qc import check, words

PROMPT = "Hello, Doctor Silva! My daughter Ana is allergic to penicillin; she needs 250 mg of amoxicillin."


def test_normalisation_lowercases_and_strips_punctuation():
    # Whisper's normaliser also spells out titles and contractions
    assert words("Hello, Dr. Silva!  Ana's dose: 250mg.") == [
        "hello",
        "doctor",
        "silva",
        "ana",
        "is",
        "dose",
        "250",
        "mg",
    ]


@pytest.mark.parametrize(
    "said",
    [
        "My name is Daniel Walsh and my number is 912-345-678",  # the ASR's hyphens
        "my name is Daniel Walsh and my number is nine one two three four five six seven eight",
        "My name is Daniel Walsh and my number is 912,345,678.",
    ],
)
def test_a_phone_number_however_written_is_the_same_words(said):
    prompt = "My name is Daniel Walsh and my number is 912 345 678."
    assert words(said) == words(prompt)
    r = check(prompt, said)
    assert r.flags == [] and r.wer == 0.0


def test_numbers_spellings_and_contractions_are_normalised_like_whisper_does():
    prompt = "I have had a rash for ten days; the cream is 5 millilitres of colour gel. I've got two."
    heard = "I have had a rash for 10 days. The cream is five milliliters of color gel. I have got 2"
    assert words(prompt) == words(heard)
    assert check(prompt, heard).flags == []


def test_the_demo_s04_reading_as_the_asr_writes_it_passes():
    """The demo's starter s04, read by Piper and transcribed by tiny.en, was always flagged
    end_differs before: the transcript as the QC ASR wrote it."""
    import csv

    from harness.demo import DEMO_ASSETS

    with open(DEMO_ASSETS / "starters.csv", newline="", encoding="utf-8") as f:
        s04 = next(r for r in csv.DictReader(f) if r["id"] == "s04")["text"]
    heard = (
        "I would like to book an appointment with a dermatologist on Tuesday, 9th April, preferably after 3pm. "
        "I have had an itchy red rash on both arms for 10 days. I am currently using hydrocortisone cream 1% "
        "twice a day. I am allergic to ibuprofen. My name is Daniel Walsh and my number is 912-345-678."
    )
    assert check(s04, heard).flags == []


def test_the_normaliser_is_built_once():
    from services.usability.recording_qc import normaliser

    assert normaliser() is normaliser()


def test_alignment_marks_what_differs():
    from services.usability.recording_qc import align

    chunks = align(
        "Hello, Doctor Silva! My daughter needs ten pills.", "hello doctor sylva my daughter needs 10 pills now"
    )
    assert chunks == [
        {"op": "equal", "prompt": "hello doctor", "transcript": "hello doctor"},
        {"op": "substitute", "prompt": "silva", "transcript": "sylva"},
        {"op": "equal", "prompt": "my daughter needs 10 pills", "transcript": "my daughter needs 10 pills"},
        {"op": "insert", "prompt": "", "transcript": "now"},
    ]
    assert align("Hello there", "") == [{"op": "delete", "prompt": "hello there", "transcript": ""}]


def test_a_faithful_reading_passes_despite_case_and_punctuation():
    r = check(PROMPT, "hello doctor silva my daughter ana is allergic to penicillin she needs 250 mg of amoxicillin")
    assert r.flags == [] and r.wer == 0.0 and r.status == "passed"


def test_a_middle_error_changes_wer_only():
    hyp = "Hello doctor Silva, my daughter Anna is allergic to penicilin, she needs 250 mg of amoxicillin."
    r = check(PROMPT, hyp)
    expected = jiwer.wer(" ".join(words(PROMPT)), " ".join(words(hyp)))
    assert r.wer == pytest.approx(expected, abs=1e-4) and r.wer == pytest.approx(2 / 16, abs=1e-4)
    assert r.flags == []


@pytest.mark.parametrize(
    "hyp,flags",
    [
        (
            "Hi doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg of amoxicillin",
            ["start_differs"],
        ),
        ("Hello doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg", ["end_differs"]),
        (
            "Hello doctor Silva I want a big pizza with cheese and ham tonight please 250 mg of amoxicillin",
            ["high_wer"],
        ),
        ("Good morning, can I book a table for two tonight?", ["start_differs", "end_differs", "high_wer"]),
        ("", ["empty_transcript"]),
    ],
)
def test_flags(hyp, flags):
    r = check(PROMPT, hyp)
    assert r.flags == flags and r.status == "flagged"


def test_wer_threshold_is_strictly_greater_than_06():
    # words, not numbers: the normaliser would write "one two three" as digits and join them
    ref = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    # six substitutions in the middle of ten words: WER exactly 0.6, not flagged for WER
    hyp = "alpha bravo charlie a b c d e f juliet"
    r = check(ref, hyp, edge=1)
    assert r.wer == pytest.approx(0.6) and "high_wer" not in r.flags
    assert "high_wer" in check(ref, "alpha bravo a b c d e f g juliet", edge=1).flags


# the second opinion (issue 31): the QC ASR's probability of the prompt's edge words under the audio
ON = {"on": True, "first_word_min_p": 0.05, "last_word_min_p": 0.2}
LIKELY = {"first_word": "Hello", "first_p": 0.7, "last_word": "amoxicillin", "last_p": 0.9}


def test_a_misheard_edge_word_that_is_likely_under_the_audio_is_forgiven():
    from services.usability.recording_qc import check

    # tiny.en writes the last word differently although the reading was whole
    hyp = "Hello doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg of a mock cillin"
    assert check(PROMPT, hyp).flags == ["end_differs"]
    r = check(PROMPT, hyp, edges=LIKELY, settings=ON)
    assert r.flags == [] and r.forgiven == ["end_differs"] and r.status == "passed"
    assert r.edges_record() == {**LIKELY, "forgiven": ["end_differs"]}


@pytest.mark.parametrize(
    "hyp,edges,flags",
    [
        # a cut start: the prompt's first word is not under the audio
        (
            "doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg of amoxicillin",
            {**LIKELY, "first_p": 0.001},
            ["start_differs"],
        ),
        # a cut end: the last word is not
        (
            "Hello doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg of",
            {**LIKELY, "last_p": 0.05},
            ["end_differs"],
        ),
        # WER and an empty transcript flag whatever the edge words say
        ("Hello I want a big pizza with cheese and ham tonight please now 250 mg of amoxicillin", LIKELY, ["high_wer"]),
        ("", LIKELY, ["empty_transcript"]),
    ],
)
def test_the_second_opinion_keeps_flags_of_bad_readings(hyp, edges, flags):
    from services.usability.recording_qc import check

    assert check(PROMPT, hyp, edges=edges, settings=ON).flags == flags


def test_the_second_opinion_off_is_the_paper_s_rule():
    from services.usability.recording_qc import check

    hyp = "Hi doctor Silva my daughter Ana is allergic to penicillin she needs 250 mg of amoxicillin"
    assert check(PROMPT, hyp, edges=LIKELY, settings={**ON, "on": False}).flags == ["start_differs"]
    assert check(PROMPT, hyp, edges=None, settings=ON).flags == ["start_differs"]  # not scored


def test_edge_probabilities_skip_punctuation_words():
    from services.usability.recording_qc import edge_probabilities

    scored = [(" Hi", [0.7]), (",", [0.9]), (" my", [0.8]), (" penic", [0.4, 0.6]), (".", [0.99])]
    assert edge_probabilities(scored) == {"first_word": "Hi", "first_p": 0.7, "last_word": "penic", "last_p": 0.5}
    assert edge_probabilities(None) is None and edge_probabilities([(".", [0.5])]) is None


def test_second_opinion_settings_default_on_and_off_for_large_v3():
    from services.usability.recording_qc import SECOND_OPINION_DEFAULTS, second_opinion

    assert second_opinion({}) == {
        "on": True,
        "first_word_min_p": SECOND_OPINION_DEFAULTS["qc_first_word_min_p"],
        "last_word_min_p": SECOND_OPINION_DEFAULTS["qc_last_word_min_p"],
        "edge_min_cover": SECOND_OPINION_DEFAULTS["qc_edge_min_cover"],
    }
    paper = {"qc_asr": {"asr": "transformers-whisper", "asr_model": "openai/whisper-large-v3"}}
    assert second_opinion(paper)["on"] is False
    assert second_opinion({**paper, "qc_second_opinion": True})["on"] is True
    assert second_opinion({"qc_second_opinion": False, "qc_last_word_min_p": 0.5}) == {
        "on": False,
        "first_word_min_p": SECOND_OPINION_DEFAULTS["qc_first_word_min_p"],
        "last_word_min_p": 0.5,
        "edge_min_cover": SECOND_OPINION_DEFAULTS["qc_edge_min_cover"],
    }


def test_the_reviewer_reads_each_edge_word_s_probability():
    from services.usability.recording_qc import edges_text

    shown = edges_text({**LIKELY, "forgiven": ["end_differs"]})
    assert "Hello" in shown and "p=0.70" in shown and "amoxicillin" in shown and "p=0.90" in shown
    assert "forgiven: the last three words differ" in shown
    assert edges_text(None) == ""
