"""ESA-AI (Zouhar, Kocmi and Sachan, NAACL 2025): error spans pre-filled by a quality-estimation
backend before the annotator sees a segment, which the annotator then keeps, edits or deletes
(docs/esa.md, "ESA-AI"). Pure: no gradio, no storage; services/esa/prefill_store.py runs it as a
background job and stores what it gives.

Two backends, one interface (Prefill.fill: sources and outputs in, one Prefilled per output):

- "xcomet": xCOMET's error spans (unbabel-comet's XCOMETMetric.predict, metadata.error_spans:
  start, end, text, severity, confidence), reference-free (xCOMET's QE mode), from the checkpoint
  TRADLAB_XCOMET_CHECKPOINT names (services/metrics/comet.py). Its offsets are character offsets
  of the output as given (the tokenizer's offset mapping); spaces at a span's edges are left out,
  as the page does. Severities: minor -> minor, major -> major, critical -> major (ESA has two
  severities; a critical error changes the meaning, which is ESA's "major").
- "gemba-mqm": an LLM (services/models/llm.py: the [llm] section or TRADLAB_LLM_*, the
  OpenAI-compatible endpoint or a local model) asked with GEMBA-MQM's few-shot prompt (Kocmi and
  Federmann, WMT 2023; assets/prompts/gemba_mqm.txt, with its source and licence), always at
  temperature 0. Its answer lists errors under "Critical:", "Major:" and "Minor:" as
  `category - "quoted text"` lines ("no-error" lines give none). Each quoted text is located in
  the output (as whole words where it occurs so, else as characters: a quoted "o" is not the o
  of "comeu"): its first occurrence at or after the end of the previous located error, else its
  first occurrence anywhere (GEMBA lists errors by severity, not by position: a strict
  left-to-right search would lose every error listed out of order), else, for an
  accuracy/omission error (whose quote is usually source text), the [MISSING] token; else it is
  dropped and counted. Severities as xCOMET's (critical, and GEMBA's non-translation, -> major);
  the category ("accuracy/mistranslation") is kept on the span for MQM.

Deviation from the source: the project's LLM interface sends one user turn, so GEMBA-MQM's chat
(a system message, three examples each a user turn and an assistant answer, then the segment) is
written as one prompt, the turns one after the other, in the source's words.

Overlaps (xCOMET's spans never overlap; an LLM's quotes may): spans that share a character are
merged into one covering both, with the more severe severity and that span's category (the first
listed at a tie); at most one [MISSING] span is kept (the most severe, the first at a tie). Every
result is then checked by services/esa/spans.check_spans against the exact output.

Outcomes (what the annotator did with each pre-filled span, outcomes()): each span of the
submitted answer carries `prefill`, the index of the pre-filled span it came from (null: added by
the annotator). A pre-filled span is "kept" (same offsets and severity), "severity" (same offsets,
severity changed), "edited" (offsets changed, whatever the severity) or "deleted" (no span comes
from it). A span that claims to come from a pre-filled span must overlap it (an omission must stay
an omission); two spans cannot come from the same one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, Sequence

from services.esa.spans import Span, check_spans
from services.metrics import registry as metrics
from services.metrics.gemba import language_name
from services.models import llm as llm_models
from services.models.cache import CACHE

BACKENDS = ("xcomet", "gemba-mqm")
# xCOMET's and GEMBA-MQM's severities -> ESA's (critical: the meaning is changed, ESA's "major")
SEVERITIES = {"minor": "minor", "major": "major", "critical": "major"}
RANK = {"minor": 0, "major": 1}
OUTCOMES = ("kept", "severity", "edited", "deleted")
PROMPT_PATH = Path(__file__).resolve().parents[2] / "assets" / "prompts" / "gemba_mqm.txt"
BATCH = 16  # segments per model call (and per write of the job)


@dataclass(frozen=True)
class Prefilled:
    """One output's pre-filled spans (checked, in text order, the omission last), how many of the
    backend's errors could not be placed (dropped) or were merged into another, and the backend's
    raw answer (the LLM's text, or xCOMET's spans) for provenance."""

    spans: tuple[Span, ...]
    dropped: int = 0
    merged: int = 0
    raw: object = None


class Prefill(Protocol):
    """A pre-fill backend: name (as [esa] prefill says it), model (what produced the spans, for
    provenance) and fill (deterministic for a given model)."""

    name: str
    model: str

    def fill(
        self, sources: Sequence[str], outputs: Sequence[str], source_langs: Sequence[str], target_langs: Sequence[str]
    ) -> list[Prefilled]: ...


# -- spans placed, merged and checked --------------------------------------------------------


def placed(output: str, start: int, end: int, severity: str, category: str | None = None) -> Span | None:
    """The span of output[start:end] clamped to the output, spaces at its edges left out; None when
    nothing is left."""
    a, b = max(0, int(start)), min(len(output), int(end))
    while a < b and output[a].isspace():
        a += 1
    while b > a and output[b - 1].isspace():
        b -= 1
    return Span.over(output, a, b, SEVERITIES[severity], category) if a < b else None


def merge(spans: Sequence[Span], output: str) -> tuple[list[Span], int]:
    """Overlapping spans merged (module docstring), one omission kept; (spans in text order, the
    omission last; how many spans were merged away)."""
    placed_spans = sorted((s for s in spans if not s.missing), key=lambda s: (s.start, s.end))
    out: list[Span] = []
    merged = 0
    for s in placed_spans:
        if out and s.start < out[-1].end:
            last = out[-1]
            worse = s if RANK[s.severity] > RANK[last.severity] else last
            out[-1] = Span.over(output, last.start, max(last.end, s.end), worse.severity, worse.category)
            merged += 1
        else:
            out.append(s)
    omissions = [s for s in spans if s.missing]
    if omissions:
        out.append(max(omissions, key=lambda s: RANK[s.severity]))  # max keeps the first at a tie
        merged += len(omissions) - 1
    return out, merged


def checked(spans: Sequence[Span], output: str) -> list[Span]:
    """check_spans on the spans as ESA marks them (no category); raises SpanError."""
    check_spans([replace(s, category=None) for s in spans], output)
    return list(spans)


def result(spans: Sequence[Span], output: str, dropped: int = 0, raw: object = None) -> Prefilled:
    final, merged = merge(spans, output)
    return Prefilled(tuple(checked(final, output)), dropped, merged, raw)


# -- xCOMET ----------------------------------------------------------------------------------


def from_xcomet(output: str, error_spans: Sequence[dict]) -> Prefilled:
    """xCOMET's spans of one output (metadata.error_spans: start, end, text, severity, confidence)
    as ESA spans; a span with an unknown severity or nothing left inside the output is dropped."""
    spans, dropped, raw = [], 0, []
    for e in error_spans:
        start, end, severity = int(e["start"]), int(e["end"]), str(e.get("severity", "")).lower()
        raw.append({"start": start, "end": end, "text": str(e.get("text", "")), "severity": severity,
                    "confidence": float(e.get("confidence", 0.0))})  # fmt: skip
        s = placed(output, start, end, severity) if severity in SEVERITIES else None
        if s is None:
            dropped += 1
        else:
            spans.append(s)
    return result(spans, output, dropped, raw)


class XcometPrefill:
    """xCOMET's error spans, reference-free (module docstring)."""

    name = "xcomet"

    def __init__(self, metric):
        self.metric = metric
        self.model = f"xcomet {metric.model}"

    def fill(self, sources, outputs, source_langs=(), target_langs=()) -> list[Prefilled]:
        todo = [i for i, (s, o) in enumerate(zip(sources, outputs)) if str(s).strip() and str(o).strip()]
        out = [Prefilled(()) for _ in outputs]
        found = self.metric.error_spans([{"src": str(sources[i]), "mt": str(outputs[i])} for i in todo]) if todo else []
        for i, spans in zip(todo, found):
            out[i] = from_xcomet(str(outputs[i]), spans)
        return out


# -- GEMBA-MQM -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GembaError:
    severity: str  # critical, major or minor (GEMBA's)
    category: str  # as the LLM wrote it, lower-cased: "accuracy/mistranslation"
    text: str  # the quoted text, as written


LEVEL = re.compile(r"^\**\s*(critical|major|minor)\s*:?\s*\**\s*:?$", re.IGNORECASE)
ERROR_LINE = re.compile(r'^[-*\s]*(?P<category>[^"“”]+?)\s*[-–:]\s*["“](?P<text>.*)["”]\s*[.,;]?$')


def parse_gemba_mqm(answer: str) -> tuple[list[GembaError], int]:
    """GEMBA-MQM's answer as errors, in the answer's order; (errors, lines not understood). A line
    "Critical:", "Major:" or "Minor:" sets the severity of the lines after it; "no-error" lines
    and blank lines give nothing; a non-translation error is critical (GEMBA's own parser's rule)."""
    errors, unread, level = [], 0, None
    for line in str(answer or "").splitlines():
        text = line.strip()
        if not text:
            continue
        m = LEVEL.match(text)
        if m:
            level = m.group(1).lower()
            continue
        low = text.lower()
        if "no-error" in low or "no error" in low:
            continue
        m = ERROR_LINE.match(text)
        if level is None or m is None:
            unread += 1
            continue
        category = m.group("category").strip().lower()
        errors.append(GembaError("critical" if "non-translation" in category else level, category, m.group("text")))
    return errors, unread


def locate(errors: Sequence[GembaError], output: str) -> tuple[list[Span], int]:
    """Each error's quoted text placed in the output (module docstring); (spans, errors dropped)."""
    spans, dropped, cursor = [], 0, 0
    for e in errors:
        quote = e.text.strip()
        at = _find(output, quote, cursor)
        if at >= 0:
            s = placed(output, at, at + len(quote), e.severity, e.category)
            if s is not None:
                spans.append(s)
                cursor = at + len(quote)
                continue
        if "omission" in e.category:
            spans.append(Span.omission(output, SEVERITIES[e.severity], e.category))
            continue
        dropped += 1
    return spans, dropped


def _whole(output: str, at: int, quote: str) -> bool:
    """The quote at `at` is not part of a longer word (a quoted "o" is not the o of "comeu")."""
    before = output[at - 1] if at > 0 else " "
    after = output[at + len(quote)] if at + len(quote) < len(output) else " "
    return not (quote[0].isalnum() and before.isalnum()) and not (quote[-1].isalnum() and after.isalnum())


def _find(output: str, quote: str, cursor: int) -> int:
    """Where the quote is placed (module docstring), as whole words where it occurs so, else as
    characters; -1: nowhere."""
    if not quote:
        return -1
    for whole in (True, False):
        for start in (cursor, 0):
            at = output.find(quote, start)
            while at >= 0 and whole and not _whole(output, at, quote):
                at = output.find(quote, at + 1)
            if at >= 0:
                return at
    return -1


def from_gemba(output: str, answer: str) -> Prefilled:
    errors, unread = parse_gemba_mqm(answer)
    spans, dropped = locate(errors, output)
    return result(spans, output, dropped + unread, answer)


def load_prompt(path: Path = PROMPT_PATH) -> str:
    """The prompt file without its header (the "#" lines up to the first blank line)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    k = 0
    while k < len(lines) and lines[k].startswith("#"):
        k += 1
    return "\n".join(lines[k:]).strip("\n")


def _language(code: str, fallback: str) -> str:
    return language_name(code) if str(code or "").strip() else fallback


class GembaMqmPrefill:
    """GEMBA-MQM through the project's LLM (module docstring)."""

    name = "gemba-mqm"

    def __init__(self, llm, template: str | None = None):
        self.llm = llm
        self.template = load_prompt() if template is None else template
        self.model = f"gemba-mqm {llm.name}"

    def prompt(self, source: str, output: str, source_lang: str = "", target_lang: str = "") -> str:
        """The prompt of one segment; a language the corpus does not give is named "The" (the
        prompt then reads "The source:", "The translation:")."""
        fill = {
            "{source_lang}": _language(source_lang, "The"),
            "{target_lang}": _language(target_lang, "The"),
            "{source_seg}": str(source),
            "{target_seg}": str(output),
        }
        # the template's last turn holds the placeholders: the examples before it stay as written
        head, sep, last = self.template.rpartition("{source_lang} source:")
        last = sep + last
        for k, v in fill.items():
            last = last.replace(k, v)
        return head + last

    def fill(self, sources, outputs, source_langs=(), target_langs=()) -> list[Prefilled]:
        n = len(outputs)
        src_l, tgt_l = list(source_langs) or [""] * n, list(target_langs) or [""] * n
        todo = [i for i in range(n) if str(outputs[i]).strip()]
        prompts = [self.prompt(sources[i], outputs[i], src_l[i], tgt_l[i]) for i in todo]
        answers = self.llm.complete(prompts) if prompts else []
        out = [Prefilled(()) for _ in outputs]
        for i, answer in zip(todo, answers):
            out[i] = from_gemba(str(outputs[i]), answer)
        return out


def get(name: str, study_config: dict | None = None, cache=CACHE) -> Prefill:
    """The backend [esa] prefill names; BackendUnavailable (the model not configured) says what to
    set: TRADLAB_XCOMET_CHECKPOINT for xcomet, the [llm] section or TRADLAB_LLM_* for gemba-mqm."""
    if name == "xcomet":
        return XcometPrefill(metrics.get("xcomet", cache=cache))
    if name == "gemba-mqm":
        return GembaMqmPrefill(llm_models.get(study_config, cache=cache, temperature=0.0))
    raise ValueError(f"unknown pre-fill backend {name!r} (one of {', '.join(BACKENDS)})")


# -- what the annotator did with each pre-filled span ----------------------------------------


def links_of(raw, n_prefilled: int) -> tuple[list[int | None], list[str]]:
    """Each submitted span's `prefill` (the index of the pre-filled span it came from, or null),
    in the order submitted; problems name the span."""
    links: list[int | None] = []
    problems = []
    for i, d in enumerate(raw if isinstance(raw, list) else []):
        k = d.get("prefill") if isinstance(d, dict) else None
        if k is None:
            links.append(None)
        elif isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n_prefilled:
            problems.append(f"span {i}: prefill must be the number of a pre-filled span (0-{n_prefilled - 1}) or null")
            links.append(None)
        else:
            links.append(k)
    return links, problems


def outcomes(prefilled: Sequence[dict], final: Sequence[Span], links: Sequence[int | None]) -> tuple[dict, list[str]]:
    """({"spans": per pre-filled span {start, end, text, severity, category, missing, outcome,
    final}, "origin": per final span the pre-filled span it came from or None}, problems).
    `final` in the order the answer stores it, `links` beside it."""
    problems = []
    came: dict[int, int] = {}
    for j, (s, k) in enumerate(zip(final, links)):
        if k is None:
            continue
        p = prefilled[k]
        name = f"span {j} ({s.label()})"
        if k in came:
            problems.append(f"{name} and span {came[k]} both come from pre-filled span {k}: one of them is new")
        elif bool(p.get("missing")) != s.missing or (
            not s.missing and not (s.start < int(p["end"]) and int(p["start"]) < s.end)
        ):
            problems.append(f"{name} does not overlap the pre-filled span {k} it is said to come from")
        came.setdefault(k, j)
    records = []
    for k, pre in enumerate(prefilled):
        at = came.get(k)
        if at is None:
            outcome = "deleted"
        elif (final[at].start, final[at].end) != (int(pre["start"]), int(pre["end"])):
            outcome = "edited"
        elif final[at].severity != pre["severity"]:
            outcome = "severity"
        else:
            outcome = "kept"
        keys = ("start", "end", "text", "severity", "category", "missing")
        records.append({**{key: pre.get(key) for key in keys}, "outcome": outcome, "final": at})
    return {"spans": records, "origin": list(links)}, problems


def counts(record: dict | None) -> dict[str, int]:
    """n_prefilled and one count per outcome, and the spans the annotator added, of one answer's
    record (zeros for an answer without pre-filled spans)."""
    spans = (record or {}).get("spans") or []
    out = {"n_prefilled": len(spans), **{f"prefill_{o}": sum(s["outcome"] == o for s in spans) for o in OUTCOMES}}
    out["n_added"] = sum(k is None for k in (record or {}).get("origin") or [])
    return out
