"""Issue 53: the error span record, its checks, the Appraise/Pearmut wire format, spans in audio."""

from __future__ import annotations

import random

import pytest

from services.esa import spans as S
from services.esa.spans import Span, TimeSpan, Word

OUT = "Der schnelle braune Fuchs springt über den faulen Hund."


def test_span_over_takes_its_text_from_the_output_end_exclusive():
    s = Span.over(OUT, 4, 12, "minor")
    assert s.text == "schnelle" and (s.start, s.end) == (4, 12)
    assert S.check_spans([s], OUT) == [s]
    om = Span.omission(OUT, "major")
    assert (om.start, om.end, om.text, om.missing) == (len(OUT), len(OUT), "", True)
    assert S.check_spans([s, om], OUT) == [s, om]
    assert Span.from_dict(s.to_dict()) == s


@pytest.mark.parametrize(
    "span, needle",
    [
        (Span(-1, 3, "", "minor"), "out of range"),
        (Span(50, 60, "x", "minor"), "out of range"),
        (Span(5, 5, "", "minor"), "out of range"),  # empty and not an omission
        (Span(4, 12, "schnell", "minor"), "does not match the target, whose characters 4-12 are 'schnelle'"),
        (Span(4, 12, "schnelle", "critical"), "unknown severity 'critical'"),
        (Span(4, 12, "schnelle", "minor", "Accuracy/Mistranslation"), "has a category"),
        (Span(3, 3, "", "minor", missing=True), f"start == end == {len(OUT)}"),
        (Span(4, 12, "schnelle", "minor", side="source"), "no source text"),
    ],
)
def test_refusals_name_the_span_and_the_problem(span, needle):
    with pytest.raises(S.SpanError) as e:
        S.check_spans([span], OUT)
    assert needle in str(e.value)
    assert str(e.value).startswith("span 0")


def test_mqm_categories_must_be_known_and_present():
    cats = {"Accuracy/Mistranslation", "Fluency/Grammar"}
    ok = Span.over(OUT, 4, 12, "major", "Accuracy/Mistranslation")
    assert S.check_spans([ok], OUT, severities=S.MQM_SEVERITIES, categories=cats) == [ok]
    with pytest.raises(S.SpanError, match="unknown category 'Accuracy/Typo'"):
        S.check_spans([Span.over(OUT, 4, 12, "major", "Accuracy/Typo")], OUT, categories=cats)
    with pytest.raises(S.SpanError, match="has no category"):
        S.check_spans([Span.over(OUT, 4, 12, "major")], OUT, categories=cats)
    # neutral is an MQM severity, not an ESA one
    neutral = Span.over(OUT, 4, 12, "neutral", "Fluency/Grammar")
    assert S.check_spans([neutral], OUT, severities=S.MQM_SEVERITIES, categories=cats)
    with pytest.raises(S.SpanError, match="unknown severity 'neutral'"):
        S.check_spans([Span.over(OUT, 4, 12, "neutral")], OUT)


def test_touching_spans_pass_overlapping_ones_fail():
    a = Span.over(OUT, 4, 12, "minor")  # "schnelle"
    touching = Span.over(OUT, 12, 19, "major")  # " braune"
    assert S.check_spans([a, touching], OUT)
    over = Span.over(OUT, 11, 19, "major")  # shares the "e" at 11
    with pytest.raises(S.SpanError) as e:
        S.check_spans([over, a], OUT)
    assert "span 1 (4-12 'schnelle') overlaps span 0 (11-19" in str(e.value)
    # a nested span overlaps too, and every problem is listed, one a line
    nested = Span.over(OUT, 6, 8, "minor")
    with pytest.raises(S.SpanError) as e:
        S.check_spans([a, nested, Span(0, 3, "Das", "minor")], OUT)
    assert len(e.value.problems) == 2
    # the omission sits past the text: it touches nothing
    assert S.check_spans([Span.over(OUT, 50, len(OUT), "minor"), Span.omission(OUT, "minor")], OUT)


def test_overlap_check_agrees_with_shared_characters_on_random_spans():
    """Independent check: two spans overlap exactly when their character sets intersect."""
    rng = random.Random(53)
    for _ in range(400):
        a, b = sorted(rng.sample(range(len(OUT) + 1), 2)), sorted(rng.sample(range(len(OUT) + 1), 2))
        sa, sb = Span.over(OUT, *a, "minor"), Span.over(OUT, *b, "major")
        shared = set(range(*a)) & set(range(*b))
        try:
            S.check_spans([sa, sb], OUT)
            refused = False
        except S.SpanError:
            refused = True
        assert refused == bool(shared), (a, b)


def test_one_omission_at_most():
    with pytest.raises(S.SpanError, match=r"more than one \[MISSING\] span"):
        S.check_spans([Span.omission(OUT, "minor"), Span.omission(OUT, "major")], OUT)


def test_source_side_spans_check_against_the_source_and_overlap_only_there():
    src = "The quick brown fox jumps over the lazy dog."
    s_src = Span.over(src, 4, 9, "minor", "Source error", side="source")
    s_tgt = Span.over(OUT, 4, 12, "minor", "Accuracy/Mistranslation")
    cats = {"Source error", "Accuracy/Mistranslation"}
    assert S.check_spans([s_src, s_tgt], OUT, source=src, severities=S.MQM_SEVERITIES, categories=cats)
    wrong = Span(4, 9, "schn", "minor", "Source error", side="source")
    with pytest.raises(S.SpanError, match="does not match the source, whose characters 4-9 are 'quick'"):
        S.check_spans([wrong], OUT, source=src, severities=S.MQM_SEVERITIES, categories=cats)


def test_pearmut_and_appraise_records_round_trip():
    """Pearmut's README: start_i 0, end_i 5 (inclusive) on "Rychlá hnědá ..." marks "Rychlá"; its
    [missing] token sits at len(tgt); Appraise writes "missing" and error_type as a list."""
    tgt = "Rychlá hnědá liška skáče přes líného psa."
    pearmut = [
        {"start_i": 0, "end_i": 5, "severity": "minor", "category": None},
        {"start_i": len(tgt), "end_i": len(tgt), "severity": "major", "category": None},
    ]
    spans = S.from_inclusive(pearmut, tgt)
    assert spans[0].text == "Rychlá" and (spans[0].start, spans[0].end) == (0, 6)
    assert spans[1].missing and spans[1].start == len(tgt)
    assert S.check_spans(spans, tgt)
    assert S.to_inclusive(spans) == pearmut
    appraise = [
        {"start_i": 7, "end_i": 11, "severity": "Major", "error_type": ["Accuracy", "Mistranslation"]},
        {"start_i": "missing", "end_i": "missing", "severity": "minor", "error_type": None},
    ]
    spans = S.from_inclusive(appraise, tgt)
    assert spans[0] == Span(7, 12, "hnědá", "major", "Accuracy/Mistranslation")
    assert spans[1] == Span.omission(tgt, "minor")
    assert S.to_inclusive(spans, missing="appraise")[1]["start_i"] == "missing"


def test_time_spans_in_range_and_word_mapping():
    words = [Word("Hallo", 0.10, 0.52), Word("liebe", 0.60, 0.95), Word("Welt", 1.00, 1.48)]
    dur = 1.6
    assert S.check_words(words, dur)
    spans = [TimeSpan(0.55, 1.00, "major"), TimeSpan(1.00, 1.2, "minor"), TimeSpan.omission(dur, "minor")]
    assert S.check_time_spans(spans, dur)  # touching at 1.00 s is allowed
    # 0.55-1.00 covers "liebe" only: "Welt" starts where the span ends
    assert S.words_in(spans[0], words) == [1]
    assert S.words_in(TimeSpan(0.5, 1.01, "minor"), words) == [0, 1, 2]
    assert S.words_in(spans[2], words) == []
    for bad, needle in [
        (TimeSpan(-0.1, 0.5, "minor"), "out of range"),
        (TimeSpan(1.0, 1.7, "minor"), "out of range"),
        (TimeSpan(0.9, 0.9, "minor"), "out of range"),
        (TimeSpan(0.5, 0.6, "critical"), "unknown severity"),
        (TimeSpan(1.0, 1.0, "minor", missing=True), "omission must sit"),
    ]:
        with pytest.raises(S.SpanError, match=needle):
            S.check_time_spans([bad], dur)
    with pytest.raises(S.SpanError, match="overlaps"):
        S.check_time_spans([TimeSpan(0.1, 0.6, "minor"), TimeSpan(0.5, 0.9, "major")], dur)
    with pytest.raises(S.SpanError, match="word 1 .*starts before word 0"):
        S.check_words([Word("b", 0.5, 0.6), Word("a", 0.1, 0.2)], dur)
    with pytest.raises(S.SpanError, match="outside 0-1.6 s"):
        S.check_words([Word("a", 0.1, 2.0)], dur)


def test_words_in_agrees_with_a_sampled_overlap():
    """Independent check: a word is in a span when some sampled instant lies in both (times are
    whole milliseconds, so the half-millisecond instants find every positive overlap)."""
    rng = random.Random(7)
    words, t = [], 0.0
    for i in range(12):
        start = t + rng.uniform(0.0, 0.2)
        end = start + rng.uniform(0.1, 0.6)
        words.append(Word(f"w{i}", round(start, 3), round(end, 3)))
        t = end
    for _ in range(200):
        a, b = sorted(round(rng.uniform(0, t), 3) for _ in range(2))
        if a == b:
            continue
        span = TimeSpan(a, b, "minor")
        grid = [(k + 0.5) / 1000 for k in range(int(a * 1000) - 1, int(b * 1000) + 1)]
        expected = [i for i, w in enumerate(words) if any(w.start_s < x < w.end_s and a < x < b for x in grid)]
        assert S.words_in(span, words) == expected
