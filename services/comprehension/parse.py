"""Reading questions and answers out of an LLM's free text.

parse_questions() accepts what chat models actually write: numbered lists ("1.", "1)", "(1)",
"Q1:", "Question 1 -"), bullets ("-", "*", "•"), JSON (an array of strings, of objects with a
"question" field, or an object with a "questions" array), Markdown code fences and bold, and
a preamble or closing remark around the list ("Here are 10 questions:", "Let me know if ...").
Only list items and lines that end with "?" count as questions, so chatter is left out.

normalise() is the text compared to find near-duplicates and exact answer matches;
is_unanswerable() recognises "not stated" and its equivalents in English and Portuguese.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from typing import Sequence

MAX_CHARS = 300  # a longer "question" is a paragraph, not a question
NEAR_DUPLICATE = 0.9  # difflib ratio of normalised texts at which two questions are one

_FENCE = re.compile(r"```[\w-]*\s*\n?(.*?)```", re.S)
_ITEM = re.compile(
    r"""^\s*(?:
        (?:\*\*)?(?:q(?:uestion)?|pergunta)\s*\#?\s*\d{1,2}\s*(?:\*\*)?\s*[:.)\-–—]\s*(?:\*\*)?  # Q1: / **Q1.**
      | \(?\d{1,2}\s*[.)\]:]\s*(?!\d)                                                            # 1. 1) (1) 1:
      | [-*•·▪‣–]\s+                                                                                # bullets
    )""",
    re.I | re.X,
)
_WRAP = re.compile(r'^[\s"“”\'`*_]+|[\s"“”\'`*_]+$')
_LEAD_LABEL = re.compile(r"^(?:q(?:uestion)?|pergunta)\s*:\s*", re.I)
_QUESTION_WORD = re.compile(
    r"^(?:what|who|whom|whose|when|where|why|which|how|is|are|was|were|do|does|did|can|"
    r"could|has|have|had|will|would|should|may|must)\b",
    re.I,
)

_NOT_STATED = [
    "not stated",
    "not mentioned",
    "not given",
    "not specified",
    "not provided",
    "not in the text",
    "not available",
    "unknown",
    "unanswerable",
    "cannot be answered",
    "can't be answered",
    "cannot answer",
    "no answer",
    "no information",
    "not answerable",
    "the text does not",
    "it does not say",
    "n/a",
    "none given",
    "não consta",
    "não é mencionad",
    "não mencionad",
    "não é dit",
    "não é indicad",
    "não indicad",
    "não informad",
    "não especificad",
    "não é possível responder",
    "não se sabe",
    "não sei",
    "sem resposta",
    "sem informação",
    "desconhecid",
    "o texto não",
]


def normalise(text: str) -> str:
    """Lower case, accents and punctuation removed, spaces collapsed: the text compared for
    duplicates and exact answer matches."""
    t = unicodedata.normalize("NFKD", str(text or "")).encode("ascii", "ignore").decode()
    t = re.sub(r"[^\w\s]", " ", t.lower())
    return " ".join(t.split())


def is_unanswerable(answer: str | None) -> bool:
    """An empty answer, or one saying the text does not give it ("NOT STATED", "unknown",
    "Não consta", "The text does not mention ...")."""
    a = _clean(answer or "").lower().strip(" .!")
    if not a or not normalise(a):
        return True
    if len(a) > 80:  # a long answer that quotes the text is an answer
        return any(a.startswith(p) for p in _NOT_STATED)
    return any(p in a for p in _NOT_STATED)


def clean_answer(answer: str | None) -> str:
    """The answer's first non-empty line, without labels ("Answer:", "Resposta:"), quotes or bold."""
    for line in _strip_fences(str(answer or "")).splitlines():
        line = re.sub(r"^\s*(?:answer|resposta|a)\s*:\s*", "", line.strip(), flags=re.I)
        line = _clean(line)
        if line:
            return line[:MAX_CHARS]
    return ""


def _clean(text: str) -> str:
    return _WRAP.sub("", text).strip()


def _strip_fences(text: str) -> str:
    m = _FENCE.search(text)
    if m:
        return m.group(1)
    return text.replace("```", "")


def _from_json(text: str) -> list[str] | None:
    """Questions from JSON somewhere in the text, or None when there is no usable JSON."""
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = text.find(opener), text.rfind(closer)
        if start == -1 or end <= start:
            continue
        try:
            data = json.loads(text[start : end + 1])
        except ValueError:
            continue
        if isinstance(data, dict):
            data = next((data[k] for k in ("questions", "Questions", "perguntas") if k in data), None)
        if not isinstance(data, list):
            continue
        out = []
        for item in data:
            if isinstance(item, dict):
                item = next((item[k] for k in ("question", "en", "text", "q") if isinstance(item.get(k), str)), None)
            if isinstance(item, str):
                out.append(item)
        if out:
            return out
    return None


def _valid(q: str) -> bool:
    words = re.findall(r"[^\W\d_]+", q)
    return 3 <= len(q) <= MAX_CHARS and len(words) >= 2


def _as_question(q: str) -> str | None:
    """q when it reads as a question (ends with "?", or opens with a question word, then "?" is
    added), else None."""
    q = _clean(_LEAD_LABEL.sub("", _clean(q)))
    if q.endswith("?"):
        return q
    if _QUESTION_WORD.match(q) and not q.endswith(":"):
        return q.rstrip(" .") + "?"
    return None


def parse_questions(text: str | None) -> list[str]:
    """The questions in an LLM's answer, in order, cleaned, without exact repeats."""
    if not text or not str(text).strip():
        return []
    body = _strip_fences(str(text))
    found = _from_json(body)
    if found is None:
        lines = body.splitlines()
        items = [_ITEM.sub("", line, count=1) for line in lines if _ITEM.match(line)]
        # A list's items are the questions (preamble and closing remarks are not items);
        # without a list, the lines that are questions.
        found = items if items else lines
    out, seen = [], set()
    for raw in found:
        q = _as_question(str(raw))
        key = normalise(q or "")
        if q and _valid(q) and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def near_duplicate(a: str, b: str) -> bool:
    na, nb = normalise(a), normalise(b)
    return na == nb or difflib.SequenceMatcher(None, na, nb).ratio() >= NEAR_DUPLICATE


def drop_near_duplicates(questions: list[str], existing: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(kept, dropped): each question unless it nearly repeats an existing one or an earlier one."""
    kept: list[str] = []
    dropped: list[str] = []
    for q in questions:
        if any(near_duplicate(q, other) for other in [*existing, *kept]):
            dropped.append(q)
        else:
            kept.append(q)
    return kept, dropped
