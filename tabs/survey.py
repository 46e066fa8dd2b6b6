"""Phase 4: satisfaction, trust and reliance, before (baseline) and after (informed) the outcomes."""
from __future__ import annotations

import html

import gradio as gr

from services.texts import texts
from tabs.common import (Ctx, TabUI, header_html, plain_markdown, poll_while_waiting, safe_submit, timer_update,
                         view_dict, wait_timer)

DIMENSIONS = ("satisfaction", "trust", "reliance")


def _answer_html(a: dict, flagged: dict) -> str:
    """One disclosed answer: what the receiver wrote and the validator's mark; a question the
    receiver flagged as not answerable reads as such, with whether the validator accepted it."""
    if a["unanswerable"]:
        verdict = flagged.get("flagged_accepted" if a["correct"] else "flagged_refused", "")
        return (f"<li>{html.escape(a['en'])}<br><i>{html.escape(flagged.get('flagged', ''))}</i> "
                f"&mdash; <b>{html.escape(verdict)}</b></li>")
    return (f"<li>{html.escape(a['en'])}<br><i>Answer:</i> {html.escape(a['answer'])} "
            f"&mdash; <b>{'correct' if a['correct'] else 'incorrect'}</b></li>")


def _outcomes_html(outcomes, flagged: dict | None = None) -> str:
    flagged = flagged or texts()["survey"]
    parts = []
    for o in outcomes:
        rows = "".join(_answer_html(a, flagged) for a in o["answers"])
        parts.append(f"<p>The Portuguese speaker answered {sum(bool(a['correct']) for a in o['answers'])} of "
                     f"{len(o['answers'])} questions correctly (QA score {o['qa_score']:.0%}).</p><ol>{rows}</ol>"
                     f"<p>A bilingual validator scored the translation <b>{o['translation_score']:.0f} / 100</b>: "
                     f"<i>{html.escape(o['label'])}</i>.</p>")
    return "".join(parts)


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Survey", id="survey", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML()
        stage = gr.Markdown()
        source = gr.HTML(elem_classes=["starter"])
        recording = gr.Audio(label="Your recording", type="filepath", interactive=False, visible=False)
        translation = gr.Markdown(elem_classes=["translation"])
        outcomes = gr.HTML()
        instruction = gr.Markdown()
        # values 1..5 fixed at build time (Gradio checks submitted values against them); a study's
        # wording replaces only the labels when an item is shown
        scale = [(label, i + 1) for i, label in enumerate(texts()["survey"]["likert"])]
        radios = {d: gr.Radio(choices=scale, label=d, value=None, visible=False, elem_classes=["likert"])
                  for d in DIMENSIONS}
        send = gr.Button("Submit", variant="primary", visible=False, elem_classes=["submit-btn"])
        timer = wait_timer()

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        keep = bool(error)
        informed = c.get("stage") == "informed"
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               timer: timer_update(view),
               item: view.item_id if has else "",
               stage: ("**What happened next** (the same statements again, now that you know the outcome)"
                       if informed else f"**{c.get('heading', '')}**") if has else "",
               source: gr.update(value=c.get("source_html", ""), visible=has),
               recording: gr.update(value=c.get("recording"), visible=bool(c.get("recording"))),
               translation: f"**Portuguese translation**\n\n{plain_markdown(c['translation'])}" if has else "",
               outcomes: _outcomes_html(c.get("outcomes", []), c.get("flagged")) if informed else "",
               instruction: c.get("instruction", ""), send: gr.update(visible=has)}
        likert = c.get("likert", [])
        for d, r in radios.items():
            upd = dict(visible=has)
            if has:      # a view without an item keeps the last scale (never an empty one)
                upd.update(label=c.get("statements", {}).get(d, d),
                           choices=[(label, i + 1) for i, label in enumerate(likert)])
            if not keep:
                upd["value"] = None
            out[r] = gr.update(**upd)
        return out

    def on_submit(token, item_id, s, t, r):
        view, notice, error = safe_submit(ctx, token, "survey", item_id,
                                          {"satisfaction": s, "trust": t, "reliance": r})
        return render(view, notice, error)

    outputs = [state, header, item, stage, source, recording, translation, outcomes, instruction, send,
               *radios.values()]
    outputs.append(timer)      # last: the API's output positions stay as they were
    send.click(on_submit, [ctx.token, item, *radios.values()], outputs, **ctx.api_name("survey_submit"))
    poll_while_waiting(ctx, "survey", timer, outputs, render)
    return TabUI("survey", tab, outputs, render)
