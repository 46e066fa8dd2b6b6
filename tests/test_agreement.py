"""Issue 53: agreement between annotators: character-level F1 on spans (checked against
scikit-learn's f1_score on per-character labels) and Krippendorff's alpha on scores (checked
against the worked example of Krippendorff's "Computing Krippendorff's Alpha-Reliability" and a
from-the-definition computation)."""

from __future__ import annotations

import math
import random
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from services.common.agreement import krippendorff_alpha
from services.esa.agreement import OMISSION_S, char_f1, span_agreement, time_f1
from services.esa.spans import Span, TimeSpan, check_spans

TEXT = "Die Katze sitzt auf der Matte, und der Hund schläft im Korb."
SEV = {"minor": 1, "major": 2}


def random_spans(rng, text):
    """Non-overlapping spans (and sometimes the omission), as check_spans accepts them."""
    cuts = sorted(rng.sample(range(len(text) + 1), 2 * rng.randint(0, 4)))
    spans = [Span.over(text, a, b, rng.choice(["minor", "major"])) for a, b in zip(cuts[::2], cuts[1::2]) if a < b]
    if rng.random() < 0.3:
        spans.append(Span.omission(text, rng.choice(["minor", "major"])))
    return check_spans(spans, text)


def labels(spans, text):
    """Per position (each character, then the [MISSING] token): 0, or 1 minor / 2 major."""
    out = [0] * (len(text) + 1)
    for s in spans:
        for i in [len(text)] if s.missing else range(s.start, s.end):
            out[i] = SEV[s.severity]
    return out


def test_char_f1_matches_sklearn_on_per_character_labels():
    rng = random.Random(53)
    for _ in range(300):
        a, b = random_spans(rng, TEXT), random_spans(rng, TEXT)
        la, lb = labels(a, TEXT), labels(b, TEXT)
        binary = f1_score([x > 0 for x in la], [x > 0 for x in lb], zero_division=1.0)
        assert char_f1(a, b, len(TEXT)) == pytest.approx(binary, abs=1e-12)
        assert char_f1(b, a, len(TEXT)) == pytest.approx(binary, abs=1e-12)  # symmetric
        sev = f1_score(la, lb, labels=[1, 2], average="micro", zero_division=1.0)
        assert char_f1(a, b, len(TEXT), severity=True) == pytest.approx(sev, abs=1e-12)


def test_char_f1_with_categories_matches_sklearn():
    # MQM's spans carry a category: a character agrees with categories=True only when both give it the
    # same category, and with severity=True too, the same category and severity
    rng = random.Random(6)
    cats = ["Accuracy/Mistranslation", "Fluency/Grammar", "Style/Awkward"]
    for _ in range(300):
        a, b = ([Span(**{**vars(s), "category": rng.choice(cats)}) for s in random_spans(rng, TEXT)] for _ in "ab")
        for severity in (False, True):
            key = {s: (s.category, s.severity if severity else "") for s in a + b}
            la, lb = ([0] * (len(TEXT) + 1) for _ in "ab")
            for spans, out in ((a, la), (b, lb)):
                for s in spans:
                    for i in [len(TEXT)] if s.missing else range(s.start, s.end):
                        out[i] = 1 + sorted(set(key.values())).index(key[s])
            present = sorted({x for x in la + lb if x})
            expected = f1_score(la, lb, labels=present, average="micro") if present else 1.0
            assert char_f1(a, b, len(TEXT), category=True, severity=severity) == pytest.approx(expected, abs=1e-12)


def test_char_f1_by_hand():
    cat = Span.over(TEXT, 4, 9, "minor")  # "Katze"
    cat_major = Span.over(TEXT, 4, 9, "major")
    wider = Span.over(TEXT, 0, 9, "minor")  # "Die Katze"
    assert char_f1([cat], [cat], len(TEXT)) == 1.0
    assert char_f1([cat], [wider], len(TEXT)) == pytest.approx(2 * 5 / (5 + 9))
    assert char_f1([cat], [cat_major], len(TEXT)) == 1.0
    assert char_f1([cat], [cat_major], len(TEXT), severity=True) == 0.0
    assert char_f1([], [], len(TEXT)) == 1.0
    assert char_f1([cat], [], len(TEXT)) == 0.0
    om = Span.omission(TEXT, "major")
    assert char_f1([om], [om], len(TEXT)) == 1.0  # both marked the omission
    assert char_f1([om, cat], [cat], len(TEXT)) == pytest.approx(2 * 5 / (6 + 5))


def test_span_agreement_pairs_annotators_of_one_output():
    cat, wider = Span.over(TEXT, 4, 9, "minor"), Span.over(TEXT, 0, 9, "major")
    df = pd.DataFrame(
        [
            dict(system="A", segment_id="1", annotator="r1", text=TEXT, spans=[cat]),
            dict(system="A", segment_id="1", annotator="r2", text=TEXT, spans=[wider]),
            dict(system="A", segment_id="1", annotator="r3", text=TEXT, spans=[]),
            dict(system="A", segment_id="2", annotator="r1", text=TEXT, spans=[]),
        ]
    )
    out = span_agreement(df)
    assert len(out) == 3  # r1-r2, r1-r3, r2-r3 on segment 1; segment 2 has one annotator
    r12 = out[(out.annotator_a == "r1") & (out.annotator_b == "r2")].iloc[0]
    assert (r12.f1, r12.f1_severity) == (pytest.approx(10 / 14), 0.0)
    df.loc[1, "text"] = TEXT + "!"
    with pytest.raises(ValueError, match="different texts"):
        span_agreement(df)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12
# units, missing values (the irr package's "C" data; unit 12 has one value and is not pairable)
NAN = math.nan
C_DATA = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    "C": [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
}


def long(data, transform=lambda v: v):
    return pd.DataFrame(
        [
            dict(unit=u + 1, annotator=a, value=transform(v))
            for a, vs in data.items()
            for u, v in enumerate(vs)
            if not math.isnan(v)
        ]
    )


def alpha_by_definition(data, delta):
    """alpha = 1 - D_o / D_e from the pairable values (Krippendorff 2011, the general form)."""
    units = list(zip(*data.values()))
    pairable = [[v for v in u if not math.isnan(v)] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    d_o = sum(sum(delta(x, y) for x, y in permutations(u, 2)) / (len(u) - 1) for u in pairable) / n
    allv = [v for u in pairable for v in u]
    d_e = sum(delta(x, y) for x, y in permutations(allv, 2)) / (n * (n - 1))
    return 1 - d_o / d_e


def test_krippendorff_worked_example():
    ratings = long(C_DATA)
    assert round(krippendorff_alpha(ratings, "nominal"), 3) == 0.743  # published
    assert round(krippendorff_alpha(ratings, "interval"), 3) == 0.849  # published
    assert round(krippendorff_alpha(ratings, "ordinal"), 3) == 0.815  # published
    assert round(krippendorff_alpha(ratings, "ratio"), 3) == 0.797  # published
    nominal = alpha_by_definition(C_DATA, lambda x, y: float(x != y))
    interval = alpha_by_definition(C_DATA, lambda x, y: (x - y) ** 2)
    assert krippendorff_alpha(ratings, "nominal") == pytest.approx(nominal, rel=1e-12)
    assert krippendorff_alpha(ratings, "interval") == pytest.approx(interval, rel=1e-12)
    # the same data as labels: nominal alpha only compares them for equality
    as_labels = long(C_DATA, lambda v: "abcde"[int(v) - 1])
    assert krippendorff_alpha(as_labels, "nominal") == pytest.approx(nominal, rel=1e-12)
    assert krippendorff_alpha(as_labels, "ordinal") == pytest.approx(krippendorff_alpha(ratings, "ordinal"))


def test_krippendorff_on_esa_scores_and_refusals():
    rng = np.random.default_rng(1)
    quality = rng.uniform(0, 100, 40)
    rows = [
        dict(unit=i, annotator=a, value=float(np.clip(q + rng.normal(0, sd), 0, 100)))
        for i, q in enumerate(quality)
        for a, sd in (("r1", 5), ("r2", 5), ("r3", 40))
    ]
    df = pd.DataFrame(rows)
    data = {a: g.sort_values("unit")["value"].tolist() for a, g in df.groupby("annotator")}
    assert krippendorff_alpha(df) == pytest.approx(alpha_by_definition(data, lambda x, y: (x - y) ** 2), rel=1e-9)
    close = krippendorff_alpha(df[df.annotator != "r3"])
    assert close > krippendorff_alpha(df) and close > 0.9
    with pytest.raises(ValueError, match="at least two annotators"):
        krippendorff_alpha(df[df.annotator == "r1"])
    with pytest.raises(ValueError, match="annotator 'r1' gave unit 0 more than one value"):
        krippendorff_alpha(pd.concat([df, df.head(1)]))
    with pytest.raises(ValueError, match="unknown level of measurement 'cardinal'"):
        krippendorff_alpha(df, "cardinal")
    with pytest.raises(ValueError, match="no unit has values from two annotators"):
        krippendorff_alpha(pd.DataFrame(dict(unit=[1, 2], annotator=["r1", "r2"], value=[3.0, 4.0])))


# -- spans on an output's audio: the F1 of the seconds marked ------------------------------------
DURATION_MS = 4000


def random_time_spans(rng):
    """Non-overlapping time spans on whole milliseconds of a DURATION_MS audio (and sometimes the
    omission after it)."""
    cuts = sorted(rng.sample(range(DURATION_MS + 1), 2 * rng.randint(0, 4)))
    spans = [
        TimeSpan(a / 1000, b / 1000, rng.choice(["minor", "major"])) for a, b in zip(cuts[::2], cuts[1::2]) if a < b
    ]
    if rng.random() < 0.3:
        spans.append(TimeSpan.omission(DURATION_MS / 1000, rng.choice(["minor", "major"])))
    return spans


def frame_labels(spans):
    """Per millisecond of the audio and of OMISSION_S after it: 0, or 1 minor / 2 major."""
    out = [0] * (DURATION_MS + round(OMISSION_S * 1000))
    for s in spans:
        start = round(s.start_s * 1000)
        end = start + round(OMISSION_S * 1000) if s.missing else round(s.end_s * 1000)
        out[start:end] = [SEV[s.severity]] * (end - start)
    return out


def test_time_f1_matches_sklearn_on_millisecond_frames():
    rng = random.Random(54)
    for _ in range(200):
        a, b = random_time_spans(rng), random_time_spans(rng)
        la, lb = frame_labels(a), frame_labels(b)
        binary = f1_score([x > 0 for x in la], [x > 0 for x in lb], zero_division=1.0)
        assert time_f1(a, b) == pytest.approx(binary, abs=1e-9)
        assert time_f1(b, a) == pytest.approx(binary, abs=1e-9)  # symmetric
        sev = f1_score(la, lb, labels=[1, 2], average="micro", zero_division=1.0)
        assert time_f1(a, b, severity=True) == pytest.approx(sev, abs=1e-9)


def test_agreement_of_an_audio_study_is_of_the_seconds_marked():
    """Before: the study's agreement failed on spans marked on audio (a time span has no side), and
    char_f1 left them out, so two annotators who marked different seconds agreed fully."""
    from services.esa.results import results

    def row(annotator, system, score, spans):
        return dict(participant=annotator, system=system, doc_id="d", segment_id="1", score=score, spans=spans)

    rows = [
        row(1, "A", 40, [{"start_s": 0.5, "end_s": 1.1, "severity": "minor"}]),
        row(2, "A", 45, [{"start_s": 0.5, "end_s": 1.2, "severity": "major"}]),
        row(1, "B", 80, []),
        row(2, "B", 75, [{"start_s": 2.0, "end_s": 2.0, "severity": "major", "missing": True}]),
    ]
    agreement = results(rows).agreement
    pairs = agreement.pairs.set_index("system")
    assert pairs.loc["A", "f1"] == pytest.approx(2 * 0.6 / (0.6 + 0.7))
    assert pairs.loc["A", "f1_severity"] == 0.0
    assert pairs.loc["B", "f1"] == 0.0  # an omission marked by one annotator only
    assert agreement.timed and "seconds" in agreement.line()
