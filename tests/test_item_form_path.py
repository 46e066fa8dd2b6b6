"""Issue 52, point 3: every participant tab goes through the one item-form path
(tabs/item_form.form_tab): its item is rendered, submitted, viewed and served as JSON by
form_tab's own functions, and the tab has no submit event beside the form's. A tab that wired its
own form (as DA and the record tab once did) fails here."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pytest

from services.common import protocols
from tabs.common import Ctx, TabUI
from tabs.item_form import FormRoutes

SHARED = "form_tab.<locals>."


def built(name: str):
    """(the tab's TabUI, the Blocks it was built in), as its role's page builds it."""
    with gr.Blocks() as blocks:
        ctx = Ctx(None, SimpleNamespace(form_routes=True), gr.Textbox(visible=False))
        ui = protocols.resolve(protocols.tab(name).build)(ctx)
    return ui, blocks


def shared(fn) -> bool:
    return getattr(fn, "__qualname__", "").startswith(SHARED)


@pytest.mark.parametrize("name", protocols.tabs())
def test_every_tab_is_made_by_form_tab(name):
    ui, blocks = built(name)
    assert isinstance(ui, TabUI) and ui.name == name
    # its render, and the JSON routes' view and submit, are form_tab's
    assert shared(ui.render), ui.render
    assert isinstance(ui.form, FormRoutes)
    assert shared(ui.form.view) and shared(ui.form.submit), ui.form
    # the form comes first in its outputs (web/pages.py watches it for a Prolific redirect)
    form = ui.outputs[0]
    assert isinstance(form, gr.HTML) and "item-form" in (form.elem_classes or [])
    # the one submit event is the form's, named /<tab>_submit and handled by form_tab
    submits = {f.api_name: f for f in blocks.fns.values() if f.api_name and f.api_name.endswith("_submit")}
    assert list(submits) == [f"{name}_submit"], submits
    event = submits[f"{name}_submit"]
    assert shared(event.fn), event.fn
    assert [t[0] for t in event.targets] == [form._id] and [t[1] for t in event.targets] == ["submit"]
    assert form in event.inputs and event.outputs == ui.outputs


def test_the_record_tab_sends_its_recording_beside_the_form():
    """The recorder is the form's upload: an input of its submit event, the JSON route's "audio"."""
    ui, blocks = built("record")
    [event] = [f for f in blocks.fns.values() if f.api_name == "record_submit"]
    audio = next(c for c in event.inputs if isinstance(c, gr.Audio))
    assert audio.elem_id == "recorder" and ui.form.upload_field == "audio"
    # its Submit button has no event of its own: the page's script posts or submits the form
    send = next(b for b in blocks.blocks.values() if getattr(b, "elem_id", None) == "record-send")
    assert not [f for f in blocks.fns.values() if any(t[0] == send._id for t in f.targets)]
