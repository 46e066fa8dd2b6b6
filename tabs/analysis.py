"""The analysis tab: per-study progress and the report, then each protocol's panel (its spec's
analysis_panel, in registration order), then the QE audit."""

from __future__ import annotations

import gradio as gr

from services.admin import auth as admin
from services.admin import progress as admin_progress
from services.common import protocols
from tabs import qe_audit as qe_audit_tab
from tabs.admin_common import admin_only, shows_failure
from tabs.analysis_common import Panel, not_run_table
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
                label="Report (HTML) and the analyses' files", file_count="multiple", interactive=False
            )
        table = not_run_table(interactive=False)
        shared = Panel(ctx, auth, session, study)
        for spec in protocols.protocols():
            if spec.analysis_panel:
                protocols.resolve(spec.analysis_panel)(shared)
        # the QE audits run in this session (paper 003 keeps no study data): the report includes them
        qe_runs, qe_run_list = qe_audit_tab.build(ctx, auth, session)

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
    def run_report(sess, study_id, past, table, request: gr.Request):
        study_id = shared.study_id(study_id)
        import tempfile

        from services.report.build import ReportError, build_report  # the analyses' heavy imports: on use

        try:
            rep = build_report(
                ctx.database,
                study_id,
                tempfile.mkdtemp(prefix=f"report-{study_id}-"),
                qe_audits=qe_audit_tab.audit_folders(past, table),
            )
        except ReportError as e:
            return {notice: str(e)}
        return {notice: f"Report written in {rep.seconds:.1f} s.", report_files: [str(rep.html), *map(str, rep.files)]}

    report_run.click(
        run_report, [session, study, qe_runs, qe_run_list], [notice, report_files], api_visibility="private"
    )
    return tab
