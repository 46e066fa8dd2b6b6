"""Issue 53: the MQM taxonomy file, its checks, and MQM scores (Freitag et al. 2021).

The segments are built from the examples in the paper's and Anthea's guidelines; every expected
total is written by hand from the weights (major 5, minor 1, minor Fluency/Punctuation 0.1,
Non-translation 25, neutral 0)."""

from __future__ import annotations

import pandas as pd
import pytest

from services.esa import mqm
from services.esa.spans import Span, SpanError
from services.esa.taxonomy import TaxonomyError, load_taxonomy, parse_taxonomy

TAX = load_taxonomy()
W = TAX.weights

# "Let's eat, grandma": eliding the comma changes the meaning: a major Fluency/Punctuation error
GRANDMA = "Let's eat grandma."
# quotation marks in the wrong style for German: minor Fluency/Punctuation, twice
QUOTES = 'Er sagte "Hallo".'
# Anthea: "boathouses" -> "hangar de bateaux": separate errors for "hangar" (should not be
# singular) and "de" (wrong preposition)
HANGAR = "Le hangar de bateaux est fermé."
WORD_SALAD = "Bateaux le le fermé hangar est est."
CLEAN = "Das Bootshaus ist geschlossen."


def spans_grandma():
    return [Span.over(GRANDMA, 6, 17, "major", "Fluency/Punctuation")]


def spans_quotes():
    return [
        Span.over(QUOTES, 9, 10, "minor", "Fluency/Punctuation"),
        Span.over(QUOTES, 15, 16, "minor", "Fluency/Punctuation"),
    ]


def spans_hangar():
    return [
        Span.over(HANGAR, 3, 9, "major", "Accuracy/Mistranslation"),  # "hangar"
        Span.over(HANGAR, 10, 12, "minor", "Fluency/Grammar"),  # "de"
    ]


def spans_salad():
    return [Span.over(WORD_SALAD, 0, len(WORD_SALAD), "major", "Non-translation")]


def test_the_default_file_holds_the_papers_categories_and_weights():
    names = TAX.names()
    for n in [
        "Accuracy/Addition",
        "Accuracy/Omission",
        "Accuracy/Mistranslation",
        "Accuracy/Untranslated text",
        "Fluency/Punctuation",
        "Fluency/Spelling",
        "Fluency/Grammar",
        "Fluency/Register",
        "Fluency/Inconsistency",
        "Fluency/Character encoding",
        "Terminology/Inappropriate for context",
        "Terminology/Inconsistent use of terminology",
        "Style/Awkward",
        "Locale convention/Address format",
        "Locale convention/Currency format",
        "Locale convention/Date format",
        "Locale convention/Name format",
        "Locale convention/Telephone format",
        "Locale convention/Time format",
        "Source error",
        "Non-translation",
        "Other",
    ]:
        assert n in names, n
    assert "Pronunciation/Mispronunciation" not in names  # audio only
    audio = TAX.names(audio=True)
    assert {"Pronunciation/Mispronunciation", "Prosody/Intonation", "Background staining"} <= set(audio)
    assert TAX.severities == ("major", "minor", "neutral") and TAX.max_errors == 5
    assert (W.weight("Accuracy/Mistranslation", "major"), W.weight("Accuracy/Mistranslation", "minor")) == (5, 1)
    assert W.weight("Fluency/Punctuation", "minor") == 0.1
    assert W.weight("Fluency/Punctuation", "major") == 5  # major punctuation keeps the standard weight
    assert W.weight("Non-translation", "major") == 25 and W.weight("Non-translation!", "major") == 25
    assert W.weight("Style/Awkward", "neutral") == 0


def test_segment_scores_written_by_hand():
    assert mqm.segment_score(spans_grandma(), W) == 5
    assert mqm.segment_score(spans_quotes(), W) == pytest.approx(0.2)
    assert mqm.segment_score(spans_hangar(), W) == 6
    assert mqm.segment_score(spans_salad(), W) == 25  # "equivalent to five Major errors"
    assert mqm.segment_score([], W) == 0
    assert mqm.segment_score([Span.over(CLEAN, 4, 13, "neutral", "Style/Awkward")], W) == 0
    omission = [Span.omission(CLEAN, "major", "Accuracy/Omission")]
    assert mqm.segment_score(omission, W) == 5


def judgments():
    rows = [
        ("A", "s1", "r1", spans_grandma()),
        ("A", "s2", "r1", spans_quotes()),
        ("A", "s3", "r1", spans_hangar()),
        ("B", "s1", "r2", spans_salad()),
        ("B", "s2", "r2", []),
        ("B", "s3", "r2", []),
        # a second rater on A's s3, who saw only the major error: A's s3 is (6 + 5) / 2 = 5.5
        ("A", "s3", "r2", spans_hangar()[:1]),
    ]
    return pd.DataFrame(rows, columns=["system", "segment_id", "annotator", "spans"])


def test_system_scores_are_means_over_segments_lower_is_better():
    sy = mqm.system_scores(judgments(), W).set_index("system")
    # A: (5 + 0.2 + 5.5) / 3 = 3.5666...; B: (25 + 0 + 0) / 3 = 8.333...
    assert sy.loc["A", "mqm"] == pytest.approx(10.7 / 3)
    assert sy.loc["B", "mqm"] == pytest.approx(25 / 3)
    assert (sy.loc["A", "rank"], sy.loc["B", "rank"]) == (1, 2)
    assert (sy.loc["A", "n_segments"], sy.loc["A", "n_judgments"]) == (3, 4)
    seg = mqm.segment_scores(judgments(), W).set_index(["system", "segment_id"])
    assert seg.loc[("A", "s3"), "mqm"] == 5.5 and seg.loc[("A", "s3"), "n_judgments"] == 2
    # three segments a side cannot separate: one cluster
    assert set(sy["cluster"]) == {1}


def test_clusters_follow_one_sided_tests_on_segment_scores():
    from scipy import stats

    rows = []
    for i in range(30):
        rows.append(("good", f"s{i}", "r1", [] if i % 3 else [Span.over(CLEAN, 0, 3, "minor", "Style/Awkward")]))
        rows.append(("bad", f"s{i}", "r1", [Span.over(CLEAN, 0, 3, "major", "Accuracy/Mistranslation")]))
    df = pd.DataFrame(rows, columns=["system", "segment_id", "annotator", "spans"])
    sy = mqm.system_scores(df, W)
    assert sy["system"].tolist() == ["good", "bad"] and sy["cluster"].tolist() == [1, 2]
    good = [0 if i % 3 else 1 for i in range(30)]
    p = stats.mannwhitneyu(good, [5] * 30, alternative="less").pvalue
    assert p < 0.05


def test_study_weights_replace_the_defaults():
    """The MQM standard's major weight of 10 (the paper explored 1 to 10)."""
    study = TAX.with_weights({"major": 10, "minor": 1, "neutral": 0}, "study.toml")
    assert mqm.segment_score(spans_hangar(), study.weights) == 11  # 10 + 1
    assert mqm.segment_score(spans_quotes(), study.weights) == 2  # no punctuation exception any more
    with pytest.raises(TaxonomyError, match="study.toml: \\[weights\\] gives no weight for neutral"):
        TAX.with_weights({"major": 10, "minor": 1}, "study.toml")
    with pytest.raises(TaxonomyError, match="weights.exception 1: unknown category 'Fluency/Typography'"):
        TAX.with_weights(
            {
                "major": 5,
                "minor": 1,
                "neutral": 0,
                "exception": [{"category": "Fluency/Typography", "severity": "minor", "weight": 0.1}],
            }
        )
    with pytest.raises(TaxonomyError, match="weights.major: must be a number at least 0"):
        TAX.with_weights({"major": -5, "minor": 1, "neutral": 0})


def test_mqm_span_rules():
    ok = mqm.check_mqm_spans(spans_hangar(), HANGAR, TAX)
    assert len(ok) == 2
    six = [Span.over(WORD_SALAD, i * 5, i * 5 + 3, "minor", "Fluency/Grammar") for i in range(6)]
    with pytest.raises(SpanError, match="6 errors marked; at most 5 per segment"):
        mqm.check_mqm_spans(six, WORD_SALAD, TAX)
    assert mqm.check_mqm_spans(six[:5], WORD_SALAD, TAX)
    with pytest.raises(SpanError, match="spans the whole output"):
        mqm.check_mqm_spans([Span.over(WORD_SALAD, 0, 7, "major", "Non-translation")], WORD_SALAD, TAX)
    with pytest.raises(SpanError, match="Non-translation is always major"):
        mqm.check_mqm_spans([Span.over(WORD_SALAD, 0, len(WORD_SALAD), "minor", "Non-translation")], WORD_SALAD, TAX)
    with pytest.raises(SpanError, match="replaces every other error"):
        mqm.check_mqm_spans(spans_salad() + [Span.omission(WORD_SALAD, "major", "Accuracy/Omission")], WORD_SALAD, TAX)
    with pytest.raises(SpanError, match="Source error is marked in the source, not the target"):
        mqm.check_mqm_spans([Span.over(CLEAN, 0, 3, "minor", "Source error")], CLEAN, TAX)
    with pytest.raises(SpanError, match="unknown category 'Pronunciation/Mispronunciation'"):
        mqm.check_mqm_spans([Span.over(CLEAN, 0, 3, "minor", "Pronunciation/Mispronunciation")], CLEAN, TAX)
    assert mqm.check_mqm_spans(
        [Span.over(CLEAN, 0, 3, "minor", "Pronunciation/Mispronunciation")], CLEAN, TAX, audio=True
    )


@pytest.mark.parametrize(
    "old, new, needle",
    [
        ("max_errors = 5 ", "max_errors = -1 ", "max_errors must be a whole number"),
        ('names = ["major", "minor", "neutral"]', 'names = ["major", "minor", "minor"]', "lists a severity twice"),
        ("neutral = 0.0\n", "", "gives no weight for neutral"),
        ('name = "Other"', 'name = "Style"', "category 'Style': listed twice"),
        (
            'severity = "major"           # Anthea',
            'severity = "critical"  # Anthea',
            "severity 'critical' is not one of",
        ),
        ('"Non-translation!" = "Non-translation"', '"Non-translation!" = "Nontranslation"', "unknown category"),
        ("max_errors = 5 ", "colour = 3\nmax_errors = 5 ", "unknown keys colour"),
    ],
)
def test_a_broken_file_is_refused_with_a_message(tmp_path, old, new, needle):
    with open(TAX.where, encoding="utf-8") as f:
        text = f.read()
    assert old in text
    broken = tmp_path / "tax.toml"
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(TaxonomyError) as e:
        load_taxonomy(broken)
    assert str(e.value).startswith(str(broken)) and needle in str(e.value)


def test_messages_name_the_key(tmp_path):
    base = {
        "severities": {"names": ["major", "minor"]},
        "weights": {"major": 5, "minor": 1},
        "category": [{"name": "Accuracy"}],
    }
    assert parse_taxonomy(base).names() == ["Accuracy"]
    for change, needle in [
        ({"weights": {"major": 5}}, "gives no weight for minor"),
        ({"weights": {"major": 5, "minor": 1, "critical": 25}}, "unknown severities critical"),
        ({"category": [{"name": "Accuracy", "subcategories": ["A/B"]}]}, "category 'Accuracy': subcategories"),
        ({"category": [{"name": "Accuracy", "side": "left"}]}, "side must be one of target, source"),
        ({"category": [{"name": "Accuracy", "colour": 1}]}, "category 1: unknown keys colour"),
        ({"whole_segment": "Fluency"}, "whole_segment 'Fluency' must name a category"),
        ({"category": []}, "no [[category]] tables"),
    ]:
        with pytest.raises(TaxonomyError, match=needle.replace("[", "\\[")):
            parse_taxonomy({**base, **change}, "x.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[weights\n")
    with pytest.raises(TaxonomyError, match="bad.toml: not valid TOML"):
        load_taxonomy(bad)
    with pytest.raises(TaxonomyError, match="file not found"):
        load_taxonomy(tmp_path / "absent.toml")
