"""Direct assessment (paper 001): one HIT item at a time, a 0-100 slider that must be moved.

Text mode shows reference and candidate as one image; audio mode plays the candidate and
unlocks the slider when it has played to the end. No going back: only the next open item is
ever shown. After the last item: an optional feedback box."""
from __future__ import annotations

import html

import gradio as gr

from services import da_campaign
from services.items import ready_participant
from tabs.common import Ctx, TabUI, header_html, safe_submit, view_dict


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Direct assessment", id="da", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        touched = gr.Checkbox(visible=False, value=False)
        header = gr.HTML()
        instruction = gr.Markdown()
        image = gr.Image(type="filepath", show_label=False, interactive=False, visible=False,
                         elem_id="da-image", buttons=[])
        reference = gr.HTML(elem_id="da-reference", visible=False)
        audio = gr.Audio(type="filepath", label="Candidate translation (listen to the end)", interactive=False,
                         visible=False, elem_id="da-audio", buttons=[])
        score = gr.Slider(0, 100, step=1, value=0, label="Score (0-100): move the slider", elem_id="da-slider")
        send = gr.Button("Submit", variant="primary", visible=False, elem_classes=["submit-btn"])
        with gr.Group(visible=False) as feedback_box:
            feedback = gr.Textbox(label="Any comments on this task? (optional)", lines=4, max_length=5000,
                                  elem_id="da-feedback")
            send_feedback = gr.Button("Send feedback")
        feedback_msg = gr.Markdown()
        timer = gr.Timer(4, active=False)

    # mouse or keyboard: either counts as rating. Set in the browser, not by a server round
    # trip: a Submit clicked right after the move must already see it
    for moved in (score.release, score.input):
        moved(None, None, touched, js="() => true", api_visibility="private")
    # audio mode: the slider unlocks once the candidate has played to the end
    audio.stop(lambda: gr.update(interactive=True), None, score, api_visibility="private")

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        is_audio = c.get("modality") == "audio"
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               item: view.item_id if has else "", instruction: c.get("instruction", ""),
               image: gr.update(value=c.get("image"), visible=has and not is_audio),
               reference: gr.update(value=f'<p class="reference">{html.escape(c.get("reference", ""))}</p>',
                                    visible=has and is_audio),
               audio: gr.update(value=c.get("audio"), visible=has and is_audio),
               send: gr.update(visible=has),
               feedback_box: gr.update(visible=view is not None and view.status == "complete"),
               timer: gr.Timer(active=view is not None and view.status == "waiting")}
        if not error:
            out[score] = gr.update(value=0, visible=has, interactive=has and not is_audio)
            out[touched] = False
        return out

    def next_item(view, notice):
        """From one item to the next of the same rater (same modality): the layout stays, so
        only values change. Plain values instead of gr.update: Gradio builds a component per
        update on its event loop, which made a submit cost 2-3x a no-op event at 50 raters."""
        c = view.content
        is_audio = c.get("modality") == "audio"
        return {state: view_dict(view, notice), header: header_html(view, notice), item: view.item_id,
                instruction: c.get("instruction", ""), image: None if is_audio else c.get("image"),
                reference: f'<p class="reference">{html.escape(c.get("reference", ""))}</p>',
                audio: c.get("audio"), send: "Submit", feedback_box: gr.skip(), timer: timer.value,
                # audio mode locks the slider again until the new candidate has played
                score: gr.update(value=0, interactive=False) if is_audio else 0, touched: False}

    def on_submit(token, item_id, moved, value):
        view, notice, error = safe_submit(ctx, token, "da", item_id, {"score": value if moved else None})
        if item_id and not error and view is not None and view.status == "item":
            return next_item(view, notice)
        return render(view, notice, error)

    def on_tick(token):
        return ui.show(ctx, token)

    def on_feedback(token, text):
        try:
            p = ready_participant(ctx.database, token)
            da_campaign.save_feedback(ctx.database, p["id"], text)
        except (da_campaign.DAError, Exception) as e:    # AccessError too: a forged token
            return str(e)
        return "Thank you: your feedback is saved."

    outputs = [state, header, item, instruction, image, reference, audio, score, touched, send, feedback_box, timer]
    send.click(on_submit, [ctx.token, item, touched, score], outputs, api_name="da_submit",
               api_visibility="undocumented")
    send_feedback.click(on_feedback, [ctx.token, feedback], feedback_msg, api_name="da_feedback",
                        api_visibility="undocumented")
    ui = TabUI("da", tab, outputs, render)
    timer.tick(on_tick, ctx.token, outputs, api_visibility="private")
    return ui
