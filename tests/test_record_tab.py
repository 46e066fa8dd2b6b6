"""The record tab's answer: one gr.update() (the item's Column), plain values for the rest.

Gradio builds a new component for every gr.update() in an event's answer (0.3-0.7 ms each:
benchmarks/README.md, issue 34's second pass), so the tab shows and hides its item's parts as one
Column and gives the parts plain values."""

from __future__ import annotations

import gradio as gr

from services.participation.items import ItemView


def record_tab():
    from tabs import record
    from tabs.common import Ctx

    with gr.Blocks():
        ctx = Ctx(None, None, gr.Textbox(visible=False))
        return record.build(ctx)


def updates(out: dict) -> list:
    return [(c, v) for c, v in out.items() if isinstance(v, dict) and v.get("__type__") == "update"]


def test_an_item_shows_its_parts_with_one_update():
    ui = record_tab()
    content = {"starter_html": "Read <strong>this</strong>.", "instruction": "Read aloud.", "max_seconds": 30,
               "microphone_help": "Allow the microphone."}  # fmt: skip
    out = ui.render(ItemView("record", "item", "", 0, 4, "record", "7", content))
    [(box, update)] = updates(out)
    assert isinstance(box, gr.Column) and update["visible"] is True
    values = {c.elem_id: v for c, v in out.items() if c is not box}
    assert values["starter"] == '<div class="starter">Read <strong>this</strong>.</div>'
    assert values["recorder"] is None  # the last recording cleared
    assert "Allow the microphone." in values["mic-help"]


def test_the_end_hides_the_recorder_and_the_submit():
    ui = record_tab()
    out = ui.render(ItemView("record", "complete", "All done.", 4, 4))
    [(box, update)] = updates(out)
    assert update["visible"] is False
    assert {c.elem_id: v for c, v in out.items() if c is not box}["starter"] == ""
    send = next(b for b in box.children if isinstance(b, gr.Button))
    assert send.value == "Submit recording"  # inside the Column: hidden with it
