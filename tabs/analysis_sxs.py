"""The Analysis tab's side-by-side panel: the report's part for the chosen study
(services/report/sxs.py, from services/compare/analysis.py: the figures `app.py analyze sxs`
prints), and the bootstrap's pairwise p-values and the outcomes beside them
(services/compare/protocol.py names it)."""

from __future__ import annotations

import gradio as gr

from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, Panel, not_run_table, run_folder
from tabs.common import plain_markdown, shown_table


def panel(shared: Panel) -> None:
    with gr.Accordion("Side-by-side comparison", open=False, elem_id="sxs-analysis"):
        run = gr.Button("Analyse the side-by-side answers")
        notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        part_state = gr.State(None)
        paper_view.build(part_state)  # Tables 1-6: systems, win rates, position bias, defaults, agreement
        with gr.Accordion("Every table of the analysis", open=False):
            summary = gr.Markdown()
            pairs = not_run_table(label="Bootstrap: p that the first system is not stronger", interactive=False)

    @admin_only(shared.auth, notice)
    @shows_failure(notice, "The side-by-side analysis")
    def run_sxs(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        if not study_id:
            why = "No study imported yet."
            return {notice: why, part_state: None, files: None, summary: why}
        # choix, trueskill and scipy: on first use only (at the module's top they slow every start)
        from services.report import sxs as sxs_report

        with run_folder("sxs", study_id) as folder:
            part = sxs_report.build(shared.ctx.database, study_id, folder)
            shown_files = served(part.files, folder) if part.files else None
        done = part.detail
        if isinstance(done, str):
            lines, table = plain_markdown(done), shown_table(None, done)
        else:
            lines = "\n\n".join(plain_markdown(line) for line in done.lines())
            table = shown_table(done.pairs, "One system only: nothing to compare.")
        return {
            notice: paper_view.notes_markdown(part),
            part_state: part,
            files: shown_files,
            summary: lines,
            pairs: table,
        }

    run.click(
        run_sxs, [shared.session, shared.study], [notice, part_state, files, summary, pairs], api_visibility="private"
    )
