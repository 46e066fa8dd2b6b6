"""Phase 1: the sender reads a starter aloud and records it.

The tab is an item form (tabs/item_form.form_tab): its words (progress, the instruction, the
starter) are the form's value, and the recorder beside it is Gradio's own gr.Audio, which
uploads a recording when it stops. The Submit sends the item and that upload's path: on a page
with JSON routes, the page's script (RECORD_JS: assets/js/on_load/record.js) posts them to
/sender/form/record/submit (web/form_routes.py: the same service and checks, only this page's
uploads accepted) and shows the next item from its answer, without Gradio's event processing
(12 ms of server CPU a submit through the event: benchmarks/README.md, issue 34); anything else
goes by the form's Gradio event, as the tab works without the routes."""

from __future__ import annotations

import gradio as gr

from tabs.common import Ctx, TabUI, plain_html
from tabs.item_form import Beside, form_tab
from tabs.static import script

# A browser that blocks the microphone (or has none) only says "No microphone found" in the
# recorder: the help under it is marked so that it stands out, and the upload is picked.
MIC_JS = script("on_load/mic")

# The Submit's click (the button has no Gradio event): with the page's JSON route (the value
# names it) and an uploaded recording, one POST; without a recording, without the route, or on
# anything but the route's answer (an old server, a proxy that drops the path), the form's Gradio
# event with the item its value shows (trigger('submit')), which says what is missing. An answer
# saved twice is saved once (the service's submit is idempotent).
RECORD_JS = script("on_load/record")


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's words: a "record again" notice with the reviewer's reason, the instruction
    and the starter (its HTML the service's). typed: a refusal leaves nothing typed to write in."""
    # the reviewer's reason inside the same box: one message, read at once
    reason = (
        f'<span class="record-again-reason">{plain_html(c["record_again_reason"])}</span>'
        if c.get("record_again_reason")
        else ""
    )
    again = (
        f'<p class="record-again msg info">{plain_html(c["record_again"])}{reason}</p>' if c.get("record_again") else ""
    )
    # the box is the starter's own <div class="starter">: a class on its holder as well drew the
    # border twice
    return (
        f'<div id="record-instruction">{again}<p>{plain_html(c.get("instruction", ""))} '
        f"Your recording can be up to {c['max_seconds']} s long.</p></div>"
        f'<div id="starter"><div class="starter">{c.get("starter_html", "")}</div></div>'
    )


def payload_of(fields: dict, path=None) -> dict:
    """The recording: the path the recorder uploaded it to (the Gradio event's gr.Audio, or the
    JSON route's "audio", which the route has checked is this page's upload)."""
    return {"audio": path if isinstance(path, str) else None}


def recorder() -> Beside:
    """Under the words: the recorder, its microphone help and the Submit, shown and hidden as one
    Column (Gradio builds a new component for every gr.update() in an event's answer, 0.3-0.7 ms
    each, so the parts get plain values)."""
    with gr.Column(visible=False, elem_id="record-item") as item_box:
        audio = gr.Audio(sources=["microphone", "upload"], type="filepath", label="Your recording", elem_id="recorder")
        mic_help = gr.HTML(elem_id="mic-help", js_on_load=MIC_JS)
        # no event of its own: the page's script (RECORD_JS) posts the recording or submits the form
        gr.Button("Submit recording", variant="primary", elem_id="record-send")

    def render(view) -> dict:
        has = view is not None and view.status == "item"
        return {
            item_box: gr.update(visible=has),
            audio: None,  # the last recording cleared
            mic_help: f'<p class="mic-help">{plain_html(view.content.get("microphone_help", ""))}</p>' if has else "",
        }

    return Beside([item_box, audio, mic_help], render, upload=("audio", audio))


def build(ctx: Ctx) -> TabUI:
    """The words are the tab's item form (tabs/item_form.form_tab) and the recorder its upload:
    /record_submit(token, item id or the form's value, recording), and as JSON
    form/record/submit {"item_id", "audio": the path this page uploaded it to}. The tab never
    waits: no timer."""
    return form_tab(
        ctx,
        "record",
        "Record",
        body_html,
        payload_of,
        beside=recorder,
        poll_s=None,
        elem_id="record-words",
        js=RECORD_JS,
    )
