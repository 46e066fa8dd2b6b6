"""Phase 2: the receiver answers questions from the Portuguese translation alone.

The page is in European Portuguese: its task wording comes with the item ([receiver] of
assets/scales.toml), what it says around the item from the services (assets/texts/pt-PT.toml).

The item is one small form (tabs/item_form.py): the translation, then each question with its
answer box and its "cannot be answered from the text" box. A submit sends {"item_id", "answer":
{"answer-<idx>": text, "flag-<idx>": true/false}} and gets the next item back in the same value;
a refused answer comes back with what the receiver typed written in."""

from __future__ import annotations

import html

from tabs.common import Ctx, TabUI, plain_html
from tabs.item_form import form_tab


def translation_html(heading: str, text: str) -> str:
    """The translation set apart from the instructions, larger, as typed (escaped)."""
    return (
        f'<div class="translation-box" lang="pt-PT"><div class="translation-heading">{plain_html(heading)}</div>'
        f'<div class="translation-text">{plain_html(text)}</div></div>'
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form; typed: the fields of a refused answer, written back in."""
    typed = typed or {}
    rows = []
    for q in c.get("questions", []):
        i = int(q["idx"])
        text = typed.get(f"answer-{i}")
        text = text if isinstance(text, str) else ""
        checked = " checked" if typed.get(f"flag-{i}") is True else ""
        rows.append(
            f'<li class="question"><label for="answer-{i}" class="question-text"><b>{i}.</b> '
            f"{plain_html(q['pt'])}</label>"
            f'<textarea id="answer-{i}" name="answer-{i}" rows="1" maxlength="2000" '
            f'aria-label="{html.escape(c.get("answer_label", ""), quote=True)} {i}">'
            f"{html.escape(text)}</textarea>"
            f'<label class="flag"><input type="checkbox" name="flag-{i}"{checked}> '
            f"{plain_html(c.get('unanswerable_label', ''))}</label></li>"
        )
    return (
        f'<form class="receiver-item" autocomplete="off" lang="pt-PT">'
        f'<p class="instruction receiver-instruction">{plain_html(c.get("instruction", ""))}</p>'
        f'<div id="translation" class="translation">'
        f"{translation_html(c.get('translation_heading', ''), c.get('translation', ''))}</div>"
        f'<ol class="questions">{"".join(rows)}</ol>'
        f'<button type="submit" class="submit-btn lg primary">{plain_html(c.get("submit", ""))}</button></form>'
    )


def payload_of(answer: dict) -> dict:
    """The service's payload from the form's fields: one answer per question number the fields
    name (the service checks that they are the item's questions, all of them, and each value's
    type)."""
    idxs = sorted(
        {
            int(k.split("-", 1)[1])
            for k in answer
            if k.startswith(("answer-", "flag-")) and k.split("-", 1)[1].isdigit() and len(k) < 12
        }
    )
    return {
        "answers": [
            {"idx": i, "text": answer.get(f"answer-{i}"), "unanswerable": answer.get(f"flag-{i}")} for i in idxs
        ]
    }


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, "receiver", "Receptor", body_html, payload_of)
