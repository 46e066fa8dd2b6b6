"""The QE gender audit (paper 003) in the analysis tab: upload PAIRS.csv, pick a metric and a
context variant, run with a progress bar, read the tables and figures, download the files."""

from __future__ import annotations

import tempfile

import gradio as gr

from services.admin import auth as admin
from services.models.cache import MODEL_QUEUE
from services.models.zerogpu import gpu
from tabs import paper_view
from tabs.admin_common import admin_only, served, shows_failure
from tabs.analysis_common import Panel, ReportInputs, run_folder
from tabs.common import Ctx, shown_figures, shown_table

# what a table shows before its button is pressed (never Gradio's "1 2 3")
NOT_RUN = "Not run yet: press the button above."
QE_DECIMALS = 3  # paper 003's ratios, error rates and Phi: three decimals (services/report/qe.py)
NO_T8 = "No Table 8: it needs a counterfactual run (MT-GenEval's counterfactual subset)."
FILES_PX = 150  # the file list scrolls in a short box: the results come first (tabs/analysis_common.py)


@gpu(duration=600)
def _audit_on_gpu(*args, **kwargs):
    """qe_service.run_audit inside a ZeroGPU grant (the identity elsewhere: services/models/zerogpu.py)."""
    from services.qe import service as qe_service

    return qe_service.run_audit(*args, **kwargs)


def _metric_choices() -> list[str]:
    from services.metrics import registry as metrics

    return [m["name"] for m in metrics.available()] or ["e5-cosine"]


def build(ctx: Ctx, auth: admin.AdminAuth, session: gr.Textbox):
    with gr.Accordion("Gender audit of a QE metric (paper 003)", open=False):
        gr.Markdown(
            "A PAIRS CSV: `instance_id, lang, source, hyp_f, hyp_m` (or `hyp_n, hyp_g`), optional "
            "`gold` (F|M), `context`, and precomputed `score_f, score_m` (then no metric runs). "
            "`python app.py data mt-geneval --lang pt --out pairs.csv` makes one from MT-GenEval."
        )
        with gr.Row():
            pairs = gr.File(label="PAIRS.csv", file_types=[".csv"], type="filepath")
            with gr.Column():
                metric = gr.Dropdown(label="Metric", choices=_metric_choices(), value="e5-cosine")
                context = gr.Radio(
                    label="Context",
                    choices=["none", "mon", "bil"],
                    value="none",
                    info="mon: context + sentence on both sides; bil: the target side's context machine-translated",
                )
                thresholds = gr.Textbox(label="Retention thresholds", placeholder="0.8 (comma-separated)")
        with gr.Row():
            run = gr.Button("Run the audit", elem_classes=["qe-audit-run"])
            png = gr.Checkbox(label="Also PNG copies of the figures (kaleido: about 1 s each)", value=False)
        notice = gr.Markdown()
        ratios = gr.Dataframe(
            label="Score ratio F/M (or N/G) per language: mean, 95% t-interval, one-sided p; "
            "'mean' = mean across languages (as paper 003 reports), 'pooled' = all "
            "instances as one sample",
            interactive=False,
            value=shown_table(None, NOT_RUN),
        )
        errors = gr.Dataframe(
            label="Error rates with gold: ER, ER(F), ER(M), Phi with bootstrap CI and p-value "
            "(chi-square; mean row: Cochran-Mantel-Haenszel), ties",
            interactive=False,
            value=shown_table(None, NOT_RUN),
        )
        retention = gr.Dataframe(
            label="Share retained at each threshold", interactive=False, value=shown_table(None, NOT_RUN)
        )
        plots = [gr.Plot(visible=False) for _ in range(3)]
        files = gr.File(label="Tables (CSV) and figures", file_count="multiple", interactive=False)
        runs = gr.State([])  # this session's audit runs, for the paper's cross-metric tables
        with gr.Accordion(
            "Paper 003's tables across metrics, in the paper's order: Tables 1, 4-6, 8-9, Figures 2-5", open=False
        ):
            gr.Markdown(
                "Built from the audits run above in this session (one metric each): runs with gold make "
                "Tables 1 and 5, context-aware ones Tables 4 and 6, counterfactual runs Tables 8 and 9, "
                "ambiguous runs Figure 2 (and Figures 6/9), ambiguous + unambiguous runs Figure 4. Name "
                "a run's hypotheses in the table (`references`, or the MT system, e.g. `GT`): Table 8 "
                "has a block for each. The Report button above includes these runs."
            )
            run_list = gr.Dataframe(
                headers=PAPER_RUN_HEADERS, label="Audit runs of this session (edit 'hypotheses')", interactive=True
            )
            paper_run = gr.Button("Build the paper's tables and figures")
            # the short box: the part's summary and its notes (services.report.qe, as the report)
            paper_notice = gr.Markdown(elem_classes=["paper-notes"])
            paper_files = gr.File(
                label="Paper tables (CSV), captions and figures",
                file_count="multiple",
                interactive=False,
                height=FILES_PX,
            )
            qe_part = gr.State(None)
            paper_view.build(qe_part)  # paper 003's Tables 1, 4-6, 8-9 and Figures 2-5, in its order
            with gr.Accordion("Table 8, Figure 4's points and Figures 6/9 as the audit writes them", open=False):
                paper_full = gr.Markdown()
                table8 = gr.Dataframe(
                    label="Table 8: matched ratio QE(s_F, h_F) / QE(s_M, h_M) per language; warning "
                    "where the one-sided t-test against 1 gives p < .05",
                    interactive=False,
                    value=shown_table(None, NOT_RUN),
                )
                table8_marks = gr.Dataframe(
                    label="Table 8 as the paper prints it (⚠: p < .05)",
                    interactive=False,
                    value=shown_table(None, NOT_RUN),
                )
                tradeoff = gr.Dataframe(
                    label="Figure 4's points: ER vs distance from parity, Pareto frontier flags",
                    interactive=False,
                    value=shown_table(None, NOT_RUN),
                )
                paper_plots = [gr.Plot(visible=False) for _ in range(2)]

    @admin_only(auth, notice)
    @shows_failure(notice, "The audit")
    def do_audit(
        sess,
        path,
        metric_name,
        ctx_mode,
        thresholds_text,
        want_png,
        past,
        progress=gr.Progress(),
        request: gr.Request = None,
    ):
        from services.models.backends import BackendUnavailable
        from services.qe import audit as qe_audit

        if not path:
            return {
                notice: "Upload a PAIRS.csv first.",
                **{t: shown_table(None, "No audit yet: upload a PAIRS.csv and run it.") for t in tables},
            }
        try:
            ts = qe_audit.parse_thresholds(thresholds_text)
        except ValueError:
            return {notice: f"**Thresholds** must be numbers separated by commas, not `{thresholds_text}`."}
        out_dir = tempfile.mkdtemp(prefix="qe-audit-")
        try:
            result, written = _audit_on_gpu(
                path,
                out_dir,
                metric=metric_name,
                context=ctx_mode,
                thresholds=ts,
                database=ctx.database,
                png=bool(want_png),
                progress=lambda f, d: progress(f, desc=d),
            )
        except (ValueError, KeyError, BackendUnavailable) as e:
            return {notice: f"**The audit could not run:** {e}"}
        figs = list(qe_audit.figures(result).items())
        shown = shown_figures(plots, figs)
        text = qe_audit.summary(result).replace("\n", "  \n")
        past = list(past or []) + [paper_run_entry(result, out_dir)]
        return {
            notice: text,
            ratios: shown_table(result.ratios, "No pairs with scores on both sides.", QE_DECIMALS),
            errors: shown_table(result.errors, "No error rates: they need a `gold` column (F|M).", QE_DECIMALS),
            retention: shown_table(result.retention, "No retention: no thresholds given.", QE_DECIMALS),
            files: [str(p) for p in written],
            runs: past,
            run_list: paper_run_rows(past),
            **shown,
        }

    tables = (ratios, errors, retention)
    run.click(
        do_audit,
        [session, pairs, metric, context, thresholds, png, runs],
        [notice, ratios, errors, retention, files, *plots, runs, run_list],
        concurrency_id=MODEL_QUEUE,
        concurrency_limit=1,
        api_name="analysis_qe_audit",
        api_visibility="undocumented",
    )

    @admin_only(auth, paper_notice)
    @shows_failure(paper_notice, "The paper's tables")
    def do_paper(sess, past, table, request: gr.Request = None):
        from services.qe import paper_figures
        from services.report import qe as qe_report

        if not past:
            first = "No audit runs yet: run the audit above on at least one metric first."
            return {
                paper_notice: "Run the audit above on at least one metric first.",
                **{t: shown_table(None, first) for t in (table8, table8_marks, tradeoff)},
            }
        # paper 003's part as the report lays it out (services.report.qe); its result fills the
        # tables below; its files are served from gradio's cache and its folder is removed
        with run_folder("qe-paper", None) as folder:
            try:
                part = qe_report.build(audit_folders(past, table), folder)
            except ValueError as e:
                return {paper_notice: f"**The paper's tables could not be built:** {e}"}
            files = served(part.files, folder)
        result = part.detail
        figs = list(paper_figures.figures(result).items())
        shown = shown_figures(paper_plots, figs)
        captions = "  \n".join(f"**{name}**: {paper_figures.CAPTIONS[name]}" for name in ("table8", *dict(figs)))
        return {
            paper_notice: paper_view.notes_markdown(part),
            table8: shown_table(result.table8, NO_T8, QE_DECIMALS),
            table8_marks: shown_table(result.table8_marks, NO_T8),
            tradeoff: shown_table(
                result.tradeoff, "No Figure 4 points: they need an unambiguous run (with gold).", QE_DECIMALS
            ),
            paper_files: files,
            **shown,
            paper_full: paper_figures.summary(result).replace("\n", "  \n") + "\n\n" + captions,
            qe_part: part,
        }

    paper_run.click(
        do_paper,
        [session, runs, run_list],
        [paper_notice, table8, table8_marks, tradeoff, paper_files, *paper_plots, paper_full, qe_part],
        api_name="analysis_qe_paper",
        api_visibility="undocumented",
    )
    return runs, run_list


def analysis_panel(shared: Panel) -> ReportInputs:
    """The QE protocol's panel (Protocol.analysis_panel): the audit, whose runs of this session
    the report includes."""
    runs, run_list = build(shared.ctx, shared.auth, shared.session)
    return ReportInputs((runs, run_list), lambda past, table: {"qe_audits": audit_folders(past, table)})


def audit_folders(past: list[dict] | None, table) -> list[str]:
    """The session's audit runs as services.report.qe takes them: 'HYPOTHESES=FOLDER', the
    hypotheses as named in the run list (a run without a name: its folder alone, 'references')."""
    labels = list(table["hypotheses"]) if table is not None and "hypotheses" in table else []
    out = []
    for i, r in enumerate(past or []):
        label = str(labels[i]).strip() if i < len(labels) and labels[i] is not None else ""
        out.append(f"{label}={r['dir']}" if label else r["dir"])
    return out


PAPER_RUN_HEADERS = ["run", "metric", "context", "languages", "instances", "hypotheses"]


def paper_run_entry(result, out_dir: str) -> dict:
    return {
        "dir": out_dir,
        "metric": str(result.metric.get("name", "")),
        "context": result.context,
        "languages": ", ".join(result.languages),
        "instances": result.n_instances,
    }


def paper_run_rows(past: list[dict]) -> list[list]:
    return [
        [i + 1, r["metric"], r["context"], r["languages"], r["instances"], "references"] for i, r in enumerate(past)
    ]
