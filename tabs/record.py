"""Phase 1: the sender reads a starter aloud and records it."""

from __future__ import annotations

import gradio as gr

from tabs.common import PARTICIPANT_EVENT, Ctx, TabUI, header_html, plain_html, safe_submit, view_dict

# A browser that blocks the microphone (or has none) only says "No microphone found" in the
# recorder: the help under it is marked so that it stands out, and the upload is picked.
MIC_JS = """
const trouble = () => {
  if (element.classList.contains('mic-trouble')) return;
  element.classList.add('mic-trouble');
  const upload = document.querySelector('#recorder button[aria-label="Upload file"]');
  if (upload) upload.click();
};
if (!navigator.mediaDevices || !navigator.mediaDevices.enumerateDevices) { trouble(); }
else {
  navigator.mediaDevices.enumerateDevices()
    .then(ds => { if (!ds.some(d => d.kind === 'audioinput')) trouble(); }).catch(trouble);
}
if (navigator.permissions && navigator.permissions.query) {
  navigator.permissions.query({name: 'microphone'}).then(s => {
    if (s.state === 'denied') trouble();
    s.onchange = () => { if (s.state === 'denied') trouble(); };
  }).catch(() => {});
}
"""


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Record", id="record", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        header = gr.HTML()
        instruction = gr.HTML(elem_id="record-instruction")
        # the box is the HTML's own <div class="starter">: a class on the component as well drew
        # the border twice
        # what only an item shows, shown and hidden as one: Gradio builds a new component for
        # every gr.update() in an event's answer (0.3-0.7 ms each), so one Column's visibility is
        # updated and the parts get plain values
        with gr.Column(visible=False, elem_id="record-item") as item_box:
            starter = gr.HTML(elem_id="starter")
            audio = gr.Audio(
                sources=["microphone", "upload"], type="filepath", label="Your recording", elem_id="recorder"
            )
            mic_help = gr.HTML(elem_id="mic-help", js_on_load=MIC_JS)
            send = gr.Button("Submit recording", variant="primary")

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        again = f'<p class="record-again msg info">{plain_html(c["record_again"])}</p>' if c.get("record_again") else ""
        words = (
            (f"<p>{plain_html(c.get('instruction', ''))} Your recording can be up to {c['max_seconds']} s long.</p>")
            if has
            else ""
        )
        return {
            state: view_dict(view, notice, error),
            header: header_html(view, notice, error),
            item: view.item_id if has else "",
            instruction: again + words,
            item_box: gr.update(visible=has),
            starter: f'<div class="starter">{c.get("starter_html", "")}</div>' if has else "",
            audio: None,  # the last recording cleared
            mic_help: f'<p class="mic-help">{plain_html(c.get("microphone_help", ""))}</p>' if has else "",
        }

    def on_submit(token, item_id, audio_path):
        view, notice, error = safe_submit(ctx, token, "record", item_id, {"audio": audio_path})
        return render(view, notice, error)

    outputs = [state, header, item, instruction, item_box, starter, audio, mic_help]
    send.click(
        on_submit,
        [ctx.token, item, audio],
        outputs,
        api_name="record_submit",
        api_visibility="undocumented",
        **PARTICIPANT_EVENT,
    )
    ui = TabUI("record", tab, outputs, render)
    return ui
