"""The Analysis tab's listening-test panel: the report's part for the chosen study
(services/report/listening.py, from services/listening/analysis.py: the figures `app.py analyze
listening` prints); services/listening/protocol.py names it."""

from __future__ import annotations

import gradio as gr

from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, Panel, run_folder
from tabs.common import plain_markdown


def panel(shared: Panel) -> None:
    with gr.Accordion("Listening test", open=False, elem_id="listening-analysis"):
        run = gr.Button("Analyse the listening-test ratings")
        notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        part_state = gr.State(None)
        paper_view.build(part_state)  # Tables 1-3: MOS per condition, listeners left out, defaults
        summary = gr.Markdown()

    @admin_only(shared.auth, notice)
    @shows_failure(notice, "The listening-test analysis")
    def run_listening(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        if not study_id:
            why = "No study imported yet."
            return {notice: why, part_state: None, files: None, summary: why}
        # scipy's statistics: on first use only (at the module's top they slow every start)
        from services.report import listening as listening_report

        with run_folder("listening", study_id) as folder:
            part = listening_report.build(shared.ctx.database, study_id, folder)
            shown_files = served(part.files, folder) if part.files else None
        done = part.detail
        lines = plain_markdown(done) if isinstance(done, str) else "\n\n".join(plain_markdown(x) for x in done.lines())
        return {notice: paper_view.notes_markdown(part), part_state: part, files: shown_files, summary: lines}

    outputs = [notice, part_state, files, summary]
    run.click(run_listening, [shared.session, shared.study], outputs, api_visibility="private")
