"""Paper 003's cross-metric results from the audit's own runs: Table 8, Figure 4 and Figures 6/9.

The audit (services.qe.audit) scores one metric at a time; these results compare metrics, so
they read several audit runs (:class:`Run`: an AuditResult, or an audit output folder with its
``scores.csv`` and ``summary.json``, :func:`load_run`). A run is one of three kinds, read from
its scored PAIRS:

* ``ambiguous``: no gold (paper 003 section 3, e.g. MT-GenEval contextual without its context,
  GATE);
* ``counterfactual``: gold on every row and every row matched to its counterpart: the rows of one
  language whose hypotheses are the same pair (hyp_f, hyp_m) are one F-gold and one M-gold row
  (MT-GenEval's counterfactual subset, appendix B.5: line i gives (s_F, h_F/h_M, gold F) and
  (s_M, h_F/h_M, gold M));
* ``unambiguous``: gold, rows not so matched (section 4.2, the contextual subset with its context).

Table 8 (appendix B.5, counterfactual runs): per metric, hypotheses (references / an MT system,
the table's two blocks) and language, the matched ratio QE(s_F, h_F) / QE(s_M, h_M): for each
line, score_f of its F-gold row over score_m of its M-gold row. Section 4.3 uses "the same ...
fairness measures" as sections 3 and 4, so its mean, 95 % t-interval and test are the audit's
ratio statistics (services.qe.audit._t_stats: scipy ttest_1samp against 1, one-sided "less");
the warning mark is p < .05 ("the QE score of [s_F, h_F] pairs is statistically significantly
lower than [s_M, h_M] pairs (p < .05)"). The paper prints the marks only; ``table8.csv`` holds the
numbers behind them and ``table8_marks.csv`` the paper's layout (metric rows, hypotheses x
language columns, "⚠" or "-"). Ratios whose denominator is <= 0 or numerator < 0 are dropped and
counted, as in the audit.

Figure 4 (section 6): per metric, the total error rate ER of its unambiguous run against the
distance from parity: |1 - mean ratio| of its ambiguous run (left) and |1 - Phi| of its
unambiguous run (right), each the "mean across languages" value as Tables 1 and 4 report them;
one point per unambiguous run (a metric's context variants are separate points, each beside the
metric's one ambiguous ratio). The dashed line joins the Pareto frontier: the points no other
point dominates in (ER, distance), both minimised (:func:`pareto_front`).

Figure 11 (appendix B.5, counterfactual runs): per metric and hypotheses (references, ER_R, or an
MT system's output, ER_GT), the error rates per source group, ER(S^F) and ER(S^M): the share
of F-gold (M-gold) rows whose wrong form scores >= the right one, i.e. not QE(s_F, t_F) >
QE(s_F, t_M) (ties are errors, as the audit's error rates), "averaged across all languages":
the audit's mean rows (services.qe.audit.errors: the unweighted mean of the languages' rates);
``figure11.csv`` also holds each language's.

Figures 6 and 9 (appendix B.1): the raw scores of every ambiguous run, per metric and form
(h_F, h_M), as box plots, with their quartiles in ``score_distributions.csv`` (pandas describe).

Pure functions; statistics from scipy/numpy/pandas, figures from plotly.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from services.common.analysis_output import write_json, write_tables
from services.common.figure_files import write_figures
from services.qe import audit as Q

ALPHA = 0.05  # the paper's warning marks: p < .05 (Tables 5, 8, 9)
WARNING_MARK, NO_MARK = "⚠", "-"
REFERENCES = "references"  # Table 8's left block; its right block is an MT system's output ("GT")
KINDS = ("ambiguous", "unambiguous", "counterfactual")

CAPTIONS = {
    "table8": "Table 8 (paper 003, appendix B.5): the matched ratio QE(s_F, h_F) / QE(s_M, h_M) on counterfactual "
    "pairs, per metric, hypotheses and language; ⚠ where the one-sided t-test against 1 gives p < .05 "
    "(feminine pairs scored significantly lower), - elsewhere.",
    "fig4_tradeoff": "Figure 4 (paper 003, section 6): each metric's total error rate ER on unambiguous sources "
    "against its distance from parity, |1 - mean ratio QE(s, h_F) / QE(s, h_M)| on ambiguous "
    "sources (left) and |1 - Phi| on unambiguous ones (right); means across languages. The best "
    "case is (0, 0); the dashed line joins the Pareto frontier (the metrics no other metric beats "
    "on both axes).",
    "fig11_group_error_rates": "Figure 11 (paper 003, appendix B.5): per-group error rates on MT-GenEval's "
    "counterfactual pairs, ER(S^F) and ER(S^M) (the share of sources whose wrong gender form scores at least "
    "as high as the right one), on human references (ER_R) and on an MT system's translations (ER_GT); "
    "means across languages.",
    "fig9_score_distributions": "Figures 6 and 9 (paper 003, appendix B.1): the raw scores QE(s, h_F) and "
    "QE(s, h_M) of every metric on ambiguous sources, all languages together; boxes "
    "span the quartiles, whiskers 1.5 IQR.",
}


class PaperInputError(ValueError):
    """Runs that cannot make the paper's tables (the message names the run and what is wrong)."""


@dataclass
class Run:
    metric: str  # the metric as the audit names it
    context: str  # none | mon | bil | prompt
    scores: pd.DataFrame  # the scored PAIRS (read_pairs-checked)
    hypotheses: str = REFERENCES  # Table 8's block: human references or an MT system's name
    source: str = ""  # where the run came from (for messages)

    @property
    def label(self) -> str:
        """The metric, with its context variant when there is one (the paper's "Kiwi 22 MON")."""
        return self.metric if self.context in ("none", "") else f"{self.metric} {self.context}"

    @property
    def kind(self) -> str:
        return run_kind(self.scores)


def run_kind(frame: pd.DataFrame) -> str:
    """'ambiguous', 'counterfactual' or 'unambiguous' (see the module docstring)."""
    d = Q.read_pairs(frame)
    if not Q.has_gold(d):
        return "ambiguous"
    if Q.contrast_of(d) == "F/M":
        composition = d.groupby(["lang", "hyp_f", "hyp_m"], sort=False)["gold"].agg(lambda g: "".join(sorted(g)))
        if (composition == "FM").all():
            return "counterfactual"
    return "unambiguous"


def run_from_result(result: Q.AuditResult, hypotheses: str = REFERENCES, source: str = "") -> Run:
    return Run(
        metric=str(result.metric.get("name", "precomputed")),
        context=result.context,
        scores=result.scores,
        hypotheses=hypotheses or REFERENCES,
        source=source,
    )


def load_run(folder, hypotheses: str | None = None) -> Run:
    """A Run from an audit output folder (its scores.csv and summary.json, as the audit writes them)."""
    path = Path(folder)
    if not path.is_dir():
        raise PaperInputError(
            f"{path}: not a folder (expected an audit output folder with scores.csv and summary.json)"
        )
    for name in ("scores.csv", "summary.json"):
        if not (path / name).is_file():
            raise PaperInputError(f"{path}: no {name} (is this a qe-audit output folder?)")
    try:
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise PaperInputError(f"{path / 'summary.json'}: not JSON ({e})") from None
    metric = (summary.get("metric") or {}).get("name") or "precomputed"
    return Run(
        metric=str(metric),
        context=str(summary.get("context", "none")),
        scores=Q.read_pairs(path / "scores.csv"),
        hypotheses=hypotheses or REFERENCES,
        source=str(path),
    )


def parse_run_argument(text: str) -> tuple[str | None, str]:
    """'FOLDER' or 'HYPOTHESES=FOLDER' (e.g. 'GT=out/kiwi-gt') -> (hypotheses or None, folder)."""
    if "=" in text and not Path(text).exists():
        label, folder = text.split("=", 1)
        return label.strip() or None, folder.strip()
    return None, text


# ---------------------------------------------------------------------------------------------
# Table 8


def matched_pairs(frame: pd.DataFrame) -> pd.DataFrame:
    """Per counterfactual line (the F-gold and M-gold rows of one language sharing hyp_f and
    hyp_m): lang, both instance ids, score_ff = QE(s_F, h_F), score_mm = QE(s_M, h_M), ratio and
    its status ('ok', 'missing', 'nonpositive' as in the audit's ratios)."""
    d = Q.read_pairs(frame)
    if Q.contrast_of(d) != "F/M" or not Q.has_gold(d) or not Q.has_scores(d):
        raise PaperInputError("matched ratios need the F/M contrast, gold and scores")
    key = ["lang", "hyp_f", "hyp_m"]
    both = d[d["gold"] == "F"].merge(d[d["gold"] == "M"], on=key, how="inner", suffixes=("_F", "_M"))
    sa, sb = both["score_f_F"], both["score_m_M"]
    missing = sa.isna() | sb.isna()
    nonpos = ~missing & ((sb <= 0) | (sa < 0))
    status = np.where(missing, "missing", np.where(nonpos, "nonpositive", "ok"))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (sa / sb).where(status == "ok")
    return pd.DataFrame(
        {
            "lang": both["lang"],
            "instance_f": both["instance_id_F"],
            "instance_m": both["instance_id_M"],
            "score_ff": sa,
            "score_mm": sb,
            "ratio": ratio,
            "ratio_status": status,
        }
    )


TABLE8_COLUMNS = [
    "metric",
    "hypotheses",
    "lang",
    "aggregate",
    "n_pairs",
    "n_missing",
    "n_dropped",
    "mean_ff",
    "mean_mm",
    "mean_ratio",
    "sd_ratio",
    "ci_low",
    "ci_high",
    "t",
    "p_value",
    "warning",
]


def _ratio_row(m: pd.DataFrame) -> dict:
    ok = m[m["ratio_status"] == "ok"]
    x = ok["ratio"].to_numpy(dtype=float)
    # the audit's own ratio test (section 4.3: "the same ... fairness measures" as section 3)
    lo, hi, t, p = Q._t_stats(x)
    return {
        "n_pairs": len(x),
        "n_missing": int((m["ratio_status"] == "missing").sum()),
        "n_dropped": int((m["ratio_status"] == "nonpositive").sum()),
        "mean_ff": float(ok["score_ff"].mean()) if len(x) else math.nan,
        "mean_mm": float(ok["score_mm"].mean()) if len(x) else math.nan,
        "mean_ratio": float(np.mean(x)) if len(x) else math.nan,
        "sd_ratio": float(np.std(x, ddof=1)) if len(x) > 1 else math.nan,
        "ci_low": lo,
        "ci_high": hi,
        "t": t,
        "p_value": p,
        "warning": bool(p < ALPHA) if math.isfinite(p) else False,
    }


def table8(runs: Sequence[Run]) -> pd.DataFrame:
    """table8.csv: for every counterfactual run, one row per language, then 'mean' (the
    unweighted mean of the languages' values, no interval or test, as the audit's mean rows) and
    'pooled' (every pair as one sample)."""
    rows = []
    for run in runs:
        if run.kind != "counterfactual":
            continue
        pairs = matched_pairs(run.scores)
        head = {"metric": run.label, "hypotheses": run.hypotheses}
        langs = []
        for lang in sorted(pairs["lang"].unique()):
            langs.append({**head, "lang": lang, "aggregate": "language", **_ratio_row(pairs[pairs["lang"] == lang])})
        mean: dict[str, Any] = {**head, "lang": Q.MEAN, "aggregate": Q.AGGREGATES[Q.MEAN]}
        for c in ("mean_ff", "mean_mm", "mean_ratio"):
            mean[c] = Q._nanless_mean(r[c] for r in langs)
        for c in ("n_pairs", "n_missing", "n_dropped"):
            mean[c] = int(sum(r[c] for r in langs))
        mean.update({c: math.nan for c in ("sd_ratio", "ci_low", "ci_high", "t", "p_value")}, warning=False)
        pooled = {**head, "lang": Q.POOLED, "aggregate": Q.AGGREGATES[Q.POOLED], **_ratio_row(pairs)}
        rows += langs + [mean, pooled]
    return pd.DataFrame(rows, columns=TABLE8_COLUMNS)


FIGURE11_COLUMNS = ["metric", "hypotheses", "lang", "aggregate", "n_f", "n_m", "errors_f", "errors_m", "er_f", "er_m"]


def figure11(runs: Sequence[Run], n_resamples: int = Q.N_RESAMPLES, seed: int = Q.SEED) -> pd.DataFrame:
    """figure11.csv: for every counterfactual run, its per-group error rates per language and
    their mean across languages: the audit's own errors table (services.qe.audit.errors), without
    its pooled row."""
    frames = []
    for run in runs:
        if run.kind != "counterfactual":
            continue
        e = Q.errors(run.scores, n_resamples=n_resamples, seed=seed)
        e = e[e["lang"] != Q.POOLED].assign(metric=run.label, hypotheses=run.hypotheses)
        frames.append(e[FIGURE11_COLUMNS])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FIGURE11_COLUMNS)


def table8_marks(table: pd.DataFrame) -> pd.DataFrame:
    """Table 8 as the paper prints it: one row per metric, a column per hypotheses block and
    language ("references de", ..., "GT de", ...), "⚠" where p < .05, "-" elsewhere."""
    langs = table[table["aggregate"] == "language"]
    if langs.empty:
        return pd.DataFrame(columns=["metric"])
    cell = langs.assign(
        mark=np.where(langs["warning"], WARNING_MARK, NO_MARK), column=langs["hypotheses"] + " " + langs["lang"]
    )
    order = list(
        dict.fromkeys(cell.sort_values(["hypotheses"], key=lambda s: s != REFERENCES, kind="stable")["column"])
    )
    wide = cell.pivot_table(index="metric", columns="column", values="mark", aggfunc="first", sort=False)
    return wide.reindex(columns=order).fillna("").reset_index().rename_axis(columns=None)


# ---------------------------------------------------------------------------------------------
# Figure 4


def pareto_front(x, y) -> np.ndarray:
    """Which points (x_i, y_i) are Pareto-optimal when both are minimised: no other point has
    x_j <= x_i and y_j <= y_i with one of them strictly smaller. Points with a NaN are neither
    on the front nor dominate others; equal points are all on the front."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    le = (x[None, :] <= x[:, None]) & (y[None, :] <= y[:, None])  # [i, j]: j at least as good as i
    lt = (x[None, :] < x[:, None]) | (y[None, :] < y[:, None])
    dominated = (le & lt & ok[None, :]).any(axis=1)
    return ok & ~dominated


TRADEOFF_COLUMNS = [
    "metric",
    "context",
    "label",
    "n_languages",
    "er",
    "er_f",
    "er_m",
    "phi",
    "gap_unambiguous",
    "ambiguous_ratio",
    "gap_ambiguous",
    "pareto_ambiguous",
    "pareto_unambiguous",
]


def tradeoff(runs: Sequence[Run], n_resamples: int = Q.N_RESAMPLES, seed: int = Q.SEED) -> pd.DataFrame:
    """fig4_tradeoff.csv: one row per unambiguous run: ER, ER(F), ER(M), Phi and |1 - Phi| (the
    audit's 'mean' row), the metric's ambiguous mean ratio and |1 - ratio|, and whether the point
    is on the Pareto frontier of each panel."""
    ambiguous: dict[str, float] = {}
    for run in runs:
        if run.kind != "ambiguous" or Q.contrast_of(Q.read_pairs(run.scores)) != "F/M":
            continue
        if run.metric in ambiguous:
            raise PaperInputError(
                f"two ambiguous runs of metric {run.metric!r} ({run.source or 'a run'}): Figure 4 "
                "takes one ambiguous ratio per metric"
            )
        rat = Q.ratios(run.scores)
        ambiguous[run.metric] = float(
            rat[(rat["lang"] == Q.MEAN) & (rat["source_gender"] == "any")]["mean_ratio"].iloc[0]
        )
    rows = []
    for run in runs:
        if run.kind != "unambiguous":
            continue
        err = Q.errors(run.scores, n_resamples=n_resamples, seed=seed).set_index("lang")
        mean = err.loc[Q.MEAN]
        ratio = ambiguous.get(run.metric, math.nan)
        rows.append(
            {
                "metric": run.metric,
                "context": run.context,
                "label": run.label,
                "n_languages": int((err["aggregate"] == "language").sum()),
                "er": mean["er"],
                "er_f": mean["er_f"],
                "er_m": mean["er_m"],
                "phi": mean["phi"],
                "gap_unambiguous": abs(1 - mean["phi"]),
                "ambiguous_ratio": ratio,
                "gap_ambiguous": abs(1 - ratio),
            }
        )
    out = pd.DataFrame(rows, columns=TRADEOFF_COLUMNS)
    out["pareto_ambiguous"] = pareto_front(out["gap_ambiguous"], out["er"]) if len(out) else []
    out["pareto_unambiguous"] = pareto_front(out["gap_unambiguous"], out["er"]) if len(out) else []
    return out


# ---------------------------------------------------------------------------------------------
# Figures 6 and 9

DISTRIBUTION_COLUMNS = ["metric", "lang", "form", "n", "mean", "sd", "min", "q1", "median", "q3", "max"]


def score_long(runs: Sequence[Run]) -> pd.DataFrame:
    """metric, lang, form, score: every score of every ambiguous run."""
    parts = []
    for run in runs:
        if run.kind != "ambiguous":
            continue
        d = Q.read_pairs(run.scores)
        for x in Q.CONTRASTS[Q.contrast_of(d)]:
            parts.append(
                pd.DataFrame({"metric": run.label, "lang": d["lang"], "form": x.upper(), "score": d[f"score_{x}"]})
            )
    if not parts:
        return pd.DataFrame(columns=["metric", "lang", "form", "score"])
    return pd.concat(parts, ignore_index=True).dropna(subset=["score"])


def score_distributions(runs: Sequence[Run]) -> pd.DataFrame:
    """score_distributions.csv: per metric, language (then 'pooled') and form: n, mean, sd and
    the five-number summary (pandas describe: linear-interpolated quartiles)."""
    long = score_long(runs)
    if long.empty:
        return pd.DataFrame(columns=DISTRIBUTION_COLUMNS)
    pooled = long.assign(lang=Q.POOLED)
    desc = pd.concat([long, pooled]).groupby(["metric", "lang", "form"], sort=False)["score"].describe()
    desc = desc.rename(columns={"count": "n", "std": "sd", "25%": "q1", "50%": "median", "75%": "q3"}).reset_index()
    desc["n"] = desc["n"].astype(int)
    return desc[DISTRIBUTION_COLUMNS]


# ---------------------------------------------------------------------------------------------
# the whole set


@dataclass
class PaperResult:
    table8: pd.DataFrame
    table8_marks: pd.DataFrame
    figure11: pd.DataFrame
    tradeoff: pd.DataFrame
    distributions: pd.DataFrame
    scores: pd.DataFrame  # the long scores behind the box plots
    runs: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def paper_results(runs: Sequence[Run], n_resamples: int = Q.N_RESAMPLES, seed: int = Q.SEED) -> PaperResult:
    """Table 8, Figure 4's points and Figures 6/9's distributions of the given runs; a note for
    each one that cannot be made, naming the runs it needs."""
    if not runs:
        raise PaperInputError("no audit runs: the paper's tables compare the runs of several metrics")
    kinds = [r.kind for r in runs]
    notes = []
    t8 = table8(runs)
    if "counterfactual" not in kinds:
        notes.append(
            "Table 8 and Figure 11 need a counterfactual run (MT-GenEval's counterfactual subset: python app.py data "
            "mt-geneval --subset counterfactual)"
        )
    fig4 = tradeoff(runs, n_resamples=n_resamples, seed=seed)
    if fig4.empty:
        notes.append("Figure 4 needs an unambiguous run (gold, e.g. MT-GenEval contextual --setting unambiguous)")
    elif fig4["ambiguous_ratio"].isna().any():
        lacking = sorted(set(fig4.loc[fig4["ambiguous_ratio"].isna(), "metric"]))
        notes.append(f"Figure 4's left panel needs an ambiguous run of {', '.join(lacking)}")
    dist = score_distributions(runs)
    if dist.empty:
        notes.append("Figures 6/9 need an ambiguous run (no gold)")
    described = [
        {
            "metric": r.metric,
            "context": r.context,
            "hypotheses": r.hypotheses,
            "kind": k,
            "instances": len(r.scores),
            "source": r.source,
        }
        for r, k in zip(runs, kinds)
    ]
    return PaperResult(
        table8=t8,
        table8_marks=table8_marks(t8),
        figure11=figure11(runs, n_resamples=n_resamples, seed=seed),
        tradeoff=fig4,
        distributions=dist,
        scores=score_long(runs),
        runs=described,
        notes=notes,
    )


def _caption(fig, text: str) -> None:
    fig.add_annotation(
        text=text,
        xref="paper",
        yref="paper",
        x=0,
        y=-0.22,
        xanchor="left",
        yanchor="top",
        showarrow=False,
        align="left",
        font=dict(size=11),
    )
    fig.update_layout(margin=dict(b=150))


def _wrap(text: str, width: int = 110) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width))


def figures(result: PaperResult) -> dict:
    """Plotly figures, each with its caption under it: 'fig4_tradeoff' (two panels, dashed
    Pareto frontiers) and 'fig9_score_distributions' (box plots per metric and form)."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    out = {}
    t = result.tradeoff
    if not t.empty:
        fig = make_subplots(
            rows=1,
            cols=2,
            shared_yaxes=True,
            horizontal_spacing=0.06,
            subplot_titles=("ambiguous: |1 - QE(s, h_F) / QE(s, h_M)|", "unambiguous: |1 - Phi|"),
        )
        for col, (gap, front) in enumerate(
            (("gap_ambiguous", "pareto_ambiguous"), ("gap_unambiguous", "pareto_unambiguous")), start=1
        ):
            shown = t[np.isfinite(t[gap].astype(float))]
            fig.add_trace(
                go.Scatter(
                    x=shown[gap],
                    y=shown["er"],
                    mode="markers+text",
                    text=shown["label"],
                    textposition="top center",
                    showlegend=False,
                    marker=dict(size=9),
                    hovertemplate="%{text}: distance %{x:.4f}, ER %{y:.3f}<extra></extra>",
                ),
                row=1,
                col=col,
            )
            f = shown[shown[front].astype(bool)].sort_values(gap)
            fig.add_trace(
                go.Scatter(
                    x=f[gap],
                    y=f["er"],
                    mode="lines",
                    line=dict(dash="dash", color="grey"),
                    name="Pareto frontier",
                    showlegend=col == 1,
                    hoverinfo="skip",
                ),
                row=1,
                col=col,
            )
            fig.update_xaxes(title_text="distance from parity", rangemode="tozero", row=1, col=col)
        fig.update_yaxes(title_text="ER (unambiguous)", rangemode="tozero", row=1, col=1)
        fig.update_layout(title="Gender error rate vs gap from parity", height=560, width=1000)
        _caption(fig, _wrap(CAPTIONS["fig4_tradeoff"], 150))
        out["fig4_tradeoff"] = fig

    e = result.figure11
    e = e[e["lang"] == Q.MEAN] if not e.empty else e
    if not e.empty:
        blocks = list(dict.fromkeys(e["hypotheses"]))
        fig = make_subplots(
            rows=1,
            cols=len(blocks),
            shared_yaxes=True,
            horizontal_spacing=0.06,
            subplot_titles=[f"ER_R ({b})" if b == REFERENCES else f"ER_GT ({b})" for b in blocks],
        )
        for col, block in enumerate(blocks, start=1):
            sub = e[e["hypotheses"] == block]
            for group, column, color in (("S^F", "er_f", "#d62728"), ("S^M", "er_m", "#1f77b4")):
                fig.add_trace(
                    go.Bar(
                        x=sub["metric"],
                        y=sub[column],
                        name=f"ER({group})",
                        marker_color=color,
                        showlegend=col == 1,
                        hovertemplate=f"%{{x}}: ER({group}) %{{y:.3f}}<extra></extra>",
                    ),
                    row=1,
                    col=col,
                )
        fig.update_yaxes(title_text="error rate", rangemode="tozero", row=1, col=1)
        fig.update_layout(
            barmode="group",
            title="Per-group error rates, counterfactual pairs (mean across languages)",
            height=520,
            width=max(700, 250 + 160 * e["metric"].nunique() * len(blocks)),
        )
        _caption(fig, _wrap(CAPTIONS["fig11_group_error_rates"]))
        out["fig11_group_error_rates"] = fig

    s = result.scores
    if not s.empty:
        fig = go.Figure()
        colors = {"F": "#d62728", "M": "#1f77b4", "N": "#2ca02c", "G": "#9467bd"}
        for form, sub in s.groupby("form", sort=False):
            fig.add_trace(
                go.Box(
                    x=sub["metric"], y=sub["score"], name=f"h_{form}", marker_color=colors.get(form), boxpoints=False
                )
            )
        fig.update_layout(
            boxmode="group",
            title="Raw scores per metric and form (ambiguous sources)",
            xaxis_title="metric",
            yaxis_title="score",
            height=540,
            width=max(700, 300 + 120 * s["metric"].nunique()),
        )
        _caption(fig, _wrap(CAPTIONS["fig9_score_distributions"]))
        out["fig9_score_distributions"] = fig
    return out


def summary(result: PaperResult) -> str:
    lines = [
        f"paper 003 tables from {len(result.runs)} audit run(s): "
        + ", ".join(f"{r['metric']} ({r['kind']}, {r['context']}, {r['hypotheses']})" for r in result.runs)
    ]
    for row in result.table8.itertuples():
        if row.aggregate == "language" or row.lang == Q.MEAN:
            mark = f" {WARNING_MARK}" if row.warning else ""
            lines.append(
                f"  Table 8 {row.metric} [{row.hypotheses}] {row.lang}: QE(s_F,h_F)/QE(s_M,h_M) "
                f"{row.mean_ratio:.4f}, n {row.n_pairs}, one-sided p {row.p_value:.3g}{mark}"
            )
    for row in result.figure11.itertuples():
        if row.lang == Q.MEAN:
            lines.append(
                f"  Figure 11 {row.metric} [{row.hypotheses}]: ER(S^F) {row.er_f:.3f}, ER(S^M) {row.er_m:.3f} "
                f"(n {row.n_f} / {row.n_m}, mean across languages)"
            )
    for row in result.tradeoff.itertuples():
        lines.append(
            f"  Figure 4 {row.label}: ER {row.er:.3f}, |1 - ratio| {row.gap_ambiguous:.4f}"
            f"{' (Pareto)' if row.pareto_ambiguous else ''}, |1 - Phi| {row.gap_unambiguous:.3f}"
            f"{' (Pareto)' if row.pareto_unambiguous else ''}"
        )
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def write_outputs(result: PaperResult, out_dir, include_plotlyjs="directory", png: bool | None = None) -> list[Path]:
    """table8.csv, table8_marks.csv, figure11.csv, fig4_tradeoff.csv, score_distributions.csv, paper.json (the
    runs, captions and notes), captions.md and the figures."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = write_tables(
        out,
        {
            "table8.csv": result.table8,
            "table8_marks.csv": result.table8_marks,
            "figure11.csv": result.figure11,
            "fig4_tradeoff.csv": result.tradeoff,
            "score_distributions.csv": result.distributions,
        },
    )
    figs = figures(result)
    paths.append(write_json(out / "paper.json", {"runs": result.runs, "captions": CAPTIONS, "notes": result.notes}))
    caption_lines = [f"- `{name}`: {CAPTIONS[name]}" for name in ("table8", *figs)]
    (out / "captions.md").write_text(
        "# Paper 003 tables and figures\n\n" + "\n".join(caption_lines) + "\n", encoding="utf-8"
    )
    paths.append(out / "captions.md")
    paths += write_figures(figs, out, include_plotlyjs, png, notes=result.notes)
    return paths


def run_cli(
    folders: Sequence[str], out_dir, n_resamples: int = Q.N_RESAMPLES, seed: int = Q.SEED, png: bool | None = None
) -> tuple[PaperResult, list[Path]]:
    """The runs named on the command line ('FOLDER' or 'HYPOTHESES=FOLDER') -> outputs."""
    runs = []
    for text in folders:
        label, folder = parse_run_argument(text)
        runs.append(load_run(folder, label))
    result = paper_results(runs, n_resamples=n_resamples, seed=seed)
    return result, write_outputs(result, out_dir, png=png)
