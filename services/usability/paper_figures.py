"""Paper 000's tables and figures that the main analysis (services/usability/analysis.py) does
not draw, each from the app's own data:

* Table 3 (appendix; section 2.2: "Appendix Table 3 reports examples and statistics"): the
  starters per domain x corpus (with its natural/synthetic source): how many, their length in
  words (whitespace tokens of the text), their key-information spans (the starter's key_spans)
  and the comprehension questions in use per starter, each as mean and sd (ddof 1), plus one
  row for all starters. From the stored study (study_starter_statistics) or any starters and
  question-count tables (starter_statistics).
* Figure 2b (section 4.2: "Figure 2(b) shows some of the resulting coefficients"): the
  usability LMM's fixed effects but the intercept with their 95% Wald CIs, in Table 4's order
  top to bottom. The paper shows "some" of them without saying which: all are shown here.
* Figure 10 (section 4.2: "see per-model mu(u) in Appendix Figure 10"): the mean informed
  usability u per system with its 95% CI (Student t on the standard error of the mean,
  scipy.stats.t.interval), best first. The paper does not say which interval its figure
  draws; the caption says this one.

Each figure's title is its caption: what it shows, its interval and its data.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from scipy import stats

from services.common.analysis_output import write_tables
from storage.usability import corpus as usability_corpus

STARTER_COLUMNS = [
    "domain",
    "corpus",
    "source",
    "starters",
    "words_mean",
    "words_sd",
    "key_spans_mean",
    "key_spans_sd",
    "questions_mean",
    "questions_sd",
    "questions_total",
]
MODEL_MEAN_COLUMNS = ["system", "n", "mu_u", "sigma_u", "ci_low", "ci_high"]
ALL = "(all)"


class PaperTableError(ValueError):
    """Input that cannot make one of these tables (what is missing is named)."""


# ---------------------------------------------------------------------------------------------
# Table 3


def starter_statistics(starters: pd.DataFrame, question_counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Table 3's statistics (STARTER_COLUMNS). starters: id, domain, source, corpus, text,
    key_spans (a list per starter); question_counts: starter_id, questions (a starter without a
    row has none)."""
    missing = [c for c in ("id", "domain", "source", "corpus", "text", "key_spans") if c not in starters.columns]
    if missing:
        raise PaperTableError(f"starters: missing column(s) {', '.join(missing)}")
    if starters.empty:
        raise PaperTableError("no starters: the study has none to describe")
    s = starters.assign(words=starters["text"].str.split().str.len(), key_spans_n=starters["key_spans"].map(len))
    counts = (
        question_counts.set_index("starter_id")["questions"]
        if question_counts is not None and len(question_counts)
        else pd.Series(dtype=float)
    )
    s["questions_n"] = s["id"].map(counts).fillna(0).astype(int)
    s["corpus"] = s["corpus"].fillna("").replace("", "(none)")

    def describe(g: pd.DataFrame) -> dict:
        return {
            "starters": len(g),
            "words_mean": g["words"].mean(),
            "words_sd": g["words"].std(),
            "key_spans_mean": g["key_spans_n"].mean(),
            "key_spans_sd": g["key_spans_n"].std(),
            "questions_mean": g["questions_n"].mean(),
            "questions_sd": g["questions_n"].std(),
            "questions_total": int(g["questions_n"].sum()),
        }

    rows = [
        {"domain": d, "corpus": c, "source": src, **describe(g)}
        for (d, c, src), g in s.groupby(["domain", "corpus", "source"], sort=True)
    ]
    rows.append({"domain": ALL, "corpus": ALL, "source": ALL, **describe(s)})
    return pd.DataFrame(rows, columns=STARTER_COLUMNS)


# ---------------------------------------------------------------------------------------------
# Figure 10


def model_means(d: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Mean u per system (MODEL_MEAN_COLUMNS), best first: n, mean, sd (ddof 1) and the t
    interval of the mean (empty with one exchange)."""
    for c in ("system", "u"):
        if c not in d.columns:
            raise PaperTableError(f"exchanges: missing column {c!r}")
    rows = []
    for system, u in d.dropna(subset=["u"]).groupby("system")["u"]:
        n, mu, sd = len(u), u.mean(), u.std()
        lo, hi = (
            stats.t.interval(confidence, n - 1, loc=mu, scale=stats.sem(u)) if n > 1 else (float("nan"), float("nan"))
        )
        rows.append({"system": system, "n": n, "mu_u": mu, "sigma_u": sd, "ci_low": lo, "ci_high": hi})
    out = pd.DataFrame(rows, columns=MODEL_MEAN_COLUMNS)
    return out.sort_values(["mu_u", "system"], ascending=[False, True], kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# figures


def _bars(frame: pd.DataFrame, col: str) -> dict:
    return dict(
        type="data", symmetric=False, array=frame["ci_high"] - frame[col], arrayminus=frame[col] - frame["ci_low"]
    )


def lmm_coefficients_figure(table: pd.DataFrame, n: int, reference: dict):
    """Figure 2b from the usability LMM's fixed-effects table (LMM_COLUMNS)."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    t = table[table["term"] != "Intercept"].iloc[::-1]  # Table 4's first term on top
    fig = go.Figure(
        go.Scatter(
            x=t["estimate"],
            y=t["term"],
            mode="markers",
            error_x=_bars(t, "estimate"),
            customdata=t[["p_value"]],
            hovertemplate="%{y}: %{x:.3f} (p %{customdata[0]:.3g})<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_dash="dot", line_color="grey")
    ref = ", ".join(f"{k} {v}" for k, v in reference.items())
    fig.update_layout(
        title="Figure 2b (paper 000): usability LMM, fixed effects on u with 95% Wald CIs"
        # plotly does not wrap a title: the reference levels (as many as the model's factors) get
        # a line of their own so the subtitle stays inside the figure
        f"<br><sup>REML, {n} exchanges; the intercept is left out; all terms shown"
        f"<br>each term against the reference level: {ref}</sup>",
        xaxis_title="effect on u (1-5 scale)",
        height=max(420, 28 * len(t) + 200),
        margin=dict(t=110),
        width=900,
    )
    return fig


def model_means_figure(means: pd.DataFrame):
    """Figure 10 from model_means."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Bar(
            x=means["system"],
            y=means["mu_u"],
            error_y=_bars(means, "mu_u"),
            text=[f"{v:.2f}" for v in means["mu_u"]],
            textposition="outside",
            customdata=means[["n"]],
            hovertemplate="%{x}: %{y:.3f} (n %{customdata[0]})<extra></extra>",
        )
    )
    fig.update_layout(
        title="Figure 10 (paper 000): mean usability u per translation model"
        "<br><sup>informed survey, every exchange; bars: 95% t interval of the mean; best first</sup>",
        yaxis_title="mean u",
        yaxis_range=[1, 5.3],
        height=450,
        width=max(600, 120 * len(means) + 200),
    )
    return fig


def figures(result) -> dict:
    """lmm_coefficients (when the usability LMM was fitted) and model_means, from an
    analysis.UsabilityResult."""
    out = {}
    if result.lmm is not None:
        out["lmm_coefficients"] = lmm_coefficients_figure(result.lmm.table, result.lmm.n, result.lmm.reference)
    out["model_means"] = model_means_figure(model_means(result.data))
    return out


# ---------------------------------------------------------------------------------------------
# the stored study


def study_starter_statistics(database, study_id: str) -> pd.DataFrame:
    """Table 3 of a stored study: its starters and the questions in use per starter."""
    starters = pd.DataFrame(usability_corpus.starters(database, study_id))
    if starters.empty:
        raise PaperTableError(f"study {study_id!r} has no starters")
    counts = pd.DataFrame(usability_corpus.question_counts(database, study_id), columns=["starter_id", "questions"])
    return starter_statistics(starters, counts)


def write_study_starter_statistics(database, study_id: str, out_dir) -> Path:
    """starter_statistics.csv (Table 3) of a stored study in out_dir."""
    return write_tables(Path(out_dir), {"starter_statistics.csv": study_starter_statistics(database, study_id)})[0]
