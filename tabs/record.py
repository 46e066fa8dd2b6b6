"""Phase 1: the sender reads a starter aloud and records it.

The tab's words (progress, the instruction, the starter) are one gr.HTML whose value is the
item, as an item form's (tabs/item_form.py); the recorder is Gradio's own gr.Audio, which uploads
a recording when it stops. The Submit sends the item and that upload's path: on a page with
JSON routes, the page's script (RECORD_JS: assets/js/on_load/record.js) posts them to /sender/form/record/submit
(web/form_routes.py: the same service and checks, only this page's uploads accepted) and shows
the next item from its answer, without Gradio's event processing (12 ms of server CPU a submit
through the event: benchmarks/README.md, issue 34); anything but an answer goes by the Gradio
event, as the tab works without the routes."""

from __future__ import annotations

import gradio as gr

from tabs.common import PARTICIPANT_EVENT, Ctx, TabUI, plain_html, safe_submit, safe_view, view_dict
from tabs.item_form import FormRoutes, form_value
from tabs.static import script

# A browser that blocks the microphone (or has none) only says "No microphone found" in the
# recorder: the help under it is marked so that it stands out, and the upload is picked.
MIC_JS = script("on_load/mic")

# The Submit's click, caught before Gradio's: with the page's JSON route (the value names it)
# and an uploaded recording, one POST; without a recording, or on anything but the route's
# answer (an old server, a proxy that drops the path), the tab's Gradio event with the item this
# value shows (trigger('submit')), which says what is missing. An answer saved twice is saved
# once (the service's submit is idempotent).
RECORD_JS = script("on_load/record")


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Record", id="record", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        # progress, notice, instruction and starter: one value the page's script can also set
        words = gr.HTML(
            value=None,
            html_template="{{#if value}}{{{value.header}}}{{{value.html}}}{{/if}}",
            js_on_load=RECORD_JS,
            elem_id="record-words",
            apply_default_css=False,
        )
        # what only an item shows, shown and hidden as one: Gradio builds a new component for
        # every gr.update() in an event's answer (0.3-0.7 ms each), so one Column's visibility is
        # updated and the parts get plain values
        with gr.Column(visible=False, elem_id="record-item") as item_box:
            audio = gr.Audio(
                sources=["microphone", "upload"], type="filepath", label="Your recording", elem_id="recorder"
            )
            mic_help = gr.HTML(elem_id="mic-help", js_on_load=MIC_JS)
            send = gr.Button("Submit recording", variant="primary", elem_id="record-send")

    def words_value(view, notice="", error="", token=""):
        has = view is not None and view.status == "item"
        body = ""
        if has:
            c = view.content
            # the reviewer's reason inside the same box: one message, read at once
            reason = (
                f'<span class="record-again-reason">{plain_html(c["record_again_reason"])}</span>'
                if c.get("record_again_reason")
                else ""
            )
            again = (
                f'<p class="record-again msg info">{plain_html(c["record_again"])}{reason}</p>'
                if c.get("record_again")
                else ""
            )
            # the box is the starter's own <div class="starter">: a class on its holder as well
            # drew the border twice
            body = (
                f'<div id="record-instruction">{again}<p>{plain_html(c.get("instruction", ""))} '
                f"Your recording can be up to {c['max_seconds']} s long.</p></div>"
                f'<div id="starter"><div class="starter">{c.get("starter_html", "")}</div></div>'
            )
        return form_value(view, notice, error, body, "record" if ctx.form_routes else "", token)

    def render(view, notice="", error="", token=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        return {
            state: view_dict(view, notice, error),
            item: view.item_id if has else "",
            words: words_value(view, notice, error, token),
            item_box: gr.update(visible=has),
            audio: None,  # the last recording cleared
            mic_help: f'<p class="mic-help">{plain_html(c.get("microphone_help", ""))}</p>' if has else "",
        }

    def submitted(token, item_id, audio_path):
        return safe_submit(ctx, token, "record", item_id, {"audio": audio_path})

    def on_submit(token, item_id, audio_path):
        return render(*submitted(token, item_id, audio_path), token=token)

    def on_page_submit(token, value, audio_path):
        """The script's way to the event: the item its value shows (the hidden item box is the
        last Gradio answer's, older after a JSON submit)."""
        item_id = value.get("item_id") if isinstance(value, dict) else None
        return on_submit(token, item_id if isinstance(item_id, str) else "", audio_path)

    def json_submit(token, value):
        value = value if isinstance(value, dict) else {}
        item_id, path = value.get("item_id"), value.get("audio")
        view, notice, error = submitted(
            token, item_id if isinstance(item_id, str) else "", path if isinstance(path, str) else None
        )
        return words_value(view, notice, error, token)

    def json_view(token):
        view, err = safe_view(ctx, token, "record")
        return words_value(view, "", err, token)

    outputs = [state, item, words, item_box, audio, mic_help]
    send.click(
        on_submit,
        [ctx.token, item, audio],
        outputs,
        api_name="record_submit",
        api_visibility="undocumented",
        **PARTICIPANT_EVENT,
    )
    words.submit(on_page_submit, [ctx.token, words, audio], outputs, api_visibility="private", **PARTICIPANT_EVENT)
    # the record's JSON submit's answer is the words' value; the route takes the recording only
    # as a path this page's recorder uploaded (web/form_routes.py)
    ui = TabUI("record", tab, outputs, render, form=FormRoutes(json_view, json_submit, upload_field="audio"))
    words.edit(lambda token: ui.show(ctx, token), ctx.token, outputs, api_visibility="private", **PARTICIPANT_EVENT)
    return ui
