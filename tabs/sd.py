"""Semantic differential: one seven-point scale per adjective pair, order and polarity per participant."""
from __future__ import annotations

import gradio as gr

from tabs.common import MAX_PAIRS, Ctx, TabUI, header_html, safe_submit, view_dict


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Semantic differential", id="sd", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML()
        instruction = gr.Markdown()
        sentence = gr.Markdown(elem_id="sd-sentence", elem_classes=["sd-sentence"])
        rows = []
        for i in range(MAX_PAIRS):
            with gr.Row(visible=False, equal_height=True, elem_classes=["sd-row"]) as row:
                left = gr.Markdown(elem_classes=["sd-left"])
                scale = gr.Radio([("", v) for v in range(1, 8)], value=None, show_label=False,
                                 elem_classes=["sd-scale"], scale=3)
                right = gr.Markdown(elem_classes=["sd-right"])
            rows.append((row, left, scale, right))
        send = gr.Button("Next", variant="primary", visible=False, elem_classes=["submit-btn"])

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        pairs = c.get("pairs", [])
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               item: view.item_id if has else "", instruction: c.get("instruction", ""),
               sentence: f"> {c['sentence']}" if has else "", send: gr.update(visible=has)}
        for i, (row, left, scale, right) in enumerate(rows):
            p = pairs[i] if i < len(pairs) else None
            out[row] = gr.update(visible=p is not None)
            out[left] = p["left"] if p else ""
            out[right] = p["right"] if p else ""
            if not error:
                out[scale] = gr.update(value=None)
        return out

    def on_submit(token, item_id, shown, *values):
        pairs = ((shown or {}).get("content") or {}).get("pairs", [])
        payload = {"values": {p["pair_id"]: values[i] for i, p in enumerate(pairs[:MAX_PAIRS])}}
        view, notice, error = safe_submit(ctx, token, "sd", item_id, payload)
        return render(view, notice, error)

    outputs = [state, header, item, instruction, sentence, send] + [x for r in rows for x in r]
    send.click(on_submit, [ctx.token, item, state] + [r[2] for r in rows], outputs, api_name="sd_submit",
               api_visibility="undocumented")
    return TabUI("sd", tab, outputs, render)
