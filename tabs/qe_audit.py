"""The QE gender audit (paper 003) in the analysis tab: upload PAIRS.csv, pick a metric and a
context variant, run with a progress bar, read the tables and figures, download the files."""
from __future__ import annotations

import tempfile

import gradio as gr

from services.admin import auth as admin
from services.models.cache import MODEL_QUEUE
from services.models.zerogpu import gpu
from tabs.admin_common import admin_only
from tabs.common import Ctx


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
        gr.Markdown("A PAIRS CSV: `instance_id, lang, source, hyp_f, hyp_m` (or `hyp_n, hyp_g`), optional "
                    "`gold` (F|M), `context`, and precomputed `score_f, score_m` (then no metric runs). "
                    "`python app.py data mt-geneval --lang pt --out pairs.csv` makes one from MT-GenEval.")
        with gr.Row():
            pairs = gr.File(label="PAIRS.csv", file_types=[".csv"], type="filepath")
            with gr.Column():
                metric = gr.Dropdown(label="Metric", choices=_metric_choices(), value="e5-cosine")
                context = gr.Radio(label="Context", choices=["none", "mon", "bil"], value="none",
                                   info="mon: context + sentence on both sides; bil: the target side's context "
                                        "machine-translated")
                thresholds = gr.Textbox(label="Retention thresholds", placeholder="0.8 (comma-separated)")
        with gr.Row():
            run = gr.Button("Run the audit", elem_classes=["qe-audit-run"])
            png = gr.Checkbox(label="Also PNG copies of the figures (kaleido: about 1 s each)", value=False)
        notice = gr.Markdown()
        ratios = gr.Dataframe(label="Score ratio F/M (or N/G) per language: mean, 95% t-interval, one-sided p; "
                                    "'mean' = mean across languages (as paper 003 reports), 'pooled' = all "
                                    "instances as one sample", interactive=False)
        errors = gr.Dataframe(label="Error rates with gold: ER, ER(F), ER(M), Phi with bootstrap CI and p-value "
                                    "(chi-square; mean row: Cochran-Mantel-Haenszel), ties", interactive=False)
        retention = gr.Dataframe(label="Share retained at each threshold", interactive=False)
        plots = [gr.Plot(visible=False) for _ in range(3)]
        files = gr.File(label="Tables (CSV) and figures", file_count="multiple", interactive=False)

    @admin_only(auth, notice)
    def do_audit(sess, path, metric_name, ctx_mode, thresholds_text, want_png, progress=gr.Progress(),
                 request: gr.Request = None):
        from services.models.backends import BackendUnavailable
        from services.qe import audit as qe_audit

        if not path:
            return {notice: "Upload a PAIRS.csv first."}
        try:
            ts = qe_audit.parse_thresholds(thresholds_text)
        except ValueError:
            return {notice: f"**Thresholds** must be numbers separated by commas, not `{thresholds_text}`."}
        out_dir = tempfile.mkdtemp(prefix="qe-audit-")
        try:
            result, written = _audit_on_gpu(path, out_dir, metric=metric_name, context=ctx_mode,
                                                   thresholds=ts, database=ctx.database, png=bool(want_png),
                                                   progress=lambda f, d: progress(f, desc=d))
        except (ValueError, KeyError, BackendUnavailable) as e:
            return {notice: f"**The audit could not run:** {e}"}
        figs = list(qe_audit.figures(result).items())
        shown = {p: gr.update(visible=i < len(figs), value=figs[i][1] if i < len(figs) else None,
                              label=figs[i][0] if i < len(figs) else None) for i, p in enumerate(plots)}
        text = qe_audit.summary(result).replace("\n", "  \n")
        return {notice: text, ratios: result.ratios, errors: result.errors, retention: result.retention,
                files: [str(p) for p in written], **shown}

    run.click(do_audit, [session, pairs, metric, context, thresholds, png],
              [notice, ratios, errors, retention, files, *plots], concurrency_id=MODEL_QUEUE, concurrency_limit=1,
              api_name="analysis_qe_audit", api_visibility="undocumented")
