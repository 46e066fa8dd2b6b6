"""The Analysis tab's ESA panel (Kocmi et al. 2024): the report's ESA part for the chosen study,
its systems ranked with their clusters, spans per severity, agreement between annotators and
the defaults (services/report/esa.py, from services/esa/results.py: the figures `app.py analyze
esa` prints), and the per-pair and head-to-head tables beside them (services/esa/protocol.py
names it)."""

from __future__ import annotations

import gradio as gr

from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, Panel, not_run_table, run_folder
from tabs.common import plain_markdown, shown_table


def shown(part) -> dict:
    """What the panel shows of a part beside its sections: the summary (one line per system and
    the agreement), the pairs' span agreement and the head-to-head tests, each with the sentence
    saying why it is empty."""
    done = part.detail
    if isinstance(done, str):  # the sentence saying why there are no results
        why = done
        return {"summary": plain_markdown(why), "pairs": shown_table(None, why), "h2h": shown_table(None, why)}
    return {
        "summary": "\n\n".join(plain_markdown(line.strip()) for line in done.lines()),
        "pairs": shown_table(done.agreement.pairs, done.agreement.why or "No pairs of annotators."),
        "h2h": shown_table(done.result.head_to_head, "One system only: nothing to compare."),
    }


def panel(shared: Panel) -> None:
    with gr.Accordion("Error span annotation (ESA, Kocmi et al. 2024)", open=False, elem_id="esa-analysis"):
        esa_run = gr.Button("Analyse the ESA answers")
        esa_notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        esa_files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        esa_part = gr.State(None)
        paper_view.build(esa_part)  # Tables 1-4: systems and clusters, severities, agreement, defaults
        with gr.Accordion("Every table of the analysis", open=False):
            esa_summary = gr.Markdown()
            esa_pairs = not_run_table(label="Span agreement per pair of annotators of a segment", interactive=False)
            esa_h2h = not_run_table(label="Head to head: one-sided rank-sum tests", interactive=False)

    @admin_only(shared.auth, esa_notice)
    @shows_failure(esa_notice, "The ESA analysis")
    def run_esa(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        if not study_id:
            why = "No study imported yet."
            return {esa_notice: why, esa_part: None, esa_files: None, esa_summary: why}
        # scipy and krippendorff: on first use only (at the module's top they added 1.4 s to
        # every start of the app)
        from services.report import esa as esa_report

        # the report's part, so the tab and the HTML file never differ; its files are served from
        # gradio's cache and its folder is removed (run_folder)
        with run_folder("esa", study_id) as folder:
            part = esa_report.build(shared.ctx.database, study_id, folder)
            files = served(part.files, folder) if part.files else None
        view = shown(part)
        return {
            esa_notice: paper_view.notes_markdown(part),
            esa_part: part,
            esa_files: files,
            esa_summary: view["summary"],
            esa_pairs: view["pairs"],
            esa_h2h: view["h2h"],
        }

    esa_run.click(
        run_esa,
        [shared.session, shared.study],
        [esa_notice, esa_part, esa_files, esa_summary, esa_pairs, esa_h2h],
        api_visibility="private",
    )
