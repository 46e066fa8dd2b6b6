"""Span agreement between two annotators of the same output: character-level F1.

Each character of the output, and the [MISSING] token after it (position len(text)), is marked or
not by each annotator. With A's marks as the reference and B's as the prediction, F1 =
2 |A and B| / (|A| + |B|), which is symmetric. With severity=True a character agrees only when both
mark it with the same severity (micro-averaged over the severities, unmarked characters being the
negative class). Two annotators who mark nothing agree fully (1.0).

Computed on the spans' intervals, so a long output costs nothing per character; the tests check it
against scikit-learn's f1_score on per-character labels. Scores' agreement (Krippendorff's alpha)
is in services/common/agreement.py.

Spans marked on an output's audio (TimeSpan, in seconds) agree by the time they share: time_f1,
the same F1 with seconds for characters (2 |A and B| / (|A| + |B|) over the marked time), an
omission ([MISSING] after the audio) counted as OMISSION_S of time after the audio's end, about a
spoken word, so that two annotators who both mark an omission agree and one who marks it alone
does not. Tested against scikit-learn's f1_score on 1 ms frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

import pandas as pd

from services.esa.spans import Span, TimeSpan

PAIR_COLUMNS = ["system", "segment_id", "annotator_a", "annotator_b", "f1", "f1_severity"]
OMISSION_S = 0.5  # an omission on the audio timeline, for time_f1: about a spoken word


def _intervals(spans: Iterable[Span], length: int) -> list[tuple[int, int, Span]]:
    """(start, end, span) per span in the text; an omission is the token's one position, length.
    Spans marked on an output's audio (TimeSpan, in seconds) are left out: the F1 is of
    characters, and no character measure holds for them."""
    return [(length, length + 1, s) if s.missing else (s.start, s.end, s) for s in spans if isinstance(s, Span)]


def _size(iv: list[tuple[int, int, Span]]) -> int:
    return sum(e - s for s, e, _ in iv)


def char_f1(
    a: Iterable[Span], b: Iterable[Span], length: int, *, severity: bool = False, category: bool = False
) -> float:
    """Character-level F1 of two annotators' spans on one output of `length` characters (spans
    checked: none overlaps another of the same annotator)."""
    ia, ib = _intervals(a, length), _intervals(b, length)
    na, nb = _size(ia), _size(ib)
    if na + nb == 0:
        return 1.0

    def same(x: Span, y: Span) -> bool:
        return (not severity or x.severity == y.severity) and (not category or x.category == y.category)

    both = sum(max(0, min(ea, eb) - max(sa, sb)) for sa, ea, x in ia for sb, eb, y in ib if same(x, y))
    return 2 * both / (na + nb)


def time_f1(a: Iterable[TimeSpan], b: Iterable[TimeSpan], *, severity: bool = False, category: bool = False) -> float:
    """F1 of two annotators' spans on one output's audio, by the seconds they share (spans checked:
    none overlaps another of the same annotator); an omission is OMISSION_S after its start (the
    audio's end)."""

    def intervals(spans: Iterable[TimeSpan]) -> list[tuple[float, float, TimeSpan]]:
        return [(s.start_s, s.start_s + OMISSION_S if s.missing else s.end_s, s) for s in spans]

    ia, ib = intervals(a), intervals(b)
    na, nb = sum(e - s for s, e, _ in ia), sum(e - s for s, e, _ in ib)
    if na + nb == 0:
        return 1.0

    def same(x: TimeSpan, y: TimeSpan) -> bool:
        return (not severity or x.severity == y.severity) and (not category or x.category == y.category)

    both = sum(max(0.0, min(ea, eb) - max(sa, sb)) for sa, ea, x in ia for sb, eb, y in ib if same(x, y))
    return 2 * both / (na + nb)


def pair_f1(a: list, b: list, length: int, *, severity: bool = False, category: bool = False) -> float:
    """Two annotators' agreement on one output: time_f1 where either marked its audio, else char_f1."""
    if any(isinstance(s, TimeSpan) for s in (*a, *b)):
        ta, tb = [s for s in a if isinstance(s, TimeSpan)], [s for s in b if isinstance(s, TimeSpan)]
        return time_f1(ta, tb, severity=severity, category=category)
    return char_f1(a, b, length, severity=severity, category=category)


def span_agreement(judgments: pd.DataFrame) -> pd.DataFrame:
    """Every pair of annotators of the same (system, segment_id): char_f1 without and with
    severities. Judgments: columns system, segment_id, annotator, text (the output) and spans."""
    missing = [c for c in ("system", "segment_id", "annotator", "text", "spans") if c not in judgments]
    if missing:
        raise ValueError(f"span agreement needs the columns {', '.join(missing)}")
    rows = []
    for (system, segment_id), g in judgments.groupby(["system", "segment_id"], sort=True):
        texts = set(g["text"])
        if len(texts) > 1:
            raise ValueError(f"{system} {segment_id}: the annotators saw different texts")
        length = len(texts.pop())
        for (ra, sa), (rb, sb) in combinations(zip(g["annotator"], g["spans"]), 2):
            rows.append((system, segment_id, ra, rb, char_f1(sa, sb, length), char_f1(sa, sb, length, severity=True)))
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)
