"""Semantic differential (paper 002): one seven-point scale per adjective pair, order and
polarity per participant; the welcome and example pages, then pages of a sentence's pairs; in
preliminary mode a last page of suitability ratings (1-5) with optional suggestions.

The page is one small form (tabs/item_form.py): a row per scale (left adjective, the scale, right
adjective), named by the scale's slot. The scale is paper 002's slider, -3 to +3 in seven steps
(field "scale:<slot>", -3..+3, null while not moved), or with sd.input = "radio" seven points (field
"pair:<slot>", "1".."7" or null). A submit sends {"item_id", "answer": {field: value, "suggestion":
text}} and gets the next page back in the same value; a refused page comes back with the values
chosen written in. The service checks that the slots are the
page's, every one answered, each value on the scale."""

from __future__ import annotations

import html

from tabs.common import Ctx, TabUI, markdown_html, plain_html
from tabs.item_form import form_tab

FIELD = "pair:"
SLIDER = "scale:"  # a slider's field: -3..+3 (left adjective .. right), position = value + 4


def _points(name: str, n: int, typed, labels: tuple[str, str]) -> str:
    attr = html.escape(name, quote=True)
    return "".join(
        f'<label class="sd-point"><input type="radio" name="{attr}" value="{v}"'
        f"{' checked' if str(typed) == str(v) else ''} "
        f'aria-label="{html.escape(f"{v} of {n}: {labels[0]} - {labels[1]}", quote=True)}">'
        f"{'<span>' + str(v) + '</span>' if n == 5 else ''}</label>"
        for v in range(1, n + 1)
    )


def _slider(name: str, field: str, typed, labels: tuple[str, str]) -> str:
    """Paper 002's slider: -3 (the left adjective) to +3 (the right one) in seven steps, its
    points numbered under it. It starts in the middle and counts only once moved (or clicked:
    data-click-sets, tabs/item_form.py), shown grey until then; a refused page's value comes back
    written in and counts as moved. field: the scale's name in the service's refusals
    (data-field: the page marks this slider's row when it is refused)."""
    attr = html.escape(name, quote=True)
    sid = html.escape("sd-" + name.replace(":", "-").replace("~", "-"), quote=True)
    value = _slider_value(typed)
    moved = " data-moved" if value is not None else ""
    ticks = "".join(f"<span>{v:+d}</span>" if v else "<span>0</span>" for v in range(-3, 4))
    label = html.escape(f"{labels[0]} (-3) to {labels[1]} (+3)", quote=True)
    return (
        f'<input type="range" class="sd-slider" id="{sid}" name="{attr}" min="-3" max="3" step="1" '
        f'value="{0 if value is None else value}" data-field="{html.escape(field, quote=True)}" '
        f'data-click-sets{moved} aria-label="{label}">'
        f'<div class="sd-ticks" aria-hidden="true">{ticks}</div>'
    )


def _slider_value(typed) -> int | None:
    try:
        v = int(typed)
    except (TypeError, ValueError):
        return None
    return v if -3 <= v <= 3 and str(typed).strip().lstrip("+") == str(v) else None


def _row(p: dict, typed, suitability: bool, slider: bool = False) -> str:
    name = FIELD + str(p["slot"])
    if slider:
        return (
            f'<div class="sd-row sd-slider-row"><div class="sd-left">{plain_html(p["left"])}</div>'
            f'<div class="sd-scale">{_slider(SLIDER + str(p["slot"]), name, typed, (p["left"], p["right"]))}</div>'
            f'<div class="sd-right">{plain_html(p["right"])}</div></div>'
        )
    if suitability:  # how suitable the pair is, 1-5, the pair named on the left
        label = f"{p['left']} – {p['right']}"
        return (
            f'<div class="sd-row sd-suitability"><div class="sd-left">{plain_html(label)}</div>'
            f'<div class="sd-scale">{_points(name, 5, typed, (p["left"], p["right"]))}</div></div>'
        )
    return (
        f'<div class="sd-row"><div class="sd-left">{plain_html(p["left"])}</div>'
        f'<div class="sd-scale">{_points(name, 7, typed, (p["left"], p["right"]))}</div>'
        f'<div class="sd-right">{plain_html(p["right"])}</div></div>'
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The page's form; typed: the fields of a refused page, written back in."""
    typed = typed or {}
    suitability = c.get("kind") == "suitability"
    pages = (
        f'<p class="sd-page">(page {int(c["page"])} of {int(c["pages"])} for this sentence)</p>'
        if c.get("pages", 1) > 1
        else ""
    )
    sentence = (
        f'<blockquote id="sd-sentence" class="sd-sentence">{plain_html(c["sentence"])}</blockquote>{pages}'
        if c.get("sentence")
        else ""
    )
    slider = not suitability and c.get("input") == "slider"
    field = SLIDER if slider else FIELD
    rows = "".join(_row(p, typed.get(field + str(p["slot"])), suitability, slider) for p in c.get("pairs", []))
    suggestion = typed.get("suggestion") if isinstance(typed.get("suggestion"), str) else ""
    box = (
        (
            f'<label for="sd-suggestion" class="sd-suggestion-label">Suggestions (optional): better adjective pairs, '
            f'or comments</label><textarea id="sd-suggestion" name="suggestion" rows="3" maxlength="5000">'
            f"{html.escape(suggestion)}</textarea>"
        )
        if suitability
        else ""
    )
    return (
        f'<form class="sd-item" autocomplete="off">'
        f'<div class="instruction">{markdown_html(c.get("instruction"))}</div>'
        f'<div class="sd-example">{markdown_html(c.get("example"))}</div>{sentence}'
        f'<div class="sd-rows">{rows}</div>{box}'
        f'<button type="submit" class="submit-btn lg primary">Next</button></form>'
    )


def _position(v):
    """A slider's -3..+3 as the scale's point 1..7 (the service's); anything else goes on as sent,
    for the service to refuse, and an unmoved slider (null) stays unanswered."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)) and float(v).is_integer() and -3 <= v <= 3:
        return str(int(v) + 4)
    return v


def payload_of(answer: dict) -> dict:
    """The service's payload: a value per slot the fields name (a point 1..7, or a slider's -3..+3
    turned into its point), and the suggestion."""
    values = {}
    for k, v in answer.items():
        if isinstance(k, str) and k.startswith(FIELD):
            values[k[len(FIELD) :]] = v
        elif isinstance(k, str) and k.startswith(SLIDER):
            values[k[len(SLIDER) :]] = _position(v)
    return {"values": values, "suggestion": answer.get("suggestion")}


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, "sd", "Semantic differential", body_html, payload_of)
