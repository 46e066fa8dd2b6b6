"""The Analysis tab's direct assessment panel (paper 001): the campaign's analysis, in the
paper's order, and every table and figure of it (services/da/protocol.py names it)."""

from __future__ import annotations

import gradio as gr

from services.common.vocabulary import count
from tabs import paper_view
from tabs.admin_common import admin_only, blank_number, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, PAPER_2, Panel, not_run_table, run_folder
from tabs.common import shown_plot, shown_table

DA_TABLE1 = 1  # paper 001 Table 1 (section 2.1): document length to one decimal


def panel(shared: Panel) -> None:
    with gr.Accordion("Direct assessment (paper 001)", open=False):
        # empty (the browser sends 0 for an untouched empty field, and 0 is no level): the study's
        # da.reliability_alpha (paper 001: 0.05), the level its reruns were decided at; the range
        # (0, 0.5] is checked by the analysis, which names the field (no minimum here: the 0
        # the browser shows in the empty field was drawn red, as if refused; a fine step, so
        # 0.001 is not drawn red either)
        da_alpha = blank_number(
            label="Significance level (worker reliability, clusters; empty: the "
            "study's reliability_alpha, paper 001: 0.05)",
            value=None,
            blank=None,
            zero_is_blank=True,
            step=0.0001,
        )
        da_run = gr.Button("Analyse the campaign")
        da_notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        da_files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        da_part = gr.State(None)
        paper_view.build(da_part)  # paper 001's Tables 1-3, Figures 3-5, appendix A
        with gr.Accordion("Every table and figure of the analysis", open=False):
            da_full = gr.Markdown()
            da_qc = not_run_table(label="Quality control per modality", interactive=False)
            da_systems = not_run_table(label="Systems (ranked by z; clusters of significance)", interactive=False)
            da_dist = gr.Plot(label="Score distributions per item type (Figure 3)", visible=False)
            da_dist_table = not_run_table(
                label="Score distributions of reliable workers per item type", interactive=False
            )
            da_rank = gr.Plot(label="Ranking", visible=False)
            da_h2h = gr.Plot(label="Head to head", visible=False)
            da_workers = not_run_table(label="Workers", interactive=False)
            da_hits = not_run_table(label="HIT outcomes per rater (reliability test, speed, rerun)", interactive=False)
            da_table1 = not_run_table(
                label="Segments and document length per domain (paper 001, Table 1)", interactive=False
            )

    da_tables = (da_qc, da_systems, da_dist_table, da_workers, da_hits, da_table1)

    @admin_only(shared.auth, da_notice)
    @shows_failure(da_notice, "The DA analysis")
    def run_da(sess, study_id, alpha, request: gr.Request):
        study_id = shared.study_id(study_id)
        from services.da import analysis as da_analysis  # scipy and plotly: on first use only
        from services.da import study_analysis as da_study
        from services.report import da as da_report

        # paper 001's part as the report lays it out; its analysis fills the tables below; its files
        # are served from gradio's cache and its folder is removed (run_folder)
        with run_folder("da", study_id) as folder:
            part = da_report.build(shared.ctx.database, study_id, folder, alpha) if study_id else None
            files = served(part.files, folder) if part else []
        done = part.detail if part else da_study.analyse(shared.ctx.database, study_id, alpha)
        if isinstance(done, str):
            return {
                da_notice: paper_view.notes_markdown(part) or done,
                da_part: part,
                da_full: done,
                da_files: None,
                **{t: shown_table(None, done) for t in da_tables},
                **{p: shown_plot(None) for p in (da_dist, da_rank, da_h2h)},
            }
        df, res, figs = done.judgments, done.result, done.figures
        notes = "".join(f"\n\n**Note:** {n}" for n in done.notes + da_analysis.summary_notes(res))
        # a figure the analysis could not draw is hidden; the message says why
        if "score_distribution" not in figs:
            notes += "\n\n**No score distributions (Figure 3):** no judgments from reliable raters yet."
        if "ranking" not in figs:
            notes += "\n\n**No ranking or head to head:** no system has judgments from reliable raters yet."
        reliable = da_report.no_scores(res.qc_summary)
        return {
            da_notice: paper_view.notes_markdown(part),
            da_part: part,
            da_files: files,
            da_full: f"{count(len(df), 'judgment')} by {count(df['worker_id'].nunique(), 'rater')}.{notes}",
            da_hits: shown_table(done.hit_outcomes, "No HITs done yet."),
            da_table1: shown_table(done.table1, "No segments in this campaign.", DA_TABLE1),
            da_qc: shown_table(res.qc_summary, "No judgments to check yet.", PAPER_2),
            da_systems: shown_table(res.systems, reliable, PAPER_2),
            da_workers: shown_table(res.workers, "No raters yet."),
            da_rank: shown_plot(figs.get("ranking")),
            da_h2h: shown_plot(figs.get("head_to_head")),
            da_dist: shown_plot(figs.get("score_distribution")),
            da_dist_table: shown_table(res.score_distribution, reliable),
        }

    da_run.click(
        run_da,
        [shared.session, shared.study, da_alpha],
        [
            da_notice,
            da_part,
            da_full,
            da_files,
            da_qc,
            da_systems,
            da_dist,
            da_dist_table,
            da_rank,
            da_h2h,
            da_workers,
            da_hits,
            da_table1,
        ],
        api_visibility="private",
    )
