"""The analysis tab: per-study progress and the report, then each protocol's panel (its spec's
analysis_panel, in registration order: the papers' studies, then the QE audit)."""

from __future__ import annotations

import gradio as gr

from services.admin import auth as admin
from services.admin import progress as admin_progress
from services.common import protocols
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import Panel, ReportInputs, not_run_table, run_folder
from tabs.common import Ctx, shown_plot, shown_table


def build(ctx: Ctx, auth: admin.AdminAuth, session: gr.Textbox):
    with gr.Tab("Analysis", id="analysis", visible=False, elem_id="analysis-panel") as tab:
        notice = gr.Markdown("Log in on the Admin tab first.")
        study = gr.Dropdown(label="Study", choices=[])
        show = gr.Button("Show")
        figure = gr.Plot(label="Items done and open per phase", visible=False)
        with gr.Row():
            report_run = gr.Button("Report: every paper's tables and figures, one HTML file")
            report_files = gr.File(
                label="Report (HTML), and a .zip of it with the analyses' files",
                file_count="multiple",
                interactive=False,
            )
        table = not_run_table(interactive=False)
        shared = Panel(ctx, auth, session, study)
        # what the report reads of the panels (the QE audits run in this session)
        report_inputs: list[ReportInputs] = []
        for spec in protocols.protocols():
            if spec.analysis_panel:
                given = protocols.resolve(spec.analysis_panel)(shared)
                if given is not None:
                    report_inputs.append(given)

    @admin_only(auth, notice)
    @shows_failure(notice, "The progress chart")
    def run(sess, study_id, request: gr.Request):
        choices = admin_progress.study_choices(ctx.database)
        study_id = study_id or (choices[0][1] if choices else None)
        if not study_id:
            return {
                notice: "No study imported yet.",
                study: gr.update(choices=choices),
                figure: shown_plot(None),
                table: shown_table(None, "No study imported yet: `python app.py import FOLDER` adds one."),
            }
        df, fig = admin_progress.progress_chart(ctx.database, study_id)
        # an empty study's chart is empty axes: hidden, the table says why
        return {
            notice: "",
            study: gr.update(choices=choices, value=study_id),
            figure: shown_plot(fig if len(df) else None),
            table: shown_table(df, "No items in this study yet: participants' links make them."),
        }

    show.click(run, [session, study], [notice, study, figure, table], api_visibility="private")
    # logging in on the Admin tab fills this tab too (no stale "log in first")
    session.change(run, [session, study], [notice, study, figure, table], api_visibility="private")

    @admin_only(auth, notice)
    @shows_failure(notice, "The report")
    def run_report(sess, study_id, request: gr.Request, *values):  # gradio puts the request third
        study_id = shared.study_id(study_id)
        inputs, at = {}, 0
        for given in report_inputs:
            inputs.update(given.inputs(*values[at : at + len(given.components)]))
            at += len(given.components)
        from services.report.build import ReportError, build_report, zip_report  # heavy imports: on use

        # the report (the study's results and settings) is served from gradio's cache, which
        # expires it; its temporary folder goes when the run ends (gradio's copy had left it there)
        with run_folder("report", study_id) as folder:
            try:
                rep = build_report(ctx.database, study_id, folder, inputs=inputs)
            except ReportError as e:
                return {notice: str(e)}
            # the HTML to read at once, and one .zip of it with its folders (its links work unpacked)
            files = served([rep.html, zip_report(rep, folder)], folder)
        return {
            notice: f"Report written in {rep.seconds:.1f} s: the HTML, and a .zip of it with its "
            f"{len(rep.files)} tables and figures in their folders (its links work once unpacked).",
            report_files: files,
        }

    read = [c for given in report_inputs for c in given.components]
    report_run.click(run_report, [session, study, *read], [notice, report_files], api_visibility="private")
    return tab
