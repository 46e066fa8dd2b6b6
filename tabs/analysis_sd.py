"""The Analysis tab's semantic differential panel (paper 002): the ratings' analysis, in the
paper's order, and every table and figure of it (services/sd/protocol.py names it)."""

from __future__ import annotations

import gradio as gr

from tabs import paper_view
from tabs.admin_common import admin_only, blank_number, served, shows_failure
from tabs.analysis_common import FILES_PX, NOT_RUN, PAPER_2, Panel, not_run_table, run_folder
from tabs.common import shown_plot, shown_table

# the choice of K (services.sd.study_analysis.FACTOR_CHOICES, copied: that module pulls in
# pandas and scipy, imported on first use only)
SD_FACTOR_CHOICES = [
    ("eigenvalue > 1 (SPSS's default, paper 002)", "kaiser"),
    ("parallel analysis", "parallel"),
    ("the number in Factors", "given"),
]


def panel(shared: Panel) -> None:
    with gr.Accordion("Semantic differential (paper 002)", open=False):
        with gr.Row():
            # paper 002's procedure by default (section 4.2): K by eigenvalue > 1, pruning on;
            # empty (the browser shows and sends 0) means the rule
            sd_rule = gr.Radio(label="Number of factors", choices=SD_FACTOR_CHOICES, value="kaiser")
            sd_factors = blank_number(
                label="Factors (empty: eigenvalue > 1)", value=None, precision=0, zero_is_blank=True, minimum=0
            )
            sd_prune = gr.Checkbox(label="Prune pairs with low communality or cross-loadings (section 4.2)", value=True)
        sd_run = gr.Button("Analyse the ratings")
        sd_notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        sd_files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        sd_part = gr.State(None)
        paper_view.build(sd_part)  # paper 002's sections 4.1-4.2, Tables 1-2
        with gr.Accordion("Every table and figure of the analysis, with its full summary", open=False):
            sd_full = gr.Markdown()
            sd_cleansing = not_run_table(label="Data cleansing per participant", interactive=False)
            sd_report = not_run_table(
                label="Data cleansing per step, beside paper 002's (section 4.1)", interactive=False
            )
            sd_loadings = not_run_table(label="Loadings (promax) and communalities", interactive=False)
            sd_heat = gr.Plot(label="Loadings", visible=False)
            sd_scree = gr.Plot(label="Scree plot with parallel analysis", visible=False)
            sd_suit = not_run_table(label="Suitability of each pair (preliminary study)", interactive=False)
    # the QE audits run in this session (paper 003 keeps no study data): the report includes them

    @admin_only(shared.auth, sd_notice)
    @shows_failure(sd_notice, "The SD analysis")
    def run_sd(sess, study_id, k, prune, rule, request: gr.Request):
        study_id = shared.study_id(study_id)
        from services.report import sd as sd_report_part
        from services.sd import analysis as sd_analysis  # scipy and plotly: on first use only
        from services.sd import study_analysis as sd_study

        # paper 002's part as the report lays it out; its analysis fills the tables below; its files
        # are served from gradio's cache and its folder is removed (run_folder)
        with run_folder("sd", study_id) as folder:
            part = sd_report_part.build(shared.ctx.database, study_id, folder, k, prune, rule) if study_id else None
            files = served(part.files, folder) if part else []
        done = part.detail if part else sd_study.analyse(shared.ctx.database, study_id, k, prune, rule)
        tables = (sd_cleansing, sd_report, sd_loadings, sd_suit)
        if isinstance(done, str):
            return {
                sd_notice: paper_view.notes_markdown(part) or done,
                sd_part: part,
                sd_full: done,
                sd_files: None,
                **{t: shown_table(None, done) for t in tables},
                sd_heat: shown_plot(None),
                sd_scree: shown_plot(None),
            }
        figs = done.figures
        why = "" if figs else "\n\n**No loadings or scree plot:** the factor analysis did not run (see above)."
        no_fa = "No factor analysis: the message above says why."
        return {
            sd_notice: paper_view.notes_markdown(part),
            sd_part: part,
            sd_files: files,
            sd_full: sd_analysis.summary(done.result) + why,
            sd_cleansing: shown_table(done.result.cleansing, "No participants' ratings to cleanse yet."),
            sd_loadings: shown_table(done.loadings, no_fa, PAPER_2),
            sd_heat: shown_plot(figs.get("loadings")),
            sd_scree: shown_plot(figs.get("scree")),
            sd_suit: shown_table(done.suitability, no_fa),
            sd_report: shown_table(done.cleansing_report, "No cleansing steps to report yet."),
        }

    sd_run.click(
        run_sd,
        [shared.session, shared.study, sd_factors, sd_prune, sd_rule],
        [sd_notice, sd_part, sd_full, sd_files, sd_cleansing, sd_report, sd_loadings, sd_heat, sd_scree, sd_suit],
        api_visibility="private",
    )
