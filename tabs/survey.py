"""Phase 4: satisfaction, trust and reliance, before (baseline) and after (informed) the outcomes.

The item is one small form (tabs/item_form.py): the starter, the sender's own recording (first
person only), the translation, the outcomes (informed stage), then one five-point statement per
dimension as a group of radio buttons. A submit sends {"item_id", "answer": {"satisfaction":
"1".."5" or null, "trust": ..., "reliance": ...}} and gets the next item back in the same value;
a refused answer comes back with the choices written in."""

from __future__ import annotations

import html

from services.study.texts import texts
from tabs.common import Ctx, TabUI, file_url, plain_html
from tabs.item_form import form_tab

DIMENSIONS = ("satisfaction", "trust", "reliance")


def _answer_html(a: dict, words: dict) -> str:
    """One disclosed answer, its outcome at a glance (a class, a mark and a word: correct,
    incorrect, or accepted as not answerable), the English question beside the receiver's answer,
    which is labelled as Portuguese; a question the receiver flagged as not answerable reads as
    such, with whether the validator accepted it."""
    if a["unanswerable"]:
        kind = "accepted" if a["correct"] else "incorrect"
        verdict = words.get("flagged_accepted" if a["correct"] else "flagged_refused", "")
        said = f"<i>{html.escape(words.get('flagged', ''))}</i> &mdash; {html.escape(verdict)}"
    else:
        kind = "correct" if a["correct"] else "incorrect"
        said = f'<span lang="pt-PT">{plain_html(a["answer"])}</span>'
    mark = {"correct": "✓", "accepted": "✓", "incorrect": "✗"}[kind]
    return (
        f'<li class="outcome outcome-{kind}"><span class="outcome-mark"><span aria-hidden="true">{mark}</span> '
        f"{html.escape(words.get('outcome_' + kind, kind))}</span>"
        f'<div class="outcome-q"><span class="outcome-label">{html.escape(words.get("question_label", ""))}'
        f"</span>{plain_html(a['en'])}</div>"
        f'<div class="outcome-a"><span class="outcome-label">{html.escape(words.get("answer_label", ""))}'
        f"</span>{said}</div></li>"
    )


def _score_html(o: dict, sqm: list, words: dict) -> str:
    """The validator's score with its DA+SQM label (paper 000), and the scale's labelled points
    with the score's own marked, so the number reads against the scale the validator used."""
    current = ' class="current" aria-current="true"'
    points = "".join(
        f"<li{current if s['label'] == o['label'] else ''}><b>{s['value']:.0f}</b> {html.escape(s['label'])}</li>"
        for s in sorted(sqm, key=lambda s: s["value"])
    )
    scale = f'<ol class="outcome-sqm">{points}</ol>' if points else ""
    return (
        f'<div class="outcome-score"><span class="outcome-label">{html.escape(words.get("score_label", ""))}'
        f'</span><span class="outcome-score-value"><b>{o["translation_score"]:.0f} / 100</b> &mdash; '
        f"<i>{html.escape(o['label'])}</i></span>{scale}</div>"
    )


def _outcomes_html(outcomes, flagged: dict | None = None, sqm: list | None = None) -> str:
    words = {**texts()["survey"], **(flagged or {})}
    sqm = texts()["sqm"] if sqm is None else sqm
    parts = []
    for o in outcomes:
        rows = "".join(_answer_html(a, words) for a in o["answers"])
        parts.append(
            f'<p class="outcome-summary">The Portuguese speaker answered '
            f"{sum(bool(a['correct']) for a in o['answers'])} of {len(o['answers'])} questions correctly "
            f'(QA score {o["qa_score"]:.0%}).</p><ol class="outcome-list">{rows}</ol>'
            f"{_score_html(o, sqm, words)}"
        )
    return "".join(parts)


def _statement_html(dim: str, statement: str, likert: list, typed) -> str:
    """One statement and its five points; the values are 1..5, the labels the study's wording."""
    choices = "".join(
        f'<label><input type="radio" name="{dim}" value="{i + 1}"{" checked" if str(typed) == str(i + 1) else ""}> '
        f"{plain_html(label)}</label>"
        for i, label in enumerate(likert)
    )
    return (
        f'<fieldset class="likert" id="likert-{dim}"><legend>{plain_html(statement)}</legend>'
        f'<div class="likert-points">{choices}</div></fieldset>'
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form; typed: the fields of a refused answer, written back in."""
    typed = typed or {}
    informed = c.get("stage") == "informed"
    heading = (
        "What happened next (the same statements again, now that you know the outcome)"
        if informed
        else c.get("heading", "")
    )
    recording = (
        f'<div class="own-recording"><p><b>Your recording</b></p>'
        f'<audio controls preload="metadata" src="{html.escape(file_url(c["recording"]), quote=True)}">'
        f"</audio></div>"
        if c.get("recording")
        else ""
    )
    outcomes = (
        f'<div class="outcomes">{_outcomes_html(c.get("outcomes", []), c.get("flagged"), c.get("sqm"))}</div>'
        if informed
        else ""
    )
    statements = "".join(
        _statement_html(d, c.get("statements", {}).get(d, d), c.get("likert", []), typed.get(d)) for d in DIMENSIONS
    )
    # source_html is the service's escaped starter with its key spans in <strong>
    return (
        f'<form class="survey-item" autocomplete="off">'
        f'<p class="survey-stage"><b>{plain_html(heading)}</b></p>'
        f'<div class="starter">{c.get("source_html", "")}</div>{recording}'
        f'<div class="translation"><p><b>Portuguese translation</b></p>'
        f"<p>{plain_html(c.get('translation', ''))}</p></div>"
        f'{outcomes}<p class="instruction">{plain_html(c.get("instruction", ""))}</p>'
        f'{statements}<button type="submit" class="submit-btn lg primary">Submit</button></form>'
    )


def payload_of(answer: dict) -> dict:
    """The service's payload: one value per dimension as sent (the service checks each is one of
    1..5 and none is missing)."""
    return {d: answer.get(d) for d in DIMENSIONS}


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, "survey", "Survey", body_html, payload_of)
