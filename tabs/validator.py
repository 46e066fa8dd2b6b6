"""Phase 3: the validator scores the translation (DA+SQM) and marks each answer."""
from __future__ import annotations

import html

import gradio as gr

from tabs.common import (MAX_QUESTIONS, Ctx, TabUI, header_html, plain_html, poll_while_waiting, safe_submit,
                         timer_update, view_dict, wait_timer)


def _score(value: float) -> str:
    return f"{value:.0f}"


def _sqm_html(sqm) -> str:
    """Seven tick marks (SQM 0..6 at 0, 16.7, ..., 100) under the slider, each numbered with its
    place on the 0-100 score, labels at 0, 2, 4, 6: the score is 0-100, not 0-6."""
    labels = {int(s["tick"]): s for s in sqm}
    ticks = []
    for t in range(7):
        pos = t / 6 * 100
        s = labels.get(t)
        text = (f'<span class="sqm-label" title="{html.escape(s["description"], quote=True)}">'
                f'{html.escape(s["label"])}</span>') if s else ""
        ticks.append(f'<div class="sqm-tick{" labelled" if s else ""}" style="left:{pos:.2f}%">'
                     f'<span class="sqm-mark"></span><span class="sqm-num">{_score(pos)}</span>{text}</div>')
    legend = "".join(f"<li><b>{html.escape(s['label'])}</b> (score {_score(s['value'])}): "
                     f"{html.escape(s['description'])}</li>"
                     for s in sorted(sqm, key=lambda s: -s["tick"]))
    return (f'<div class="sqm-scale" aria-hidden="true">{"".join(ticks)}</div>'
            f'<p class="sqm-caption">Score from 0 to 100: the numbers are places on the slider, the labels '
            f'describe the score at their tick.</p>'
            f'<details class="sqm-legend"><summary>What the labels mean</summary><ul>{legend}</ul></details>')


# moving the slider counts as a rating (set in the browser, so that a Submit right after the move
# sees it, no server round trip) and takes away a "move the slider" error shown above
MOVED_JS = """() => {
  document.querySelectorAll('#validator-header .msg.error[data-key="score_missing"]').forEach((e) => e.remove());
  return true;
}"""


def build(ctx: Ctx) -> TabUI:
    with gr.Tab("Validator", id="validator", visible=False) as tab:
        state = gr.JSON(visible=False)
        item = gr.Textbox(visible=False)
        touched = gr.Checkbox(visible=False, value=False)
        header = gr.HTML(elem_id="validator-header")
        with gr.Row():
            # gr.HTML of escaped text: the translation and the receivers' answers come from
            # participants and are shown as typed (no Markdown image, link or HTML of them works)
            source = gr.HTML(elem_id="val-source")
            translation = gr.HTML(elem_id="val-translation")
        score = gr.Slider(0, 100, step=1, value=0, label="Translation quality (0-100): move the slider",
                          elem_id="sqm-slider")
        scale = gr.HTML(elem_id="sqm-scale")
        slots = []
        for i in range(MAX_QUESTIONS):
            with gr.Group(visible=False) as group:
                qa = gr.HTML()
                mark = gr.Radio(["correct", "incorrect"], label="The answer is", value=None, elem_classes=["answer-mark"])
            slots.append((group, qa, mark))
        send = gr.Button("Submit validation", variant="primary", visible=False, elem_classes=["submit-btn"])
        timer = wait_timer()

    # moved by mouse (release) or keyboard arrows (input): either counts as a rating (MOVED_JS)
    for moved in (score.release, score.input):
        moved(None, None, touched, js=MOVED_JS, api_visibility="private")

    def render(view, notice="", error=""):
        has = view is not None and view.status == "item"
        c = view.content if has else {}
        answers = {a["idx"]: a for a in c.get("answers", [])}
        qs = c.get("questions", [])
        keep = bool(error)
        out = {state: view_dict(view, notice, error), header: header_html(view, notice, error),
               timer: timer_update(view),
               item: view.item_id if has else "",
               # hidden without an item, as an empty Markdown was (a page waits for it to show)
               source: gr.update(value=f"<p><b>English source</b></p><p>{plain_html(c['source'])}</p>" if has else "",
                                 visible=has),
               translation: gr.update(value=f"<p><b>Portuguese translation</b></p><p>{plain_html(c['translation'])}</p>"
                                      if has else "", visible=has),
               scale: _sqm_html(c["sqm"]) if has else "",
               send: gr.update(visible=has)}
        if not keep:
            out[score] = gr.update(value=0, visible=has)
            out[touched] = False
        for i, (group, qa, mark) in enumerate(slots):
            q = qs[i] if i < len(qs) else None
            out[group] = gr.update(visible=q is not None)
            if q:
                a = answers.get(q["idx"], {})
                given = (f"<i>(flagged: cannot be answered from the text)</i><br><small class=\"flag-help\">"
                         f"{plain_html(c.get('flagged_help', ''))}</small>" if a.get("unanswerable")
                         else plain_html(a.get("text", "")))
                out[qa] = (f"<b>{int(q['idx'])}.</b> {plain_html(q['en'])}<br><i>{plain_html(q['pt'])}</i><br>"
                           f"Answer: {given}")
            else:
                out[qa] = ""
            if not keep:
                out[mark] = gr.update(value=None)
        return out

    def on_submit(token, item_id, shown, moved, value, *marks):
        qs = ((shown or {}).get("content") or {}).get("questions", [])
        payload = {"score": value if moved else None,
                   "marks": {q["idx"]: marks[i] for i, q in enumerate(qs[:MAX_QUESTIONS]) if marks[i]}}
        view, notice, error = safe_submit(ctx, token, "validator", item_id, payload)
        return render(view, notice, error)

    inputs = [ctx.token, item, state, touched, score] + [m for _, _, m in slots]
    outputs = [state, header, item, source, translation, scale, score, touched, send] + [x for s in slots for x in s]
    outputs.append(timer)      # last: the API's output positions stay as they were
    send.click(on_submit, inputs, outputs, api_name="validator_submit", api_visibility="undocumented")
    poll_while_waiting(ctx, "validator", timer, outputs, render)
    return TabUI("validator", tab, outputs, render)
