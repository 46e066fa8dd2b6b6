"""Error spans: the record, its checks, the Appraise/Pearmut wire format, and spans in audio.

A span marks characters ``start`` to ``end`` (0-based, end exclusive: Python's slice) of the exact
text the annotator saw, carries that text beside the offsets (so a changed output shows), a
severity and, for MQM, a category ("Accuracy/Mistranslation"; assets/mqm_taxonomy.toml).

Omissions. ESA puts a ``[MISSING]`` token after the translation (Kocmi et al. 2024); marking it
records an omission. Appraise stores that span as start_i == end_i == "missing"
(EvalView/static/EvalView/js/direct-assessment-document-mqm-esa.js), Pearmut as start_i ==
end_i == the index of the token, one past the last character (web/src/annotate.ts). Here an
omission is explicit: ``missing=True`` with start == end == len(text) and text "". Both tools let
an output carry one omission span (Appraise: a second click on the token only changes its
severity), so check_spans refuses a second one.

Overlap. Appraise and Pearmut both refuse a span that shares a character with another ("Overlapping
error fragments are not allowed."; "Cannot create overlapping error spans"); their indices are
inclusive, so two spans side by side (one ends at character i, the next starts at i + 1) are
allowed. With end-exclusive offsets that is: spans overlap when a.start < b.end and
b.start < a.end; spans that touch (a.end == b.start) are allowed.

Side. MQM's "Source error" is marked in the source (Freitag et al. 2021; Anthea's
source_side_only); ``side="source"`` spans index the source text, are checked against it and
overlap only with each other.

Audio. A speech output's spans are in seconds (TimeSpan: start_s < end_s within the audio's
duration; an omission sits at start_s == end_s == duration). Where the output has a transcript
with word times (as Anthea's speech-to-speech template's alignment: substring, time_start,
time_end), words_in gives the words a time span covers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

ESA_SEVERITIES = ("minor", "major")
MQM_SEVERITIES = ("major", "minor", "neutral")
SIDES = ("target", "source")
MISSING_TOKEN = "[MISSING]"
# browsers report media times rounded to the millisecond or so; a span may end this far past the
# duration the server measured
TIME_TOLERANCE_S = 0.001


class SpanError(ValueError):
    """Spans refused; the message lists every problem, one a line, each naming its span."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str
    severity: str
    category: str | None = None
    missing: bool = False
    side: str = "target"

    @classmethod
    def over(
        cls, output: str, start: int, end: int, severity: str, category: str | None = None, side: str = "target"
    ) -> Span:
        """The span of output[start:end] (its text taken from the output)."""
        return cls(start, end, output[start:end], severity, category, False, side)

    @classmethod
    def omission(cls, output: str, severity: str, category: str | None = None) -> Span:
        """The [MISSING] span of an output: start == end == len(output)."""
        return cls(len(output), len(output), "", severity, category, True)

    def label(self) -> str:
        where = MISSING_TOKEN if self.missing else f"{self.start}-{self.end} {self.text!r}"
        return where if self.side == "target" else f"source {where}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> Span:
        return cls(
            start=int(d["start"]),
            end=int(d["end"]),
            text=str(d.get("text", "")),
            severity=str(d["severity"]),
            category=d.get("category"),
            missing=bool(d.get("missing", False)),
            side=str(d.get("side", "target")),
        )


def _overlaps(spans: list[tuple[int, Span]], what: str) -> list[str]:
    problems = []
    ordered = sorted(spans, key=lambda t: (t[1].start, t[1].end))
    for j, (i, s) in enumerate(ordered):
        for k, t in ordered[j + 1 :]:
            if t.start >= s.end:
                break
            problems.append(f"span {i} ({s.label()}) overlaps span {k} ({t.label()}) in the {what}")
    return problems


def check_spans(
    spans: Iterable[Span],
    output: str,
    *,
    source: str | None = None,
    severities: Sequence[str] = ESA_SEVERITIES,
    categories: Iterable[str] | None = None,
) -> list[Span]:
    """The spans, or a SpanError naming every problem: offsets out of the text, a text that is not
    the text at its offsets, an unknown severity, a category where none is allowed (categories
    None: ESA) or a missing or unknown one (MQM), a malformed omission, a second omission,
    overlapping spans (touching is allowed), a source-side span without a source."""
    spans = list(spans)
    allowed = None if categories is None else set(categories)
    problems: list[str] = []
    for i, s in enumerate(spans):
        if not isinstance(s, Span):
            problems.append(f"span {i}: not a span record ({type(s).__name__})")
            continue
        name = f"span {i} ({s.label()})"
        if s.side not in SIDES:
            problems.append(f"{name}: unknown side {s.side!r} (target or source)")
            continue
        text = output if s.side == "target" else source
        if text is None:
            problems.append(f"{name}: marks the source, but no source text was given")
            continue
        if s.severity not in severities:
            problems.append(f"{name}: unknown severity {s.severity!r} (one of {', '.join(severities)})")
        if allowed is None and s.category is not None:
            problems.append(f"{name}: has a category ({s.category!r}) but this protocol marks none")
        elif allowed is not None and s.category is None:
            problems.append(f"{name}: has no category")
        elif allowed is not None and s.category not in allowed:
            problems.append(f"{name}: unknown category {s.category!r}")
        if s.missing:
            if s.side != "target":
                problems.append(f"{name}: an omission is marked on the output, not the source")
            elif not (s.start == s.end == len(output)) or s.text != "":
                problems.append(
                    f"{name}: an omission must sit at start == end == {len(output)} (the output's length) "
                    f"with empty text, not {s.start}-{s.end} {s.text!r}"
                )
            continue
        if not (isinstance(s.start, int) and isinstance(s.end, int)):
            problems.append(f"{name}: offsets must be whole numbers")
            continue
        if s.start < 0 or s.end > len(text) or s.start >= s.end:
            problems.append(
                f"{name}: offsets out of range: need 0 <= start < end <= {len(text)} (the {s.side}'s length)"
            )
            continue
        if text[s.start : s.end] != s.text:
            problems.append(
                f"{name}: its text does not match the {s.side}, whose characters {s.start}-{s.end} are "
                f"{text[s.start : s.end]!r}"
            )
    records = [(i, s) for i, s in enumerate(spans) if isinstance(s, Span)]
    omissions = [i for i, s in records if s.missing]
    if len(omissions) > 1:
        problems.append(f"spans {', '.join(map(str, omissions))}: more than one {MISSING_TOKEN} span (one at most)")
    for side in SIDES:
        placed = [(i, s) for i, s in records if s.side == side and not s.missing]
        problems += _overlaps(placed, "output" if side == "target" else "source")
    if problems:
        raise SpanError(problems)
    return spans


# ---------------------------------------------------------------------------------------------
# Appraise's and Pearmut's records: start_i and end_i inclusive character indices


def _category(value) -> str | None:
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, (list, tuple)):  # Appraise: ["Accuracy", "Mistranslation"]
        return "/".join(str(v) for v in value)
    return str(value)


def from_inclusive(records: Iterable[Mapping], output: str) -> list[Span]:
    """Spans from Appraise/Pearmut records ({"start_i", "end_i", "severity", "category" or
    "error_type"}, indices inclusive); an omission is start_i == end_i == "missing" (Appraise) or
    == len(output) (Pearmut). Severities are lowercased; nothing is checked (check_spans does)."""
    spans = []
    for r in records:
        start, end = r["start_i"], r["end_i"]
        severity = str(r.get("severity") or "").lower()
        category = _category(r.get("category", r.get("error_type")))
        if start == "missing" or end == "missing" or (int(start) == int(end) == len(output)):
            spans.append(Span.omission(output, severity, category))
        else:
            spans.append(Span.over(output, int(start), int(end) + 1, severity, category))
    return spans


def to_inclusive(spans: Iterable[Span], missing: str = "pearmut") -> list[dict]:
    """Spans as Appraise/Pearmut records (inclusive indices); an omission as "missing" (missing=
    "appraise") or as the token's index, len(output) (missing="pearmut")."""
    out = []
    for s in spans:
        if s.missing:
            idx: int | str = "missing" if missing == "appraise" else s.start
            out.append({"start_i": idx, "end_i": idx, "severity": s.severity, "category": s.category})
        else:
            out.append({"start_i": s.start, "end_i": s.end - 1, "severity": s.severity, "category": s.category})
    return out


# ---------------------------------------------------------------------------------------------
# speech outputs: spans in seconds


@dataclass(frozen=True)
class TimeSpan:
    start_s: float
    end_s: float
    severity: str
    category: str | None = None
    missing: bool = False
    # the output transcript's words it covers (words_in: indices into the segment's target_words),
    # filled in by the server where the segment has word times
    words: tuple[int, ...] = ()

    @classmethod
    def omission(cls, duration_s: float, severity: str, category: str | None = None) -> TimeSpan:
        return cls(float(duration_s), float(duration_s), severity, category, True)

    def label(self) -> str:
        return MISSING_TOKEN if self.missing else f"{self.start_s:g}-{self.end_s:g} s"

    def to_dict(self) -> dict:
        return {**asdict(self), "words": list(self.words)}

    @classmethod
    def from_dict(cls, d: Mapping) -> TimeSpan:
        """A stored or submitted time span; a time that is not a finite number is a ValueError."""
        times = []
        for key in ("start_s", "end_s"):
            v = d[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{key} must be a number of seconds, not {v!r}")
            times.append(float(v))
        return cls(
            start_s=times[0],
            end_s=times[1],
            severity=str(d["severity"]),
            category=d.get("category"),
            missing=bool(d.get("missing", False)),
            words=tuple(int(i) for i in d.get("words") or ()),
        )


def is_time_record(d: Mapping) -> bool:
    """Whether a span record is in seconds (a TimeSpan's) rather than in characters."""
    return "start_s" in d or "end_s" in d


def span_of_record(d: Mapping) -> Span | TimeSpan:
    """A stored span record as its span: in seconds (TimeSpan) or in characters (Span)."""
    return TimeSpan.from_dict(d) if is_time_record(d) else Span.from_dict(d)


@dataclass(frozen=True)
class Word:
    """A transcript word and where it is spoken (seconds)."""

    text: str
    start_s: float
    end_s: float


def check_time_spans(
    spans: Iterable[TimeSpan],
    duration_s: float,
    *,
    severities: Sequence[str] = ESA_SEVERITIES,
    categories: Iterable[str] | None = None,
) -> list[TimeSpan]:
    """The spans of an audio output of duration_s seconds, or a SpanError naming every problem:
    0 <= start_s < end_s <= duration_s (TIME_TOLERANCE_S of slack at the end), severities and
    categories as check_spans, an omission at start_s == end_s == duration_s, one omission at most,
    no overlap (touching is allowed)."""
    spans = list(spans)
    allowed = None if categories is None else set(categories)
    problems: list[str] = []
    for i, s in enumerate(spans):
        name = f"span {i} ({s.label()})"
        if s.severity not in severities:
            problems.append(f"{name}: unknown severity {s.severity!r} (one of {', '.join(severities)})")
        if allowed is None and s.category is not None:
            problems.append(f"{name}: has a category ({s.category!r}) but this protocol marks none")
        elif allowed is not None and s.category not in allowed:
            problems.append(f"{name}: {'no' if s.category is None else 'unknown'} category {s.category!r}")
        if s.missing:
            if not (abs(s.start_s - duration_s) <= TIME_TOLERANCE_S and s.start_s == s.end_s):
                problems.append(f"{name}: an omission must sit at start_s == end_s == {duration_s:g} (the duration)")
        elif not (0 <= s.start_s < s.end_s <= duration_s + TIME_TOLERANCE_S):
            problems.append(f"{name}: times out of range: need 0 <= start_s < end_s <= {duration_s:g} (the duration)")
    omissions = [i for i, s in enumerate(spans) if s.missing]
    if len(omissions) > 1:
        problems.append(f"spans {', '.join(map(str, omissions))}: more than one {MISSING_TOKEN} span (one at most)")
    placed = sorted(((i, s) for i, s in enumerate(spans) if not s.missing), key=lambda t: (t[1].start_s, t[1].end_s))
    for j, (i, s) in enumerate(placed):
        for k, t in placed[j + 1 :]:
            if t.start_s >= s.end_s:
                break
            problems.append(f"span {i} ({s.label()}) overlaps span {k} ({t.label()})")
    if problems:
        raise SpanError(problems)
    return spans


def check_words(words: Sequence[Word], duration_s: float) -> list[Word]:
    """Word times within the audio (0 <= start_s <= end_s <= duration_s) and in order, or a
    SpanError naming the words that are not."""
    problems = []
    for i, w in enumerate(words):
        if not (0 <= w.start_s <= w.end_s <= duration_s + TIME_TOLERANCE_S):
            problems.append(f"word {i} ({w.text!r}, {w.start_s:g}-{w.end_s:g} s): outside 0-{duration_s:g} s")
        if i and w.start_s < words[i - 1].start_s:
            problems.append(f"word {i} ({w.text!r}): starts before word {i - 1}")
    if problems:
        raise SpanError(problems)
    return list(words)


def read_words(value) -> list[Word]:
    """A transcript's word times as the segments file gives them (JSON: [{word, start, end}],
    seconds), or a SpanError naming every entry that is not one; not yet checked against a
    duration (check_words)."""
    shape = "must be a JSON list of {word, start, end} (seconds)"
    try:
        found = json.loads(value) if isinstance(value, str) else value
    except ValueError as e:
        raise SpanError([f"not JSON: {e}"]) from e
    if not isinstance(found, list):
        raise SpanError([shape])
    words, problems = [], []
    for i, d in enumerate(found):
        ok = isinstance(d, dict) and isinstance(d.get("word"), str) and d["word"].strip()
        times = [d.get(k) for k in ("start", "end")] if isinstance(d, dict) else []
        if not ok or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) for t in times
        ):
            problems.append(f"word {i}: {shape}, not {json.dumps(d, ensure_ascii=False)[:80]}")
            continue
        words.append(Word(d["word"], float(d["start"]), float(d["end"])))
    if problems:
        raise SpanError(problems)
    return words


def words_in(span: TimeSpan, words: Sequence[Word]) -> list[int]:
    """Indices of the words a time span covers: those whose time overlaps it for a positive time
    (a word that only touches the span's edge is not in it). An omission covers no word."""
    if span.missing:
        return []
    return [i for i, w in enumerate(words) if min(w.end_s, span.end_s) - max(w.start_s, span.start_s) > 0]
