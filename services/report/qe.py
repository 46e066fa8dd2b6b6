"""Paper 003's results from QE audit runs, in the paper's order: Table 1 (section 3), Figure 2
(3), Figure 3 (3.1), Table 4 (4.2, appendix), Table 5, Table 6, Figure 4 (6), Figure 5 (appendix
B.1, GATE), Table 8 and Table 9 (B.5). The audit keeps no study data (it runs on files), so this
part is made only from audit output folders (`app.py analyze qe-audit ... --out DIR`) given to
the report; each table reads the audit's own files (errors.csv, ratios.csv, ccdf.csv) and the
cross-metric ones services.qe.paper_figures. Error rates, ratios and Phi to three decimals as
printed, ratios to four where the gap from parity is small."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.qe import paper_figures
from services.report.sections import Part, fill

TITLE = "Gender audit of QE metrics (paper 003)"
ITEMS = [
    (
        "Table 1",
        "Total error rate (ER) and ratio between gender groups Φ = ER(F)/ER(M) on sources with gold, "
        "no context; per metric and language, and the mean across languages.",
        "3",
    ),
    (
        "Figure 2",
        "Ratio QE(s, h_F) / QE(s, h_M) on ambiguous sources: average and 95% confidence interval by "
        "language, per metric.",
        "3",
    ),
    (
        "Figure 3",
        "Share of instances scored at least the value on the x-axis, by form (the first run given); "
        "dotted lines at the filtering thresholds.",
        "3.1",
    ),
    ("Table 4", "Results of the context-aware variants (mon, bil, prompt): ER and Φ.", "4.2"),
    ("Table 5", "Statistical significance of Φ on the unambiguous runs (test and p).", "4.2"),
    ("Table 6", "Tie rates of the context-aware variants (the two forms scored the same).", "4.2"),
    (
        "Figure 4",
        "Gender error rate vs gaps from fairness: ER against |1 - ratio| (ambiguous) and |1 - Φ| "
        "(unambiguous); dashed: the Pareto frontier.",
        "6",
    ),
    ("Figure 5", "Results on GATE: ratio QE(s, h_F) / QE(s, h_M), average and 95% CI by language.", "appendix B.1"),
    (
        "Table 8",
        "MT-GenEval counterfactual results: ⚠ where QE(s_F, h_F) is significantly lower than "
        "QE(s_M, h_M) (one-sided t-test, p < .05).",
        "appendix B.5",
    ),
    (
        "Figure 11",
        "Per-group error rates ER(S^F) and ER(S^M) on MT-GenEval's counterfactual pairs, on references "
        "(ER_R) and on an MT system's translations (ER_GT), averaged across languages.",
        "appendix B.5",
    ),
    ("Table 9", "Statistical significance of Φ on the counterfactual subset.", "appendix B.5"),
]
DECIMALS = {n: 3 for n, _, _ in ITEMS}
NO_AUDIT = (
    "The QE audit keeps no study data (it runs on files): pass its output folders to the report "
    "(`python app.py report --study S --qe-audit DIR ...`, each DIR from `app.py analyze qe-audit "
    "PAIRS.csv --out DIR`) to fill this."
)
GATE = (
    "Figure 5 is Figure 2's plot on GATE's pairs (`app.py data gate`): the report cannot tell a GATE "
    "folder from an MT-GenEval one, so it is not drawn here; Figure 2 shows every ambiguous run given."
)


def _read(folder: Path, name: str) -> pd.DataFrame | None:
    p = folder / name
    return pd.read_csv(p) if p.is_file() else None


def _ratio_figure(frames: list[tuple[str, pd.DataFrame]]):
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, r in frames:
        r = r[(r["source_gender"] == "any") & (r["lang"] != "pooled")]
        fig.add_trace(
            go.Scatter(
                x=r["lang"],
                y=r["mean_ratio"],
                mode="markers",
                name=label,
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=r["ci_high"] - r["mean_ratio"],
                    arrayminus=r["mean_ratio"] - r["ci_low"],
                ),
            )
        )
    fig.add_hline(y=1, line_dash="dash", line_color="grey", annotation_text="parity")
    fig.update_layout(
        title="QE(s, h_F) / QE(s, h_M): mean and 95% CI",
        xaxis_title="language",
        yaxis_title="ratio",
        height=450,
        width=800,
    )
    return fig


def _ccdf_figure(label: str, c: pd.DataFrame):
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    fig = go.Figure()
    for form, sub in c[c["lang"] == "pooled"].groupby("form", sort=False):
        fig.add_trace(go.Scatter(x=sub["score"], y=sub["share"], mode="lines", line_shape="vh", name=f"h_{form}"))
    fig.update_layout(
        title=f"Share of instances scored at least x ({label})",
        xaxis_title="score",
        yaxis_title="share retained",
        yaxis_tickformat=".0%",
        height=450,
        width=750,
    )
    return fig


def build(folders, out_dir: Path) -> Part:
    """Paper 003's part from audit output folders ('FOLDER' or 'HYPOTHESES=FOLDER', as `app.py
    analyze qe-paper` takes them); without any, each item says how to fill it."""
    part = Part("qe", TITLE)
    if not folders:
        part.summary = "No QE audit folders given."
        part.sections = fill(ITEMS, {}, NO_AUDIT, DECIMALS)
        return part
    runs = [paper_figures.load_run(folder, label) for label, folder in map(paper_figures.parse_run_argument, folders)]
    res = paper_figures.paper_results(runs)
    part.detail = res  # the Analysis tab shows its cross-metric tables without a rerun
    figs = paper_figures.figures(res)
    errors: list[pd.DataFrame] = []
    ties: list[pd.DataFrame] = []
    signif: list[pd.DataFrame] = []
    ratios: list[pd.DataFrame] = []
    for run in runs:
        folder = Path(run.source)
        e = _read(folder, "errors.csv")
        if e is not None:
            e = e.assign(metric=run.label, kind=run.kind)
            (ties if run.context not in ("none", "") else errors).append(e)
            signif.append(e)
        r = _read(folder, "ratios.csv")
        if r is not None and run.kind == "ambiguous":
            ratios.append((run.label, r))
    cols = ["metric", "lang", "n", "er", "er_f", "er_m", "phi", "phi_ci_low", "phi_ci_high"]
    cat = lambda fs: pd.concat(fs, ignore_index=True) if fs else pd.DataFrame()  # noqa: E731
    no_gold = "No audit run with gold given (MT-GenEval contextual with its context, or counterfactual)."
    no_context = "No context-aware run given (`app.py analyze qe-audit --context mon|bil|prompt`)."
    content = {
        "Table 1": cat(errors)[cols] if errors else no_gold,
        "Table 4": cat(ties)[cols] if ties else no_context,
        "Table 6": cat(ties)[["metric", "lang", "n", "ties", "tie_rate"]] if ties else no_context,
        "Figure 2": _ratio_figure(ratios) if ratios else "No ambiguous run (no gold) given.",
        "Figure 4": figs.get(
            "fig4_tradeoff", " ".join(n for n in res.notes if n.startswith("Figure 4")) or "No unambiguous run given."
        ),
        "Figure 5": GATE,
        "Table 8": res.table8_marks
        if len(res.table8_marks)
        else "No counterfactual run given (MT-GenEval's counterfactual subset).",
        # an MT system's pairs (ER_GT): `app.py data mt-geneval --subset counterfactual --mt-f F --mt-m M`,
        # which filters them as appendix B.5 does and writes its Table 7 beside them
        "Figure 11": figs.get(
            "fig11_group_error_rates", "No counterfactual run given (MT-GenEval's counterfactual subset)."
        ),
    }
    sig_cols = ["metric", "lang", "phi", "phi_test", "phi_p_value"]
    for number, kind in (("Table 5", "unambiguous"), ("Table 9", "counterfactual")):
        s = [e for e in signif if (e["kind"] == kind).all()]
        content[number] = cat(s)[sig_cols] if s else f"No {kind} run given."
    ccdf = [(run.label, _read(Path(run.source), "ccdf.csv")) for run in runs]
    ccdf = [(label, c) for label, c in ccdf if c is not None]
    content["Figure 3"] = _ccdf_figure(*ccdf[0]) if ccdf else "No ccdf.csv in the folders given."
    part.sections = fill(ITEMS, content, NO_AUDIT, DECIMALS)
    part.summary = f"{len(runs)} audit run(s): " + ", ".join(f"{r.label} ({r.kind})" for r in runs) + "."
    part.notes = list(res.notes)
    part.files = paper_figures.write_outputs(res, Path(out_dir) / "qe", png=False)
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (services/common/protocols.py, Protocol.report_section): the part from
    the audit folders given to the report (inputs["qe_audits"]), whatever the study."""
    folders = list(inputs.get("qe_audits") or ())
    try:
        return build(folders, out_dir)
    except ValueError as e:  # PaperInputError, a folder that is not an audit's: named in the message
        return Part("qe", TITLE, fill(ITEMS, {}, f"The audit folders could not be read: {e}"), summary=str(e))
