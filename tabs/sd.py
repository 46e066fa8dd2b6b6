"""Semantic differential (paper 002): one seven-point scale per adjective pair, order and
polarity per participant; the welcome and example pages, then pages of a sentence's pairs; in
preliminary mode a last page of suitability ratings (1-5) with optional suggestions.

The page is one small form (tabs/item_form.py): a row per scale (left adjective, seven points,
right adjective), named by the scale's slot. A submit sends {"item_id", "answer": {"pair:<slot>":
"1".."7" or null, "suggestion": text}} and gets the next page back in the same value; a refused
page comes back with the points chosen written in. The service checks that the slots are the
page's, every one answered, each value on the scale."""
from __future__ import annotations

import html

from tabs.common import Ctx, TabUI, markdown_html, plain_html
from tabs.item_form import form_tab

FIELD = "pair:"


def _points(name: str, n: int, typed, labels: tuple[str, str]) -> str:
    attr = html.escape(name, quote=True)
    return "".join(
        f'<label class="sd-point"><input type="radio" name="{attr}" value="{v}"'
        f'{" checked" if str(typed) == str(v) else ""} '
        f'aria-label="{html.escape(f"{v} of {n}: {labels[0]} - {labels[1]}", quote=True)}">'
        f'{"<span>" + str(v) + "</span>" if n == 5 else ""}</label>' for v in range(1, n + 1))


def _row(p: dict, typed, suitability: bool) -> str:
    name = FIELD + str(p["slot"])
    if suitability:       # how suitable the pair is, 1-5, the pair named on the left
        label = f'{p["left"]} – {p["right"]}'
        return (f'<div class="sd-row sd-suitability"><div class="sd-left">{plain_html(label)}</div>'
                f'<div class="sd-scale">{_points(name, 5, typed, (p["left"], p["right"]))}</div></div>')
    return (f'<div class="sd-row"><div class="sd-left">{plain_html(p["left"])}</div>'
            f'<div class="sd-scale">{_points(name, 7, typed, (p["left"], p["right"]))}</div>'
            f'<div class="sd-right">{plain_html(p["right"])}</div></div>')


def body_html(c: dict, typed: dict | None = None) -> str:
    """The page's form; typed: the fields of a refused page, written back in."""
    typed = typed or {}
    suitability = c.get("kind") == "suitability"
    pages = f'<p class="sd-page">(page {int(c["page"])} of {int(c["pages"])} for this sentence)</p>' \
        if c.get("pages", 1) > 1 else ""
    sentence = (f'<blockquote id="sd-sentence" class="sd-sentence">{plain_html(c["sentence"])}</blockquote>{pages}'
                if c.get("sentence") else "")
    rows = "".join(_row(p, typed.get(FIELD + str(p["slot"])), suitability) for p in c.get("pairs", []))
    suggestion = typed.get("suggestion") if isinstance(typed.get("suggestion"), str) else ""
    box = (f'<label for="sd-suggestion" class="sd-suggestion-label">Suggestions (optional): better adjective pairs, '
           f'or comments</label><textarea id="sd-suggestion" name="suggestion" rows="3" maxlength="5000">'
           f'{html.escape(suggestion)}</textarea>') if suitability else ""
    return (f'<form class="sd-item" autocomplete="off">'
            f'<div class="instruction">{markdown_html(c.get("instruction"))}</div>'
            f'<div class="sd-example">{markdown_html(c.get("example"))}</div>{sentence}'
            f'<div class="sd-rows">{rows}</div>{box}'
            f'<button type="submit" class="submit-btn lg primary">Next</button></form>')


def payload_of(answer: dict) -> dict:
    """The service's payload: a value per slot the fields name, and the suggestion."""
    values = {k[len(FIELD):]: v for k, v in answer.items() if isinstance(k, str) and k.startswith(FIELD)}
    return {"values": values, "suggestion": answer.get("suggestion")}


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, "sd", "Semantic differential", body_html, payload_of)
