"""Phase 3: the validator scores the translation (DA+SQM) and marks each answer.

The item is one small form (tabs/item_form.py): the instructions ([validator] instruction of
assets/scales.toml: what the score and "correct" mean, the rule for flagged questions), source
and translation side by side, the 0-100 slider with the SQM ticks under it, then each question
(with its expected answer where the study has one) with the receiver's answer and a
correct / incorrect choice. A submit sends {"item_id", "answer": {"score": 0-100 or null when
not moved, "mark-<idx>": "correct" | "incorrect" | null}} and gets the next item back; a refused
answer comes back with the score and marks written in."""

from __future__ import annotations

import html

from tabs.common import Ctx, TabUI, markdown_html, plain_html
from tabs.item_form import form_tab


def _score(value: float) -> str:
    return f"{value:.0f}"


def _sqm_html(sqm) -> str:
    """Seven tick marks (SQM 0..6 at 0, 16.7, ..., 100) under the slider, each numbered with its
    place on the 0-100 score, labels at 0, 2, 4, 6: the score is 0-100, not 0-6."""
    labels = {int(s["tick"]): s for s in sqm}
    ticks = []
    for t in range(7):
        pos = t / 6 * 100
        s = labels.get(t)
        text = (
            (
                f'<span class="sqm-label" title="{html.escape(s["description"], quote=True)}">'
                f"{html.escape(s['label'])}</span>"
            )
            if s
            else ""
        )
        ticks.append(
            f'<div class="sqm-tick{" labelled" if s else ""}" style="left:{pos:.2f}%">'
            f'<span class="sqm-mark"></span><span class="sqm-num">{_score(pos)}</span>{text}</div>'
        )
    legend = "".join(
        f"<li><b>{html.escape(s['label'])}</b> (score {_score(s['value'])}): {html.escape(s['description'])}</li>"
        for s in sorted(sqm, key=lambda s: -s["tick"])
    )
    return (
        f'<div class="sqm-scale" aria-hidden="true">{"".join(ticks)}</div>'
        f'<p class="sqm-caption">Score from 0 to 100: the numbers are places on the slider, the labels '
        f"describe the score at their tick.</p>"
        f'<details class="sqm-legend"><summary>What the labels mean</summary><ul>{legend}</ul></details>'
    )


def _answer_html(q: dict, a: dict, help_text: str) -> str:
    given = (
        f'<i>(flagged: cannot be answered from the text)</i><br><small class="flag-help">'
        f"{plain_html(help_text)}</small>"
        if a.get("unanswerable")
        else plain_html(a.get("text", ""))
    )
    expected = (
        f'<div class="expected">Expected answer (from the English source): {plain_html(q["expected"])}</div>'
        if q.get("expected")
        else ""
    )
    return f"<b>{int(q['idx'])}.</b> {plain_html(q['en'])}<br><i>{plain_html(q['pt'])}</i>{expected}Answer: {given}"


def _mark_html(i: int, typed) -> str:
    choices = "".join(
        f'<label><input type="radio" name="mark-{i}" value="{v}"{" checked" if typed == v else ""}> {v}</label>'
        for v in ("correct", "incorrect")
    )
    return f'<fieldset class="answer-mark"><legend>The answer is</legend>{choices}</fieldset>'


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form; typed: the fields of a refused answer, written back in."""
    typed = typed or {}
    score = typed.get("score")
    moved = isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 100
    answers = {a["idx"]: a for a in c.get("answers", [])}
    rows = []
    for q in c.get("questions", []):
        i = int(q["idx"])
        rows.append(
            f'<li class="answer-row"><div class="qa">'
            f"{_answer_html(q, answers.get(q['idx'], {}), c.get('flagged_help', ''))}"
            f"</div>{_mark_html(i, typed.get(f'mark-{i}'))}</li>"
        )
    rows = "".join(rows)
    # the study's wording (Markdown, rendered without raw HTML): what the score and "correct" mean
    return (
        f'<form class="validator-item" autocomplete="off">'
        f'<div class="instruction validator-instruction">{markdown_html(c.get("instruction", ""))}</div>'
        f'<div class="val-texts"><div id="val-source"><p><b>English source</b></p>'
        f"<p>{plain_html(c.get('source', ''))}</p></div>"
        f'<div id="val-translation"><p><b>Portuguese translation</b></p>'
        f"<p>{plain_html(c.get('translation', ''))}</p>"
        f"</div></div>"
        f'<div id="sqm-slider" class="form-slider">'
        f'<label for="sqm-score">Translation quality (0-100): move the slider'
        f'<output for="sqm-score" aria-live="off">–</output></label>'
        f'<input type="range" id="sqm-score" name="score" min="0" max="100" step="1" '
        # data-click-sets: a click on the track's 0 (where it starts) is a score too (item_form.py)
        f'value="{int(score) if moved else 0}" data-click-sets{" data-moved" if moved else ""}>'
        f'<div id="sqm-scale">{_sqm_html(c.get("sqm", []))}</div></div>'
        f'<ol class="answers">{rows}</ol>'
        f'<button type="submit" class="submit-btn lg primary">Submit validation</button></form>'
    )


def payload_of(answer: dict) -> dict:
    """The service's payload: the score (null when the slider was not moved) and a mark per
    answer number the fields name (the service checks that they are the item's answers, all of
    them, each correct or incorrect)."""
    marks = {
        k.split("-", 1)[1]: v
        for k, v in answer.items()
        if k.startswith("mark-") and k.split("-", 1)[1].isdigit() and len(k) < 12 and v is not None
    }
    return {"score": answer.get("score"), "marks": marks}


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, "validator", "Validator", body_html, payload_of)
