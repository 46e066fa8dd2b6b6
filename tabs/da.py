"""Direct assessment: one segment at a time, a 0-100 slider that must be moved."""
from __future__ import annotations

import html

import gradio as gr

from tabs.common import Ctx, TabUI, header_html, safe_submit, view_dict


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Direct assessment", id="da", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        touched = gr.Checkbox(visible=False, value=False)
        header = gr.HTML()
        instruction = gr.Markdown()
        segment = gr.HTML(elem_id="da-segment")
        score = gr.Slider(0, 100, step=1, value=0, label="Score (0-100): move the slider", elem_id="da-slider")
        send = gr.Button("Submit", variant="primary", visible=False, elem_classes=["submit-btn"])

    # moved by mouse (release) or keyboard arrows (input): either counts as a rating
    for moved in (score.release, score.input):
        moved(lambda: True, None, touched, api_visibility="private")

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               item: view.item_id if has else "", instruction: c.get("instruction", ""),
               segment: (f'<p class="reference">{html.escape(c["reference"])}</p>'
                         f'<p class="candidate">{html.escape(c["output"])}</p>') if has else "",
               send: gr.update(visible=has)}
        if not error:
            out[score] = gr.update(value=0, visible=has)
            out[touched] = False
        return out

    def on_submit(token, item_id, moved, value):
        view, notice, error = safe_submit(ctx, token, "da", item_id, {"score": value if moved else None})
        return render(view, notice, error)

    outputs = [state, header, item, instruction, segment, score, touched, send]
    send.click(on_submit, [ctx.token, item, touched, score], outputs, api_name="da_submit",
               api_visibility="undocumented")
    return TabUI("da", tab, outputs, render)
