"""The consent page and the demographics form, shown above the (hidden) role tabs until both
are done. The rules are in services/study/consent.py; the form's fields come from the study, so
they are rendered per participant (gr.render)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable

import gradio as gr

from services.participation.items import AccessError, participant_for_token
from services.study.consent import ConsentError, page, pending_stage, record_consent, submit_demographics
from services.study.texts import Voice, reword
from storage import studies
from tabs.common import Ctx, markdown_html
from tabs.static import script

FOCUS_FIRST_INVALID = script("function/focus_first_invalid")


@dataclass
class ConsentUI:
    box: gr.Column
    outputs: list
    show: Callable[[dict], dict]  # participant -> updates ({} when nothing is pending)
    hide: Callable[[], dict]
    connect: Callable[[list, Callable[[str], dict]], None]


def build(ctx: Ctx) -> ConsentUI:
    """The page sits above the tabs; connect(after_outputs, after) wires it once the tabs exist:
    after(token) -> the updates that show the participant's tabs when nothing is pending."""
    wiring: dict = {}
    state = gr.State(None)
    with gr.Column(visible=False, elem_id="consent-page") as box:
        header = gr.HTML()
        text = gr.HTML(elem_id="consent-text")  # the study's Markdown, rendered here
        with gr.Row(visible=False) as buttons:
            agree = gr.Button("I agree", variant="primary", elem_id="consent-agree")
            decline = gr.Button("I do not agree", elem_id="consent-decline")
        msg = gr.HTML(elem_id="consent-msg")

        # only when the state changes: by default a render also runs on every page load, one more
        # queued event (join, then the event stream) for every participant who has no form to fill
        @gr.render(inputs=state, triggers=[state.change])
        def form(pg):
            if not pg or pg.get("stage") != "demographics":
                return
            comps, infos = [], []
            for f in pg["fields"]:
                label = f["label"] if f["required"] else f"{f['label']} {pg['words']['demographics_optional']}"
                span = None
                if f["kind"] == "choice":
                    comps.append(gr.Radio(f["choices"], label=label, value=None, key=f"demo-{f['id']}"))
                elif f["kind"] == "number":
                    # the range is checked by the service (its message names the field); gr.Number's
                    # own minimum would fail the whole event with a bare toast
                    span = None if f["min"] is None or f["max"] is None else f"{f['min']:g} to {f['max']:g}"
                    comps.append(gr.Number(label=label, value=None, info=span, key=f"demo-{f['id']}"))
                else:
                    comps.append(gr.Textbox(label=label, max_length=f["max_chars"], key=f"demo-{f['id']}"))
                infos.append(span)
            go = gr.Button(
                pg.get("submit") or pg["words"]["demographics_submit"], variant="primary", elem_id="demographics-submit"
            )

            def send(token, *values):
                answers = {f["id"]: v for f, v in zip(pg["fields"], values)}
                p = None
                try:
                    p = participant_for_token(ctx.database, token)
                    stage = submit_demographics(ctx.database, p, answers)
                except (ConsentError, AccessError) as e:
                    said = _error(e, p)  # reworded in place: e.fields in the page's language too
                    bad = getattr(e, "fields", None) or {}
                    # every refused field marked in place, its problem as its note; the others as they
                    # were ("" clears a note: None would leave the last refusal's in place)
                    marks = {
                        c: gr.update(
                            elem_classes=["field-invalid"] if f["id"] in bad else [], info=bad.get(f["id"], info or "")
                        )
                        for f, c, info in zip(pg["fields"], comps, infos)
                    }
                    return {msg: said, **marks}
                return _next(token, p, stage)

            # then the focus on the first refused field (none once the form is done)
            go.click(send, [ctx.token] + comps, ui.outputs + comps, api_visibility="private").then(
                None, js=FOCUS_FIRST_INVALID
            )

    def _error(e: Exception, p: dict | None) -> str:
        """The refusal in the page's language (a study's own wording where it has one)."""
        study = studies.get_study(ctx.database, p["study_id"]) if p else None
        return f'<div class="msg error" role="alert">{html.escape(str(reword(e, Voice(ctx.lang, study))))}</div>'

    def show(p: dict) -> dict:
        study = studies.get_study(ctx.database, p["study_id"])
        stage = pending_stage(ctx.database, p, study)
        if stage is None:
            return {}
        voice = Voice(ctx.lang, study)
        pg = {
            **page(study, p["role"], stage),
            "words": {
                k: voice(k)
                for k in ("consent_agree", "consent_decline", "demographics_submit", "demographics_optional")
            },
        }
        asks = stage in ("consent", "declined")
        return {
            state: pg,
            box: gr.update(visible=True),
            header: f'<div class="msg info">{html.escape(Voice(ctx.lang, study)(stage))}</div>',
            text: markdown_html(pg.get("text", "")),
            buttons: gr.update(visible=asks),
            agree: gr.update(value=pg.get("agree") or pg["words"]["consent_agree"]),
            decline: gr.update(value=pg.get("decline") or pg["words"]["consent_decline"], visible=stage == "consent"),
            msg: "",
        }

    def hide() -> dict:
        return {state: None, box: gr.update(visible=False), msg: ""}

    def _next(token: str, p: dict, stage: str | None) -> dict:
        return show(p) if stage else {**hide(), **wiring["after"](token)}

    def decide(agreed: bool):
        def handler(token):
            p = None
            try:
                p = participant_for_token(ctx.database, token)
                stage = record_consent(ctx.database, p, agreed)
            except (ConsentError, AccessError) as e:
                return {msg: _error(e, p)}
            return _next(token, p, stage)

        return handler

    def connect(after_outputs: list, after: Callable[[str], dict]) -> None:
        wiring["after"] = after
        ui.outputs = [state, box, header, text, buttons, agree, decline, msg] + after_outputs
        agree.click(decide(True), ctx.token, ui.outputs, api_visibility="private")
        decline.click(decide(False), ctx.token, ui.outputs, api_visibility="private")

    ui = ConsentUI(box, [state, box, header, text, buttons, agree, decline, msg], show, hide, connect)
    return ui
