"""Paper 000's results from a stored study, in the paper's order: Table 1 (section 2.5), Figures
2a-c (4.1-4.2), Figures 3a-c (4.3), Table 2 (4.4), Figure 4 (5), then the appendix: Table 3,
Figure 10, Figure 11 (C.1) and Table 4 (C.2). Precision as the paper prints it: two decimals in
Tables 1-3, three in Table 4."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.metrics import exchange as exchange_metrics
from services.report.sections import Part, fill
from services.usability import analysis as usability_analysis
from services.usability import export as usability_export
from services.usability import paper_figures
from services.usability import study_analysis as usability_study
from storage import studies
from storage.usability import question_drafts

TITLE = "Usability of the four-phase study (paper 000)"
ITEMS = [
    (
        "Table 1",
        "5-point Likert usability scores by language group: satisfaction (S), trust (T) and reliance "
        "(R) averaged into u; group mean μ(u), standard deviation σ(u) and the shift Δu from the "
        "baseline survey; the baseline (b) beneath each group.",
        "2.5",
    ),
    ("Figure 2a", "Distribution of the usability u by language group and gender (informed survey).", "4.1"),
    ("Figure 2b", "Usability LMM: fixed effects on u with 95% Wald CIs (full table: Table 4).", "4.2"),
    ("Figure 2c", "Marginal means of u per group x gender estimated by the LMM (95% CI).", "4.2"),
    ("Figure 3a", "LMM of the validator's SQM score: fixed effects with 95% Wald CIs.", "4.3"),
    ("Figure 3b", "Marginal means of the validator's score per group x gender (95% CI).", "4.3"),
    ("Figure 3c", "The validator's score (and the QA score) by translation model and topic.", "4.3"),
    (
        "Table 2",
        "Quality metrics' effect on usability u: from an LMM (e) and from OLS fits within the low, "
        "medium and high translation-score tertiles; each metric rescaled to [0, 1] (worst to best "
        "observed), covariates held constant.",
        "4.4",
    ),
    (
        "Figure 4",
        "Quality signals mapped onto usability: isotonic fit of u on each signal and where it crosses u = 4.",
        "5",
    ),
    (
        "Table 3",
        "Starters per domain x corpus: words, key-information spans and questions per starter (mean, sd).",
        "appendix, 2.2",
    ),
    ("Figure 10", "Mean usability μ(u) per translation model (95% t interval).", "appendix, 4.2"),
    ("Figure 11", "Spearman's ρ between usability u and the translation quality metrics.", "appendix C.1"),
    (
        "Table 4",
        "Fixed-effect estimates of the LMM predicting u; 95% Wald CIs (p: Wald z, see the notes).",
        "appendix C.2",
    ),
]
DECIMALS = {"Table 4": 3}
NO_DATA = (
    "No exchanges with both surveys and a validation yet: this fills once senders have recorded, "
    "receivers answered, validators scored and senders rated at least 3 exchanges."
)


def table1(groups: pd.DataFrame, order: list[str] | None = None) -> pd.DataFrame:
    """Table 1's layout from the analysis's group table: per group the informed row and the
    baseline row (b) beneath it."""
    g = groups[groups["by"] == "group"].set_index("level")
    levels = [x for x in (order or []) if x in g.index] + sorted(x for x in g.index if x not in (order or []))
    rows = []
    for lv in levels:
        r = g.loc[lv]
        rows.append(
            {
                "group": lv,
                "S": r["S"],
                "T": r["T"],
                "R": r["R"],
                "μ(u)": r["mu_u"],
                "σ(u)": r["sigma_u"],
                "Δu": r["delta_u"],
                "n": int(r["n"]),
            }
        )
        rows.append(
            {
                "group": "b",
                "S": r["S_b"],
                "T": r["T_b"],
                "R": r["R_b"],
                "μ(u)": r["mu_ub"],
                "σ(u)": r["sigma_ub"],
                "Δu": float("nan"),
                "n": int(r["n"]),
            }
        )
    return pd.DataFrame(rows, columns=["group", "S", "T", "R", "μ(u)", "σ(u)", "Δu", "n"])


def table2(effects: pd.DataFrame) -> pd.DataFrame:
    e = effects.rename(
        columns={"effect_lmm": "e", "effect_low": "e_low", "effect_mid": "e_med", "effect_high": "e_high"}
    )
    return e[["signal", "e", "e_low", "e_med", "e_high", "p_lmm", "p_low", "p_mid", "p_high"]]


def table4(fit) -> pd.DataFrame:
    t = fit.table.rename(
        columns={
            "estimate": "Estimate",
            "std_error": "Std. Error",
            "p_value": "p",
            "ci_low": "2.5%",
            "ci_high": "97.5%",
        }
    )
    return t[["term", "Estimate", "Std. Error", "z", "p", "2.5%", "97.5%"]]


PAPER_QUESTIONS = (
    "Questions: paper 000 generated its questions in English and translated them into Portuguese "
    "with Gemini 2.5 Pro and its own prompts (section 2.3, appendix figures 7-8); the app does not "
    "use that model or those prompts."
)


def questions_note(database, study_id: str) -> str:
    """Where this study's questions in use came from, beside how the paper made its own (issue 50,
    point 5): imported with the study's files, generated by the app (its own prompts, the
    configured model), or edited by the team."""
    in_use = sum(question_drafts.question_counts(database, study_id).values())
    parts, drafted = [], 0
    for r in question_drafts.accepted_origins(database, study_id):
        drafted += r["n"]
        if r["origin"] == "generated":
            parts.append(f"{r['n']} generated by the app with its own prompts ({r['model'] or 'model not recorded'})")
        elif r["origin"] == "edited":
            parts.append(f"{r['n']} edited by the study team")
        else:
            parts.append(f"{r['n']} imported with the study's files")
    if in_use > drafted:  # imported questions not reviewed yet have no draft
        parts.append(f"{in_use - drafted} imported with the study's files and not reviewed in the app")
    made = "; ".join(parts) if in_use else "none yet"
    return f"{PAPER_QUESTIONS} This study's {in_use} questions in use: {made}."


def build(database, study_id: str, out_dir: Path, png: bool = False) -> Part:
    """Paper 000's part of the report; the analysis's own files under out_dir/usability (PNG
    copies of the figures too when png: kaleido, about 1 s each)."""
    part = Part("usability", TITLE)
    study = studies.get_study(database, study_id)
    if study is None:
        raise ValueError(f"There is no study '{study_id}'.")
    metric_lines = [
        questions_note(database, study_id),
        *exchange_metrics.report_lines(exchange_metrics.metrics_report(database, study_id)),
    ]
    content: dict = {}
    try:
        content["Table 3"] = paper_figures.study_starter_statistics(database, study_id)
    except paper_figures.PaperTableError as e:
        content["Table 3"] = f"No starters to describe ({e}): import a study with starters.csv."
    done = usability_study.analyse(database, study_id, png, out_dir=Path(out_dir) / "usability")
    part.detail = done
    if isinstance(done, str):
        if done.startswith("Too few"):
            df = usability_export.exchanges_frame(database, study_id)
            n = 0 if df is None else len(df)
            part.summary = f"{n} complete exchanges: too few for the analysis (it needs 3)."
            part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
            part.notes = metric_lines
        else:
            why = done.replace("**", "")
            part.summary = why
            part.sections = fill(ITEMS, content, why, DECIMALS)
        return part
    res, fig_list, files = done
    figs = dict(fig_list)
    order = list(study["config"].get("study", {}).get("groups") or [])
    content["Table 1"] = table1(res.groups, order)
    lmm_missing = f"The usability LMM was not fitted: {res.lmm_error}"
    score_missing = f"The score LMM was not fitted: {res.score_lmm_error}"
    content["Figure 2a"] = figs.get("u_distribution")
    content["Figure 2b"] = figs.get("lmm_coefficients", lmm_missing)
    content["Figure 2c"] = figs.get("marginal_means", lmm_missing)
    content["Figure 3a"] = figs.get("score_lmm", score_missing)
    content["Figure 3b"] = figs.get("score_marginal_means", score_missing)
    content["Figure 3c"] = figs.get("quality")
    no_signal = "No quality signal with values yet (translation score, QA score or an automatic metric)."
    content["Table 2"] = table2(res.metric_effects) if len(res.metric_effects) else no_signal
    content["Figure 4"] = figs.get("thresholds", no_signal)
    content["Figure 10"] = figs.get("model_means")
    content["Figure 11"] = figs.get("correlations")
    content["Table 4"] = table4(res.lmm) if res.lmm is not None else lmm_missing
    part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
    d = res.data
    part.summary = (
        f"{len(d)} exchanges, {d.loc[d['sender_id'] != '', 'sender_id'].nunique()} senders, "
        f"{d['receiver_id'].nunique()} receivers, {d['validator_id'].nunique()} validators; "
        f"signals: {', '.join(res.signals) or 'none'}."
    )
    part.notes = [usability_analysis.LME4_NOTE, *res.notes, *metric_lines]
    if res.lmm is not None and usability_analysis.small_sample_warning(res.lmm):
        part.notes.insert(0, usability_analysis.small_sample_warning(res.lmm))
    part.files = [Path(f) for f in files]
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (services/common/protocols.py, Protocol.report_section): the defaults."""
    return build(database, study_id, out_dir)
