"""A participant's item as one small form: one gr.HTML whose value is the item.

Gradio's front end looks up every input and output of an event in the page's layout, so a
submit that sent 23 inputs and updated 46 hidden slot components spent most of its time in the
browser. Here the server renders the item's form as HTML (every participant- or study-supplied
text escaped by the tab's render function), the page shows it, and a submit sends one JSON value
back: {"item_id": ..., "answer": {field name: value}} read from the form's named fields. The
answer comes back as the next item's form in the same value, so a submit is one input and one
output whatever the item holds.

In the browser (FORM_JS: assets/js/on_load/item_form.js, the same for every tab):
- a range input counts as moved once the participant moves it (mouse or keys), set in the page,
  so a Submit right after sees it; an unmoved slider sends null ("not moved" is checked by the
  service, as paper 001 requires a move); the error that asked for a move goes when it moves;
- an audio element that plays to its end unlocks the inputs marked data-unlock-on-ended;
- after each new item the page scrolls to the form's top and focuses its first input, so the
  new text and "Saved." are in view and the keyboard flow starts on the item;
- Enter submits from a slider, radio or checkbox, never from a text box (no answer is lost to a
  stray Enter), as the page's global KEYBOARD_JS does for the older tabs;
- a refused answer names every wrong field at once: the error's data-fields
  ({field name: what is wrong}) marks each field's box in place (aria-invalid, its note under it)
  and the focus goes to the first; a mark goes once its field is answered, the error once all are;
  an input whose name is not the service's field name carries that name in data-field (the
  semantic differential's slider sends -3..+3 as scale:<slot>, the service names pair:<slot>);
- what is typed is kept as a draft in the browser's localStorage, per page, link and item, and
  written back in when the same item is shown again (a reload, a second tab of the same link);
  the draft goes once the item is saved. The browser, not the server: a draft on the server
  would be a write per keystroke in the participants' one line of writes
  (services/participation/serial.py), and an unsent answer is not data the study keeps;
- leaving the page with an unsent draft asks first (beforeunload).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import gradio as gr

from services.participation.items import ItemView
from tabs.common import (
    PARTICIPANT_EVENT,
    WAIT_POLL_S,
    Ctx,
    TabUI,
    header_html,
    poll_while_waiting,
    safe_submit,
    safe_view,
    timer_update,
    view_dict,
)
from tabs.static import script

FORM_JS = script("on_load/item_form")


def form_value(view, notice: str = "", error: str = "", body: str = "", form: str = "", token: str = "") -> dict:
    """The form component's value: what the page state held (view_dict: status, item, progress,
    notice, error, redirect), the header (progress, notice or error, waiting or end message) and
    the item's form HTML (empty when there is no item). form and token: the tab whose JSON route
    (web/form_routes.py) the page's script posts the answer to, and the participant's token it
    sends (a Prolific newcomer's link has none: the token is made on the first load)."""
    # "shown": each answer differs from the last, so the page re-renders (and re-enables its
    # Submit) even when a refusal repeats the previous one word for word
    return {
        **view_dict(view, notice, error),
        "header": header_html(view, notice, error),
        "html": body,
        "shown": time.monotonic_ns(),
        **({"form": form, "token": token} if form and token else {}),
    }


@dataclass(frozen=True)
class FormRoutes:
    """An item form's two calls as plain functions, served as JSON beside its Gradio events
    (web/form_routes.py): view(token) and submit(token, value) each return the form's value.
    Only form_tab makes them (tests/test_item_form_path.py)."""

    view: Callable[[str], dict]
    submit: Callable[[str, object], dict]
    # the value's field that names an upload (the record tab's "audio"): the route passes on
    # only a path this page's recorder uploaded (web/form_routes.py)
    upload_field: str | None = None


@dataclass
class Beside:
    """What a tab holds beside its item form (form_tab's beside=, built in the tab under the form):
    outputs, the components its render also updates, render(view) their updates; upload, a file
    component whose value its submit also sends, as (the JSON route's field for it, the
    component): payload_of(fields, path), the path from the component in the Gradio event and
    from value[field] on the route (the record tab's recorder)."""

    outputs: list = field(default_factory=list)
    render: Callable[[ItemView | None], dict] = lambda view: {}
    upload: tuple[str, gr.components.Component] | None = None


def item_form(elem_id: str, js: str = FORM_JS) -> gr.HTML:
    return gr.HTML(
        value=None,
        html_template="{{#if value}}{{{value.header}}}{{{value.html}}}{{/if}}",
        js_on_load=js,
        elem_id=elem_id,
        elem_classes=["item-form"],
        apply_default_css=False,
    )


def answer_of(value) -> tuple[str | None, dict]:
    """(item id, the form's fields) of a submitted value; a bare item id (the record tab's API,
    /record_submit(token, item_id, audio)) reads as that item with no fields; anything else as
    no answer."""
    if isinstance(value, str):
        return value, {}
    value = value if isinstance(value, dict) else {}
    answer = value.get("answer")
    item = value.get("item_id")
    return (item if isinstance(item, str) else None), (answer if isinstance(answer, dict) else {})


def form_tab(
    ctx: Ctx,
    name: str,
    label: str,
    body_html,
    payload_of,
    *,
    beside: Callable[[], Beside] | None = None,
    poll_s: float | None = WAIT_POLL_S,
    elem_id: str = "",
    js: str = FORM_JS,
) -> TabUI:
    """A tab that is one item form (every participant tab: tests/test_item_form_path.py):
    body_html(content, typed) renders an item, payload_of(fields) makes the service's payload;
    a refused answer is rendered again with the fields as typed. Its submit is /<name>_submit,
    and as JSON the page's form/<name>/submit (TabUI.form).

    beside: what the tab holds besides the form (Beside: DA's feedback box, the record tab's
    recorder), made under it; poll_s: how often a waiting tab asks again (DA's, while its HIT's
    media are rendered: 4 s), None for a tab that never waits (no timer); elem_id, js: the form
    component's id (<name>-form) and page script (FORM_JS; the record tab's words have their own)."""
    with gr.Tab(label, id=name, visible=False) as tab:
        form = item_form(elem_id or f"{name}-form", js)
        extra = beside() if beside is not None else Beside()
        timer = gr.Timer(poll_s, active=False) if poll_s else None
    upload_field, upload = extra.upload or (None, None)

    def value_of(view, notice="", error="", typed=None, token=""):
        has = view is not None and view.status == "item"
        route = name if ctx.form_routes else ""
        return form_value(view, notice, error, body_html(view.content, typed) if has else "", route, token)

    def render(view, notice="", error="", typed=None, token=""):
        out = {form: value_of(view, notice, error, typed, token), **extra.render(view)}
        if timer is not None:
            out[timer] = timer_update(view)
        return out

    def submitted(token, value, *upload_path):
        """(view, notice, error, the fields as typed) after a submit of the form's value (and the
        upload's path, where the tab has one)."""
        item_id, answer = answer_of(value)
        view, notice, error = safe_submit(ctx, token, name, item_id, payload_of(answer, *upload_path))
        return view, notice, error, answer if error else None

    def on_submit(token, value, *upload_path):
        view, notice, error, typed = submitted(token, value, *upload_path)
        return render(view, notice, error, typed, token=token)

    def json_submit(token, value):
        path = (value.get(upload_field) if isinstance(value, dict) else None,) if upload is not None else ()
        view, notice, error, typed = submitted(token, value, *path)
        return value_of(view, notice, error, typed, token)

    def viewed(token):
        view, err = safe_view(ctx, token, name)
        return value_of(view, "", err, token=token)

    outputs = [form, *extra.outputs] + ([timer] if timer is not None else [])
    inputs = [ctx.token, form] + ([upload] if upload is not None else [])
    form.submit(on_submit, inputs, outputs, **ctx.api_name(f"{name}_submit"), **PARTICIPANT_EVENT)
    ui = TabUI(name, tab, outputs, render, form=FormRoutes(viewed, json_submit, upload_field))
    # the page's script asks for this once a JSON submit ends the items or starts a wait
    form.edit(lambda token: ui.show(ctx, token), ctx.token, outputs, api_visibility="private", **PARTICIPANT_EVENT)
    if timer is not None:
        poll_while_waiting(ctx, name, timer, outputs, render)
    return ui
