"""The study's [questions] section and the prompts of the comprehension-question features.

Prompts live in assets/prompts/*.txt; a study may replace any of them with a file of its own
folder (`prompt_generate = "my_prompt.txt"`), read at import and stored in the study's config,
so the prompts used stay with the study. Placeholders are written {name}; the ones a prompt
must contain are checked at import.

[questions] keys (defaults):
- n (10): questions generated per starter, 1..10 (questions.idx is 1..10)
- translate ("auto"): how the English questions become Portuguese: "mt" (Bergamot en->pt,
  offline, Brazilian Portuguese), "llm" (the configured LLM with the prompt_translate prompt,
  into the study's target variant) or "auto": Bergamot when the study's [usability]
  target_variant is the one it produces (pt-BR), else the LLM (the generation needs it anyway)
- prompt_generate, prompt_answer, prompt_answer_pt, prompt_translate (""): override files
- auto_qa_mode ("pt"): "pt" answers from the Portuguese translation with the Portuguese prompt
  and question; "backtranslation" translates the translation back to English (Bergamot pt->en)
  and answers it with the English prompt
- auto_qa_method ("chrf"): how two answers are compared: "exact" (equal after normalisation),
  "chrf" (sacrebleu chrF >= chrf_threshold) or "e5" (multilingual-e5 cosine >= e5_threshold)
- chrf_threshold (50.0, 0..100), e5_threshold (0.9, -1..1)

A prompt may also hold the study's Portuguese variant (services/common/variants.py): {target_language}
("Portuguese (Portugal)" / "Portuguese (Brazil)"), {target_language_pt}, {target_variant};
prompt() fills them from the study's [usability] target_variant.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from services.common import variants
from services.common.vocabulary import MAX_QUESTIONS
from services.models.systems import BERGAMOT_VARIANT

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "assets" / "prompts"
MODES = ("pt", "backtranslation")
METHODS = ("exact", "chrf", "e5")
TRANSLATORS = ("auto", "mt", "llm")

DEFAULTS = {
    "n": MAX_QUESTIONS,
    "translate": "auto",
    "prompt_generate": "",
    "prompt_answer": "",
    "prompt_answer_pt": "",
    "prompt_translate": "",
    "auto_qa_mode": "pt",
    "auto_qa_method": "chrf",
    "chrf_threshold": 50.0,
    "e5_threshold": 0.9,
}

# prompt name -> (default file, placeholders it must contain)
PROMPTS = {
    "generate": ("question_generate.txt", ("{starter}", "{n}")),
    "answer": ("question_answer.txt", ("{text}", "{question}")),
    "answer_pt": ("question_answer_pt.txt", ("{text}", "{question}")),
    "translate": ("question_translate.txt", ("{text}",)),
}

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def section(study_config: dict | None) -> dict:
    """The study's [questions] settings with the defaults filled in."""
    return {**DEFAULTS, **((study_config or {}).get("questions") or {})}


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def problems(q: dict) -> list[tuple[str, str]]:
    """(key, message) for every mistake in a [questions] section (merged with DEFAULTS)."""
    out = []
    n = q.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_QUESTIONS:
        out.append(("n", f"must be a whole number from 1 to {MAX_QUESTIONS}"))
    for key, allowed in (("translate", TRANSLATORS), ("auto_qa_mode", MODES), ("auto_qa_method", METHODS)):
        if q.get(key) not in allowed:
            out.append((key, f"must be one of {', '.join(allowed)}"))
    if not _number(q.get("chrf_threshold")) or not 0 <= q["chrf_threshold"] <= 100:
        out.append(("chrf_threshold", "must be a number from 0 to 100"))
    if not _number(q.get("e5_threshold")) or not -1 <= q["e5_threshold"] <= 1:
        out.append(("e5_threshold", "must be a number from -1 to 1"))
    for name in PROMPTS:
        if not isinstance(q.get(f"prompt_{name}", ""), str):
            out.append((f"prompt_{name}", "must name a text file in the study folder"))
    return out


def prompt_problems(name: str, text: str) -> list[str]:
    required = PROMPTS[name][1]
    missing = [p for p in required if p not in text]
    return [f"the prompt lacks {', '.join(missing)} (it must contain {', '.join(required)})"] if missing else []


def read_prompts(q: dict, resolve: Callable[[str, str], Path | None]) -> list[tuple[str, str]]:
    """Reads the override files named in [questions] into q["prompts"]; resolve(file name, key)
    gives the file's path inside the study folder (or None, having reported why). Returns
    (key, message) problems."""
    out, prompts = [], {}
    for name in PROMPTS:
        key = f"prompt_{name}"
        file = q.get(key)
        if not isinstance(file, str) or not file:
            continue
        path = resolve(file, key)
        if path is None:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            out.append((key, f"cannot read '{file}' as UTF-8 text ({e})"))
            continue
        out += [(key, f"'{file}': {m}") for m in prompt_problems(name, text)]
        prompts[name] = text
    q["prompts"] = prompts
    return out


def prompt(study_config: dict | None, name: str) -> str:
    """The study's own prompt `name` when it has one, else the default in assets/prompts, with
    the study's target variant filled in ({target_language}, {target_language_pt}, {target_variant})."""
    own = section(study_config).get("prompts", {}).get(name)
    text = own if own else (PROMPTS_DIR / PROMPTS[name][0]).read_text(encoding="utf-8")
    return variants.fill(text, variants.of_study(study_config))


def translator(study_config: dict | None) -> str:
    """ "mt" or "llm": who translates generated questions ("auto" resolved for the study's variant)."""
    how = section(study_config)["translate"]
    if how != "auto":
        return how
    return "mt" if variants.of_study(study_config) == BERGAMOT_VARIANT else "llm"


def fill(template: str, **values) -> str:
    """{name} placeholders replaced in one pass (a starter holding "{n}" stays as it is);
    unknown placeholders are left alone."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)
