"""The study designer's tab: login, progress, participants and their links, jobs."""
from __future__ import annotations

import gradio as gr

from services import admin
from tabs.common import Ctx


def _host(request: gr.Request | None) -> str | None:
    return request.client.host if request is not None and request.client else None


def build(ctx: Ctx, auth: admin.AdminAuth):
    with gr.Tab("Admin", id="admin", visible=False) as tab:
        session = gr.Textbox(visible=False)
        with gr.Row() as login_row:
            password = gr.Textbox(label="Admin password", type="password", scale=3)
            login = gr.Button("Log in", scale=1)
        notice = gr.Markdown()
        with gr.Column(visible=False) as panel:
            study = gr.Dropdown(label="Study", choices=[])
            refresh = gr.Button("Refresh")
            progress = gr.Dataframe(label="Progress by role and phase", interactive=False)
            collected = gr.Dataframe(label="Data collected", interactive=False)
            jobs = gr.Dataframe(label="Background jobs", interactive=False)
            page = gr.Number(label="Participants page", value=1, precision=0, minimum=1)
            people = gr.Dataframe(label="Participants (private links)", interactive=False, wrap=True)

    def tables(sess, study_id, page_no, request: gr.Request):
        try:
            auth.check(sess, _host(request))
        except PermissionError as e:
            return {notice: str(e)}
        if not study_id:
            return {notice: "No study imported yet: run `python app.py import FOLDER`."}
        return {notice: "", progress: admin.progress_table(ctx.database, study_id),
                collected: admin.collected_counts(ctx.database, study_id),
                jobs: admin.job_counts(ctx.database),
                people: admin.participants_table(ctx.database, study_id, ctx.settings.public_url,
                                                 int(page_no or 1))}

    def do_login(pw, request: gr.Request):
        try:
            sess = auth.login(pw, _host(request))
        except PermissionError as e:
            return {notice: str(e)}
        choices = admin.study_choices(ctx.database)
        first = choices[0][1] if choices else None
        return {session: sess, notice: "", login_row: gr.update(visible=False),
                panel: gr.update(visible=True), study: gr.update(choices=choices, value=first),
                **tables(sess, first, 1, request)}

    outs = [session, notice, login_row, panel, study, progress, collected, jobs, people]
    login.click(do_login, [password], outs, api_name="admin_login", api_visibility="undocumented")
    password.submit(do_login, [password], outs, api_visibility="private")
    for trigger in (refresh.click, study.change, page.submit):
        trigger(tables, [session, study, page], [notice, progress, collected, jobs, people],
                api_visibility="private")
    return tab, session
