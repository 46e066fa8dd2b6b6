"""The record tab's answer: one gr.update() (the item's Column), plain values for the rest, and
the tab's words as one value the page's script can also set from the JSON route's answer.

Gradio builds a new component for every gr.update() in an event's answer (0.3-0.7 ms each:
benchmarks/README.md, issue 34's second pass), so the tab shows and hides its item's parts as one
Column and gives the parts plain values."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from services.participation.items import ItemView

CONTENT = {"starter_html": "Read <strong>this</strong>.", "instruction": "Read aloud.", "max_seconds": 30,
           "microphone_help": "Allow the microphone."}  # fmt: skip


def record_tab(form_routes: bool = False):
    from tabs import record
    from tabs.common import Ctx

    with gr.Blocks():
        ctx = Ctx(None, SimpleNamespace(form_routes=form_routes), gr.Textbox(visible=False))
        return record.build(ctx)


def updates(out: dict) -> list:
    return [(c, v) for c, v in out.items() if isinstance(v, dict) and v.get("__type__") == "update"]


def by_id(out: dict, box) -> dict:
    return {c.elem_id: v for c, v in out.items() if c is not box}


def test_an_item_shows_its_parts_with_one_update():
    ui = record_tab()
    out = ui.render(ItemView("record", "item", "", 0, 4, "record", "7", CONTENT))
    [(box, update)] = updates(out)
    assert isinstance(box, gr.Column) and update["visible"] is True
    values = by_id(out, box)
    words = values["record-words"]
    assert '<div id="starter"><div class="starter">Read <strong>this</strong>.</div></div>' in words["html"]
    assert "Read aloud. Your recording can be up to 30 s long." in words["html"]
    assert words["item_id"] == "7" and "0 / 4" in words["header"]
    assert "form" not in words and "token" not in words  # no JSON route on this page
    assert values["recorder"] is None  # the last recording cleared
    assert "Allow the microphone." in values["mic-help"]


def test_with_the_routes_the_words_name_the_route_and_the_token():
    ui = record_tab(form_routes=True)
    out = ui.render(ItemView("record", "item", "", 0, 4, "record", "7", CONTENT), token="tok-1")
    words = by_id(out, None)["record-words"]
    assert (words["form"], words["token"]) == ("record", "tok-1")
    assert ui.form.upload_field == "audio"  # the route passes on only this page's uploads


def test_the_end_hides_the_recorder_and_the_submit():
    ui = record_tab()
    out = ui.render(ItemView("record", "complete", "All done.", 4, 4))
    [(box, update)] = updates(out)
    assert update["visible"] is False
    assert by_id(out, box)["record-words"]["html"] == ""
    send = next(b for b in box.children if isinstance(b, gr.Button))
    assert send.value == "Submit recording" and send.elem_id == "record-send"  # inside the Column: hidden with it
