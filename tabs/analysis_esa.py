"""The Analysis tab's ESA panel (Kocmi et al. 2024): the report's ESA part for the chosen study,
its systems ranked with their clusters, spans per severity, agreement between annotators and
the defaults (services/report/esa.py, from services/esa/results.py: the figures `app.py analyze
esa` prints), and the per-pair and head-to-head tables beside them (services/esa/protocol.py
names it)."""

from __future__ import annotations

from typing import Callable

import gradio as gr

from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, Panel, not_run_table, run_folder
from tabs.common import plain_markdown, shown_table


def shown(part) -> dict:
    """What the panel shows of a part beside its sections: the summary (a line each: the systems,
    for MQM the annotators and categories, the agreement), the pairs' span agreement and the
    head-to-head tests, each with the sentence saying why it is empty."""
    done = part.detail
    if isinstance(done, str):  # the sentence saying why there are no results
        why = done
        return {"summary": plain_markdown(why), "pairs": shown_table(None, why), "h2h": shown_table(None, why)}
    return {
        "summary": "\n\n".join(plain_markdown(line.strip()) for line in done.lines()),
        "pairs": shown_table(done.agreement.pairs, done.agreement.why or "No pairs of annotators."),
        "h2h": shown_table(done.head_to_head, "One system only: nothing to compare."),
    }


def _esa_part(database, study_id: str, folder):
    # scipy and krippendorff: on first use only (at the module's top they added 1.4 s to every
    # start of the app)
    from services.report import esa as esa_report

    return esa_report.build(database, study_id, folder)


def panel(shared: Panel) -> None:
    span_panel(shared, "Error span annotation (ESA, Kocmi et al. 2024)", "esa", "ESA", _esa_part)


def span_panel(shared: Panel, title: str, name: str, short: str, build: Callable) -> None:
    """A span protocol's panel (ESA's, MQM's: tabs/analysis_mqm.py): its button, the report's part
    for the chosen study (build(database, study_id, folder), so the tab and the HTML file never
    differ), its CSV files, and every table of the analysis in a closed box."""
    with gr.Accordion(title, open=False, elem_id=f"{name}-analysis"):
        run = gr.Button(f"Analyse the {short} answers")
        notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        files_out = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        part_state = gr.State(None)
        paper_view.build(part_state)  # the part's tables: systems and clusters, ..., agreement, defaults
        with gr.Accordion("Every table of the analysis", open=False):
            summary = gr.Markdown()
            pairs = not_run_table(label="Span agreement per pair of annotators of a segment", interactive=False)
            h2h = not_run_table(label="Head to head: one-sided rank-sum tests", interactive=False)

    @admin_only(shared.auth, notice)
    @shows_failure(notice, f"The {short} analysis")
    def analyse(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        if not study_id:
            why = "No study imported yet."
            return {notice: why, part_state: None, files_out: None, summary: why}
        # its files are served from gradio's cache and its folder is removed (run_folder)
        with run_folder(name, study_id) as folder:
            part = build(shared.ctx.database, study_id, folder)
            files = served(part.files, folder) if part.files else None
        view = shown(part)
        return {
            notice: paper_view.notes_markdown(part),
            part_state: part,
            files_out: files,
            summary: view["summary"],
            pairs: view["pairs"],
            h2h: view["h2h"],
        }

    analyse.__name__ = f"run_{name}"  # the event's name, as the other panels'
    run.click(
        analyse,
        [shared.session, shared.study],
        [notice, part_state, files_out, summary, pairs, h2h],
        api_visibility="private",
    )
