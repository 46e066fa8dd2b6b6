"""MQM's page (services/esa/mqm_protocol.py): ESA's document and span marking (tabs/esa.py
document_html, assets/js/script/esa.js) with a category picker of the study's taxonomy beside
the severity buttons, and no score: the segment's MQM score is computed from the errors.

The picker is a native select (keyboard and screen-reader ready, a phone's own list at 390 px):
a category's subcategories are an optgroup, a category with a forced severity (Non-translation:
major) says so in data-severity, the whole-segment one carries data-whole (the script marks the
whole output with it). The severity buttons are the taxonomy's severities in its order. The
script reads the form's data-max-errors to refuse a sixth error in place; the service refuses it
too. Every text of the corpus and the study is escaped."""

from __future__ import annotations

import html

from tabs.common import Ctx, TabUI
from tabs.esa import document_html
from tabs.item_form import form_tab

NAME = "mqm"
KEYS = {"major": "M", "minor": "m"}  # esa.js's keys on the focused output


def _attr(text) -> str:
    return html.escape(str(text or ""), quote=True)


def _option(value: str, words: str, category: dict) -> str:
    forced = f' data-severity="{_attr(category["severity"])}"' if category.get("severity") else ""
    whole = " data-whole" if category.get("whole") else ""
    return f'<option value="{_attr(value)}"{forced}{whole}>{html.escape(words)}</option>'


def picker_html(categories: list[dict]) -> str:
    """The category select: subcategories grouped under their category."""
    parts = ['<option value="">Pick a category…</option>']
    for c in categories:
        name = str(c["name"])
        if c.get("subcategories"):
            options = "".join(_option(f"{name}/{s}", str(s), c) for s in c["subcategories"])
            parts.append(f'<optgroup label="{_attr(name)}">{options}</optgroup>')
        else:
            words = f"{name} (the whole segment)" if c.get("whole") else name
            parts.append(_option(name, words, c))
    return (
        '<label class="mqm-pick"><span aria-hidden="true">Category (c)</span>'
        f'<select class="mqm-category" aria-label="Error category">{"".join(parts)}</select></label>'
    )


def severity_buttons(severities: list[str]) -> str:
    out = []
    for s in severities:
        key = f" ({KEYS[s]})" if s in KEYS else ""
        out.append(
            f'<button type="button" class="esa-mark" data-severity="{_attr(s)}" disabled>'
            f"{html.escape(str(s).capitalize())}{key}</button>"
        )
    return f'<span class="mqm-severities" role="group" aria-label="Severity">{"".join(out)}</span>'


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form; typed: the fields of a refused answer (the spans), written back in."""
    tools = picker_html(c.get("categories", [])) + severity_buttons(c.get("severities", []))
    label = (
        "The translation: drag across an error, or move with the arrow keys and extend with Shift;"
        " then C to pick its category and M for major or m for minor"
    )
    attrs = f'class="esa-item mqm-item" data-max-errors="{int(c.get("max_errors") or 0)}"'
    submit = '<button type="submit" class="submit-btn lg primary">Submit</button>'
    return document_html(c, typed or {}, tools, attrs, label) + submit + "</form>"


def payload_of(fields: dict) -> dict:
    """The service's payload: the spans' JSON as the hidden field holds it (no score to give)."""
    return {"spans": fields.get("spans"), "practice_tries": fields.get("practice_tries")}


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, NAME, "MQM errors", body_html, payload_of)
