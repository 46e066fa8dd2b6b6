"""The analysis tab: per-study progress now; the protocol analyses plug in here."""

from __future__ import annotations

import gradio as gr

from services.admin import auth as admin
from services.admin import progress as admin_progress
from services.metrics import exchange as exchange_metrics
from tabs import paper_view
from tabs import qe_audit as qe_audit_tab
from tabs.admin_common import admin_only, blank_number, shows_failure
from tabs.common import Ctx, shown_plot, shown_table, summary_markdown

# the SD section's choice of K (services.sd.study_analysis.FACTOR_CHOICES, copied: that module
# pulls in pandas and scipy, imported on first use only)
SD_FACTOR_CHOICES = [
    ("eigenvalue > 1 (SPSS's default, paper 002)", "kaiser"),
    ("parallel analysis", "parallel"),
    ("the number in Factors", "given"),
]
US_PLOTS = 14  # plot slots for the usability figures (services.usability.analysis.figures: 13 at most)
# what an analysis table shows before its button is pressed (never Gradio's "1 2 3")
NOT_RUN = "Not analysed yet: press the section's button above."
# the paper's precision where it prints one (services/report: Section.decimals), 3 elsewhere
PAPER_2 = 2  # paper 000 Tables 1-3; paper 001 Table 2, Table 3's scores; paper 002 Table 1's loadings
FILES_PX = 150  # a protocol's file list scrolls in a short box: the results come first
DA_TABLE1 = 1  # paper 001 Table 1 (section 2.1): document length to one decimal


def _folder(protocol: str, study_id: str) -> str:
    """A fresh folder for one run's files (the report's layout: <folder>/<protocol>/)."""
    import tempfile

    return tempfile.mkdtemp(prefix=f"{protocol}-{study_id}-")


def _table(**kw) -> gr.Dataframe:
    return gr.Dataframe(value=shown_table(None, NOT_RUN), **kw)


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
        table = _table(interactive=False)
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
                us_groups = _table(
                    label="Groups: S, T, R, mean and sd of u, baseline, shift, usable share", interactive=False
                )
                us_corr = _table(label="Spearman correlations of u with each quality signal", interactive=False)
                us_lmm = _table(
                    label="Linear mixed model of u (REML; Wald z tests, see the test column)", interactive=False
                )
                us_score = _table(
                    label="Linear mixed model of the validator's score (DA+SQM; section 4.3)", interactive=False
                )
                us_contrasts = _table(
                    label="Pairwise contrasts of the group x gender marginal means (Holm-adjusted p)", interactive=False
                )
                us_effects = _table(
                    label="Quality-signal effects on u: LMM and tertile OLS, covariates held constant (Table 2)",
                    interactive=False,
                )
                us_thresholds = _table(label="Signal value where u crosses 4", interactive=False)
                us_starters = _table(
                    label="Table 3 (paper 000): starters per domain x corpus: words, key "
                    "information spans and questions per starter (mean, sd)",
                    interactive=False,
                )
                us_plots = [gr.Plot(visible=False) for _ in range(US_PLOTS)]
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
                da_qc = _table(label="Quality control per modality", interactive=False)
                da_systems = _table(label="Systems (ranked by z; clusters of significance)", interactive=False)
                da_dist = gr.Plot(label="Score distributions per item type (Figure 3)", visible=False)
                da_dist_table = _table(label="Score distributions of reliable workers per item type", interactive=False)
                da_rank = gr.Plot(label="Ranking", visible=False)
                da_h2h = gr.Plot(label="Head to head", visible=False)
                da_workers = _table(label="Workers", interactive=False)
                da_hits = _table(label="HIT outcomes per rater (reliability test, speed, rerun)", interactive=False)
                da_table1 = _table(
                    label="Segments and document length per domain (paper 001, Table 1)", interactive=False
                )
        with gr.Accordion("Semantic differential (paper 002)", open=False):
            with gr.Row():
                # paper 002's procedure by default (section 4.2): K by eigenvalue > 1, pruning on;
                # empty (the browser shows and sends 0) means the rule
                sd_rule = gr.Radio(label="Number of factors", choices=SD_FACTOR_CHOICES, value="kaiser")
                sd_factors = blank_number(
                    label="Factors (empty: eigenvalue > 1)", value=None, precision=0, zero_is_blank=True, minimum=0
                )
                sd_prune = gr.Checkbox(
                    label="Prune pairs with low communality or cross-loadings (section 4.2)", value=True
                )
            sd_run = gr.Button("Analyse the ratings")
            sd_notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
            sd_files = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
            sd_part = gr.State(None)
            paper_view.build(sd_part)  # paper 002's sections 4.1-4.2, Tables 1-2
            with gr.Accordion("Every table and figure of the analysis, with its full summary", open=False):
                sd_full = gr.Markdown()
                sd_cleansing = _table(label="Data cleansing per participant", interactive=False)
                sd_report = _table(label="Data cleansing per step, beside paper 002's (section 4.1)", interactive=False)
                sd_loadings = _table(label="Loadings (promax) and communalities", interactive=False)
                sd_heat = gr.Plot(label="Loadings", visible=False)
                sd_scree = gr.Plot(label="Scree plot with parallel analysis", visible=False)
                sd_suit = _table(label="Suitability of each pair (preliminary study)", interactive=False)
        # the QE audits run in this session (paper 003 keeps no study data): the report includes them
        qe_runs, qe_run_list = qe_audit_tab.build(ctx, auth, session)

    def _study(study_id):
        """The chosen study, else the first one (the dropdown shows it before Show is pressed)."""
        if study_id:
            return study_id
        choices = admin_progress.study_choices(ctx.database)
        return choices[0][1] if choices else None

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
        study_id = _study(study_id)
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

    da_tables = (da_qc, da_systems, da_dist_table, da_workers, da_hits, da_table1)

    @admin_only(auth, da_notice)
    @shows_failure(da_notice, "The DA analysis")
    def run_da(sess, study_id, alpha, request: gr.Request):
        study_id = _study(study_id)
        from services.da import analysis as da_analysis  # scipy and plotly: on first use only
        from services.da import study_analysis as da_study
        from services.report import da as da_report

        # paper 001's part as the report lays it out; its analysis fills the tables below
        part = da_report.build(ctx.database, study_id, _folder("da", study_id), alpha) if study_id else None
        done = part.detail if part else da_study.analyse(ctx.database, study_id, alpha)
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
            da_files: [str(f) for f in part.files],
            da_full: f"{len(df)} judgments by {df['worker_id'].nunique()} raters.{notes}",
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

    @admin_only(auth, us_notice)
    @shows_failure(us_notice, "The usability analysis")
    def run_usability(sess, study_id, png, request: gr.Request):
        study_id = _study(study_id)
        # statsmodels, scipy and plotly: on first use only
        from services.report import usability as usability_report
        from services.usability import analysis as usability_analysis
        from services.usability import study_analysis as usability_study

        # paper 000's part as the report lays it out; its analysis fills the tables below
        part = usability_report.build(ctx.database, study_id, _folder("usability", study_id), png) if study_id else None
        done = part.detail if part else usability_study.analyse(ctx.database, study_id, png)
        # which automatic metrics ran, in which mode, and what each skipped (shown even without an analysis)
        metric_lines = (
            exchange_metrics.report_lines(exchange_metrics.metrics_report(ctx.database, study_id)) if study_id else []
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
        res, figs, files = done
        from services.usability import paper_figures  # with the analysis above: on first use only

        plots = {
            p: gr.update(
                visible=i < len(figs),
                value=figs[i][1] if i < len(figs) else None,
                label=figs[i][0] if i < len(figs) else None,
            )
            for i, p in enumerate(us_plots)
        }
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
                paper_figures.study_starter_statistics(ctx.database, study_id), "No starters in this study.", PAPER_2
            ),
            us_files: files,
            **plots,
        }

    us_tables = (us_groups, us_corr, us_lmm, us_score, us_contrasts, us_effects, us_thresholds, us_starters)
    us_run.click(
        run_usability,
        [session, study, us_png],
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

    @admin_only(auth, sd_notice)
    @shows_failure(sd_notice, "The SD analysis")
    def run_sd(sess, study_id, k, prune, rule, request: gr.Request):
        study_id = _study(study_id)
        from services.report import sd as sd_report_part
        from services.sd import analysis as sd_analysis  # scipy and plotly: on first use only
        from services.sd import study_analysis as sd_study

        # paper 002's part as the report lays it out; its analysis fills the tables below
        part = (
            sd_report_part.build(ctx.database, study_id, _folder("sd", study_id), k, prune, rule) if study_id else None
        )
        done = part.detail if part else sd_study.analyse(ctx.database, study_id, k, prune, rule)
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
            sd_files: [str(f) for f in part.files],
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
        [session, study, sd_factors, sd_prune, sd_rule],
        [sd_notice, sd_part, sd_full, sd_files, sd_cleansing, sd_report, sd_loadings, sd_heat, sd_scree, sd_suit],
        api_visibility="private",
    )

    da_run.click(
        run_da,
        [session, study, da_alpha],
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
    return tab
