"""The proof plugin's Gradio parts, imported only where a page is built ("module:name" in its spec):
its participant tab (Tab.build), its section of the Admin tab (Protocol.admin_section) and its
panel of the Analysis tab (Protocol.analysis_panel)."""

from __future__ import annotations

import html

import gradio as gr
import pandas as pd

from tabs.admin_common import SectionUI, admin_only
from tabs.analysis_common import Panel
from tabs.common import shown_table
from tabs.item_form import form_tab
from tests.plugins import proof

NO_ANSWERS = "No answers yet: they fill in as participants mark the segments."


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item: the source, the target (proof.js makes its characters markable), the hidden field
    the script writes the spans to, the severity of the next span, the score; a refused answer
    comes back with its spans and score written in."""
    typed = typed or {}
    text = c.get("text", "")
    spans = typed.get("spans") if isinstance(typed.get("spans"), str) else "[]"
    score = typed.get("score")
    moved = isinstance(score, (int, float)) and not isinstance(score, bool)
    severity = "".join(
        f'<label><input type="radio" name="severity" value="{s}"{" checked" if s == "minor" else ""}> {s}</label>'
        for s in proof.SEVERITIES
    )
    return (
        '<form class="proof-item">'
        f'<p class="proof-source">{html.escape(c.get("source", ""))}</p>'
        '<fieldset class="proof-box"><legend>Drag across each error in the translation, then say how bad it is</legend>'
        f'<p class="proof-target" data-text="{html.escape(text, quote=True)}">{html.escape(text)}</p>'
        f'<input type="hidden" name="spans" value="{html.escape(spans, quote=True)}">'
        f'<div class="proof-severity">The next span is {severity}</div>'
        '<ol class="proof-list"></ol></fieldset>'
        '<div class="form-slider"><label for="proof-score">Overall quality, 0-100</label>'
        '<input type="range" id="proof-score" name="score" min="0" max="100" step="1"'
        f' value="{int(score) if moved else 50}"'
        f'{" data-moved" if moved else ""}><output for="proof-score"></output></div>'
        '<button type="submit" class="submit-btn lg primary">Submit</button></form>'
    )


def payload_of(fields: dict) -> dict:
    return {"spans": fields.get("spans"), "score": fields.get("score")}


def build_tab(ctx):
    return form_tab(ctx, proof.NAME, "Error spans", body_html, payload_of)


def answers_table(database, study_id: str | None) -> pd.DataFrame:
    rows = proof.answers_of(database, study_id) if study_id else []
    return pd.DataFrame(
        [
            {
                "participant": r["participant__pid"],
                "segment": r["item_id"],
                "score": r["score"],
                "error spans": proof.said(r["target"], r["spans"]) or "none",
            }
            for r in rows
        ]
    )


def admin_section(ctx, auth, session, study) -> SectionUI:
    """Its section of the Admin tab: every answer of the study, filled on login, Refresh and a
    change of study."""
    with gr.Accordion("Error spans (proof plugin)", open=False):
        table = gr.Dataframe(
            value=shown_table(None, NO_ANSWERS), interactive=False, wrap=True, elem_id="proof-admin-answers"
        )

    def refresh(study_id) -> dict:
        return {table: shown_table(answers_table(ctx.database, study_id), NO_ANSWERS)}

    return SectionUI(inputs=[], outputs=[table], refresh=refresh, initial=[])


def analysis_panel(shared: Panel) -> None:
    """Its panel of the Analysis tab: the chosen study's scores and spans summed up."""
    with gr.Accordion("Error spans (proof plugin)", open=False):
        run = gr.Button("Sum up the error spans", elem_id="proof-analyse")
        shown = gr.Markdown(elem_id="proof-analysis")

    @admin_only(shared.auth, shown)
    def run_proof(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        return {shown: proof.summary_words(shared.ctx.database, study_id) if study_id else "No study yet."}

    run.click(run_proof, [shared.session, shared.study], [shown], api_visibility="private")
