"""Phase 2: the receiver answers questions from the Portuguese translation alone.

The page is in European Portuguese: its task wording comes with the item ([receiver] of
assets/scales.toml), what it says around the item from the services (assets/texts/pt-PT.toml);
the labels below are what shows before the first item comes."""
from __future__ import annotations

import gradio as gr

from services.texts import defaults
from tabs.common import (MAX_QUESTIONS, Ctx, TabUI, header_html, plain_html, plain_markdown, poll_while_waiting, safe_submit,
                         timer_update, view_dict, wait_timer)


def translation_html(heading: str, text: str) -> str:
    """The translation set apart from the instructions, larger, as typed (escaped)."""
    return (f'<div class="translation-box" lang="pt-PT"><div class="translation-heading">{plain_html(heading)}</div>'
            f'<div class="translation-text">{plain_html(text)}</div></div>')


def build(ctx: Ctx) -> TabUI:
    words = defaults()["receiver"]
    with gr.Tab("Receptor", id="receiver", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML(elem_id="receiver-header")
        instruction = gr.Markdown(elem_classes=["receiver-instruction"])
        # gr.HTML of escaped text: the translation is a system's output, shown as it is
        translation = gr.HTML(elem_id="translation", elem_classes=["translation"], visible=False)
        slots = []
        for i in range(MAX_QUESTIONS):
            with gr.Group(visible=False) as group:
                question = gr.Markdown()
                answer = gr.Textbox(label=words["answer"], lines=1, max_length=2000)
                flag = gr.Checkbox(label=words["unanswerable"])
            slots.append((group, question, answer, flag))
        send = gr.Button(words["submit"], variant="primary", visible=False)
        timer = wait_timer()

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        qs = c.get("questions", [])
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               timer: timer_update(view),
               item: view.item_id if has else "", instruction: c.get("instruction", ""),
               translation: gr.update(value=translation_html(c.get("translation_heading", words["translation_heading"]),
                                                             c["translation"]) if has else "", visible=has),
               send: gr.update(visible=has, value=c.get("submit", words["submit"]))}
        keep = bool(error)  # a refused submit keeps what the receiver typed
        for i, (group, question, answer, flag) in enumerate(slots):
            q = qs[i] if i < len(qs) else None
            out[group] = gr.update(visible=q is not None)
            out[question] = f"**{int(q['idx'])}.** {plain_markdown(q['pt'])}" if q else ""
            if not keep:
                out[answer] = gr.update(value="", label=c.get("answer_label", words["answer"]))
                out[flag] = gr.update(value=False, label=c.get("unanswerable_label", words["unanswerable"]))
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
