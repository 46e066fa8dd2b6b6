"""Phase 1: the sender reads a starter aloud and records it."""
from __future__ import annotations

import gradio as gr

from tabs.common import PARTICIPANT_EVENT, Ctx, TabUI, header_html, plain_html, safe_submit, view_dict


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Record", id="record", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML()
        instruction = gr.HTML()
        starter = gr.HTML(elem_id="starter", elem_classes=["starter"])
        audio = gr.Audio(sources=["microphone", "upload"], type="filepath", label="Your recording",
                         elem_id="recorder", visible=False)
        send = gr.Button("Submit recording", variant="primary", visible=False)

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        return {state: view_dict(view, notice, error), header: header_html(view, notice, error),
                item: view.item_id if has else "",
                instruction: plain_html(c.get("instruction", "") + f" (at most {c['max_seconds']} s)") if has else "",
                starter: gr.update(value=c.get("starter_html", ""), visible=has),
                audio: gr.update(value=None, visible=has), send: gr.update(visible=has)}

    def on_submit(token, item_id, audio_path):
        view, notice, error = safe_submit(ctx, token, "record", item_id, {"audio": audio_path})
        return render(view, notice, error)

    outputs = [state, header, item, instruction, starter, audio, send]
    send.click(on_submit, [ctx.token, item, audio], outputs, api_name="record_submit",
               api_visibility="undocumented", **PARTICIPANT_EVENT)
    ui = TabUI("record", tab, outputs, render)
    return ui
