"""The Analysis tab's usability panel (paper 000): the exchanges' analysis, in the paper's order,
and every table and figure of it (services/usability/protocol.py names it)."""

from __future__ import annotations

import gradio as gr

from services.metrics import exchange as exchange_metrics
from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, PAPER_2, Panel, not_run_table, run_folder
from tabs.common import shown_figures, shown_plot, shown_table, summary_markdown

US_PLOTS = 14  # plot slots for the usability figures (services.usability.analysis.figures: 13 at most)


def panel(shared: Panel) -> None:
    with gr.Accordion("Usability of the four-phase study (paper 000)", open=True):
        with gr.Row():
            us_run = gr.Button("Analyse the exchanges")
            us_png = gr.Checkbox(label="Also PNG copies of the figures (kaleido: about 1 s each)", value=False)
        # the short box: the part's summary and its notes (services.report.usability, as the report)
        us_notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        us_files = gr.File(
            label="Tables (CSV) and figures (HTML)", file_count="multiple", interactive=False, height=FILES_PX
        )
        us_part = gr.State(None)
        paper_view.build(us_part)  # Table 1, Figures 2a-3c, Table 2, Figure 4, appendix: paper 000's order
        with gr.Accordion("Every table and figure of the analysis, with its full summary", open=False):
            us_full = gr.Markdown()
            us_groups = not_run_table(
                label="Groups: S, T, R, mean and sd of u, baseline, shift, usable share", interactive=False
            )
            us_corr = not_run_table(label="Spearman correlations of u with each quality signal", interactive=False)
            us_lmm = not_run_table(
                label="Linear mixed model of u (REML; Wald z tests, see the test column)", interactive=False
            )
            us_score = not_run_table(
                label="Linear mixed model of the validator's score (DA+SQM; section 4.3)", interactive=False
            )
            us_contrasts = not_run_table(
                label="Pairwise contrasts of the group x gender marginal means (Holm-adjusted p)", interactive=False
            )
            us_effects = not_run_table(
                label="Quality-signal effects on u: LMM and tertile OLS, covariates held constant (Table 2)",
                interactive=False,
            )
            us_thresholds = not_run_table(label="Signal value where u crosses 4", interactive=False)
            us_starters = not_run_table(
                label="Table 3 (paper 000): starters per domain x corpus: words, key "
                "information spans and questions per starter (mean, sd)",
                interactive=False,
            )
            us_plots = [gr.Plot(visible=False) for _ in range(US_PLOTS)]

    @admin_only(shared.auth, us_notice)
    @shows_failure(us_notice, "The usability analysis")
    def run_usability(sess, study_id, png, request: gr.Request):
        study_id = shared.study_id(study_id)
        # statsmodels, scipy and plotly: on first use only
        from services.report import usability as usability_report
        from services.usability import analysis as usability_analysis
        from services.usability import study_analysis as usability_study

        # paper 000's part as the report lays it out; its analysis fills the tables below; its files
        # are served from gradio's cache and its folder is removed (run_folder)
        with run_folder("usability", study_id) as folder:
            part = usability_report.build(shared.ctx.database, study_id, folder, png) if study_id else None
            served_files = served(part.files, folder) if part else []
        done = part.detail if part else usability_study.analyse(shared.ctx.database, study_id, png)
        # which automatic metrics ran, in which mode, and what each skipped (shown even without an analysis)
        metric_lines = (
            exchange_metrics.report_lines(exchange_metrics.metrics_report(shared.ctx.database, study_id))
            if study_id
            else []
        )
        if isinstance(done, str):
            full = "\n".join([done, "", summary_markdown("\n".join(metric_lines))])
            return {
                us_notice: paper_view.notes_markdown(part) or full,
                us_full: full,
                us_part: part,
                us_files: None,
                **{t: shown_table(None, done) for t in us_tables},
                **{p: shown_plot(None) for p in us_plots},
            }
        res, figs, _ = done  # its files: served_files (moved)
        from services.usability import paper_figures  # with the analysis above: on first use only

        plots = shown_figures(us_plots, figs)
        no_fit = "The model could not be fitted: the message above says why."
        return {
            us_notice: paper_view.notes_markdown(part),
            us_part: part,
            us_full: summary_markdown(usability_analysis.summary_with_metrics(res, metric_lines)),
            us_groups: shown_table(res.groups, "No groups with both surveys yet.", PAPER_2),
            us_corr: shown_table(res.correlations, "No quality signals to correlate yet."),
            us_lmm: shown_table(res.lmm.table if res.lmm is not None else None, no_fit),
            us_score: shown_table(res.score_lmm.table if res.score_lmm is not None else None, no_fit),
            us_contrasts: shown_table(res.contrasts, no_fit),
            us_effects: shown_table(
                res.effect_estimates, "No quality-signal effects: too few exchanges with metric scores.", PAPER_2
            ),
            us_thresholds: shown_table(res.thresholds, "No signal crosses u = 4 in this study's data."),
            us_starters: shown_table(
                paper_figures.study_starter_statistics(shared.ctx.database, study_id),
                "No starters in this study.",
                PAPER_2,
            ),
            us_files: served_files,
            **plots,
        }

    us_tables = (us_groups, us_corr, us_lmm, us_score, us_contrasts, us_effects, us_thresholds, us_starters)
    us_run.click(
        run_usability,
        [shared.session, shared.study, us_png],
        [
            us_notice,
            us_part,
            us_full,
            us_groups,
            us_corr,
            us_lmm,
            us_score,
            us_contrasts,
            us_effects,
            us_thresholds,
            us_files,
            us_starters,
            *us_plots,
        ],
        api_visibility="private",
    )
