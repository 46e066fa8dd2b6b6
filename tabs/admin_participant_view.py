"""The admin tab's "A participant" section: find one participant by id, link or Prolific id; their
status block, every item with its answer and timing, and the actions on them (new link, deactivate,
reactivate, reassign), wired to services/admin/participants.py."""

from __future__ import annotations

import gradio as gr

from services.admin import auth as admin
from services.admin import participant_view as pview
from services.admin import participants as participant_admin
from services.setup.enrolment import link
from tabs.admin_common import admin_only, host
from tabs.common import Ctx, plain_markdown, shown_table

ERRORS = (PermissionError, ValueError)  # ParticipantAdminError is a ValueError
NO_ONE = "No participant shown: find one by id, link or external id above."


def status_markdown(v: pview.ParticipantView) -> str:
    """The status block; every value typed by someone else (ids, reasons) is shown as typed."""

    def line(label, value):
        return f"- **{label}:** {plain_markdown(value if value not in (None, '') else '—')}"

    c = v.counts()
    code = (
        f"{v.completion_code or '(none set)'}, shown {v.completion_shown_at}"
        if v.completion_shown
        else f"{v.completion_code or '(none set)'}, not shown yet"
    )
    return "\n".join(
        [
            f"### Participant {v.id} ({plain_markdown(v.role_label)}), found by {plain_markdown(v.found_by)}",
            line("Status", f"{v.status}: {v.status_detail}"),
            line("Group / gender", f"{v.group or '—'} / {v.gender or '—'}"),
            line("Prolific / external id", f"{v.prolific_pid or '—'} / {v.external_id or '—'}"),
            line("Created / last seen (UTC)", f"{v.created_at} / {v.last_seen_at or 'never'}"),
            line("Consent / demographics", f"{v.consent} / {v.demographics}"),
            line("Completion code", code),
            line("Items", f"{c['done']} done, {c['open']} open, {c['withdrawn']} withdrawn"),
            line("Link", f"{v.link} (the whole link: New link, or Show link above)"),
        ]
    )


def build(ctx: Ctx, auth: admin.AdminAuth, session, study) -> None:
    db = ctx.database
    with gr.Accordion("A participant", open=False):
        with gr.Row(equal_height=True):
            query = gr.Textbox(
                label="Participant id, private link (or its token), or Prolific / external id",
                scale=4,
                elem_id="participant-query",
            )
            find = gr.Button("Find", variant="primary", scale=1, min_width=100)
        found = gr.Number(visible=False, precision=0)  # the id the actions act on
        msg = gr.Markdown(elem_id="participant-view-msg")
        status = gr.Markdown(elem_id="participant-view-status")
        with gr.Row(equal_height=True):
            renew = gr.Button("New link", size="md", min_width=100)
            deactivate = gr.Button("Deactivate", variant="stop", size="md", min_width=100)
            reactivate = gr.Button("Reactivate", size="md", min_width=100)
            reassign = gr.Button("Reassign open items", size="md", min_width=100)
        new_link = gr.Textbox(
            label="New private link", interactive=False, buttons=["copy"], elem_id="participant-view-link"
        )
        items = gr.Dataframe(
            label="Their items (done ones in the order they were submitted, then the open ones)",
            interactive=False,
            wrap=True,
            elem_id="participant-items",
            value=shown_table(None, NO_ONE),
        )

    def shown(study_id, q) -> dict:
        v = pview.participant_view(db, study_id, q)
        return {
            status: status_markdown(v),
            items: shown_table(v.items_table(), "No items yet: they come as the participant works."),
            found: v.id,
        }

    cleared = {status: "", items: shown_table(None, NO_ONE), found: None}

    @admin_only(auth, refused=lambda message: {msg: message, **cleared})
    def on_find(sess, study_id, q, request: gr.Request):
        try:
            return {msg: "", **shown(study_id, q)}
        except ERRORS as e:
            return {msg: str(e), **cleared}

    outs = [msg, status, items, found]
    find.click(on_find, [session, study, query], outs, api_name="admin_participant_view", api_visibility="undocumented")
    query.submit(on_find, [session, study, query], outs, api_visibility="private")

    def action(kind: str):
        @admin_only(auth, refused=lambda message: {msg: message, new_link: ""})
        def handler(sess, study_id, participant_id, request: gr.Request):
            url = ""
            if participant_id in (None, ""):
                return {msg: "Find a participant first (search above).", new_link: ""}
            try:
                actor = f"admin@{host(request)}"
                if kind == "deactivate":
                    text = participant_admin.deactivate(db, study_id, participant_id, actor)
                elif kind == "reactivate":
                    text = participant_admin.reactivate(db, study_id, participant_id, actor)
                elif kind == "reassign":
                    text = participant_admin.reassign_open_items(db, study_id, participant_id, actor).summary()
                else:
                    url = link(
                        ctx.settings.public_url, participant_admin.regenerate_link(db, study_id, participant_id, actor)
                    )
                    text = f"Participant {participant_id} has a new link; the old one no longer works."
                # the page again, by id: the action may have changed the status, items or link
                return {msg: text, new_link: url, **shown(study_id, participant_id)}
            except ERRORS as e:
                return {msg: str(e), new_link: ""}

        return handler

    for button, kind in (
        (renew, "new_link"),
        (deactivate, "deactivate"),
        (reactivate, "reactivate"),
        (reassign, "reassign"),
    ):
        button.click(
            action(kind),
            [session, study, found],
            [msg, new_link, status, items, found],
            api_name=f"admin_participant_view_{kind}",
            api_visibility="undocumented",
        )
