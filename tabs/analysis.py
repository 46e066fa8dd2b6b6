"""The analysis tab: per-study progress now; the protocol analyses plug in here."""
from __future__ import annotations

import gradio as gr
import plotly.express as px

from services.admin import auth as admin
from services.admin import progress as admin_progress
from tabs import qe_audit as qe_audit_tab
from tabs.admin import _host, details_for_admin
from tabs.common import Ctx

US_PLOTS = 14          # plot slots for the usability figures (services.usability.analysis.figures: 11 at most)


def study_reference(database, study_id: str) -> dict | None:
    """The usability models' reference levels a study sets: its usability.corpus_reference
    (None when unset, or for a study imported before the setting: the analysis's default)."""
    from storage import studies

    study = studies.get_study(database, study_id) or {}
    ref = study.get("config", {}).get("usability", {}).get("corpus_reference", "")
    return {"corpus": ref} if ref else None


def analyse_usability(database, study_id: str, png: bool = False):
    """The tab's usability analysis of a study: (result, [(name, figure)], files written), or
    the message to show instead."""
    import tempfile

    from services.usability import analysis as usability_analysis
    from services.usability import export as usability_export

    df = usability_export.exchanges_frame(database, study_id) if study_id else None
    if df is None or len(df) < 3:
        return "Too few exchanges with both surveys and a validation yet (pick the study above and press Show first)."
    try:
        res = usability_analysis.analyze(df, source=f"study {study_id}", reference=study_reference(database, study_id))
    except ValueError as e:
        return f"**The analysis could not run:** {e}"
    figs = list(usability_analysis.figures(res).items())
    out_dir = tempfile.mkdtemp(prefix=f"usability-{study_id}-")
    # PNG copies take kaleido ~1 s a figure: on request only (each plot's camera button saves one too)
    files = [str(p) for p in usability_analysis.write_outputs(res, out_dir, png=bool(png))]
    return res, figs, files


def build(ctx: Ctx, auth: admin.AdminAuth, session: gr.Textbox):
    with gr.Tab("Analysis", id="analysis", visible=False) as tab:
        notice = gr.Markdown("Log in on the Admin tab first.")
        study = gr.Dropdown(label="Study", choices=[])
        show = gr.Button("Show")
        figure = gr.Plot(label="Items done and open per phase")
        table = gr.Dataframe(interactive=False)
        with gr.Accordion("Usability of the four-phase study (paper 000)", open=True):
            with gr.Row():
                us_run = gr.Button("Analyse the exchanges")
                us_png = gr.Checkbox(label="Also PNG copies of the figures (kaleido: about 1 s each)", value=False)
            us_notice = gr.Markdown()
            us_groups = gr.Dataframe(label="Groups: S, T, R, mean and sd of u, baseline, shift, usable share",
                                     interactive=False)
            us_corr = gr.Dataframe(label="Spearman correlations of u with each quality signal", interactive=False)
            us_lmm = gr.Dataframe(label="Linear mixed model of u (REML; Wald z tests, see the test column)",
                                  interactive=False)
            us_score = gr.Dataframe(label="Linear mixed model of the validator's score (DA+SQM; section 4.3)",
                                    interactive=False)
            us_contrasts = gr.Dataframe(label="Pairwise contrasts of the group x gender marginal means "
                                              "(Holm-adjusted p)", interactive=False)
            us_effects = gr.Dataframe(label="Quality-signal effects on u: LMM and tertile OLS, covariates held "
                                            "constant (Table 2)", interactive=False)
            us_thresholds = gr.Dataframe(label="Signal value where u crosses 4", interactive=False)
            us_plots = [gr.Plot(visible=False) for _ in range(US_PLOTS)]
            us_files = gr.File(label="Tables (CSV) and figures (HTML)", file_count="multiple", interactive=False)
        with gr.Accordion("Direct assessment (paper 001)", open=False):
            da_alpha = gr.Number(label="Significance level (worker reliability, clusters)", value=0.05,
                                 minimum=0.0001, maximum=0.5)
            da_run = gr.Button("Analyse the campaign")
            da_notice = gr.Markdown()
            da_qc = gr.Dataframe(label="Quality control per modality", interactive=False)
            da_systems = gr.Dataframe(label="Systems (ranked by z; clusters of significance)", interactive=False)
            da_dist = gr.Plot(label="Score distributions per item type (Figure 3)")
            da_dist_table = gr.Dataframe(label="Score distributions of reliable workers per item type",
                                         interactive=False)
            da_rank = gr.Plot(label="Ranking")
            da_h2h = gr.Plot(label="Head to head")
            da_workers = gr.Dataframe(label="Workers", interactive=False)
        with gr.Accordion("Semantic differential (paper 002)", open=False):
            with gr.Row():
                sd_factors = gr.Number(label="Factors (empty: parallel analysis)", value=None, precision=0,
                                       minimum=1)
                sd_prune = gr.Checkbox(label="Prune weak and cross-loading pairs", value=False)
            sd_run = gr.Button("Analyse the ratings")
            sd_notice = gr.Markdown()
            sd_cleansing = gr.Dataframe(label="Data cleansing per participant", interactive=False)
            sd_loadings = gr.Dataframe(label="Loadings (promax) and communalities", interactive=False)
            sd_heat = gr.Plot(label="Loadings")
            sd_scree = gr.Plot(label="Scree plot with parallel analysis")
            sd_suit = gr.Dataframe(label="Suitability of each pair (preliminary study)", interactive=False)
        qe_audit_tab.build(ctx, auth, session)

    @details_for_admin
    def run(sess, study_id, request: gr.Request):
        try:
            auth.check(sess, _host(request))
        except PermissionError as e:
            return {notice: str(e)}
        choices = admin_progress.study_choices(ctx.database)
        study_id = study_id or (choices[0][1] if choices else None)
        if not study_id:
            return {notice: "No study imported yet.", study: gr.update(choices=choices)}
        df = admin_progress.progress_table(ctx.database, study_id)
        long = df.melt(id_vars=["role", "phase"], value_vars=["done", "open"], var_name="status", value_name="items")
        fig = px.bar(long, x="phase", y="items", color="status", barmode="stack",
                     title=f"Progress of study {study_id}")
        return {notice: "", study: gr.update(choices=choices, value=study_id), figure: fig, table: df}

    show.click(run, [session, study], [notice, study, figure, table], api_visibility="private")
    # logging in on the Admin tab fills this tab too (no stale "log in first")
    session.change(run, [session, study], [notice, study, figure, table], api_visibility="private")

    @details_for_admin
    def run_da(sess, study_id, alpha, request: gr.Request):
        try:
            auth.check(sess, _host(request))
        except PermissionError as e:
            return {da_notice: str(e)}
        from services.da import analysis as da_analysis
        from services.da import campaign as da_campaign

        df = da_campaign.judgments_frame(ctx.database, study_id) if study_id else None
        if df is None or df.empty:
            return {da_notice: "No DA judgments yet (pick the study above and press Show first)."}
        res = da_analysis.analyze(df, alpha=float(alpha or 0.05))
        figs = da_analysis.figures(res)
        return {da_notice: f"{len(df)} judgments by {df['worker_id'].nunique()} raters.",
                da_qc: res.qc_summary, da_systems: res.systems, da_workers: res.workers,
                da_rank: figs.get("ranking"), da_h2h: figs.get("head_to_head"),
                da_dist: figs.get("score_distribution"), da_dist_table: res.score_distribution}

    @details_for_admin
    def run_usability(sess, study_id, png, request: gr.Request):
        try:
            auth.check(sess, _host(request))
        except PermissionError as e:
            return {us_notice: str(e)}
        from services.usability import analysis as usability_analysis

        done = analyse_usability(ctx.database, study_id, png)
        if isinstance(done, str):
            return {us_notice: done}
        res, figs, files = done
        plots = {p: gr.update(visible=i < len(figs), value=figs[i][1] if i < len(figs) else None,
                              label=figs[i][0] if i < len(figs) else None) for i, p in enumerate(us_plots)}
        return {us_notice: usability_analysis.summary(res), us_groups: res.groups, us_corr: res.correlations,
                us_lmm: res.lmm.table if res.lmm is not None else None,
                us_score: res.score_lmm.table if res.score_lmm is not None else None,
                us_contrasts: res.contrasts, us_effects: res.effect_estimates, us_thresholds: res.thresholds,
                us_files: files, **plots}

    us_run.click(run_usability, [session, study, us_png],
                 [us_notice, us_groups, us_corr, us_lmm, us_score, us_contrasts, us_effects, us_thresholds, us_files,
                  *us_plots], api_visibility="private")

    @details_for_admin
    def run_sd(sess, study_id, k, prune, request: gr.Request):
        try:
            auth.check(sess, _host(request))
        except PermissionError as e:
            return {sd_notice: str(e)}
        import pandas as pd

        from services.sd import analysis as sd_analysis
        from storage import results, studies

        rows = results.sd_rating_rows(ctx.database, study_id) if study_id else []
        if not rows:
            return {sd_notice: "No SD ratings yet (pick the study above and press Show first)."}
        study = studies.get_study(ctx.database, study_id)
        res = sd_analysis.analyze(pd.DataFrame(rows), expected_seconds=study["config"]["sd"]["expected_seconds"],
                                  n_factors=int(k) if k else None, prune=bool(prune))
        figs = sd_analysis.figures(res)
        suit = results.sd_suitability_rows(ctx.database, study_id)
        return {sd_notice: sd_analysis.summary(res), sd_cleansing: res.cleansing,
                sd_loadings: sd_analysis.loadings_table(res) if res.efa is not None else None,
                sd_heat: figs.get("loadings"), sd_scree: figs.get("scree"),
                sd_suit: sd_analysis.suitability_filter(pd.DataFrame(suit)) if suit else None}

    sd_run.click(run_sd, [session, study, sd_factors, sd_prune],
                 [sd_notice, sd_cleansing, sd_loadings, sd_heat, sd_scree, sd_suit], api_visibility="private")

    da_run.click(run_da, [session, study, da_alpha],
                 [da_notice, da_qc, da_systems, da_dist, da_dist_table, da_rank, da_h2h, da_workers],
                 api_visibility="private")
    return tab
