"""Usability analysis of the situated speech-translation study (paper 000 sections 3-4 and
appendix C).

Input: one row per exchange (REQUIRED columns; the OPTIONAL ones and any ``metric_<name>``
columns, empty cells allowed there). Satisfaction, trust and reliance are the informed
survey's 5-point Likert answers (whole numbers 1..5), the ``_b`` columns the baseline
survey's; translation_score is the validator's DA+SQM score (0-100), qa_score the share of
correctly answered questions (0-1). sender_id, group and gender are the exchange's speaker
(its sender), also on the rows a third-person rater answered; they are empty for an exchange
without a sender (imported). The survey's respondent is respondent_id (without that column:
sender_id, every survey first-person), with their own role, group and gender in
respondent_role/_group/_gender (carried, not modelled); perspective is first|third;
starter_id the starter read, corpus its corpus (services/usability/export_tables.py,
ANALYSIS_TABLE, documents the columns the app writes).

Definitions (:func:`analyze`):

* u = mean(satisfaction, trust, reliance); u_b the same of the baseline items.
* groups: one row per level of ``all``, group, group x gender, gender, system, topic, source
  (and perspective when given): n, mean S/T/R, mu_u, sigma_u (ddof 1), mu_ub, delta_u =
  mu_u - mu_ub, usable_share = share of exchanges with u >= 4; then the baseline's S/T/R,
  sigma_ub and usable share. An empty group, gender or perspective is the level "(none)".
* rows a model can use: those with a sender, group and gender, and a corpus when the data have
  one (the perspective model: a perspective and a starter_id instead of the corpus); a column
  empty on every row is not asked for (its factor has a single level and is left out). The rows
  left out are counted by reason in the notes and
  the model's text file; the descriptive tables, correlations, thresholds and factor
  analysis keep every row.
* directions: translation_score and qa_score run higher-is-better; a metric_<name> column the
  way the metric registry's higher_is_better says (services.metrics.registry.higher_is_better:
  metricx, metricx-24-xl, metricx-23-* lower is better); a name it does not know counts as
  higher-is-better, with a note. Every table relating a signal to u carries higher_is_better.
* correlations: Spearman rho (scipy.stats.spearmanr) of u with translation_score, qa_score and
  every metric (rows where the signal is present), oriented (the sign flipped for a
  lower-is-better signal, as Figure 11 reports MetricX), spearman_rho_raw beside it; the heat
  map shows the pairwise Spearman matrix (pandas) of u, u_b and the signals, oriented the same way.
* LMM (section 4.2, Table 4; statsmodels MixedLM, REML): u ~ system + topic + corpus + u_b +
  group * gender with crossed random intercepts for sender, validator and receiver: one
  all-covering group and a variance component per id (statsmodels' documented way to get
  crossed effects). corpus is the starter's corpus, the factor Table 4 calls Source (BConTrasT,
  MED-MT, Gemini, Qwen 3); without a corpus column the natural/synthetic source stands in, with
  a note. Treatment coding; reference levels are the paper's (Hindi, Man, DeSTA2, Everyday,
  BConTrasT; matched ignoring case, spaces, hyphens and underscores, and for the system through
  assets/systems.toml: the preset id paper-desta2 or its label; match_level) where present,
  otherwise the alphabetically first level (``reference=`` overrides per factor: the study's
  usability.corpus_reference sets the corpus's); a default or requested level that is absent is
  noted (summary, lmm.txt) and lmm.csv's reference column names each term's reference level.
  A factor with one level is left out; design columns that are empty or collinear (e.g. a
  group x gender cell without senders) are dropped; both are reported. 95% Wald CIs; p-values
  from Wald z tests (statsmodels MixedLMResults.pvalues, normal reference), named in lmm.csv's
  test column. The paper fitted lme4 through pymer4, whose p-values are Satterthwaite t tests;
  that approximation is not re-implemented here. Under SMALL_SAMPLE_SENDERS senders the
  summary and lmm.txt warn that the group/gender p-values are anti-conservative (measured:
  benchmarks/usability/small_sample.py).
* score LMM (section 4.3, Figure 3a): the validator's translation_score ~ system + topic +
  corpus + group * gender with crossed random intercepts for sender and validator (the
  receiver never touches the translation scored; u_b, the sender's opinion, is no cause of it);
  the same fitting, coding and tests.
* perspective (paper 000 appendix A.1, first- vs third-person surveys): MixedLM, REML, of the
  informed survey's u ~ perspective + translation_score + qa_score + system + gender + group
  (the speaker's group and gender; reference perspective first) with crossed random
  intercepts for the respondent and the starter (the same all-covering group with variance
  components). Reported: every fixed effect with Wald z, p and 95% CI, and the first/third
  counts it used. Not fitted, with a note saying why, when there are no third-person (or no
  first-person) surveys among the rows it can use.
* marginal means per group x gender cell from each LMM (Figures 2c and 3b): the fixed-effects
  prediction averaged with equal weights over the levels of system, topic and corpus, u_b at
  its mean (emmeans' default reference grid), with Wald SE and CI (MixedLMResults.t_test).
* contrasts (section 4.2): pairs of those cells, a - b, with Wald z and p, and p_holm adjusted
  by Holm within each family (statsmodels multipletests; services/usability/contrasts.py): by
  default the group pairs within each gender and the gender pair within each group
  (holm_family="within"); "all": one family of every pair. contrasts.csv's family names it.
* metric effects: for every signal x rescaled to [0,1] by its observed min and max (reversed
  for lower-is-better metrics, see directions, so 1 is always the best observed quality;
  estimate_raw: the estimate per unit of the unreversed rescaled signal), effect_lmm = its coefficient when
  added to the LMM (one fit per signal, on the rows where it is present, started from the
  main fit's variance components); effect_low/mid/high = the coefficient of x in OLS of u on x
  and the LMM's fixed effects (system + topic + corpus + u_b + group * gender: Table 2's
  "holding other covariates constant") within the translation-score tertiles (pandas qcut;
  rank-based when tied scores make the cut points coincide), on the rows the LMM can use.
  metric_effect_estimates.csv has each with SE, statistic, test, 95% CI, n and covariates.
* thresholds: isotonic regression (scipy.optimize.isotonic_regression) of u on the raw
  signal (increasing; decreasing for lower-is-better), weighted by the count of each distinct
  value; the curve joins each block's weighted-mean signal value and fitted u; value_at_u4 is
  where the curve first reaches u = 4 (linear interpolation between the two points around
  it); empty when the curve never crosses 4 (or starts at or above it), with a note.
* factor analysis of S/T/R (informed) within respondents (respondent-mean-centred) and between
  them (respondent means): Bartlett's sphericity and KMO (factor_analyzer), Horn's parallel analysis
  (500 iterations, 95th percentile) and a one-factor ML solution (the extraction shared with
  the semantic-differential EFA, services/common/factor_extraction.py), whose variance
  explained is the sum of squared loadings / 3 (also the first eigenvalue's share).

Speed. statsmodels computes MixedLM's likelihood through a Woodbury solve that, for dense
variance-component designs, multiplies the full n x q design at every step (about 4-15 s per
fit at the paper's size on 2 cores); its sparse path solves column by column in Python (even
slower). While this module fits, the two module-level kernels (_smw_solver, _smw_logdet) are
swapped (services/usability/mixedlm.py, fast_mixedlm) for versions that do the same algebra
with the sparse design and a dense Cholesky factor of the q x q matrix, and A' and A'M of the
fixed design matrices computed once per fit rather than at every likelihood evaluation; they
defer to statsmodels' own for dense designs, and the tests check that the fit equals the
unpatched one. BLAS runs single-threaded meanwhile. Each per-signal LMM starts from the main
fit's estimates. (Fitting the per-signal
LMMs in parallel processes was tried and dropped: on the 2-core reference machine two
concurrent fits each ran 1.5-1.8x slower, memory-bound, for no net gain.)

Pure functions; statistics from statsmodels, scipy, factor_analyzer and pandas; figures
from plotly.
"""

from __future__ import annotations

import itertools
import math
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.optimize import isotonic_regression

from services.common import factor_extraction as FE
from services.common.analysis_input import InputError, Problems
from services.common.analysis_input import cells as _cells
from services.common.analysis_input import numbers as _numbers
from services.common.analysis_input import read_csv_cells as _read_csv
from services.common.analysis_output import write_json, write_tables
from services.common.figure_files import write_figures
from services.metrics import registry as metric_registry
from services.models import systems as st_systems
from services.study import export_reader
from services.usability import contrasts as C
from services.usability import export_input, paper_figures
from services.usability.mixedlm import fast_mixedlm

ID_COLUMNS = ["exchange_id", "sender_id", "receiver_id", "validator_id"]
FACTOR_COLUMNS = ["group", "gender", "system", "topic", "source"]
ITEMS = ["satisfaction", "trust", "reliance"]
BASELINE_ITEMS = ["satisfaction_b", "trust_b", "reliance_b"]
REQUIRED = ID_COLUMNS + FACTOR_COLUMNS + ITEMS + BASELINE_ITEMS + ["translation_score", "qa_score"]
OPTIONAL = [
    "perspective",
    "starter_id",
    "respondent_id",
    "respondent_role",
    "respondent_group",
    "respondent_gender",
    "corpus",
]
METRIC_PREFIX = "metric_"
PERSPECTIVES = ("first", "third")
SENDER_ATTRIBUTES = ("group", "gender")  # fixed per sender (between-subjects cells)
SPEAKER_COLUMNS = ("sender_id",) + SENDER_ATTRIBUTES  # empty for an exchange without a sender
NONE_LEVEL = "(none)"  # an empty group, gender or perspective in the tables
# what a model needs of a row, in the order the reasons are counted (column, reason when empty)
SPEAKER_NEEDS = (("sender_id", "no sender"), ("group", "no group"), ("gender", "no gender"))
MODEL_NEEDS = SPEAKER_NEEDS + (("corpus", "no corpus"),)
PERSPECTIVE_NEEDS = (("perspective", "no perspective"),) + SPEAKER_NEEDS + (("starter_id", "no starter_id"),)

# the paper's reference levels (Table 4); "source" only stands in when there is no corpus column
DEFAULT_REFERENCE = {
    "group": "Hindi",
    "gender": "Man",
    "system": "DeSTA2",
    "topic": "Everyday",
    "corpus": "BConTrasT",
    "source": "natural",
}
USABLE = 4.0
PA_ITERATIONS = 500
PA_PERCENTILE = 95.0
SEED = 0
RANDOM_EFFECTS = (("sender", "sender_id"), ("validator", "validator_id"), ("receiver", "receiver_id"))
# the receiver never touches the translation the validator scores, so the score model leaves it out
SCORE_EFFECTS = (("sender", "sender_id"), ("validator", "validator_id"))
FORMULA = "u ~ system + topic + corpus + u_b + group * gender"
SCORE_FORMULA = "translation_score ~ system + topic + corpus + group * gender"
WALD_Z = "Wald z (statsmodels MixedLM, REML; normal reference)"
OLS_T = "t (statsmodels OLS)"
LME4_NOTE = (
    "The paper fitted lme4 through pymer4, whose p-values are Satterthwaite t tests (lmerTest); "
    "statsmodels has no Satterthwaite approximation, so these are Wald z: the same estimates and "
    "SEs (REML), a slightly smaller p in small samples."
)
# Below this many senders the Wald z p-values of the group and gender terms (between-sender
# factors) are anti-conservative: benchmarks/usability/small_sample.py (null effects, the paper's
# crossed design) measured a false-positive rate at alpha .05 above 0.06 for every size under it
# (benchmarks/results/usability_small_sample.json; docs/usability-study.md cites the rates).
SMALL_SAMPLE_SENDERS = 36
PERSPECTIVE_EFFECTS = (("respondent", "respondent_id"), ("starter", "starter_id"))
PERSPECTIVE_FORMULA = "u ~ perspective + translation_score + qa_score + system + gender + group"
TERTILES = ("low", "mid", "high")

GROUP_COLUMNS = [
    "by",
    "level",
    "n",
    "S",
    "T",
    "R",
    "mu_u",
    "sigma_u",
    "mu_ub",
    "delta_u",
    "usable_share",
    "S_b",
    "T_b",
    "R_b",
    "sigma_ub",
    "usable_share_b",
]
CORRELATION_COLUMNS = ["signal", "higher_is_better", "spearman_rho", "spearman_rho_raw", "p_value", "n"]
LMM_COLUMNS = ["term", "estimate", "std_error", "z", "p_value", "ci_low", "ci_high", "test", "reference"]
EFFECT_COLUMNS = [
    "signal",
    "effect_lmm",
    "effect_low",
    "effect_mid",
    "effect_high",
    "p_lmm",
    "p_low",
    "p_mid",
    "p_high",
    "n_lmm",
    "n_low",
    "n_mid",
    "n_high",
    "orientation",
    "min",
    "max",
    "higher_is_better",
]
THRESHOLD_COLUMNS = ["signal", "value_at_u4", "orientation", "n", "note", "higher_is_better"]
MARGINAL_COLUMNS = ["group", "gender", "mean", "std_error", "ci_low", "ci_high", "n"]
ESTIMATE_COLUMNS = [
    "signal",
    "fit",
    "estimate",
    "std_error",
    "statistic",
    "p_value",
    "ci_low",
    "ci_high",
    "n",
    "test",
    "covariates",
    "higher_is_better",
    "estimate_raw",
]
PERSPECTIVE_COLUMNS = ["term", "estimate", "std_error", "z", "p_value", "ci_low", "ci_high", "n_first", "n_third"]
_EPS = 1e-9


class UsabilityInputError(InputError):
    """Bad exchanges input (file, row, column named)."""


class UsabilityAnalysisError(ValueError):
    """The data cannot support a model (e.g. too few rows for the LMM)."""


@dataclass
class LMMFit:
    table: pd.DataFrame  # LMM_COLUMNS, fixed effects
    terms: list[str]  # design columns (readable names), in order
    formula: str
    n: int
    variance_components: dict  # name -> {"variance", "levels"}
    residual_variance: float
    converged: bool
    llf: float
    reference: dict
    dropped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    factors: dict = field(default_factory=dict)  # factor -> levels (reference first) in the model
    u_b_mean: float = math.nan
    result: Any = None  # statsmodels MixedLMResults (statsmodels has no types)
    seconds: float = 0.0
    rows_left_out: dict = field(default_factory=dict)  # reason -> rows the model could not use
    rows_total: int = 0  # rows before those were left out
    outcome: str = "u"
    covariate_means: dict = field(default_factory=dict)  # numeric covariate -> its mean (marginal means' grid)
    reference_notes: list = field(default_factory=list)  # reference levels absent from the data (who stands in)


@dataclass
class PerspectiveResult:
    """Paper 000 appendix A.1: first- vs third-person surveys."""

    table: pd.DataFrame  # PERSPECTIVE_COLUMNS; empty when not fitted
    fit: LMMFit | None
    counts: dict  # perspective -> surveys in the data
    note: str = ""  # why it was not fitted


@dataclass
class UsabilityResult:
    data: pd.DataFrame  # normalised input with u and u_b
    signals: list[str]
    groups: pd.DataFrame
    correlations: pd.DataFrame
    correlation_matrix: pd.DataFrame
    lmm: LMMFit | None
    marginal_means: pd.DataFrame
    metric_effects: pd.DataFrame
    thresholds: pd.DataFrame
    threshold_curves: dict  # signal -> DataFrame(x, u) of the monotone curve
    factor: dict
    notes: list[str] = field(default_factory=list)
    lmm_error: str | None = None
    timings: dict = field(default_factory=dict)
    perspective: PerspectiveResult | None = None
    score_lmm: LMMFit | None = None  # section 4.3: the validator's score (DA+SQM)
    score_lmm_error: str | None = None
    score_marginal_means: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=MARGINAL_COLUMNS))
    contrasts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=C.CONTRAST_COLUMNS))
    effect_estimates: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ESTIMATE_COLUMNS))
    holm_family: str = C.DEFAULT_HOLM_FAMILY


# ---------------------------------------------------------------------------------------------
# input


def _Problems(columns) -> Problems:
    return Problems(columns, UsabilityInputError)


def metric_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if str(c).startswith(METRIC_PREFIX) and len(str(c)) > len(METRIC_PREFIX)]


def normalise(df: pd.DataFrame, source: str = "<DataFrame>") -> pd.DataFrame:
    """Check an exchanges table and return it typed (ids and factors as stripped str, items,
    scores and metrics float, perspective lower-case or '') with u and u_b added, and
    respondent_id, respondent_role/_group/_gender and starter_id ('' when not given;
    respondent_id is sender_id when the column is missing). Raises UsabilityInputError naming
    source, row (the first data row is row 2, as in a CSV with a header) and column: a missing
    column, an empty id or factor (the speaker's sender_id, group and gender may be empty: an
    exchange without a sender), an empty respondent, a repeated exchange_id, a Likert answer
    that is not a whole number in 1..5, translation_score outside 0-100, qa_score outside 0-1,
    a metric that is not a number, a perspective other than first/third, or a sender whose
    group or gender differs between rows."""
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise UsabilityInputError(
            source, 1, missing[0], f"missing column (required: {', '.join(REQUIRED)}; missing: {', '.join(missing)})"
        )
    df = df.reset_index(drop=True)
    out = pd.DataFrame(index=df.index)
    problems = _Problems(df.columns)
    for col in ID_COLUMNS + FACTOR_COLUMNS:
        out[col] = _cells(df[col])
        if col not in SPEAKER_COLUMNS:
            problems.flag(col, out[col] == "", lambda pos: "empty value")
    for col in OPTIONAL[1:]:  # (perspective is checked below)
        out[col] = _cells(df[col]) if col in df.columns else ""
    if "respondent_id" in df.columns:
        problems.flag(
            "respondent_id", out["respondent_id"] == "", lambda pos: "empty value (who answered the surveys?)"
        )
    else:
        out["respondent_id"] = out["sender_id"]
        problems.flag(
            "sender_id",
            out["sender_id"] == "",
            lambda pos: "empty value (without a respondent_id column the sender answered the surveys)",
        )
    dup = (out["exchange_id"] != "") & out["exchange_id"].duplicated(keep="first")
    problems.flag("exchange_id", dup, lambda pos: f"exchange_id {out.at[pos, 'exchange_id']!r} repeats an earlier row")

    def number(col, lo, hi, whole=False, allow_empty=False):
        raw = df[col]
        cells = _cells(raw) if not pd.api.types.is_numeric_dtype(raw) else None
        v = _numbers(raw)
        empty = (cells == "") if cells is not None else raw.isna()
        bad_num = ~np.isfinite(v) & ~(empty & allow_empty)
        problems.flag(
            col,
            bad_num,
            lambda pos: (
                f"{col} is empty" if bool(np.asarray(empty)[pos]) else f"{col} {str(raw.iloc[pos])!r} is not a number"
            ),
        )
        if lo is not None:
            fin = np.isfinite(v)
            out_range = fin & ((v < lo) | (v > hi) | ((v != np.round(v)) if whole else False))
            what = f"a whole number in {lo:g}..{hi:g}" if whole else f"in {lo:g}-{hi:g}"
            problems.flag(col, out_range, lambda pos: f"{col} {v.iloc[pos]:g} is not {what}")
        out[col] = v

    for col in ITEMS + BASELINE_ITEMS:
        number(col, 1, 5, whole=True)
    number("translation_score", 0, 100)
    number("qa_score", 0, 1)
    metrics = metric_columns(df)
    for col in metrics:
        number(col, None, None, allow_empty=True)
    if "perspective" in df.columns:
        p = _cells(df["perspective"]).str.lower()
        problems.flag(
            "perspective",
            ~p.isin(PERSPECTIVES + ("",)),
            lambda pos: f"perspective {str(df['perspective'].iloc[pos])!r} is not first or third",
        )
        out["perspective"] = p
    for col in SENDER_ATTRIBUTES:
        ok = (out["sender_id"] != "") & (out[col] != "")
        first = out[col].where(ok).groupby(out["sender_id"]).transform("first")
        differs = ok & (out[col] != first)
        problems.flag(
            col,
            differs,
            lambda pos, col=col: (
                f"{col} {out.at[pos, col]!r} differs from "
                f"{first.iloc[pos]!r} on sender "
                f"{out.at[pos, 'sender_id']!r}'s "
                f"earlier rows (a sender belongs to one {col})"
            ),
        )
    problems.raise_first(source)
    out["u"] = out[ITEMS].mean(axis=1)
    out["u_b"] = out[BASELINE_ITEMS].mean(axis=1)
    return out


def read_exchanges(path) -> pd.DataFrame:
    """Read an exchanges CSV and normalise it (REQUIRED columns; unknown columns are ignored), or
    a study's export (its folder or its exchanges table, any of the export's formats: the
    ratings and scores joined from its other tables, services/usability/export_input.py)."""
    path = Path(path)
    export = export_reader.find(path)
    if export is not None and export.table in (None, export_input.TABLE):
        df = export_input.exchanges(export)
        path = export.folder
    else:
        df = _read_csv(path, UsabilityInputError)
    out = normalise(df, str(path))
    if out.empty:
        raise UsabilityInputError(path, 2, None, "no exchanges (only a header row)")
    return out


def _prepared(df: pd.DataFrame, source: str) -> pd.DataFrame:
    if "u" in df.columns and "u_b" in df.columns and df.attrs.get("usability_normalised"):
        return df
    out = normalise(df, source)
    out.attrs["usability_normalised"] = True
    return out


# ---------------------------------------------------------------------------------------------
# descriptive tables


def labelled(s: pd.Series) -> pd.Series:
    """A factor as the tables and figures show it: an empty value is NONE_LEVEL."""
    return s.where(s != "", NONE_LEVEL)


def group_table(d: pd.DataFrame) -> pd.DataFrame:
    """groups.csv (GROUP_COLUMNS): 'all', then per group, group x gender, gender, system, topic,
    source and perspective (when present); levels sorted, an empty one as NONE_LEVEL; several
    keys joined with ' x '."""
    dims = [
        ("all", []),
        ("group", ["group"]),
        ("group x gender", ["group", "gender"]),
        ("gender", ["gender"]),
        ("system", ["system"]),
        ("topic", ["topic"]),
        ("source", ["source"]),
    ]
    if "perspective" in d.columns and (d["perspective"] != "").any():
        dims.append(("perspective", ["perspective"]))
    frames = []
    x = d.assign(
        _usable=(d["u"] >= USABLE - _EPS).astype(float), _usable_b=(d["u_b"] >= USABLE - _EPS).astype(float), _all="all"
    )
    for k in ("group", "gender", "perspective"):
        if k in x.columns:
            x[k] = labelled(x[k])
    for by, keys in dims:
        g = x.groupby(keys or ["_all"], sort=True)
        t = pd.DataFrame(
            {
                "n": g.size(),
                "S": g["satisfaction"].mean(),
                "T": g["trust"].mean(),
                "R": g["reliance"].mean(),
                "mu_u": g["u"].mean(),
                "sigma_u": g["u"].std(ddof=1),
                "mu_ub": g["u_b"].mean(),
                "usable_share": g["_usable"].mean(),
                "S_b": g["satisfaction_b"].mean(),
                "T_b": g["trust_b"].mean(),
                "R_b": g["reliance_b"].mean(),
                "sigma_ub": g["u_b"].std(ddof=1),
                "usable_share_b": g["_usable_b"].mean(),
            }
        )
        t["delta_u"] = t["mu_u"] - t["mu_ub"]
        idx = t.index
        t["level"] = [" x ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in idx]
        t["by"] = by
        frames.append(t.reset_index(drop=True))
    out = pd.concat(frames, ignore_index=True)[GROUP_COLUMNS]
    out["n"] = out["n"].astype(int)
    return out


def signal_columns(d: pd.DataFrame) -> list[str]:
    return ["translation_score", "qa_score"] + metric_columns(d)


def signal_directions(signals, lower_is_better=None, notes: list[str] | None = None) -> dict:
    """signal -> higher_is_better. translation_score (DA+SQM) and qa_score (share correct): higher
    is better. metric_<name>: the metric registry's higher_is_better (registry.higher_is_better:
    the metric's class, a checkpoint's family's; metricx, metricx-24-xl, metricx-23-*: False);
    a name the registry does not know is taken as higher-is-better, noted. ``lower_is_better``, a
    list of name fragments, overrides: a signal whose name contains one is lower-is-better."""
    out = {}
    for s in signals:
        if lower_is_better is not None:
            out[s] = not any(str(k).lower() in s.lower() for k in lower_is_better)
        elif not s.startswith(METRIC_PREFIX):
            out[s] = True
        else:
            known = metric_registry.higher_is_better(s[len(METRIC_PREFIX) :])
            out[s] = True if known is None else known
            if known is None and notes is not None:
                notes.append(
                    f"{s}: a metric the registry does not know; taken as higher is better (pass "
                    f"lower_is_better to say otherwise)"
                )
    return out


def _orientation(higher: bool) -> str:
    return "higher is better" if higher else "lower is better"


def correlations(d: pd.DataFrame, signals: list[str] | None = None, directions: dict | None = None) -> pd.DataFrame:
    """correlations.csv: Spearman rho of u with each signal (scipy.stats.spearmanr on the rows
    where the signal is present), oriented so that higher is better (spearman_rho: the raw rho
    negated for a lower-is-better signal, as Figure 11 shows MetricX), the raw rho beside it."""
    signals = signals if signals is not None else signal_columns(d)
    directions = directions or signal_directions(signals)
    rows = []
    for s in signals:
        ok = d[s].notna()
        n = int(ok.sum())
        sign = 1.0 if directions[s] else -1.0
        if n >= 3 and d.loc[ok, s].nunique() > 1 and d.loc[ok, "u"].nunique() > 1:
            r = stats.spearmanr(d.loc[ok, "u"], d.loc[ok, s])
            rows.append([s, directions[s], sign * float(r.statistic), float(r.statistic), float(r.pvalue), n])
        else:
            rows.append([s, directions[s], math.nan, math.nan, math.nan, n])
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def correlation_matrix(
    d: pd.DataFrame, signals: list[str] | None = None, directions: dict | None = None, oriented: bool = True
) -> pd.DataFrame:
    """Pairwise Spearman (pandas) of u, u_b and the signals; oriented (default): a lower-is-better
    signal's row and column negated, so every signal reads higher = better (Figure 11)."""
    signals = signals if signals is not None else signal_columns(d)
    m = d[["u", "u_b"] + signals].corr(method="spearman")
    if oriented:
        directions = directions or signal_directions(signals)
        sign = pd.Series([1.0, 1.0] + [1.0 if directions[s] else -1.0 for s in signals], index=m.index)
        m = m.mul(sign, axis=0).mul(sign, axis=1)
    return m


# ---------------------------------------------------------------------------------------------
# linear mixed model


def model_rows(d: pd.DataFrame, needs=MODEL_NEEDS) -> tuple[pd.DataFrame, dict]:
    """The rows a model can use: a value in every column of ``needs`` ((column, reason) pairs;
    a column empty on every row, or missing, is not asked for). Returns them and the rows
    left out per reason (each row counted once, under the first reason that applies)."""
    keep = pd.Series(True, index=d.index)
    left: dict[str, int] = {}
    for col, reason in needs:
        if col not in d.columns or not (d[col] != "").any():
            continue
        miss = keep & (d[col] == "")
        if miss.any():
            left[reason] = int(miss.sum())
            keep &= ~miss
    return d[keep], left


def left_out_text(left: dict, total: int) -> str:
    """'12 of 20 rows left out (no sender: 12)'; '' when none were."""
    if not left:
        return ""
    reasons = ", ".join(f"{k}: {v}" for k, v in left.items())
    return f"{sum(left.values())} of {total} rows left out ({reasons})"


def _spelling(text) -> str:
    """A level as matched: case, spaces, hyphens and underscores ignored ('Qwen 3' = 'qwen-3')."""
    return re.sub(r"[\s_-]+", "", str(text)).casefold()


def _words(text) -> list[str]:
    return re.findall(r"[a-z0-9+]+", str(text).casefold())


def _system_names(level: str) -> tuple[list[str], list[str]]:
    """A system level's names (the level, and its preset's id when the level is a preset's label)
    and labels (its preset's label when the level is a preset id, or the level itself when it is
    one): assets/systems.toml, e.g. paper-desta2 / "Direct: DeSTA2 (paper 000)"."""
    presets = st_systems.presets()
    names, labels = [level], []
    if isinstance(presets.get(level), dict) and presets[level].get("label"):
        labels.append(presets[level]["label"])
    for pid, cfg in presets.items():
        if isinstance(cfg, dict) and _spelling(cfg.get("label", "")) == _spelling(level):
            names.append(pid)
            labels.append(cfg["label"])
    return names, labels


def match_level(levels: list[str], want, factor: str = "") -> str | None:
    """The level of ``levels`` that ``want`` names, or None: spelled alike ignoring case, spaces,
    hyphens and underscores; for the system factor also through assets/systems.toml, a preset's
    id or its label (the paper's "DeSTA2" is the level `paper-desta2`, whose label is "Direct:
    DeSTA2 (paper 000)": want's words in order within the label). An exact spelling wins; a want
    that several levels answer only through their labels matches none of them."""
    if want in (None, ""):
        return None
    exact = [lv for lv in levels if _spelling(lv) == _spelling(want)]
    if exact or factor != "system":
        return exact[0] if exact else None
    by_name, by_label = [], []
    w = _words(want)
    for lv in levels:
        names, labels = _system_names(lv)
        if any(_spelling(n) == _spelling(want) for n in names):
            by_name.append(lv)
        elif w and any(any(ws[i : i + len(w)] == w for i in range(len(ws) - len(w) + 1)) for ws in map(_words, labels)):
            by_label.append(lv)
    if by_name:
        return by_name[0]
    return by_label[0] if len(by_label) == 1 else None


def _levels(d: pd.DataFrame, col: str, reference: dict) -> list[str]:
    levels = sorted(d[col].unique().tolist())
    ref = match_level(levels, reference.get(col), col)
    if ref is not None:
        levels.remove(ref)
        levels.insert(0, ref)
    return levels


def corpus_factor(rows: pd.DataFrame) -> str:
    """The factor Table 4 calls "Source": the starter's corpus (BConTrasT, MED-MT, Gemini, Qwen 3
    in the paper). The natural/synthetic ``source`` stands in only when there is no corpus (no
    such column, or empty on every row)."""
    return "corpus" if "corpus" in rows.columns and (rows["corpus"] != "").any() else "source"


@dataclass(frozen=True)
class ModelSpec:
    """One of the paper's LMMs: outcome ~ system + topic + corpus [+ covariates] + group * gender
    with crossed random intercepts (``effects``: (name, id column) pairs)."""

    outcome: str
    covariates: tuple
    effects: tuple
    what: str

    def context(self, rows: pd.DataFrame) -> tuple:
        return ("system", "topic", corpus_factor(rows))

    def formula(self, context) -> str:
        return f"{self.outcome} ~ " + " + ".join([*context, *self.covariates, "group * gender"])


USABILITY_MODEL = ModelSpec("u", ("u_b",), RANDOM_EFFECTS, "the LMM")  # section 4.2, Table 4
SCORE_MODEL = ModelSpec("translation_score", (), SCORE_EFFECTS, "the score LMM")  # section 4.3, Figure 3


def _design(rows: pd.DataFrame, factors: dict, covariates=("u_b",)) -> pd.DataFrame:
    """Treatment-coded fixed-effects design: Intercept, the context factors' dummies (system,
    topic, corpus: every factor but group and gender, in ``factors``' order), the numeric
    covariates, group and gender dummies, group x gender products. ``factors``: factor ->
    levels (reference first)."""
    cols = {"Intercept": np.ones(len(rows))}
    for f, levels in factors.items():
        if f not in SENDER_ATTRIBUTES:
            for lv in levels[1:]:
                cols[f"{f}: {lv}"] = (rows[f].to_numpy() == lv).astype(float)
    for c in covariates:
        cols[c] = rows[c].to_numpy(dtype=float)
    for f in SENDER_ATTRIBUTES:
        for lv in factors.get(f, [])[1:]:
            cols[f"{f}: {lv}"] = (rows[f].to_numpy() == lv).astype(float)
    for g in factors.get("group", [])[1:]:
        for s in factors.get("gender", [])[1:]:
            cols[f"group: {g} x gender: {s}"] = cols[f"group: {g}"] * cols[f"gender: {s}"]
    return pd.DataFrame(cols, index=rows.index)


def _full_rank_columns(x: np.ndarray, names: list[str]) -> tuple[list[int], list[str]]:
    if np.linalg.matrix_rank(x) == x.shape[1]:  # the usual case: one SVD, not one per column
        return list(range(x.shape[1])), []
    keep: list[int] = []
    dropped: list[str] = []
    for j, name in enumerate(names):
        trial = keep + [j]
        if np.linalg.matrix_rank(x[:, trial]) == len(trial):
            keep.append(j)
        else:
            dropped.append(name)
    return keep, dropped


def _vc_spec(d: pd.DataFrame, notes: list[str] | None = None, effects=RANDOM_EFFECTS):
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.regression.mixed_linear_model import VCSpec

    names, colnames, mats = [], [], []
    for name, col in effects:
        codes, uniques = pd.factorize(d[col], sort=True)
        if len(uniques) < 2:
            if notes is not None:
                notes.append(f"random intercept for {name} left out: a single {col}")
            continue
        mat = sparse.csr_array((np.ones(len(d)), (np.arange(len(d)), codes)), shape=(len(d), len(uniques)))
        names.append(name)
        colnames.append([[f"{name}[{u}]" for u in uniques]])
        mats.append([mat])
    return VCSpec(names, colnames, mats), names


def _fit_mixedlm(d: pd.DataFrame, exog: pd.DataFrame, start=None, effects=RANDOM_EFFECTS, outcome: str = "u"):
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.regression.mixed_linear_model import MixedLM

    caught_notes: list[str] = []
    vc, names = _vc_spec(d, caught_notes, effects)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = MixedLM(
            d[outcome].to_numpy(dtype=float),
            exog,
            groups=np.zeros(len(d), dtype=int),
            exog_re=np.zeros((len(d), 0)),
            exog_vc=vc,
        )
        with fast_mixedlm():
            res = model.fit(reml=True, start_params=start)
    for w in caught:
        msg = str(w.message)
        if msg not in caught_notes:
            caught_notes.append(msg)
    return model, res, names, caught_notes


def _moment_start(d: pd.DataFrame, exog: pd.DataFrame, effects=RANDOM_EFFECTS, outcome: str = "u") -> tuple:
    """A starting point for the REML optimiser from OLS residuals: each variance component's
    share of the residual variance taken as the variance of its level means (clipped to
    0.01-1). statsmodels starts every component at 1 (as large as the residual variance); this
    start is nearer and halves the optimiser's steps at the paper's size. The optimum, not the
    start, is what is reported (the tests check it against statsmodels' own start)."""
    x = exog.to_numpy(dtype=float)
    y = d[outcome].to_numpy(dtype=float)
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    r = pd.Series(y - x @ beta, index=d.index)
    total = float(r.var()) or 1.0
    shares = []
    for _, col in effects:
        if d[col].nunique() < 2:
            continue
        shares.append(float(np.clip(r.groupby(d[col]).mean().var() / total, 0.01, 1.0)))
    return beta, np.asarray(shares)


def _start_values(base: LMMFit | None) -> tuple | None:
    """(fixed effects, variance components) of a fit, to start another fit from; picklable."""
    if base is None or base.result is None:
        return None
    po = base.result.params_object
    return np.asarray(po.fe_params, dtype=float), np.asarray(po.vcomp, dtype=float)


def _start_params(start: tuple | None, k_fe: int):
    if start is None:
        return None
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.regression.mixed_linear_model import MixedLMParams

    fe_start, vcomp = start
    fe = np.zeros(k_fe)
    n = min(k_fe, len(fe_start))
    fe[:n] = fe_start[:n]
    return MixedLMParams.from_components(fe_params=fe, cov_re=np.zeros((0, 0)), vcomp=np.asarray(vcomp))


def _factor_levels(rows: pd.DataFrame, columns, reference: dict) -> tuple[dict, list[str]]:
    """factor -> levels (reference first) and the factors left out for having a single level."""
    factors, dropped = {}, []
    for f in columns:
        lv = _levels(rows, f, reference)
        if len(lv) < 2:
            dropped.append(f"{f} (a single level: {(lv[0] or NONE_LEVEL) if lv else 'none'})")
        factors[f] = lv
    return factors, dropped


def _fit_design(
    rows: pd.DataFrame, exog: pd.DataFrame, dropped: list[str], effects, start, what: str, outcome: str = "u"
):
    """REML fit of ``outcome`` on the full-rank columns of exog (collinear ones appended to ``dropped``)
    with a variance component per entry of ``effects``: (exog kept, MixedLMResults, fixed-effects
    table (LMM_COLUMNS), variance components, warnings)."""
    names = list(exog.columns)
    keep, collinear = _full_rank_columns(exog.to_numpy(), names)
    dropped += [f"{c} (empty or collinear design column)" for c in collinear]
    exog = exog.iloc[:, keep]
    if len(rows) <= exog.shape[1] + 3:
        raise UsabilityAnalysisError(f"{len(rows)} rows for {exog.shape[1]} fixed effects: too few for {what}")
    if isinstance(start, LMMFit):
        start = _start_values(start)
    if start is None:
        start = _moment_start(rows, exog, effects, outcome)
    model, res, vc_names, notes = _fit_mixedlm(rows, exog, _start_params(start, exog.shape[1]), effects, outcome)
    k = exog.shape[1]
    ci = np.asarray(res.conf_int())[:k]
    table = pd.DataFrame(
        {
            "term": list(exog.columns),
            "estimate": np.asarray(res.fe_params, dtype=float),
            "std_error": np.asarray(res.bse_fe, dtype=float),
            "z": np.asarray(res.tvalues, dtype=float)[:k],
            "p_value": np.asarray(res.pvalues, dtype=float)[:k],
            "ci_low": ci[:, 0],
            "ci_high": ci[:, 1],
            "test": WALD_Z,
        }
    )
    vcomp = np.asarray(res.vcomp, dtype=float)
    comps = {}
    for name, v in zip(vc_names, vcomp):
        col = dict(effects)[name]
        comps[name] = {"variance": float(v), "levels": int(rows[col].nunique())}
    return exog, res, table, comps, notes


def _reference_notes(factors: dict, reference: dict, asked: dict) -> list[str]:
    """A reference level, the paper's (Table 4) or one the caller asked for (a study setting),
    that the data lack (match_level finds none): say which level stands in (the first in
    sorted order). Factors with a single level are out of the model and need none."""
    out = []
    for f, want in reference.items():
        lv = factors.get(f)
        if lv and len(lv) >= 2 and want not in (None, "") and match_level(lv, want, f) is None:
            whose = "asked for" if asked.get(f) not in (None, "") else "the paper's, Table 4"
            out.append(
                f"reference level {want!r} of {f} is not in the data ({whose}): the first in sorted order, "
                f"{lv[0]!r}, is the reference"
            )
    return out


def reference_column(terms, reference: dict) -> list[str]:
    """lmm.csv's reference: per term the reference level of the factor it belongs to ("system:
    Voxtral" -> DeSTA2; "group: USW x gender: Woman" -> "Hindi x Man"); the Intercept every
    factor's ("group = Hindi, gender = Man, ..."); a numeric covariate none ("")."""
    out = []
    for t in terms:
        parts = [p.split(": ", 1)[0] for p in str(t).split(" x ")]
        if t == "Intercept":
            out.append(", ".join(f"{f} = {v}" for f, v in reference.items()))
        elif all(p in reference and ": " in str(t) for p in parts):
            out.append(" x ".join(str(reference[p]) for p in parts))
        else:
            out.append("")
    return out


def fit_model(
    d: pd.DataFrame,
    spec: ModelSpec,
    reference: dict | None = None,
    extra: pd.Series | None = None,
    extra_name: str = "signal",
    start: LMMFit | tuple | None = None,
    llf: bool = True,
) -> LMMFit:
    """REML fit of ``spec`` (+ ``extra`` as a covariate, on the rows where it is present) with
    its crossed random intercepts (statsmodels MixedLM: one all-covering group, one variance
    component per id), on the rows with the speaker's sender, group and gender and a corpus
    (model_rows). ``reference``: factor -> level, over DEFAULT_REFERENCE (the paper's); a level
    absent from the data falls back to the first in sorted order (noted when asked for).
    ``start``: a previous fit (or its _start_values) whose estimates start the optimiser.
    llf=False skips the log-likelihood (statsmodels evaluates it once more: 40 ms at the
    paper's size), NaN then."""
    t0 = time.perf_counter()
    asked = dict(reference or {})
    reference = {**DEFAULT_REFERENCE, **asked}
    rows, left = model_rows(d)
    if extra is not None:
        rows = rows[extra[rows.index].notna()]
    context = spec.context(rows)
    factors, dropped = _factor_levels(rows, SENDER_ATTRIBUTES + context, reference)
    model_factors = {f: lv for f, lv in factors.items() if len(lv) >= 2}
    exog = _design(rows, model_factors, spec.covariates)
    if extra is not None:
        exog[extra_name] = extra[rows.index].to_numpy(dtype=float)
    exog, res, table, comps, notes = _fit_design(rows, exog, dropped, spec.effects, start, spec.what, spec.outcome)
    ref_notes = _reference_notes(factors, {f: reference.get(f) for f in factors}, asked)
    notes = ref_notes + notes
    if context[-1] == "source":
        notes.append(
            "no corpus column: the starter's source (natural/synthetic) stands in for Table 4's Source, the corpus"
        )
    formula = spec.formula(context) + (f" + {extra_name}" if extra is not None else "")
    used = {f: lv[0] for f, lv in model_factors.items()}
    table["reference"] = reference_column(table["term"], used)
    return LMMFit(
        table=table,
        terms=list(exog.columns),
        formula=formula,
        n=len(rows),
        variance_components=comps,
        residual_variance=float(res.scale),
        converged=bool(res.converged),
        llf=float(res.llf) if llf else math.nan,
        reference={f: lv[0] for f, lv in factors.items() if lv},
        dropped=dropped,
        warnings=notes,
        factors=model_factors,
        u_b_mean=float(rows["u_b"].mean()),
        result=res,
        seconds=time.perf_counter() - t0,
        rows_left_out=left,
        rows_total=len(d),
        outcome=spec.outcome,
        covariate_means={c: float(rows[c].mean()) for c in spec.covariates},
        reference_notes=ref_notes,
    )


def fit_lmm(
    d: pd.DataFrame,
    reference: dict | None = None,
    extra: pd.Series | None = None,
    extra_name: str = "signal",
    start: LMMFit | tuple | None = None,
    llf: bool = True,
) -> LMMFit:
    """Section 4.2 / Table 4: FORMULA with crossed random intercepts for sender, validator and
    receiver (fit_model with USABILITY_MODEL)."""
    return fit_model(d, USABILITY_MODEL, reference, extra, extra_name, start, llf)


def fit_score_lmm(d: pd.DataFrame, reference: dict | None = None) -> LMMFit:
    """Section 4.3 / Figure 3a: the validator's DA+SQM score ~ system + topic + corpus +
    group * gender with crossed random intercepts for sender and validator (SCORE_MODEL)."""
    return fit_model(d, SCORE_MODEL, reference)


def marginal_grid(fit: LMMFit, d: pd.DataFrame) -> tuple[list[tuple], np.ndarray, list[int]]:
    """emmeans' reference grid of each group x gender cell with exchanges among the model's
    rows: every combination of the other factors' levels with equal weight, the numeric
    covariates at their means. Returns the cells, L (one row per cell over fit.terms: the mean
    of the grid's design rows, so L @ beta is the marginal mean) and each cell's n."""
    d, _ = model_rows(d)
    n = d.groupby(["group", "gender"]).size()
    others = [f for f in fit.factors if f not in SENDER_ATTRIBUTES]
    combos = list(itertools.product(*[fit.factors[f] for f in others])) or [()]
    cells, rows = [], []
    for g, s in itertools.product(sorted(d["group"].unique()), sorted(d["gender"].unique())):
        if not n.get((g, s), 0):
            continue  # not estimable: its interaction column was dropped
        grid = pd.DataFrame([dict(zip(others, c)) for c in combos] or [{}])
        grid["group"], grid["gender"] = g, s
        for c, m in fit.covariate_means.items():
            grid[c] = m
        for f in others:
            grid[f] = grid[f].astype(str)
        x = _design(grid, fit.factors, tuple(fit.covariate_means)).reindex(columns=fit.terms, fill_value=0.0)
        rows.append(x.to_numpy().mean(axis=0))
        cells.append((g, s))
    return cells, np.vstack(rows), [int(n[c]) for c in cells]


def marginal_means(fit: LMMFit, d: pd.DataFrame, grid: tuple | None = None) -> pd.DataFrame:
    """Per group x gender cell (marginal_grid, or ``grid`` when already built): the
    fixed-effects prediction averaged with equal weights over the other factors' levels,
    covariates at their means; Wald SE and 95% CI (MixedLMResults.t_test). n = the cell's
    exchanges (of the rows the model used)."""
    cells, L, n = grid or marginal_grid(fit, d)
    w = C.wald(fit.result, L)
    out = pd.DataFrame(
        {
            "group": [c[0] for c in cells],
            "gender": [c[1] for c in cells],
            "mean": w["estimate"],
            "std_error": w["std_error"],
            "ci_low": w["ci_low"],
            "ci_high": w["ci_high"],
            "n": n,
        }
    )
    return out[MARGINAL_COLUMNS]


def cell_contrasts(
    fit: LMMFit, d: pd.DataFrame, grid: tuple | None = None, holm_family: str = C.DEFAULT_HOLM_FAMILY
) -> pd.DataFrame:
    """Section 4.2: pairwise differences of the group x gender marginal means, Wald z, Holm-adjusted
    within each family (contrasts.cell_families: by default the pairs within each gender and
    within each group, as the paper reads them; "all": one family of every pair)."""
    cells, L, _ = grid or marginal_grid(fit, d)
    return C.pairwise(
        fit.result, L, [f"{g} x {s}" for g, s in cells], fit.outcome, families=C.cell_families(cells, holm_family)
    )


def small_sample_warning(fit: LMMFit) -> str:
    """'' at or above SMALL_SAMPLE_SENDERS senders in the fit; else the warning the summary and
    lmm.txt print."""
    senders = fit.variance_components.get("sender", {}).get("levels")
    if senders is None or senders >= SMALL_SAMPLE_SENDERS:
        return ""
    return (
        f"only {senders} senders (under {SMALL_SAMPLE_SENDERS}): the Wald z p-values of the group and gender "
        f"terms and contrasts are anti-conservative here (simulated null studies of this design reject "
        f"more often than 5% at alpha .05; the paper's lme4/Satterthwaite t would give larger p): read them "
        f"with care (benchmarks/usability/small_sample.py)"
    )


def lmm_text(fit: LMMFit) -> str:
    lines = [
        "Linear mixed model (statsmodels MixedLM, REML)",
        f"formula: {fit.formula}",
        f"observations: {fit.n}"
        + (f" ({left_out_text(fit.rows_left_out, fit.rows_total)})" if fit.rows_left_out else ""),
        "groups: one all-covering group (a constant); crossed random intercepts as variance components:",
    ]
    for name, vc in fit.variance_components.items():
        sd = math.sqrt(max(vc["variance"], 0))
        lines.append(f"  {name}: {vc['levels']} levels, variance {vc['variance']:.4f} (sd {sd:.4f})")
    if not fit.variance_components:
        lines.append("  (none)")
    lines.append(f"residual variance: {fit.residual_variance:.4f}")
    lines.append(f"REML log-likelihood: {fit.llf:.3f}")
    lines.append(f"converged: {'yes' if fit.converged else 'NO'}")
    lines.append(
        "reference levels: "
        + ", ".join(f"{k} = {v}" for k, v in fit.reference.items())
        + " (the paper's where present, else the first in sorted order; corpus: the study's "
        "usability.corpus_reference when set)"
    )
    if "corpus" in fit.reference:
        lines.append("corpus: the starter's corpus, the factor the paper's Table 4 calls Source")
    lines.append(f"coding: treatment (dummy) coding; test: {WALD_Z}, 95% Wald confidence intervals. {LME4_NOTE}")
    if small_sample_warning(fit):
        lines.append(f"WARNING: {small_sample_warning(fit)}")
    for dr in fit.dropped:
        lines.append(f"left out: {dr}")
    for w in fit.warnings:
        lines.append(f"warning: {w}")
    lines.append("")
    lines.append("fixed effects:")
    width = max(len(t) for t in fit.table["term"])
    for r in fit.table.itertuples():
        lines.append(
            f"  {r.term:<{width}}  {r.estimate:+.3f}  SE {r.std_error:.3f}  z {r.z:+.2f}  p {r.p_value:.3g}  "
            f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
        )
    if fit.result is not None:
        lines += ["", "statsmodels summary:", fit.result.summary().as_text()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# first- vs third-person surveys (appendix A.1)

PERSPECTIVE_DEPARTURES = (
    "The paper names no software. Here: statsmodels MixedLM (REML; the crossed intercepts as variance "
    "components of one all-covering group), p from a Wald z test. lme4 fits the same REML model; lmerTest "
    "would test with t and Satterthwaite degrees of freedom (a slightly larger p in small samples, the same "
    "at the paper's 1,738 surveys). translation_score enters per point (0-100) and qa_score per unit (0-1): "
    "the paper does not give its scales, so only the perspective coefficient compares with its "
    "beta = 0.009, p = .873."
)


def _perspective_design(rows: pd.DataFrame, factors: dict) -> pd.DataFrame:
    """Treatment-coded design of PERSPECTIVE_FORMULA (factor -> levels, reference first)."""
    cols = {"Intercept": np.ones(len(rows))}
    for lv in factors.get("perspective", [])[1:]:
        cols[f"perspective: {lv}"] = (rows["perspective"].to_numpy() == lv).astype(float)
    for c in ("translation_score", "qa_score"):
        cols[c] = rows[c].to_numpy(dtype=float)
    for f in ("system", "gender", "group"):
        for lv in factors.get(f, [])[1:]:
            cols[f"{f}: {lv}"] = (rows[f].to_numpy() == lv).astype(float)
    return pd.DataFrame(cols, index=rows.index)


def fit_perspective(d: pd.DataFrame, reference: dict | None = None) -> PerspectiveResult:
    """Paper 000 appendix A.1: REML fit of PERSPECTIVE_FORMULA (u of the informed survey; group
    and gender the speaker's; reference perspective 'first') with crossed random intercepts
    for the respondent and the starter, on the rows with a perspective, sender, group, gender
    and starter_id (model_rows). Not fitted (fit None, note saying why) without third-person
    or first-person surveys among those rows, or when the model cannot be fitted."""
    t0 = time.perf_counter()
    reference = {**DEFAULT_REFERENCE, **(reference or {}), "perspective": PERSPECTIVES[0]}
    p = d["perspective"] if "perspective" in d.columns else pd.Series("", index=d.index)
    counts = {k: int((p == k).sum()) for k in PERSPECTIVES}
    empty = pd.DataFrame(columns=PERSPECTIVE_COLUMNS)
    if not counts["third"]:
        return PerspectiveResult(empty, None, counts, "no third-person surveys")
    rows, left = model_rows(d, PERSPECTIVE_NEEDS)
    used = {k: int((rows["perspective"] == k).sum()) for k in PERSPECTIVES}
    for k in ("third", "first"):
        if not used[k]:
            why = f" ({left_out_text(left, len(d))})" if left else ""
            return PerspectiveResult(
                empty, None, counts, f"no {k}-person surveys among the rows the model can use{why}"
            )
    factors, dropped = _factor_levels(rows, ("perspective", "system", "gender", "group"), reference)
    model_factors = {f: lv for f, lv in factors.items() if len(lv) >= 2}
    try:
        exog, res, table, comps, notes = _fit_design(
            rows, _perspective_design(rows, model_factors), dropped, PERSPECTIVE_EFFECTS, None, "the perspective model"
        )
    except (UsabilityAnalysisError, np.linalg.LinAlgError, ValueError) as e:
        return PerspectiveResult(empty, None, counts, f"the model could not be fitted: {e}")
    table["n_first"], table["n_third"] = used["first"], used["third"]
    table["reference"] = reference_column(table["term"], {f: lv[0] for f, lv in model_factors.items()})
    fit = LMMFit(
        table=table[LMM_COLUMNS],
        terms=list(exog.columns),
        formula=PERSPECTIVE_FORMULA,
        n=len(rows),
        variance_components=comps,
        residual_variance=float(res.scale),
        converged=bool(res.converged),
        llf=float(res.llf),
        reference={f: lv[0] for f, lv in factors.items() if lv},
        dropped=dropped,
        warnings=notes,
        factors=model_factors,
        result=res,
        seconds=time.perf_counter() - t0,
        rows_left_out=left,
        rows_total=len(d),
    )
    return PerspectiveResult(table[PERSPECTIVE_COLUMNS], fit, counts)


def perspective_line(pr: PerspectiveResult) -> str:
    """One line for the summary."""
    if pr.fit is None:
        return f"perspective (A.1): not fitted: {pr.note}"
    r = pr.table.set_index("term").loc["perspective: third"]
    return (
        f"perspective (A.1, informed u; Wald z): third vs first person {r['estimate']:+.3f} "
        f"(SE {r['std_error']:.3f}, z {r['z']:.2f}, p {r['p_value']:.3g}; "
        f"n first {int(r['n_first'])}, third {int(r['n_third'])})"
    )


def perspective_text(pr: PerspectiveResult) -> str:
    """perspective.txt: what was fitted, on which surveys, the perspective coefficient, the
    departures from the paper, then the model (lmm_text)."""
    lines = [
        "First- vs third-person surveys (paper 000 appendix A.1)",
        "outcome: u = mean(satisfaction, trust, reliance) of the informed survey",
        "group and gender: the speaker's (the exchange's sender), on third-person rows too",
        "random intercepts: the respondent (who answered the survey) and the starter, crossed",
        "test: Wald z (statsmodels MixedLM, REML; normal reference); 95% Wald confidence intervals",
        f"surveys in the data: {pr.counts['first']} first-person, {pr.counts['third']} third-person",
        f"departures from the paper: {PERSPECTIVE_DEPARTURES}",
        "",
        perspective_line(pr),
    ]
    if pr.fit is not None:
        lines += ["", lmm_text(pr.fit)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# quality signals


def rescale(x: pd.Series, lower_better: bool = False) -> pd.Series:
    """Min-max rescale to [0, 1] by the observed values (1 - that for lower-is-better)."""
    lo, hi = x.min(), x.max()
    if not (hi > lo):
        return pd.Series(np.nan, index=x.index)
    r = (x - lo) / (hi - lo)
    return 1 - r if lower_better else r


def tertiles(d: pd.DataFrame) -> tuple[pd.Series, str]:
    """Translation-score tertile (low/mid/high) of each row: pandas qcut on the scores; when tied
    scores make cut points coincide, on their ranks (ties broken by row order)."""
    try:
        return pd.qcut(d["translation_score"], 3, labels=list(TERTILES)).astype(str), "qcut on translation_score"
    except ValueError:
        r = d["translation_score"].rank(method="first")
        return (
            pd.qcut(r, 3, labels=list(TERTILES)).astype(str),
            "qcut on the rank of translation_score (tied scores made cut points coincide)",
        )


def _estimate_row(signal: str, fit: str, r, statistic: float, n: int, test: str, covariates: str) -> dict:
    return {
        "signal": signal,
        "fit": fit,
        "estimate": float(r["estimate"]),
        "std_error": float(r["std_error"]),
        "statistic": float(statistic),
        "p_value": float(r["p_value"]),
        "ci_low": float(r["ci_low"]),
        "ci_high": float(r["ci_high"]),
        "n": int(n),
        "test": test,
        "covariates": covariates,
    }


def _signal_lmm(d: pd.DataFrame, reference: dict | None, x: pd.Series, signal: str, start: tuple | None) -> dict:
    """The LMM with one rescaled signal added: its coefficient, p-value and estimate row."""
    try:
        f = fit_lmm(d, reference, extra=x, extra_name=signal, start=start, llf=False)
    except (UsabilityAnalysisError, np.linalg.LinAlgError, ValueError) as e:
        return {"error": f"LMM with {signal} failed: {e}"}
    t = f.table.set_index("term")
    out: dict[str, Any] = {"n_lmm": f.n, "converged": f.converged}
    if signal in t.index:
        r = t.loc[signal]
        rhs = f.formula.split(" ~ ", 1)[1].rsplit(" + ", 1)[0]
        random = ", ".join(f.variance_components)
        out.update(
            effect_lmm=float(r["estimate"]),
            p_lmm=float(r["p_value"]),
            estimate=_estimate_row(signal, "lmm", r, r["z"], f.n, WALD_Z, f"{rhs}; random intercepts: {random}"),
        )
    return out


def tertile_ols(d: pd.DataFrame, x: pd.Series, signal: str, rows: pd.Series, reference: dict | None = None):
    """Table 2's e_low/e_med/e_high for one tertile: OLS (statsmodels) of u on the rescaled
    signal and the LMM's fixed effects (system + topic + corpus + u_b + group * gender: the
    caption's "holding other covariates constant") over ``rows`` (a boolean mask) among the rows
    the LMM can use. Design columns that are empty or collinear within the tertile are left
    out. Returns (estimate row or None, why not, rows used)."""
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    import statsmodels.api as sm

    use, _ = model_rows(d)
    use = use[rows[use.index] & x[use.index].notna()]
    if len(use) < 3 or x[use.index].nunique() < 2:
        return None, f"{len(use)} rows with varying {signal}: too few", len(use)
    reference = {**DEFAULT_REFERENCE, **(reference or {})}
    context = USABILITY_MODEL.context(use)
    factors, _ = _factor_levels(use, SENDER_ATTRIBUTES + context, reference)
    design = _design(use, {f: lv for f, lv in factors.items() if len(lv) >= 2}, USABILITY_MODEL.covariates)
    design.insert(1, signal, x[use.index].to_numpy(dtype=float))  # before the covariates: kept first
    keep, collinear = _full_rank_columns(design.to_numpy(), list(design.columns))
    design = design.iloc[:, keep]
    if signal not in design.columns:
        return None, f"{signal} is collinear with the covariates", len(use)
    if len(use) <= design.shape[1] + 1:
        return None, f"{len(use)} rows for {design.shape[1]} coefficients: too few", len(use)
    res = sm.OLS(use["u"].to_numpy(dtype=float), design).fit()
    ci = res.conf_int().loc[signal]
    r = {
        "estimate": res.params[signal],
        "std_error": res.bse[signal],
        "p_value": res.pvalues[signal],
        "ci_low": ci.iloc[0],
        "ci_high": ci.iloc[1],
    }
    rhs = " + ".join([*context, *USABILITY_MODEL.covariates, "group * gender"])
    left = f" (left out: {', '.join(collinear)})" if collinear else ""
    return _estimate_row(signal, "", r, res.tvalues[signal], len(use), OLS_T, rhs + left), "", len(use)


def metric_effect_tables(
    d: pd.DataFrame,
    base: LMMFit | None,
    signals: list[str],
    reference: dict | None = None,
    lower_is_better=None,
    notes: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """metric_effects.csv (Table 2: per signal effect_lmm, its coefficient, rescaled to [0,1],
    added to the LMM, and effect_low/mid/high, tertile_ols within the translation-score
    tertiles, with p-values and row counts) and metric_effect_estimates.csv (ESTIMATE_COLUMNS:
    the same estimates with SE, test statistic, 95% CI and covariates, one row per signal and
    fit). The per-signal LMMs start from ``base``'s estimates. Each signal is rescaled the way
    higher is better (signal_directions); higher_is_better says which way the raw signal runs and
    estimate_raw is the estimate per unit of the unreversed rescaled signal (-estimate for a
    lower-is-better one)."""
    tert, how = tertiles(d)
    if notes is not None:
        notes.append(f"tertiles: {how}")
    higher = signal_directions(signals, lower_is_better)
    scaled = {s: rescale(d[s], not higher[s]) for s in signals}
    lmm_signals = [s for s in signals if base is not None and scaled[s].notna().sum()]
    start = _start_values(base)
    lmm = {s: _signal_lmm(d, reference, scaled[s], s, start) for s in lmm_signals}
    rows, estimates = [], []
    for s in signals:
        x = scaled[s]
        row = {
            "signal": s,
            "orientation": _orientation(higher[s]),
            "higher_is_better": higher[s],
            "min": float(d[s].min()),
            "max": float(d[s].max()),
        }
        fitted = lmm.get(s, {})
        if "error" in fitted:
            if notes is not None:
                notes.append(fitted["error"])
        elif fitted:
            row.update({k: fitted[k] for k in ("effect_lmm", "p_lmm", "n_lmm") if k in fitted})
            if "estimate" in fitted:
                estimates.append(fitted["estimate"])
            if not fitted["converged"] and notes is not None:
                notes.append(f"LMM with {s} did not converge")
        missing = []
        for t in TERTILES:
            est, why, row[f"n_{t}"] = tertile_ols(d, x, s, tert == t, reference)
            if est is None:
                missing.append(f"{t}: {why}")
                continue
            est["fit"] = t
            estimates.append(est)
            row.update({f"effect_{t}": est["estimate"], f"p_{t}": est["p_value"]})
        if missing and notes is not None:
            notes.append(f"tertile OLS of {s} not fitted in " + "; ".join(missing))
        rows.append(row)
    out = pd.DataFrame(rows, columns=EFFECT_COLUMNS)
    for c in ("n_lmm", "n_low", "n_mid", "n_high"):
        out[c] = out[c].astype("Int64")
    est = pd.DataFrame(estimates, columns=ESTIMATE_COLUMNS)
    est["higher_is_better"] = est["signal"].map(higher).astype(bool)
    est["estimate_raw"] = np.where(est["higher_is_better"], 1.0, -1.0) * est["estimate"].astype(float)
    return out, est


def metric_effects(
    d: pd.DataFrame,
    base: LMMFit | None,
    signals: list[str],
    reference: dict | None = None,
    lower_is_better=None,
    notes: list[str] | None = None,
) -> pd.DataFrame:
    """metric_effects.csv alone (metric_effect_tables)."""
    return metric_effect_tables(d, base, signals, reference, lower_is_better, notes)[0]


def monotone_curve(x, y, increasing: bool = True) -> pd.DataFrame:
    """Isotonic regression (scipy) of y on x, weighted by the count of each distinct x: one
    point per block, at the block's weighted-mean x and its fitted y."""
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    g = frame.groupby("x", sort=True)["y"].agg(["mean", "size"])
    if g.empty:
        return pd.DataFrame(columns=["x", "u", "weight"])
    res = isotonic_regression(g["mean"].to_numpy(), weights=g["size"].to_numpy(float), increasing=increasing)
    xs, w, fitted = g.index.to_numpy(float), g["size"].to_numpy(float), np.asarray(res.x)
    pts = []
    for a, b in zip(res.blocks[:-1], res.blocks[1:]):
        pts.append((float(np.average(xs[a:b], weights=w[a:b])), float(fitted[a]), float(w[a:b].sum())))
    return pd.DataFrame(pts, columns=["x", "u", "weight"])


def crossing(curve: pd.DataFrame, level: float = USABLE, increasing: bool = True) -> tuple[float, str]:
    """Where the curve (sorted by x) first reaches ``level``, by linear interpolation between
    the points around it (from the high-x end for a decreasing curve)."""
    c = curve.sort_values("x", ascending=increasing).reset_index(drop=True)
    if c.empty:
        return math.nan, "no data"
    reach = np.flatnonzero(c["u"].to_numpy() >= level - _EPS)
    if not len(reach):
        return math.nan, f"the curve stays below u = {level:g} (max {c['u'].max():.2f})"
    k = int(reach[0])
    if k == 0:
        side = "lowest" if increasing else "highest"
        return math.nan, f"the curve is at or above u = {level:g} from the {side} observed value ({c.at[0, 'x']:g})"
    x0, y0, x1, y1 = c.at[k - 1, "x"], c.at[k - 1, "u"], c.at[k, "x"], c.at[k, "u"]
    return float(x0 + (level - y0) * (x1 - x0) / (y1 - y0)), ""


def thresholds(
    d: pd.DataFrame, signals: list[str], lower_is_better=None, level: float = USABLE
) -> tuple[pd.DataFrame, dict]:
    """thresholds.csv and the curves: per signal the value (on the raw signal's scale) where the
    monotone curve of u on the signal, increasing or decreasing as signal_directions says,
    reaches u = 4."""
    rows, curves = [], {}
    higher = signal_directions(signals, lower_is_better)
    for s in signals:
        lower = not higher[s]
        ok = d[s].notna()
        curve = monotone_curve(d.loc[ok, s], d.loc[ok, "u"], increasing=not lower)
        curves[s] = curve
        value, note = crossing(curve, level, increasing=not lower)
        rows.append([s, value, _orientation(not lower), int(ok.sum()), note, not lower])
    return pd.DataFrame(rows, columns=THRESHOLD_COLUMNS), curves


# ---------------------------------------------------------------------------------------------
# factor analysis


def _factor_level(x: np.ndarray, seed: int, pa_iterations: int, pa_percentile: float) -> dict:
    # lazy import (factor_analyzer): heavy; needed only when a model is fitted
    from factor_analyzer import calculate_bartlett_sphericity, calculate_kmo

    n, p = x.shape
    out: dict = {"n": int(n)}
    if n <= p or np.any(np.std(x, axis=0) == 0):
        out["error"] = "too few rows or an item without variance"
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = pd.DataFrame(x, columns=ITEMS)
        chi2, pval = calculate_bartlett_sphericity(frame)
        kmo_items, kmo = calculate_kmo(frame)
    eig, crit, k = FE.parallel_analysis(x, pa_iterations, seed, pa_percentile)
    r = np.corrcoef(x, rowvar=False)
    notes: list[str] = []
    try:
        load, uniq, _ = FE.ml_extract(r, 1, n, seed, notes=notes)
        load = load[:, 0] * (1 if load[:, 0].sum() >= 0 else -1)
        ml = {
            "loadings": dict(zip(ITEMS, map(float, load))),
            "uniqueness": dict(zip(ITEMS, map(float, uniq))),
            "variance_explained": float(np.sum(load**2) / p),
        }
    except FE.EFAError as e:
        ml = {"error": str(e)}
    out.update(
        {
            "bartlett_chi2": float(chi2),
            "bartlett_dof": p * (p - 1) // 2,
            "bartlett_p": float(pval),
            "kmo": float(kmo),
            "kmo_per_item": dict(zip(ITEMS, map(float, kmo_items))),
            "parallel_analysis": {
                "iterations": pa_iterations,
                "percentile": pa_percentile,
                "seed": seed,
                "eigenvalues": [float(v) for v in eig],
                "criterion": [float(v) for v in crit],
                "factors_retained": int(k),
            },
            "one_factor_ml": ml,
            "variance_explained_one_factor": ml.get("variance_explained"),
            "first_eigenvalue_share": float(eig[0] / p),
            "correlations": [[float(v) for v in row] for row in r],
        }
    )
    if notes:
        out["notes"] = notes
    return out


def factor_analysis(
    d: pd.DataFrame, seed: int = SEED, pa_iterations: int = PA_ITERATIONS, pa_percentile: float = PA_PERCENTILE
) -> dict:
    """factor.json: S/T/R (informed) within respondents (respondent-mean-centred scores) and
    between them (respondent means); the respondent is the sender on first-person surveys."""
    x = d[ITEMS].astype(float)
    person = d["respondent_id"] if "respondent_id" in d.columns else d["sender_id"]
    means = x.groupby(person).transform("mean")
    within = (x - means).to_numpy()
    between = x.groupby(person).mean().to_numpy()
    # lazy import (threadpoolctl): needed only while a model is fitted
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return {
            "items": ITEMS,
            "person": person.name,
            "within": _factor_level(within, seed, pa_iterations, pa_percentile),
            "between": _factor_level(between, seed, pa_iterations, pa_percentile),
        }


# ---------------------------------------------------------------------------------------------
# the whole analysis


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def _model_with_means(
    d: pd.DataFrame, spec: ModelSpec, reference: dict | None, notes: list[str], holm_family: str = C.DEFAULT_HOLM_FAMILY
):
    """(fit, group x gender marginal means, their Holm contrasts, error) of one model; fit None
    and the error noted when it cannot be fitted. A reference level absent from the data is noted
    (once for both models)."""
    try:
        fit = fit_model(d, spec, reference)
        grid = marginal_grid(fit, d)
        mm, contrasts = marginal_means(fit, d, grid), cell_contrasts(fit, d, grid, holm_family)
    except (UsabilityAnalysisError, np.linalg.LinAlgError, ValueError) as e:
        notes.append(f"{spec.what} not fitted: {e}".replace("the LMM", "LMM", 1))
        return None, pd.DataFrame(columns=MARGINAL_COLUMNS), pd.DataFrame(columns=C.CONTRAST_COLUMNS), str(e)
    if not fit.converged:
        notes.append(f"{spec.what} did not converge")
    notes.extend(n for n in fit.reference_notes if n not in notes)
    return fit, mm, contrasts, None


def analyze(
    df: pd.DataFrame,
    *,
    source: str = "<DataFrame>",
    reference: dict | None = None,
    lower_is_better=None,
    seed: int = SEED,
    pa_iterations: int = PA_ITERATIONS,
    metric_lmm: bool = True,
    holm_family: str = C.DEFAULT_HOLM_FAMILY,
) -> UsabilityResult:
    """The whole usability analysis of an exchanges table (see the module docstring). When the
    LMM cannot be fitted the result has lmm None and lmm_error saying why (the rest still
    runs; the score LMM likewise, score_lmm_error); the perspective model says so in its note.
    ``reference``: factor -> reference level, over the paper's (e.g. {"corpus": the study's
    usability.corpus_reference}). metric_lmm=False skips the per-signal LMMs (effect_lmm
    empty). holm_family: the contrasts' Holm families, "within" (default: the pairs within
    each gender and within each group, paper 000 section 4.2) or "all" (one family of every
    pair). lower_is_better: None (default) takes each metric's direction from the metric
    registry (signal_directions); a list of name fragments overrides it."""
    if holm_family not in C.HOLM_FAMILIES:
        raise ValueError(f"holm_family {holm_family!r} is not one of {', '.join(C.HOLM_FAMILIES)}")
    t_start = time.perf_counter()
    d = _prepared(df, source)
    notes: list[str] = []
    signals = signal_columns(d)
    timings = {}
    t = time.perf_counter()
    groups = group_table(d)
    directions = signal_directions(signals, lower_is_better, notes)
    corr = correlations(d, signals, directions)
    cmat = correlation_matrix(d, signals, directions)
    timings["descriptive_s"] = time.perf_counter() - t
    t = time.perf_counter()
    fit, mm, contrasts, lmm_error = _model_with_means(d, USABILITY_MODEL, reference, notes, holm_family)
    _, left = model_rows(d)
    if left:
        notes.append(
            f"LMM: {left_out_text(left, len(d))}: it needs the speaker's sender, group and gender "
            f"(and the starter's corpus when the data have one)"
        )
    if corpus_factor(model_rows(d)[0]) == "source":
        notes.append(
            "no corpus column: the starter's source (natural/synthetic) stands in for Table 4's Source "
            "(the corpus) in the models"
        )
    timings["lmm_s"] = time.perf_counter() - t
    t = time.perf_counter()
    score, score_mm, score_contrasts, score_error = _model_with_means(d, SCORE_MODEL, reference, notes, holm_family)
    timings["score_lmm_s"] = time.perf_counter() - t
    persp, timings["perspective_s"] = _timed(fit_perspective, d, reference)
    if persp.fit is not None and not persp.fit.converged:
        notes.append("the perspective model did not converge")
    t = time.perf_counter()
    effects, estimates = metric_effect_tables(
        d, fit if metric_lmm else None, signals, reference, lower_is_better, notes
    )
    timings["metric_effects_s"] = time.perf_counter() - t
    (thr, curves), timings["thresholds_s"] = _timed(thresholds, d, signals, lower_is_better)
    factor, timings["factor_s"] = _timed(factor_analysis, d, seed, pa_iterations)
    timings["total_s"] = time.perf_counter() - t_start
    return UsabilityResult(
        data=d,
        signals=signals,
        groups=groups,
        correlations=corr,
        correlation_matrix=cmat,
        lmm=fit,
        marginal_means=mm,
        metric_effects=effects,
        thresholds=thr,
        threshold_curves=curves,
        factor=factor,
        notes=notes,
        lmm_error=lmm_error,
        timings=timings,
        perspective=persp,
        score_lmm=score,
        score_lmm_error=score_error,
        score_marginal_means=score_mm,
        contrasts=pd.concat(
            [c for c in (contrasts, score_contrasts) if len(c)] or [pd.DataFrame(columns=C.CONTRAST_COLUMNS)],
            ignore_index=True,
        ),
        effect_estimates=estimates,
        holm_family=holm_family,
    )


# ---------------------------------------------------------------------------------------------
# figures


def figures(result: UsabilityResult) -> dict:
    """Plotly figures for the dashboard: u_distribution, baseline_shift, usable_share, quality,
    correlations, thresholds, marginal_means (when the LMM was fitted), score_lmm and
    score_marginal_means (when the score LMM was), contrasts and metric_effects (error bars)."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    d, out = result.data, {}
    d = d.assign(group=labelled(d["group"]), gender=labelled(d["gender"]))
    palette = qualitative.Plotly
    groups = sorted(d["group"].unique())
    genders = sorted(d["gender"].unique())

    fig = go.Figure()
    for i, s in enumerate(genders):
        x = d[d["gender"] == s]
        fig.add_trace(
            go.Violin(
                x=x["group"],
                y=x["u"],
                name=s,
                box_visible=True,
                meanline_visible=True,
                points=False,
                line_color=palette[i % len(palette)],
            )
        )
    fig.add_hline(y=USABLE, line_dash="dot", line_color="grey", annotation_text="u = 4")
    fig.update_layout(
        title="Usability u by language group and gender (informed survey)",
        violinmode="group",
        yaxis_title="u",
        xaxis_title="group",
        yaxis_range=[0.8, 5.2],
        height=480,
        width=850,
    )
    out["u_distribution"] = fig

    g = result.groups[result.groups["by"] == "group"]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=g["level"],
            y=g["mu_ub"],
            name="baseline (u_b)",
            error_y=dict(type="data", array=g["sigma_ub"] / np.sqrt(g["n"])),
        )
    )
    fig.add_trace(
        go.Bar(
            x=g["level"],
            y=g["mu_u"],
            name="informed (u)",
            text=[f"Δ {v:+.2f}" for v in g["delta_u"]],
            textposition="outside",
            error_y=dict(type="data", array=g["sigma_u"] / np.sqrt(g["n"])),
        )
    )
    fig.update_layout(
        title="Baseline vs informed usability by group (mean ± SE; label: Δu)",
        barmode="group",
        yaxis_title="mean u",
        yaxis_range=[1, 5.3],
        height=450,
        width=750,
    )
    out["baseline_shift"] = fig

    fig = make_subplots(rows=1, cols=2, subplot_titles=["by group", "by system"])
    for col, by in ((1, "group"), (2, "system")):
        g = result.groups[result.groups["by"] == by]
        fig.add_trace(
            go.Bar(
                x=g["level"],
                y=g["usable_share"],
                text=[f"{v:.0%}" for v in g["usable_share"]],
                textposition="outside",
                showlegend=False,
                marker_color=palette[col - 1],
                customdata=g["n"],
                hovertemplate="%{x}<br>%{y:.1%} of %{customdata}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_yaxes(range=[0, 1.1], tickformat=".0%")
    fig.update_layout(title="Share of exchanges rated usable (u ≥ 4)", height=450, width=950)
    out["usable_share"] = fig

    fig = make_subplots(rows=2, cols=1, subplot_titles=["translation score (validator, 0-100)", "QA score (0-1)"])
    topics = sorted(d["topic"].unique())
    for row, score in ((1, "translation_score"), (2, "qa_score")):
        for i, tp in enumerate(topics):
            x = d[d["topic"] == tp]
            fig.add_trace(
                go.Box(
                    x=x["system"],
                    y=x[score],
                    name=tp,
                    legendgroup=tp,
                    showlegend=(row == 1),
                    marker_color=palette[i % len(palette)],
                    boxmean=True,
                ),
                row=row,
                col=1,
            )
    fig.update_layout(title="Translation quality by system and topic", boxmode="group", height=750, width=900)
    out["quality"] = fig

    m = result.correlation_matrix
    fig = go.Figure(
        go.Heatmap(
            z=m.to_numpy(),
            x=list(m.columns),
            y=list(m.index),
            colorscale="RdBu",
            zmid=0,
            zmin=-1,
            zmax=1,
            text=np.vectorize(lambda v: f"{v:.2f}")(m.to_numpy()),
            texttemplate="%{text}",
            hovertemplate="%{y} vs %{x}<br>ρ %{z:.3f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    flipped = [s for s, h in zip(result.correlations["signal"], result.correlations["higher_is_better"]) if not h]
    fig.update_layout(
        title="Spearman correlation matrix"
        + (f" (oriented: sign flipped for the lower-is-better {', '.join(flipped)})" if flipped else ""),
        height=max(420, 60 * len(m) + 120),
        width=max(500, 70 * len(m) + 220),
    )
    out["correlations"] = fig

    sig = result.signals
    if sig:
        ncols = min(3, len(sig))
        nrows = math.ceil(len(sig) / ncols)
        thr = result.thresholds.set_index("signal")
        titles = [
            f"{s} (u=4 at {thr.at[s, 'value_at_u4']:.3g})" if pd.notna(thr.at[s, "value_at_u4"]) else s for s in sig
        ]
        fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=titles)
        for i, s in enumerate(sig):
            r, c = i // ncols + 1, i % ncols + 1
            ok = d[s].notna()
            fig.add_trace(
                go.Scattergl(
                    x=d.loc[ok, s],
                    y=d.loc[ok, "u"],
                    mode="markers",
                    showlegend=False,
                    marker=dict(size=4, opacity=0.25, color="grey"),
                    hovertemplate=f"{s} %{{x}}<br>u %{{y:.2f}}<extra></extra>",
                ),
                row=r,
                col=c,
            )
            curve = result.threshold_curves.get(s)
            if curve is not None and len(curve):
                fig.add_trace(
                    go.Scatter(
                        x=curve["x"],
                        y=curve["u"],
                        mode="lines",
                        showlegend=False,
                        line=dict(color=palette[0], width=3),
                        name="isotonic",
                    ),
                    row=r,
                    col=c,
                )
            fig.add_hline(y=USABLE, line_dash="dash", line_color="red", row=r, col=c)
            v = thr.at[s, "value_at_u4"]
            if pd.notna(v):
                fig.add_vline(x=v, line_dash="dot", line_color="red", row=r, col=c)
        fig.update_layout(
            title="u against each quality signal: isotonic fit and the u = 4 line",
            height=330 * nrows,
            width=380 * ncols + 100,
        )
        out["thresholds"] = fig

    if len(result.marginal_means):
        out["marginal_means"] = _means_figure(
            result.marginal_means, genders, groups, "u", "LMM marginal means of u by group and gender (95% CI)"
        )
    if result.score_lmm is not None:
        out["score_lmm"] = _coefficient_figure(
            result.score_lmm, "Validator's score (DA+SQM, 0-100): LMM fixed effects with 95% Wald CI (section 4.3)"
        )
    if len(result.score_marginal_means):
        out["score_marginal_means"] = _means_figure(
            result.score_marginal_means,
            genders,
            groups,
            "translation score",
            "LMM marginal means of the validator's score by group and gender (95% CI)",
        )
    if len(result.contrasts):
        out["contrasts"] = _contrasts_figure(result.contrasts)
    if len(result.effect_estimates):
        out["metric_effects"] = _effects_figure(result.effect_estimates)
    out.update(paper_figures.figures(result))  # Figures 2b (lmm_coefficients) and 10 (model_means)
    return out


def _ci_bars(frame: pd.DataFrame, col: str = "estimate") -> dict:
    """Asymmetric error bars from ci_low/ci_high around ``col`` (for error_x or error_y)."""
    return dict(
        type="data", symmetric=False, array=frame["ci_high"] - frame[col], arrayminus=frame[col] - frame["ci_low"]
    )


def _means_figure(mm: pd.DataFrame, genders, groups, yaxis: str, title: str):
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    palette = qualitative.Plotly
    fig = go.Figure()
    for i, s in enumerate(genders):
        x = mm[mm["gender"] == s]
        fig.add_trace(
            go.Scatter(
                x=x["group"],
                y=x["mean"],
                mode="markers+lines",
                name=s,
                marker=dict(size=10, color=palette[i % len(palette)]),
                error_y=_ci_bars(x, "mean"),
            )
        )
    # ticks to two decimals at most (plotly printed a bound as 2.8333333333333326)
    fig.update_layout(
        title=title,
        xaxis_title="group",
        yaxis_title=yaxis,
        height=450,
        width=700,
        xaxis=dict(categoryorder="array", categoryarray=groups),
        yaxis=dict(tickformat=".2~f"),
    )
    return fig


def _coefficient_figure(fit: LMMFit, title: str):
    """Figure 3a: each fixed effect but the intercept with its 95% Wald CI."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    t = fit.table[fit.table["term"] != "Intercept"].iloc[::-1]
    fig = go.Figure(
        go.Scatter(
            x=t["estimate"],
            y=t["term"],
            mode="markers",
            error_x=_ci_bars(t),
            customdata=t[["p_value"]],
            hovertemplate="%{y}: %{x:.2f} (p %{customdata[0]:.3g})<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_dash="dot", line_color="grey")
    fig.update_layout(
        title=title,
        xaxis_title="estimate (reference: " + ", ".join(fit.reference.values()) + ")",
        height=max(400, 28 * len(t) + 160),
        width=850,
    )
    return fig


def _contrasts_figure(contrasts: pd.DataFrame):
    """Pairwise differences of the group x gender marginal means, 95% CI, Holm p in the label."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    outcomes = list(dict.fromkeys(contrasts["outcome"]))
    fig = make_subplots(rows=1, cols=len(outcomes), subplot_titles=outcomes, horizontal_spacing=0.25)
    for i, o in enumerate(outcomes):
        c = contrasts[contrasts["outcome"] == o].iloc[::-1]
        label = c["a"] + " − " + c["b"]
        fig.add_trace(
            go.Scatter(
                x=c["estimate"],
                y=label,
                mode="markers",
                error_x=_ci_bars(c),
                showlegend=False,
                marker=dict(color=np.where(c["p_holm"] < 0.05, "crimson", "grey")),
                customdata=c[["p_value", "p_holm"]],
                hovertemplate="%{y}: %{x:.2f}<br>p %{customdata[0]:.3g}, Holm %{customdata[1]:.3g}<extra></extra>",
            ),
            row=1,
            col=i + 1,
        )
        fig.add_vline(x=0, line_dash="dot", line_color="grey", row=1, col=i + 1)
    n = contrasts.groupby("outcome").size().max()
    fig.update_layout(
        title="Pairwise differences of the marginal means (95% CI; red: Holm-adjusted p < 0.05)",
        height=max(420, 26 * n + 180),
        width=520 * len(outcomes) + 120,
    )
    return fig


def _effects_figure(estimates: pd.DataFrame):
    """Table 2 as error bars: each signal's effect (rescaled to [0,1]) from the LMM and the
    three tertile OLS fits, with 95% CIs."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    for i, f in enumerate(("lmm",) + TERTILES):
        e = estimates[estimates["fit"] == f]
        if len(e):
            fig.add_trace(
                go.Scatter(
                    x=e["signal"],
                    y=e["estimate"],
                    mode="markers",
                    name="LMM" if f == "lmm" else f"OLS, {f} tertile",
                    marker=dict(size=9, color=qualitative.Plotly[i]),
                    error_y=_ci_bars(e),
                )
            )
    fig.add_hline(y=0, line_dash="dot", line_color="grey")
    fig.update_layout(
        title="Effect of each quality signal on u (worst to best observed; 95% CI), covariates held constant",
        scattermode="group",
        yaxis_title="effect on u (1-5 scale)",
        height=480,
        width=max(700, 140 * estimates["signal"].nunique() + 200),
    )
    return fig


# ---------------------------------------------------------------------------------------------
# outputs


def write_outputs(
    result: UsabilityResult, out_dir, include_plotlyjs="directory", png: bool | None = None
) -> list[Path]:
    """Write groups.csv, correlations.csv, lmm.csv, lmm.txt, marginal_means.csv,
    metric_effects.csv, thresholds.csv, metric_effect_estimates.csv, score_lmm.csv,
    score_lmm.txt, score_marginal_means.csv, contrasts.csv, perspective.csv, perspective.txt,
    factor.json and each figure as a standalone HTML file (plotly.min.js written once beside
    them)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []

    paths += write_tables(
        out,
        {
            "groups.csv": result.groups,
            "correlations.csv": result.correlations,
            "lmm.csv": result.lmm.table if result.lmm is not None else pd.DataFrame(columns=LMM_COLUMNS),
        },
    )
    p = out / "lmm.txt"
    p.write_text(
        lmm_text(result.lmm) if result.lmm is not None else f"LMM not fitted: {result.lmm_error}\n", encoding="utf-8"
    )
    paths.append(p)
    paths += write_tables(
        out,
        {
            "marginal_means.csv": result.marginal_means,
            "metric_effects.csv": result.metric_effects,
            "thresholds.csv": result.thresholds,
            "metric_effect_estimates.csv": result.effect_estimates,
            "score_lmm.csv": result.score_lmm.table
            if result.score_lmm is not None
            else pd.DataFrame(columns=LMM_COLUMNS),
            "score_marginal_means.csv": result.score_marginal_means,
            "contrasts.csv": result.contrasts,
            "model_means.csv": paper_figures.model_means(result.data),
        },
    )  # Figure 10
    p = out / "score_lmm.txt"
    p.write_text(
        lmm_text(result.score_lmm)
        if result.score_lmm is not None
        else f"Score LMM not fitted: {result.score_lmm_error}\n",
        encoding="utf-8",
    )
    paths.append(p)
    if result.perspective is not None:
        paths += write_tables(out, {"perspective.csv": result.perspective.table})
        p = out / "perspective.txt"
        p.write_text(perspective_text(result.perspective), encoding="utf-8")
        paths.append(p)
    paths.append(write_json(out / "factor.json", result.factor))
    paths += write_figures(figures(result), out, include_plotlyjs, png, notes=result.notes)
    return paths


def summary(result: UsabilityResult) -> str:
    d = result.data
    senders = d.loc[d["sender_id"] != "", "sender_id"].nunique()
    lines = [
        f"{len(d)} exchanges, {senders} senders, {d['receiver_id'].nunique()} receivers, "
        f"{d['validator_id'].nunique()} validators, {d['respondent_id'].nunique()} survey respondents; "
        f"signals: {', '.join(result.signals)}"
    ]
    for r in result.groups[result.groups["by"].isin(["all", "group"])].itertuples():
        lines.append(
            f"  {r.level}: n {r.n}, mu(u) {r.mu_u:.2f}, sigma(u) {r.sigma_u:.2f}, Δu {r.delta_u:+.2f}, "
            f"usable {r.usable_share:.0%}"
        )
    if result.lmm is not None:
        f = result.lmm
        vc = ", ".join(f"{k} {v['variance']:.3f}" for k, v in f.variance_components.items())
        lines.append(
            f"LMM (REML, n {f.n}, {'converged' if f.converged else 'NOT converged'}); variance components: "
            f"{vc}; residual {f.residual_variance:.3f}"
        )
        if small_sample_warning(f):
            lines.append(f"WARNING: {small_sample_warning(f)}")
    else:
        lines.append(f"LMM not fitted: {result.lmm_error}")
    if result.score_lmm is not None:
        t = result.score_lmm.table
        groups = t[t["term"].str.startswith("group: ") & ~t["term"].str.contains(" x gender: ", regex=False)]
        lines.append(
            f"score LMM (validator's DA+SQM, n {result.score_lmm.n}; Wald z): "
            + (
                ", ".join(f"{r.term} {r.estimate:+.2f} (p {r.p_value:.3g})" for r in groups.itertuples())
                or "no group effects"
            )
        )
    else:
        lines.append(f"score LMM not fitted: {result.score_lmm_error}")
    sig = result.contrasts[result.contrasts["p_holm"] < 0.05]
    fams = result.contrasts.groupby("outcome")["family"].nunique().max() if len(result.contrasts) else 0
    lines.append(
        f"pairwise contrasts of the group x gender marginal means: {len(sig)} of {len(result.contrasts)} "
        f"with Holm-adjusted p < 0.05 (Holm within each of {fams} families per model: "
        f"{result.holm_family})"
        + "".join(f"\n  {r.outcome}: {r.a} − {r.b} {r.estimate:+.2f} (Holm p {r.p_holm:.3g})" for r in sig.itertuples())
    )
    if result.perspective is not None:
        lines.append(perspective_line(result.perspective))
    for r in result.correlations.itertuples():
        raw = "" if r.higher_is_better else f"; lower is better: raw rho {r.spearman_rho_raw:.3f}, sign flipped"
        lines.append(f"  {r.signal}: Spearman rho {r.spearman_rho:.3f} (n {r.n}{raw})")
    for r in result.thresholds.itertuples():
        v = "n/a (" + r.note + ")" if pd.isna(r.value_at_u4) else f"{r.value_at_u4:.3g}"
        lines.append(f"  {r.signal}: u = 4 at {v}")
    for level in ("within", "between"):
        f = result.factor.get(level, {})
        if "error" in f:
            lines.append(f"factor analysis ({level}): {f['error']}")
        else:
            ve = f.get("variance_explained_one_factor")
            lines.append(
                f"factor analysis ({level}, n {f['n']}): KMO {f['kmo']:.3f}, Bartlett chi2 "
                f"{f['bartlett_chi2']:.1f}, {f['parallel_analysis']['factors_retained']} factor(s) retained, "
                f"one factor explains " + ("n/a" if ve is None else f"{ve:.1%}")
            )
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def summary_with_metrics(result: UsabilityResult, metric_lines: list[str]) -> str:
    """summary() and, for a stored study, which automatic metrics ran, in which mode, and how many
    exchanges each skipped and why (services.metrics.exchange.report_lines): never silently."""
    return "\n".join([summary(result), *metric_lines])


def run_cli(path, out_dir, corpus_reference: str = "", holm_family: str = C.DEFAULT_HOLM_FAMILY) -> str:
    """Read exchanges, analyse, write outputs to out_dir and return a short human summary.
    corpus_reference: the corpus factor's reference level (empty: the paper's BConTrasT where
    present, else the first corpus in sorted order); holm_family: the contrasts' Holm families
    (analyze)."""
    df = read_exchanges(path)
    result = analyze(
        df,
        source=str(path),
        reference={"corpus": corpus_reference} if corpus_reference else None,
        holm_family=holm_family,
    )
    files = write_outputs(result, out_dir)
    return f"Usability analysis of {path}\n" + summary(result) + f"\n{len(files)} files written to {out_dir}"
