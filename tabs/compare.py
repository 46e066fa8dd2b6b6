"""The side-by-side page (services/compare/protocol.py): one item form per source, its outputs
labelled A, B, ... side by side (stacked on a phone), and what the study's mode asks: a 0-100
slider per output (score), a preference with an optional tie and strength (prefer), or a ranking
by ordering the outputs (drag by the handle, or Up/Down buttons and Alt+arrows:
assets/js/script/compare.js fills the hidden field `ranking`) or by choosing the best and the
worst (rank). Every text of the corpus and the study is escaped; the systems are never named."""

from __future__ import annotations

import html
import json

from tabs.common import Ctx, TabUI, file_url, markdown_html, plain_html
from tabs.item_form import form_tab

NAME = "sxs"


def _attr(text) -> str:
    return html.escape(str(text or ""), quote=True)


def _score(v) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
        return None
    return int(v)


def _checked(typed: dict, name: str, value: str) -> str:
    return " checked" if typed.get(name) == value else ""


def _radios(name: str, choices: list[tuple[str, str]], typed: dict) -> str:
    return "".join(
        f'<label class="sxs-radio"><input type="radio" name="{name}" value="{_attr(v)}"{_checked(typed, name, v)}>'
        f" {plain_html(words)}</label>"
        for v, words in choices
    )


def _slider(k: int, label: str, c: dict, typed: dict) -> str:
    score = _score(typed.get(f"score-{k}"))
    return (
        f'<div class="form-slider sxs-slider"><label for="sxs-score-{k}">Score translation {label} (0-100)'
        f'<output for="sxs-score-{k}" aria-live="off">–</output></label>'
        f'<input type="range" id="sxs-score-{k}" name="score-{k}" min="0" max="100" step="1" '
        f'value="{score if score is not None else 0}" data-click-sets{" data-moved" if score is not None else ""}>'
        f'<div class="form-slider-ends"><span><b>0</b> {plain_html(c.get("scale_low", ""))}</span>'
        f"<span>{plain_html(c.get('scale_high', ''))} <b>100</b></span></div></div>"
    )


def _clip(key: str, path: str, label: str) -> str:
    """A recording to play, tracked by assets/js/script/compare.js: played to its end, its key goes
    into the form's `played` field (the server refuses an answer until every clip is there)."""
    return (
        f'<div class="sxs-clip" data-clip-box="{_attr(key)}"><audio controls preload="none" data-clip="{_attr(key)}"'
        f' aria-label="{_attr(label)}" src="{_attr(file_url(path))}"></audio>'
        '<span class="sxs-played" aria-live="polite">Not played yet</span></div>'
    )


def _output(k: int, o: dict, c: dict, typed: dict, ranked: bool) -> str:
    label = str(o.get("label", ""))
    noun = "Recording" if o.get("audio") and not o.get("text") else "Translation"  # a spoken output
    head = f'<h3 class="sxs-label">{noun} {plain_html(label)}</h3>'
    if ranked:
        head = (
            '<div class="sxs-rankbar"><span class="sxs-handle" aria-hidden="true" title="Drag to move">⠿</span>'
            f'<span class="sxs-place"></span>{head}'
            f'<button type="button" class="sxs-up" aria-label="Move translation {_attr(label)} up">Up</button>'
            f'<button type="button" class="sxs-down" aria-label="Move translation {_attr(label)} down">Down</button>'
            "</div>"
        )
    body = f'<div class="sxs-text">{plain_html(o.get("text", ""))}</div>' if o.get("text") else ""
    if o.get("audio"):
        body = _clip(label, o["audio"], f"Recording {label}") + body
    if c.get("mode") == "score":
        body += _slider(k, label, c, typed)
    if c.get("comments"):
        note = typed.get(f"comment-{k}") if isinstance(typed.get(f"comment-{k}"), str) else ""
        body += (
            f'<label class="sxs-comment">Comment on translation {plain_html(label)} (optional)'
            f'<textarea name="comment-{k}" rows="2" maxlength="2000">{html.escape(note)}</textarea></label>'
        )
    extra = f' tabindex="0" aria-label="Translation {_attr(label)}"' if ranked else ""
    return f'<li class="sxs-output" data-label="{_attr(label)}"{extra}>{head}{body}</li>'


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form; typed: a refused answer's fields, written back in."""
    typed = typed or {}
    outputs = c.get("outputs", [])
    labels = [str(o.get("label", "")) for o in outputs]
    mode, ranking = c.get("mode", "score"), c.get("ranking", "order")
    ordered = mode == "rank" and ranking == "order"
    items = "".join(_output(k, o, c, typed, ordered) for k, o in enumerate(outputs))
    reference = (
        f'<div class="sxs-reference"><h3>Reference</h3><div>{plain_html(c["reference"])}</div></div>'
        if c.get("reference")
        else ""
    )
    parts = [
        f'<form class="sxs-item" data-mode="{_attr(mode)}" data-ranking="{_attr(ranking)}" autocomplete="off">',
        '<details class="instruction sxs-instructions" open><summary>Instructions</summary>'
        f"{markdown_html(c.get('instructions', ''))}</details>",
        f'<div class="sxs-source"><h3>Source</h3><div>{plain_html(c.get("source", ""))}</div>{reference}</div>',
    ]
    if ordered:
        raw = typed.get("ranking") if isinstance(typed.get("ranking"), str) else ""
        parts.append(
            '<fieldset class="sxs-rankbox"><legend>Rank the translations, best first</legend>'
            f'<ol class="sxs-outputs sxs-ranked" aria-label="The translations, best first">{items}</ol>'
            '<div class="sxs-rank-tools"><button type="button" class="sxs-confirm">This order is my ranking</button>'
            '<span class="sxs-rank-note" aria-live="polite"></span></div>'
            f'<input type="hidden" name="ranking" value="{_attr(raw)}"></fieldset>'
        )
    else:
        parts.append(f'<ol class="sxs-outputs sxs-n{len(outputs)}" aria-label="The translations">{items}</ol>')
    if any(o.get("audio") for o in outputs) or c.get("x_audio"):
        raw = typed.get("played") if isinstance(typed.get("played"), str) else ""
        parts.append(f'<input type="hidden" name="played" value="{_attr(raw)}">')
    if mode == "abx":
        parts.append(
            '<div class="sxs-x"><h3 class="sxs-label">Recording X</h3>'
            f"{_clip('X', c.get('x_audio', ''), 'Recording X')}</div>"
            f'<fieldset class="sxs-choice"><legend>Which recording is X?</legend>'
            f"{_radios('x_is', [(lab, f'X is {lab}') for lab in labels], typed)}</fieldset>"
        )
    elif mode == "prefer":
        choices = [(lab, f"{lab} is better") for lab in labels]
        if c.get("allow_tie"):
            choices.append(("tie", "Equally good (tie)"))
        parts.append(
            f'<fieldset class="sxs-choice"><legend>Which translation is better?</legend>'
            f"{_radios('preference', choices, typed)}</fieldset>"
        )
        if c.get("strength"):
            strengths = [("slightly", "Slightly better"), ("much", "Much better")]
            parts.append(
                f'<fieldset class="sxs-choice sxs-strength"><legend>How much better?</legend>'
                f"{_radios('strength', strengths, typed)}</fieldset>"
            )
    elif mode == "rank" and not ordered:
        for name, words in (("best", "The best translation"), ("worst", "The worst translation")):
            parts.append(
                f'<fieldset class="sxs-choice sxs-{name}"><legend>{words}</legend>'
                f"{_radios(name, [(lab, lab) for lab in labels], typed)}</fieldset>"
            )
    parts.append('<button type="submit" class="submit-btn lg primary">Submit</button></form>')
    return "".join(parts)


def payload_of(fields: dict) -> dict:
    """The service's payload: the named fields as the form holds them (each slider's number once
    moved, else null; the radios' values; the ranking's JSON)."""
    keep = ("score-", "comment-")
    out = {k: v for k, v in fields.items() if k.startswith(keep)}
    for k in ("preference", "strength", "best", "worst", "x_is", "played"):
        if k in fields:
            out[k] = fields[k]
    if "ranking" in fields:
        raw = fields["ranking"]
        try:
            out["ranking"] = json.loads(raw) if isinstance(raw, str) and raw.strip() else None
        except ValueError:
            out["ranking"] = None
    return out


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, NAME, "Side by side", body_html, payload_of)
