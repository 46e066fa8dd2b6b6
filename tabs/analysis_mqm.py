"""The Analysis tab's MQM panel (Freitag et al. 2021): the report's MQM part for the chosen study,
its systems ranked with their clusters, the annotators, the errors by category and severity, the
agreement between annotators and the defaults (services/report/mqm.py, from
services/esa/mqm_analysis.py: the figures `app.py analyze mqm` prints), and the per-pair and
head-to-head tables beside them (services/esa/mqm_protocol.py names it)."""

from __future__ import annotations

import gradio as gr

from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, Panel, not_run_table, run_folder
from tabs.common import plain_markdown, shown_table


def shown(part) -> dict:
    """What the panel shows of a part beside its sections: the summary (the systems, annotators,
    categories and the agreement, a line each), the pairs' span agreement and the head-to-head
    tests, each with the sentence saying why it is empty."""
    done = part.detail
    if isinstance(done, str):  # the sentence saying why there are no results
        why = done
        return {"summary": plain_markdown(why), "pairs": shown_table(None, why), "h2h": shown_table(None, why)}
    return {
        "summary": "\n\n".join(plain_markdown(line.strip()) for line in done.lines()),
        "pairs": shown_table(done.agreement.pairs, done.agreement.why or "No pairs of annotators."),
        "h2h": shown_table(done.head_to_head, "One system only: nothing to compare."),
    }


TITLE = "Multidimensional Quality Metrics (MQM, Freitag et al. 2021)"  # services/report/mqm.py's


def panel(shared: Panel) -> None:
    with gr.Accordion(TITLE, open=False, elem_id="mqm-analysis"):
        mqm_run = gr.Button("Analyse the MQM answers")
        mqm_notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        mqm_files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        mqm_part = gr.State(None)
        paper_view.build(mqm_part)  # Tables 1-5: systems, annotators, categories, agreement, defaults
        with gr.Accordion("Every table of the analysis", open=False):
            mqm_summary = gr.Markdown()
            mqm_pairs = not_run_table(label="Span agreement per pair of annotators of a segment", interactive=False)
            mqm_h2h = not_run_table(label="Head to head: one-sided rank-sum tests", interactive=False)

    @admin_only(shared.auth, mqm_notice)
    @shows_failure(mqm_notice, "The MQM analysis")
    def run_mqm(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        if not study_id:
            why = "No study imported yet."
            return {mqm_notice: why, mqm_part: None, mqm_files: None, mqm_summary: why}
        # scipy and krippendorff: on first use only, as the ESA panel (at the module's top they add
        # to every start of the app)
        from services.report import mqm as mqm_report

        # the report's part, so the tab and the HTML file never differ; its files are served from
        # gradio's cache and its folder is removed (run_folder)
        with run_folder("mqm", study_id) as folder:
            part = mqm_report.build(shared.ctx.database, study_id, folder)
            files = served(part.files, folder) if part.files else None
        view = shown(part)
        return {
            mqm_notice: paper_view.notes_markdown(part),
            mqm_part: part,
            mqm_files: files,
            mqm_summary: view["summary"],
            mqm_pairs: view["pairs"],
            mqm_h2h: view["h2h"],
        }

    mqm_run.click(
        run_mqm,
        [shared.session, shared.study],
        [mqm_notice, mqm_part, mqm_files, mqm_summary, mqm_pairs, mqm_h2h],
        api_visibility="private",
    )
