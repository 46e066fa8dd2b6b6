"""The analysis tab: per-study progress now; the protocol analyses plug in here."""
from __future__ import annotations

import gradio as gr
import plotly.express as px

from services import admin
from tabs.admin import _host
from tabs.common import Ctx


def build(ctx: Ctx, auth: admin.AdminAuth, session: gr.Textbox):
    with gr.Tab("Analysis", id="analysis", visible=False) as tab:
        notice = gr.Markdown("Log in on the Admin tab first.")
        study = gr.Dropdown(label="Study", choices=[])
        show = gr.Button("Show")
        figure = gr.Plot(label="Items done and open per phase")
        table = gr.Dataframe(interactive=False)

    def run(sess, study_id, request: gr.Request):
        try:
            auth.check(sess, _host(request))
        except PermissionError as e:
            return {notice: str(e)}
        choices = admin.study_choices(ctx.database)
        study_id = study_id or (choices[0][1] if choices else None)
        if not study_id:
            return {notice: "No study imported yet.", study: gr.update(choices=choices)}
        df = admin.progress_table(ctx.database, study_id)
        long = df.melt(id_vars=["role", "phase"], value_vars=["done", "open"], var_name="status", value_name="items")
        fig = px.bar(long, x="phase", y="items", color="status", barmode="stack",
                     title=f"Progress of study {study_id}")
        return {notice: "", study: gr.update(choices=choices, value=study_id), figure: fig, table: df}

    show.click(run, [session, study], [notice, study, figure, table], api_visibility="private")
    return tab
