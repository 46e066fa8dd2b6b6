"""The admin tab's participants section: the paged, filtered participants table with short
links, one participant's full link, deactivate / reactivate / reassign / new link, adding
participants, the links CSV, and the completion-code list for approving Prolific submissions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import gradio as gr

from services.admin import auth as admin
from services.admin import participants as participant_admin
from services.admin.participants import STATUSES, whole_number
from services.common import protocols
from services.setup.enrolment import link
from tabs.admin_common import admin_only, blank_number, download, host, pager, pick_row
from tabs.common import Ctx

ALL = "all"
ERRORS = (PermissionError, ValueError)  # ParticipantAdminError and ParticipantError are ValueErrors


@dataclass
class ParticipantsUI:
    inputs: list  # what refresh() reads, after the study: filters and pages
    outputs: list  # what refresh() updates
    refresh: Callable[..., dict]  # refresh(study_id, *values of inputs), after auth.check


def _opt(value):
    return None if value in (None, "", ALL) else value


# the stored names as a reader expects them (the CSV download keeps the stored ones)
SHOWN_HEADERS = {
    "grp": "group",
    "external_id": "external id",
    "prolific_pid": "Prolific id",
    "last_seen_at": "last seen",
    "last_submitted": "last answer",
}


def build(ctx: Ctx, auth: admin.AdminAuth, session, study) -> ParticipantsUI:
    db = ctx.database
    with gr.Accordion("Participants", open=False):
        with gr.Row():
            role_filter = gr.Dropdown(label="Role", choices=[ALL, *protocols.roles()], value=ALL)
            status_filter = gr.Dropdown(label="Status", choices=[ALL, *STATUSES], value=ALL)
        people = pager(
            "Participants (links shortened; show one in full below, or download them all)",
            "No participants match: add some below, or change the filters.",
            wrap=True,
            elem_id="participants",
            headers=SHOWN_HEADERS,
        )
        with gr.Row(equal_height=True):
            pid = blank_number(
                label="Participant id (click its row above)", zero_is_blank=True, precision=0, min_width=150
            )
            show = gr.Button("Show link", size="md", min_width=100)
            deactivate = gr.Button("Deactivate", variant="stop", size="md", min_width=100, elem_id="deactivate")
            reactivate = gr.Button("Reactivate", size="md", min_width=100)
            reassign = gr.Button("Reassign open items", size="md", min_width=100)
            renew = gr.Button("New link", size="md", min_width=100)
        # Deactivate stops someone's link mid-study: it asks first, naming them (issue 51, point 7)
        with gr.Column(visible=False, elem_id="deactivate-confirm") as deactivate_box:
            deactivate_q = gr.Markdown(elem_id="deactivate-question")
            with gr.Row():
                deactivate_yes = gr.Button("Yes, deactivate", variant="stop", size="md", elem_id="deactivate-yes")
                deactivate_no = gr.Button("Cancel", size="md", elem_id="deactivate-cancel")
        gr.Markdown(
            "Deactivating stops a link at once and keeps the queue; reassigning (of a deactivated "
            "participant) hands their open items to others: recordings to another sender, receiver and "
            "validator items and raters' surveys to the least-loaded eligible person; a DA rater's "
            "unfinished HIT goes whole to the next DA rater added. Done items stay. A new link replaces "
            "the old one, which stops working; progress is kept."
        )
        full_link = gr.Textbox(
            label="Private link(s)", interactive=False, buttons=["copy"], max_lines=20, elem_id="participant-link"
        )
        msg = gr.Markdown(elem_id="participants-msg")
        with gr.Row():
            links_go = gr.Button("Download every link (CSV)")
            links_file = gr.File(label="Links", interactive=False, height=90)
        # the signed study URLs a Prolific study is given (per self-enrolling role; senders per cell)
        with gr.Row():
            prolific_go = gr.Button("Prolific study URLs")
            prolific_csv_go = gr.Button("Download the Prolific URLs (CSV)")
            prolific_file = gr.File(label="Prolific URLs", interactive=False, height=90)
        prolific_box = gr.Textbox(
            label="Prolific study URLs (with the open self-enrolment slots of each)",
            interactive=False,
            buttons=["copy"],
            max_lines=24,
            elem_id="prolific-urls",
        )
        with gr.Accordion("Add participants", open=False):
            with gr.Row():
                role = gr.Dropdown(label="Role", choices=list(protocols.roles()), value=None)
                count = blank_number(
                    label="How many (ignored when external ids are given; empty: 1)", value=1, blank=1, precision=0
                )
                group = gr.Dropdown(label="Group", choices=[("(none)", "")], value="", allow_custom_value=True)
                gender = gr.Dropdown(label="Gender", choices=[("(none)", "")], value="", allow_custom_value=True)
            ext_ids = gr.Textbox(
                label="External / Prolific ids (optional: one participant per id, one per line)", lines=3
            )
            with gr.Row():
                add_go = gr.Button("Add", variant="primary")
                # slots only the signed Prolific URL fills; plain "Add" makes private-link slots
                add_self_go = gr.Button("Add as Prolific self-enrolment slots (no external ids)")
            # a refusal shows here, under the buttons, where the eye is (the table's message is
            # far above: issue 51, point 7)
            add_msg = gr.Markdown(elem_id="add-msg")
    with gr.Accordion("Finished participants and the completion code", open=False):
        gr.Markdown(
            "Everyone who finished every part of their role, with the time they finished and their "
            "Prolific / external id; the CSV has them all, to approve the submissions on Prolific. "
            "**QC outcome** says what quality control found, to decide payment: a DA rater's "
            "reliability test and speed (and whether their HIT was re-run), an SD rater's "
            "cleansing, a sender's rejected recordings; *kept (pilot)* where the study keeps "
            "every worker (`[da] keep_every_worker`)."
        )
        done = pager(
            "Finished participants",
            "No one has finished yet.",
            elem_id="completions",
            headers={"qc": "QC outcome"},
        )
        with gr.Row():
            done_go = gr.Button("Download the list (CSV)")
            done_file = gr.File(label="Finished participants", interactive=False, height=90)

    def people_page(page_no, study_id, role_f, status_f):
        return participant_admin.participants_page(db, study_id, page_no, role=_opt(role_f), status=_opt(status_f))

    def done_page(page_no, study_id):
        return participant_admin.completion_page(db, study_id, page_no)

    def refresh(study_id, role_f, status_f, people_no, done_no) -> dict:
        opts = participant_admin.form_options(db, study_id)
        out = {
            group: gr.update(choices=[("(none)", ""), *opts["groups"]]),
            gender: gr.update(choices=[("(none)", ""), *opts["genders"]]),
        }
        if not study_id:
            return out
        return {
            **out,
            **people.show(people_page(people_no, study_id, role_f, status_f)),
            **done.show(done_page(done_no, study_id)),
        }

    table_state = [role_filter, status_filter, people.page]
    people.wire(auth, session, [study, role_filter, status_filter], people_page, msg, "admin_participants_page")
    done.wire(auth, session, [study], done_page, msg, "admin_completions_page")

    @admin_only(auth, msg)
    def on_filter(sess, study_id, role_f, status_f, request: gr.Request):
        try:
            return {msg: "", **people.show(people_page(1, study_id, role_f, status_f))}
        except ERRORS as e:
            return {msg: str(e)}

    for f in (role_filter, status_filter):
        f.input(
            on_filter, [session, study, role_filter, status_filter], [msg, *people.outputs], api_visibility="private"
        )

    @admin_only(auth, refused=lambda message: {msg: message, full_link: ""})
    def on_show(sess, study_id, participant_id, request: gr.Request):
        try:
            return {
                msg: "",
                full_link: participant_admin.full_link(db, study_id, participant_id, ctx.settings.public_url),
            }
        except ERRORS as e:
            return {msg: str(e), full_link: ""}

    pick_row(people.table, pid)
    show.click(
        on_show,
        [session, study, pid],
        [msg, full_link],
        api_name="admin_participants_link",
        api_visibility="undocumented",
    )

    def action(kind: str):
        @admin_only(auth, msg)
        def handler(sess, study_id, participant_id, role_f, status_f, page_no, request: gr.Request):
            url = ""
            try:
                actor = f"admin@{host(request)}"
                if kind == "deactivate":
                    text = participant_admin.deactivate(db, study_id, participant_id, actor)
                elif kind == "reactivate":
                    text = participant_admin.reactivate(db, study_id, participant_id, actor)
                elif kind == "reassign":
                    text = participant_admin.reassign_open_items(db, study_id, participant_id, actor).summary()
                else:
                    token = participant_admin.regenerate_link(db, study_id, participant_id, actor)
                    url = link(ctx.settings.public_url, token)
                    text = f"Participant {whole_number(participant_id)} has a new link; the old one no longer works."
            except ERRORS as e:
                return {msg: str(e)}
            return {
                msg: text,
                full_link: url,
                deactivate_box: gr.update(visible=False),
                **people.show(people_page(page_no, study_id, role_f, status_f)),
            }

        return handler

    @admin_only(auth, msg)
    def ask_deactivate(sess, study_id, participant_id, request: gr.Request):
        """Deactivate's first step: who it is, and the button that acts."""
        try:
            p = participant_admin.participant(db, study_id, participant_id)
        except ERRORS as e:
            return {msg: str(e), deactivate_box: gr.update(visible=False)}
        return {
            msg: "",
            deactivate_q: f"**Deactivate participant {p['id']} ({p['role']})?** Their link stops working at once; "
            "their queue is kept (Reactivate restores it).",
            deactivate_box: gr.update(visible=True),
            deactivate_yes: gr.update(value=f"Yes, deactivate participant {p['id']}"),
        }

    deactivate.click(
        ask_deactivate,
        [session, study, pid],
        [msg, deactivate_q, deactivate_box, deactivate_yes],
        api_visibility="private",
    )
    deactivate_no.click(lambda: (gr.update(visible=False), ""), None, [deactivate_box, msg], api_visibility="private")
    # another participant picked: the question asked about the last one goes
    pid.change(lambda: gr.update(visible=False), None, deactivate_box, api_visibility="private", queue=False)
    outs = [msg, full_link, *people.outputs]
    for button, kind in (
        (deactivate_yes, "deactivate"),
        (reactivate, "reactivate"),
        (reassign, "reassign"),
        (renew, "new_link"),
    ):
        button.click(
            action(kind),
            [session, study, pid, *table_state],
            [*outs, deactivate_box],
            api_name=f"admin_participants_{kind}",
            api_visibility="undocumented",
        )

    def adder(self_enrol: bool):
        @admin_only(auth, msg)
        def on_add(sess, study_id, role_v, n, group_v, gender_v, ids, role_f, status_f, page_no, request: gr.Request):
            try:
                made = participant_admin.add(
                    db, study_id, role_v, n, group_v, gender_v, ids, f"admin@{host(request)}", self_enrol=self_enrol
                )
            except ERRORS as e:
                return {add_msg: f"**Nothing was added:** {e}"}
            ids_text = ", ".join(str(m.id) for m in made[:20]) + (", …" if len(made) > 20 else "")
            shown = {ext_ids: "", add_msg: "", **people.show(people_page(page_no, study_id, role_f, status_f))}
            if self_enrol:  # slots are filled through the study's signed URL, not private links
                rows = participant_admin.prolific_urls(db, study_id, ctx.settings.public_url)
                return {
                    **shown,
                    msg: f"Added {len(made)} {role_v} self-enrolment slot(s) (ids {ids_text}); give Prolific the "
                    "study URL below (copy it with the button).",
                    prolific_box: participant_admin.prolific_text(rows),
                }
            return {
                **shown,
                msg: f"Added {len(made)} {role_v} participant(s) (ids {ids_text}); their links are in the box above.",
                full_link: "\n".join(link(ctx.settings.public_url, m.token) for m in made),
            }

        return on_add

    # a new role starts with no group and gender: the last sender's cell stuck to the receivers
    # added next (issue 51, point 6); the designer picks them again where the role has them
    def fresh_cell(_role):
        return "", ""

    role.change(fresh_cell, [role], [group, gender], api_visibility="private", queue=False)

    for button, self_enrol, api in (
        (add_go, False, "admin_participants_add"),
        (add_self_go, True, "admin_participants_add_self_enrol"),
    ):
        button.click(
            adder(self_enrol),
            [session, study, role, count, group, gender, ext_ids, *table_state],
            [msg, full_link, prolific_box, ext_ids, *people.outputs, add_msg],
            api_name=api,
            api_visibility="undocumented",
        )

    links_go.click(
        download(
            auth, links_file, msg, lambda sid: (participant_admin.links_csv(db, sid, ctx.settings.public_url), "")
        ),
        [session, study],
        [msg, links_file],
        api_name="admin_participants_links_csv",
        api_visibility="undocumented",
    )

    @admin_only(auth, msg)
    def on_prolific(sess, study_id, request: gr.Request):
        try:
            rows = participant_admin.prolific_urls(db, study_id, ctx.settings.public_url)
        except ERRORS as e:
            return {msg: str(e)}
        return {msg: participant_admin.prolific_summary(rows), prolific_box: participant_admin.prolific_text(rows)}

    prolific_go.click(
        on_prolific,
        [session, study],
        [msg, prolific_box],
        api_name="admin_prolific_urls",
        api_visibility="undocumented",
    )
    prolific_csv_go.click(
        download(
            auth,
            prolific_file,
            msg,
            lambda sid: (participant_admin.prolific_csv(db, sid, ctx.settings.public_url), ""),
        ),
        [session, study],
        [msg, prolific_file],
        api_name="admin_prolific_urls_csv",
        api_visibility="undocumented",
    )
    done_go.click(
        download(auth, done_file, msg, lambda sid: (participant_admin.completion_csv(db, sid), "")),
        [session, study],
        [msg, done_file],
        api_name="admin_completions_csv",
        api_visibility="undocumented",
    )

    return ParticipantsUI(
        inputs=[role_filter, status_filter, people.page, done.page],
        outputs=[group, gender, *people.outputs, *done.outputs],
        refresh=refresh,
    )
