"""The study designer's tab: login, progress, participants and their links, recording
review, jobs and loaded models."""

from __future__ import annotations

import html

import gradio as gr

from services.admin import auth as admin
from services.admin import dashboard as admin_dashboard_data
from services.admin import participants as participants_admin
from services.admin import progress as admin_progress
from services.common import protocols
from services.models import systems
from services.models.batch import translate_files
from services.models.cache import CACHE, MODEL_QUEUE
from services.models.zerogpu import gpu
from services.setup.importer import import_zip
from services.study import lifecycle
from services.study.files import StudyValidationError
from tabs import admin_dashboard, admin_participants, admin_questions
from tabs.admin_common import admin_only, blank_number, details_for_admin, download, pager, pick_row
from tabs.admin_common import host as _host
from tabs.admin_participant_view import build as build_participant_view
from tabs.common import Ctx, shown_table

# model calls a Gradio event makes get a GPU on ZeroGPU (the identity elsewhere: services/models/zerogpu.py)
_translate_on_gpu = gpu(translate_files)


LOGIN_WHY = (
    "This server has an admin password (`TRADLAB_ADMIN_PASSWORD`, set by whoever runs it): it is "
    "needed because with one set the Admin and Analysis tabs answer from any machine, not only from "
    "localhost. Enter it to open them."
)
NO_STUDY = "No study shown yet: import one, or pick it above."
NO_MODELS = "No models loaded yet: the first recording or translation loads them."


def _client_key(request: gr.Request | None) -> str:
    """Whose failed logins count together (services.admin.auth.throttle_key)."""
    peer = request.client.host if request is not None and request.client else None
    return admin.throttle_key(peer, getattr(request, "headers", None))


def build(ctx: Ctx, auth: admin.AdminAuth):
    with gr.Tab("Admin", id="admin", visible=False) as tab:
        session = gr.Textbox(visible=False)
        # hidden until the page's load event knows whether a password is set (open_at_once below)
        with gr.Row(visible=False) as login_row:
            with gr.Column(scale=3):
                login_why = gr.Markdown()
                password = gr.Textbox(label="Admin password", type="password")
            login = gr.Button("Log in", scale=1)
        notice = gr.Markdown()
        with gr.Column(visible=False, elem_id="admin-panel") as panel:
            with gr.Row(equal_height=True, elem_id="admin-bar"):
                # one line: the page's first screen is the dashboard's
                study = gr.Dropdown(
                    label="Study", show_label=False, container=False, choices=[], scale=4, min_width=200
                )
                refresh = gr.Button("Refresh", size="sm", scale=1, min_width=90)
                logout = gr.Button("Log out", size="sm", scale=1, min_width=90, variant="secondary")
            # the dashboard: one screen, re-read every DASHBOARD_EVERY_S while logged in; the
            # sections below it stay closed until opened
            dash = gr.HTML(elem_id="admin-dashboard")
            dash_timer = gr.Timer(admin_dashboard.EVERY_S, active=False)
            people = admin_participants.build(ctx, auth, session, study)
            build_participant_view(ctx, auth, session, study)
            with gr.Accordion("Progress tables and data collected", open=False):
                progress = gr.Dataframe(
                    label="Progress by role and phase", interactive=False, value=shown_table(None, NO_STUDY)
                )
                collected = gr.Dataframe(label="Data collected", interactive=False, value=shown_table(None, NO_STUDY))
            # each protocol's own sections (Protocol.admin_section: the usability study's exchanges and
            # recording review), in registration order, between the progress tables and the jobs; each
            # in a box shown only while the study picked lists its protocol
            sections = []
            for p in protocols.protocols():
                if p.admin_section:
                    with gr.Column(visible=False) as box:
                        sections.append((p.name, box, protocols.resolve(p.admin_section)(ctx, auth, session, study)))
            section_boxes = [box for _, box, _ in sections]
            section_inputs = [c for _, _, sec in sections for c in sec.inputs]
            section_outputs = [c for _, _, sec in sections for c in sec.outputs]
            section_initial = [v for _, _, sec in sections for v in sec.initial]
            with gr.Accordion("Background jobs", open=False):
                jobs = pager(
                    "Jobs (failed first)",
                    "No background jobs yet: recordings queue them.",
                    wrap=True,
                    headers={"max_attempts": "max", "last_error": "last error", "updated_at": "updated"},
                )
                with gr.Row():
                    job_id = blank_number(label="Job id (click its row above)", zero_is_blank=True, precision=0)
                    retry = gr.Button("Retry failed job")
                job_msg = gr.Markdown()
                gr.Markdown(
                    "Each answer opens the next phase of its exchange at once. The worker also runs "
                    "a repair every 10 minutes (and marks senders inactive past the study's "
                    "`dropout_after_days` as dropped out); run it now after an incident:"
                )
                repair = gr.Button("Repair the workflow now")
                repair_msg = gr.Markdown()
            with gr.Accordion("Loaded models", open=False):
                models = gr.Dataframe(label="Model cache", interactive=False, value=shown_table(None, NO_MODELS))
            with gr.Accordion("Import a study", open=False):
                study_zip = gr.File(
                    label="Study folder as a .zip (study.toml and its corpus files)",
                    file_types=[".zip"],
                    type="filepath",
                )
                do_import = gr.Button("Validate and import")
                import_msg = gr.Markdown(elem_id="import-msg")
            with gr.Accordion("Archive or delete the study", open=False):
                gr.Markdown(
                    "Archiving hides the study from the study list and closes its links (they say the study "
                    "is closed); its data stays and Unarchive brings it back. Deleting removes the study, "
                    "every answer and its recordings' files for good: it asks first, with the number of "
                    "answers lost. `python app.py study archive|unarchive|delete ID` does the same."
                )
                show_archived = gr.Checkbox(label="List archived studies too", value=False, elem_id="show-archived")
                with gr.Row():
                    archive_go = gr.Button("Archive", elem_id="study-archive")
                    unarchive_go = gr.Button("Unarchive", elem_id="study-unarchive")
                    delete_go = gr.Button("Delete…", variant="stop", elem_id="study-delete")
                with gr.Column(visible=False, elem_id="delete-confirm") as delete_box:
                    delete_q = gr.Markdown(elem_id="delete-question")
                    # the study and count asked about: Yes deletes that one, whatever is picked since
                    delete_sid = gr.State(None)
                    delete_n = gr.Number(visible=False, precision=0)
                    with gr.Row():
                        delete_yes = gr.Button("Yes, delete", variant="stop", elem_id="delete-yes")
                        delete_no = gr.Button("Cancel", elem_id="delete-cancel")
                lifecycle_msg = gr.Markdown(elem_id="lifecycle-msg")
            with gr.Accordion("Direct-assessment campaign", open=False):
                gr.Markdown(
                    "HITs are built when the study is imported. Raters in audio mode wait until "
                    "their HIT's audio exists (a background job renders it when the HIT is "
                    "assigned); pre-rendering the whole campaign here avoids that wait. Each text "
                    "is synthesised once."
                )
                prerender = gr.Button("Pre-render the campaign (images and audio)")
                prerender_msg = gr.Markdown()
            with gr.Accordion("Export the study's data", open=False):
                gr.Markdown(
                    "One table per entity with a data dictionary (README.md inside), participants "
                    "under pseudonyms (sender-001, ...), no link tokens; hf-audio is a Hugging Face "
                    "audio-folder dataset of the recordings. `python app.py export` does the same."
                )
                with gr.Row():
                    export_format = gr.Dropdown(
                        label="Format", choices=["csv", "jsonl", "parquet", "hf-audio"], value="csv"
                    )
                    export_ids = gr.Checkbox(label="Include Prolific / external ids", value=False)
                    export_events = gr.Checkbox(label="Include the audit log", value=False)
                export_go = gr.Button("Export (zip)")
                export_file = gr.File(label="Export", interactive=False)
                export_msg = gr.Markdown()
            admin_questions.build(ctx, auth, session, study)
            with gr.Accordion("Try a speech-translation system", open=False):
                try_system = gr.Dropdown(
                    label="System preset", choices=list(systems.presets()), value=systems.DEFAULT_SYSTEM
                )
                try_audio = gr.Audio(sources=["microphone", "upload"], type="filepath", label="English speech")
                try_go = gr.Button("Translate")
                try_out = gr.Markdown(elem_id="try-output")

    def dashboard_html(study_id) -> str:
        if not study_id:
            return '<p class="dash-empty">No study imported yet: run <code>python app.py import FOLDER</code>.</p>'
        return admin_dashboard.render(admin_dashboard_data.dashboard(ctx.database, study_id))

    @admin_only(auth, refused=lambda message: {dash: html.escape(message), dash_timer: gr.Timer(active=False)})
    def tick(sess, study_id, request: gr.Request):
        return {dash: dashboard_html(study_id)}

    dash_timer.tick(
        tick,
        [session, study],
        [dash, dash_timer],
        api_name="admin_dashboard",
        api_visibility="undocumented",
        show_progress="hidden",
    )

    @admin_only(auth, notice)
    def tables(request: gr.Request, sess, study_id, job_page, *values):
        """values: each section's inputs, then the participants' (filters and pages)."""
        if not study_id:
            return {notice: "No study imported yet: run `python app.py import FOLDER`.", dash: dashboard_html(None)}
        out = {
            notice: "",
            dash: dashboard_html(study_id),
            progress: shown_table(
                admin_progress.progress_table(ctx.database, study_id), "No items yet: participants' links make them."
            ),
            collected: shown_table(admin_progress.collected_counts(ctx.database, study_id), "Nothing collected yet."),
            **jobs.show(admin_progress.jobs_page(ctx.database, job_page)),
            models: shown_table(admin_progress.models_table(CACHE), NO_MODELS),
        }
        listed = admin_progress.study_protocols(ctx.database, study_id)
        at = 0
        for name, box, sec in sections:
            out[box] = gr.update(visible=name in listed)
            if name in listed:  # another protocol's section stays hidden and unread
                out.update(sec.refresh(study_id, *values[at : at + len(sec.inputs)]))
            at += len(sec.inputs)
        out.update(people.refresh(study_id, *values[at:]))
        return out

    @details_for_admin
    def do_login(pw, request: gr.Request):
        try:
            sess = auth.login(pw, _host(request), _client_key(request))
        except PermissionError as e:
            return {notice: str(e)}
        choices = admin_progress.study_choices(ctx.database)
        first = choices[0][1] if choices else None
        return {
            session: sess,
            notice: "",
            login_row: gr.update(visible=False),
            panel: gr.update(visible=True),
            study: gr.update(choices=choices, value=first),
            dash_timer: gr.Timer(active=True),
            **tables(request, sess, first, 1, *section_initial, "all", "all", 1, 1),
        }

    def do_logout(sess, request: gr.Request):
        """Ends the session on the server (its id opens nothing any more) and shows the login form
        (without a password: only the button, which opens a new session)."""
        auth.logout(sess, _host(request))
        if not auth.needs_password:  # no form to log in again: the admin link (reloading it) does
            return {
                session: "",
                password: gr.update(value="", visible=False),
                login_row: gr.update(visible=False),
                notice: "Logged out. Open the admin link again (or reload this page) to log in.",
                panel: gr.update(visible=False),
                dash_timer: gr.Timer(active=False),
            }
        return {
            session: "",
            password: gr.update(value="", visible=auth.needs_password),
            notice: "Logged out.",
            login_row: gr.update(visible=True),
            panel: gr.update(visible=False),
            dash_timer: gr.Timer(active=False),
        }

    @details_for_admin
    def open_at_once(request: gr.Request):
        """On the page's load: without a password a local request with the admin link (/?admin=
        SECRET, printed by the server at start) needs no form (docs/security.md), so the admin opens
        at once; without the link it says where the link is, and a remote one is refused as by Log
        in (the form stays hidden); with a password the form shows, saying why it is needed."""
        if auth.needs_password:
            return {login_row: gr.update(visible=True), password: gr.update(visible=True), login_why: LOGIN_WHY}
        secret = dict(getattr(request, "query_params", None) or {}).get("admin") or ""
        if not secret:
            shown = admin.NEEDS_ADMIN_LINK if auth.available(_host(request)) else admin.REMOTE_WITHOUT_PASSWORD
            return {notice: shown}
        return do_login(secret, request)

    @admin_only(auth, job_msg)
    def do_retry(sess, jid, request: gr.Request):
        return {job_msg: admin_progress.retry_job(ctx.database, jid)}

    @admin_only(auth)
    def do_repair(sess, study_id, request: gr.Request):
        return admin_progress.repair_workflow(ctx.database, study_id)

    repair.click(do_repair, [session, study], repair_msg, api_name="admin_repair", api_visibility="undocumented")

    @admin_only(auth)
    def do_try(sess, preset, audio, request: gr.Request):
        if not audio:
            return "Record or upload some English speech first."
        try:
            r = _translate_on_gpu([audio], preset)[0]
        except Exception as e:  # shown to the designer, who is testing a configuration
            return f"**{type(e).__name__}:** {e}"
        times = ", ".join(f"{k} {v:.2f} s" for k, v in r["seconds"].items())
        transcript = f"**Transcript:** {r['transcript']}\n\n" if r["transcript"] is not None else ""
        return f"{transcript}**Translation:** {r['translation']}\n\n{times} for {r['audio_s']:.1f} s of audio"

    # the dashboard last: the outputs before it keep their places for API callers
    table_outs = [
        notice,
        progress,
        collected,
        *section_outputs,
        *jobs.outputs,
        models,
        *people.outputs,
        dash,
        *section_boxes,
    ]
    outs = [session, notice, login_row, panel, study, *table_outs[1:], dash_timer]
    for trigger in (login.click, password.submit):
        api = (
            {"api_name": "admin_login", "api_visibility": "undocumented"}
            if trigger == login.click
            else {"api_visibility": "private"}
        )
        # one login at a time: a check paced by the throttle (LoginThrottle.turn) holds one thread, not
        # many; the admin link's secret (no password) is paced by nothing and waits for no queue turn
        api.update(
            {"concurrency_id": "admin_login", "concurrency_limit": 1} if auth.needs_password else {"queue": False}
        )
        # then: timestamps in the browser's zone (tabs/admin_dashboard.LOCAL_TIMES_JS)
        trigger(do_login, [password], outs, **api).then(None, js=admin_dashboard.LOCAL_TIMES_JS)
    logout.click(
        do_logout,
        [session],
        [session, password, notice, login_row, panel, dash_timer],
        api_name="admin_logout",
        api_visibility="undocumented",
    )
    # without a password a local page opens at once (open_at_once), then its times in the browser's zone;
    # outside the queue: other page loads (120 with wrong secrets had held it 71 s) never go before it
    gr.context.Context.root_block.load(
        open_at_once, None, [*outs, password, login_why], api_visibility="private", queue=False
    ).then(None, js=admin_dashboard.LOCAL_TIMES_JS)
    for trigger in (refresh.click, study.change):
        # "minimal": the dashboard stays readable while it refreshes (no grey overlay over it)
        trigger(
            tables,
            [session, study, jobs.page, *section_inputs, *people.inputs],
            table_outs,
            api_visibility="private",
            show_progress="minimal",
        )

    def dashboard_in_view(sess, evt: gr.SelectData):
        """The dashboard re-reads itself only while the Admin tab is in front (not behind Analysis)."""
        return gr.Timer(active=bool(sess) and evt.value == "Admin")

    if isinstance(tab.parent, gr.Tabs):
        tab.parent.select(dashboard_in_view, [session], [dash_timer], show_progress="hidden", api_visibility="private")

    reload_jobs = jobs.wire(
        auth, session, [], lambda no: admin_progress.jobs_page(ctx.database, no), job_msg, "admin_jobs_page"
    )
    pick_row(jobs.table, job_id)

    def listed(show: bool, value=None) -> dict:
        choices = admin_progress.study_choices(ctx.database, bool(show))
        ids = [c[1] for c in choices]
        return gr.update(choices=choices, value=value if value in ids else (ids[0] if ids else None))

    def archiving(act):
        """The handler of Archive (act: lifecycle.archive) or Unarchive (lifecycle.unarchive)."""

        @admin_only(auth, lifecycle_msg)
        def handler(sess, study_id, show, request: gr.Request):
            try:
                said = act(ctx.database, study_id, f"admin@{_host(request)}")
            except lifecycle.LifecycleError as e:
                return {lifecycle_msg: str(e)}
            return {lifecycle_msg: said, study: listed(show, study_id)}

        return handler

    on_archive, on_unarchive = archiving(lifecycle.archive), archiving(lifecycle.unarchive)

    @admin_only(auth, lifecycle_msg)
    def ask_delete(sess, study_id, request: gr.Request):
        """Delete's first step: what is lost, and a button that names the study and the count."""
        try:
            question, n = lifecycle.deletion_question(ctx.database, study_id)
        except lifecycle.LifecycleError as e:
            return {lifecycle_msg: str(e), delete_box: gr.update(visible=False)}
        return {
            lifecycle_msg: "",
            delete_q: f"**{question}**",
            delete_n: n,
            delete_sid: study_id,
            delete_box: gr.update(visible=True),
            delete_yes: gr.update(value=f"Yes, delete study {study_id} ({n} answer{'s' if n != 1 else ''})"),
        }

    @admin_only(auth, lifecycle_msg)
    def on_delete(sess, study_id, n, show, request: gr.Request):
        try:
            said = lifecycle.delete(ctx.database, study_id, f"admin@{_host(request)}", None if n is None else int(n))
        except lifecycle.LifecycleError as e:
            return {lifecycle_msg: str(e), delete_box: gr.update(visible=False)}
        return {lifecycle_msg: said, delete_box: gr.update(visible=False), study: listed(show)}

    show_archived.change(
        lambda sess, show, sid: listed(show, sid), [session, show_archived, study], study, api_visibility="private"
    )
    archive_go.click(
        on_archive,
        [session, study, show_archived],
        [lifecycle_msg, study],
        api_name="admin_study_archive",
        api_visibility="undocumented",
    )
    unarchive_go.click(
        on_unarchive,
        [session, study, show_archived],
        [lifecycle_msg, study],
        api_name="admin_study_unarchive",
        api_visibility="undocumented",
    )
    delete_go.click(
        ask_delete,
        [session, study],
        [lifecycle_msg, delete_q, delete_n, delete_sid, delete_box, delete_yes],
        api_visibility="private",
    )
    delete_no.click(lambda: gr.update(visible=False), None, delete_box, api_visibility="private")
    delete_yes.click(
        on_delete,
        [session, delete_sid, delete_n, show_archived],
        [lifecycle_msg, delete_box, study],
        api_name="admin_study_delete",
        api_visibility="undocumented",
    )

    @admin_only(auth, import_msg)
    def on_import(sess, path, request: gr.Request):
        if not path:
            return {import_msg: "Choose a .zip first."}
        try:
            res = import_zip(ctx.database, path, actor=f"admin@{_host(request)}")
        except StudyValidationError as e:
            lines = "\n".join(f"- {err}" for err in e.errors[:50])
            return {import_msg: f"**Nothing was imported.** Fix these and upload again:\n{lines}"}
        counts = ", ".join(f"{k} {v}" for k, v in res.counts.items() if v)
        notes = "".join(f"\n- {n}" for n in res.notes)  # what the design needs to finish
        urls = participants_admin.prolific_urls(ctx.database, res.study_id, ctx.settings.public_url)
        if urls:  # the signed study URLs to give Prolific (also under Participants, with a copy button)
            notes += (
                f"\n\n{participants_admin.prolific_summary(urls)}\n```\n{participants_admin.prolific_text(urls)}\n```"
            )
        if res.status == "updated in place":  # settings only: name each one changed
            n = len(res.settings_changed)
            said = (
                f"Study **{res.study_id}** updated {n} setting{'s' if n != 1 else ''} in place: "
                + ", ".join(f"`{k}`" for k in res.settings_changed)
                + " (every collected answer kept; the audit log has the old and new values)."
            )
        else:
            said = f"Study **{res.study_id}** {res.status} ({counts})."
        return {
            import_msg: said + notes,
            study: gr.update(choices=admin_progress.study_choices(ctx.database), value=res.study_id),
        }

    do_import.click(
        on_import, [session, study_zip], [import_msg, study], api_name="admin_import", api_visibility="undocumented"
    )

    @admin_only(auth)
    def do_prerender(sess, study_id, request: gr.Request, progress=gr.Progress()):
        if not study_id:
            return "Pick a study first."
        from services.da import campaign as da_campaign

        try:
            out = da_campaign.prerender(
                ctx.database,
                study_id,
                ctx.settings.media_dir,
                lambda done, total: progress((done, total), desc="Rendering"),
            )
        except Exception as e:  # e.g. no TTS voice for the language: the designer needs the reason
            return f"**{type(e).__name__}:** {e}"
        return f"Rendered {out['items']} item images and {out['audio_texts']} distinct audio texts (each once)."

    def make_export(study_id, fmt, ids, events):
        from services.study import export

        path = export.export_zip(
            ctx.database,
            study_id,
            ctx.settings.media_dir,
            fmt or "csv",
            include_external_ids=bool(ids),
            include_events=bool(events),
        )
        return path, f"`{path.name}`: tables, README.md (data dictionary) and manifest.json."

    do_export = download(
        auth, export_file, export_msg, make_export, (ValueError, KeyError), "**The export could not be made:** "
    )
    export_go.click(
        do_export,
        [session, study, export_format, export_ids, export_events],
        [export_file, export_msg],
        api_name="admin_export",
        api_visibility="undocumented",
    )

    prerender.click(
        do_prerender,
        [session, study],
        prerender_msg,
        concurrency_id=MODEL_QUEUE,
        concurrency_limit=1,
        api_name="admin_prerender_da",
        api_visibility="undocumented",
    )
    # every event that runs a model shares one queue, so a small GPU is never oversubscribed
    try_go.click(
        do_try,
        [session, try_system, try_audio],
        try_out,
        concurrency_id=MODEL_QUEUE,
        concurrency_limit=1,
        api_name="admin_try_system",
        api_visibility="undocumented",
    )
    retry.click(
        do_retry, [session, job_id], [job_msg, jobs.table], api_name="admin_retry_job", api_visibility="undocumented"
    ).then(reload_jobs, [session, jobs.page], [job_msg, *jobs.outputs], api_visibility="private")
    return tab, session
