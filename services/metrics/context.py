"""Context for metrics that take none: the paper's inference-time concatenation (paper 003
section 4.2).

A segment-level QE metric scores (source, hypothesis). To let it see the preceding context c
of a source s, the paper prepends c to both sides of the pair:

* ``"none"``: QE(s, h), the context is ignored;
* ``"mon"`` (monolingual context): QE(c|s, c|h), the source-language context in front of both
  the source and the hypothesis (the hypothesis becomes "code-switched");
* ``"bil"`` (bilingual context): QE(c|s, MT(c)|h), the context machine-translated into the
  target language in front of the hypothesis.

"|" is plain string concatenation with ONE space between the context and the sentence
(SEPARATOR; the paper's code builds ``f"{context} {src}"``). The context is stripped of
surrounding white space first; a blank context leaves the segment unchanged (no leading space).

For ``"bil"`` the translator is a parameter, a callable list[str] -> list[str] of the same
length (in the app, e.g. ``services.models.backends.offline.BergamotMT("en-pt").translate``): it is
called once per :func:`contextualise` call, on the distinct non-blank contexts in order of
first appearance, so a context shared by many segments (or by the two gender forms of one
instance) is translated once.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

MODES = ("none", "mon", "bil")
SEPARATOR = " "

Translate = Callable[[list[str]], Sequence[str]]


def _text(value: Any) -> str:
    if value is None:
        return ""
    try:
        if value != value:  # NaN from a pandas column
            return ""
    except Exception:
        pass
    return str(value).strip()


def join(context: Any, sentence: Any) -> str:
    """context + SEPARATOR + sentence; the sentence alone when the context is blank."""
    c, s = _text(context), "" if sentence is None else str(sentence)
    return f"{c}{SEPARATOR}{s}" if c else s


def translate_unique(contexts: Sequence[Any], translate: Translate) -> dict[str, str]:
    """{context: translation} for the distinct non-blank contexts: ONE call of translate on
    them (order of first appearance); none when there is no non-blank context."""
    unique = list(dict.fromkeys(c for c in (_text(x) for x in contexts) if c))
    if not unique:
        return {}
    out = list(translate(unique))
    if len(out) != len(unique):
        raise ValueError(f"the context translator returned {len(out)} translations for {len(unique)} contexts")
    return {c: "" if t is None else str(t).strip() for c, t in zip(unique, out)}


def contextualise(
    sources: Sequence[Any],
    hypotheses: Sequence[Any],
    contexts: Sequence[Any] | None,
    mode: str = "none",
    translate: Translate | None = None,
) -> tuple[list[str], list[str]]:
    """(sources', hypotheses') for a context mode (see the module docstring):
    none -> (s, h); mon -> (c|s, c|h); bil -> (c|s, MT(c)|h), with translate called once on the
    distinct contexts. Raises ValueError for an unknown mode, mismatched lengths, missing
    contexts for mon/bil, or bil without a translator."""
    if mode not in MODES:
        raise ValueError(f"unknown context mode {mode!r} (one of: {', '.join(MODES)})")
    sources = ["" if s is None else str(s) for s in sources]
    hypotheses = ["" if h is None else str(h) for h in hypotheses]
    if len(sources) != len(hypotheses):
        raise ValueError(f"{len(sources)} sources but {len(hypotheses)} hypotheses")
    if mode == "none":
        return sources, hypotheses
    if contexts is None:
        raise ValueError(f"context mode {mode!r} needs contexts")
    contexts = list(contexts)
    if len(contexts) != len(sources):
        raise ValueError(f"{len(sources)} sources but {len(contexts)} contexts")
    new_sources = [join(c, s) for c, s in zip(contexts, sources)]
    if mode == "mon":
        return new_sources, [join(c, h) for c, h in zip(contexts, hypotheses)]
    if translate is None:
        raise ValueError("context mode 'bil' needs a translate callable (list of contexts -> list of translations)")
    translated = translate_unique(contexts, translate)
    return new_sources, [join(translated.get(_text(c), ""), h) for c, h in zip(contexts, hypotheses)]
