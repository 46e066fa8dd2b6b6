"""Semantic differential: one seven-point scale per adjective pair, order and polarity per
participant; pages of a sentence's pairs; in preliminary mode a last page of suitability ratings."""
from __future__ import annotations

import gradio as gr

from tabs.common import MAX_PAIRS, Ctx, TabUI, header_html, safe_submit, view_dict

SEVEN = [("", v) for v in range(1, 8)]
SUITABILITY = [(str(v), v) for v in range(1, 6)]


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Semantic differential", id="sd", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML()
        instruction = gr.Markdown()
        example = gr.Markdown(elem_classes=["sd-example"])
        sentence = gr.Markdown(elem_id="sd-sentence", elem_classes=["sd-sentence"])
        rows = []
        for i in range(MAX_PAIRS + 4):           # room for repeated pairs
            with gr.Row(visible=False, equal_height=True, elem_classes=["sd-row"]) as row:
                left = gr.Markdown(elem_classes=["sd-left"])
                # values 1..7 fixed at build (Gradio checks submissions against them); the
                # suitability page shows only 1..5 of them
                scale = gr.Radio(SEVEN, value=None, show_label=False, elem_classes=["sd-scale"], scale=3)
                right = gr.Markdown(elem_classes=["sd-right"])
            rows.append((row, left, scale, right))
        suggestion = gr.Textbox(label="Suggestions (optional): better adjective pairs, or comments", lines=3,
                                visible=False, elem_id="sd-suggestion")
        send = gr.Button("Next", variant="primary", visible=False, elem_classes=["submit-btn"])

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        pairs = c.get("pairs", [])
        suitability = c.get("kind") == "suitability"
        page = f" (page {c['page']} of {c['pages']} for this sentence)" if c.get("pages", 1) > 1 else ""
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               item: view.item_id if has else "", instruction: c.get("instruction", ""),
               example: c.get("example", ""),
               sentence: (f"> {c['sentence']}\n\n{page}" if c.get("sentence") else ""),
               suggestion: gr.update(visible=suitability, **({} if error else {"value": ""})),
               send: gr.update(visible=has)}
        for i, (row, left, scale, right) in enumerate(rows):
            p = pairs[i] if i < len(pairs) else None
            out[row] = gr.update(visible=p is not None)
            out[left] = (f"{p['left']} – {p['right']}" if suitability else p["left"]) if p else ""
            out[right] = "" if suitability or not p else p["right"]
            upd = {"choices": SUITABILITY if suitability else SEVEN}
            if not error:
                upd["value"] = None
            out[scale] = gr.update(**upd)
        return out

    def on_submit(token, item_id, shown, suggestion_text, *values):
        pairs = ((shown or {}).get("content") or {}).get("pairs", [])
        payload = {"values": {p["slot"]: values[i] for i, p in enumerate(pairs[:len(rows)])},
                   "suggestion": suggestion_text}
        view, notice, error = safe_submit(ctx, token, "sd", item_id, payload)
        return render(view, notice, error)

    outputs = [state, header, item, instruction, example, sentence, suggestion, send] + [x for r in rows for x in r]
    send.click(on_submit, [ctx.token, item, state, suggestion] + [r[2] for r in rows], outputs, api_name="sd_submit",
               api_visibility="undocumented")
    return TabUI("sd", tab, outputs, render)
