"""Phase 2: the receiver answers questions from the Portuguese translation alone."""
from __future__ import annotations

import gradio as gr

from tabs.common import (MAX_QUESTIONS, Ctx, TabUI, header_html, plain_markdown, poll_while_waiting, safe_submit,
                         timer_update,
                         view_dict, wait_timer)


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Receptor", id="receiver", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML()
        instruction = gr.Markdown()
        translation = gr.Markdown(elem_id="translation", elem_classes=["translation"])
        slots = []
        for i in range(MAX_QUESTIONS):
            with gr.Group(visible=False) as group:
                question = gr.Markdown()
                answer = gr.Textbox(label="Resposta", lines=1, max_length=2000)
                flag = gr.Checkbox(label="Não é possível responder a partir do texto")
            slots.append((group, question, answer, flag))
        send = gr.Button("Enviar respostas", variant="primary", visible=False)
        timer = wait_timer()

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        qs = c.get("questions", [])
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               timer: timer_update(view),
               item: view.item_id if has else "", instruction: c.get("instruction", ""),
               translation: plain_markdown(c.get("translation", "")), send: gr.update(visible=has)}
        keep = bool(error)  # a refused submit keeps what the receiver typed
        for i, (group, question, answer, flag) in enumerate(slots):
            q = qs[i] if i < len(qs) else None
            out[group] = gr.update(visible=q is not None)
            out[question] = f"**{q['idx']}.** {q['pt']}" if q else ""
            if not keep:
                out[answer] = gr.update(value="")
                out[flag] = gr.update(value=False, label=c.get("unanswerable_label", "Não é possível responder a partir do texto"))
        return out

    def on_submit(token, item_id, shown, *values):
        # slot i holds the i-th question shown; the service checks the set is complete
        qs = ((shown or {}).get("content") or {}).get("questions", [])
        answers = [{"idx": q["idx"], "text": values[2 * i], "unanswerable": values[2 * i + 1]}
                   for i, q in enumerate(qs[:MAX_QUESTIONS])]
        view, notice, error = safe_submit(ctx, token, "receiver", item_id, {"answers": answers})
        return render(view, notice, error)

    inputs = [ctx.token, item, state] + [x for _, _, a, f in slots for x in (a, f)]
    outputs = [state, header, item, instruction, translation, send] + [x for s in slots for x in s]
    outputs.append(timer)      # last: the API's output positions stay as they were
    send.click(on_submit, inputs, outputs, api_name="receiver_submit", api_visibility="undocumented")
    poll_while_waiting(ctx, "receiver", timer, outputs, render)
    return TabUI("receiver", tab, outputs, render)
