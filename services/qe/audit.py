"""Gender audit of a quality-estimation (QE) metric (paper 003).

Input, PAIRS.csv (:func:`read_pairs`): one row per instance, a source and its two contrastive
translations that differ only in gender:

* required: ``instance_id`` (unique within a ``lang``), ``lang``, ``source`` and either
  ``hyp_f`` and ``hyp_m`` (feminine / masculine, contrast "F/M") or ``hyp_n`` and ``hyp_g``
  (gender-neutral / gendered, contrast "N/G"), never both;
* optional ``gold`` F|M: the gender the source (with its context) calls for, the unambiguous
  setting; blank on every row (or no column) is the ambiguous setting. With N/G it only splits
  the ratios by source gender (there is no "wrong" form, so no error rates);
* optional ``context``: the preceding source-language context, used by the mon/bil variants;
* optional precomputed ``score_f`` and ``score_m`` (``score_n``/``score_g``): then no metric
  runs and these numbers are used exactly. A blank cell is a segment the metric could not
  score (NaN); text that is not a number is an input error.

Scoring (:func:`score_pairs`): QE(source, hypothesis) for each form, one batched metric call
per hypothesis column (through ``metrics.score_cached`` when a database is given). Context
variants (services.metrics.context): none = QE(s, h); mon = QE(c|s, c|h);
bil = QE(c|s, MT(c)|h), "|" being concatenation with one space; MT runs once per distinct
context.

Statistics (scores must be higher-is-better, as in the paper, which rescales MetricX to
1 - o/25):

* ratios (:func:`ratios`, ambiguous audit): ratio = score_f / score_m per instance
  (score_n / score_g); per language and pooled ("all"), also per source gender when gold is
  given: n, mean ratio, 95 % t-interval (scipy ``ttest_1samp(...).confidence_interval``) and
  the one-sided one-sample t-test against 1 (alternative "less": the first form scores
  lower). A ratio is only meaningful on a positive scale: rows whose denominator score is
  <= 0 or whose numerator is < 0 (metrics whose scale includes 0 or negatives, e.g. cosine)
  are left out and counted in ``n_dropped``, with a warning; rows with a missing (NaN) score
  are left out and counted in ``n_missing``. Fewer than 2 ratios: CI and p are NaN; constant
  ratios: whatever scipy returns (t = +-inf, p 0 or 1; NaN when they all equal 1).
* errors (:func:`errors`, unambiguous audit, F/M with gold): an error is the wrong form
  scoring >= the right one (ties are errors, as in the paper); ER = share of errors, er_f and
  er_m over sources whose gold is F / M, phi = er_f / er_m. phi is +inf when er_m = 0 < er_f,
  NaN when both are 0 (0/0) or a group is empty. 95 % CI of phi: scipy.stats.bootstrap with
  the two error-indicator samples (feminine, masculine), which resamples each sample
  independently (i.e. within each gender group, group sizes fixed), statistic
  mean(f) / mean(m), method "percentile", 1,000 resamples, numpy Generator seeded with
  ``seed`` (every language row starts from the same seed). When some resamples have no
  masculine error (phi = inf, or undefined 0/0) scipy's interpolated quantiles turn into NaN;
  then the 0/0 resamples are left out and the bounds are the order statistics of the rest
  (numpy nanpercentile, method "inverted_cdf"), so an unbounded upper limit reads inf; the
  row's ``phi_ci_note`` says how many resamples were affected. Needs >= 2 instances per group.
* retention (:func:`retention`): for each form, the share of instances whose score is >= x
  (the complementary CDF, paper figure 3), at each threshold (gap = share_m - share_f,
  share_g - share_n) and as curves over the observed scores.

Aggregate rows (column ``aggregate``): after the languages, lang "mean" is the paper's "mean
results across languages" (Table 1, Table 4, the average ratios of section 3): every statistic
is the unweighted mean of the per-language values (mean ratio, mean scores, ER, ER(F), ER(M),
phi, tie rate, shares retained; n and counts are sums). Its phi CI is the same bootstrap with
every language's two gender groups resampled independently and the statistic the mean over
languages of mean(f) / mean(m); its p-value is the Cochran-Mantel-Haenszel test of the
gender x error tables stratified by language (statsmodels StratifiedTable.test_null_odds); its
ratio CI and t-test are left empty (NaN): the paper gives none for the mean. Lang "pooled" pools
every language's instances into one sample (this project's former "all" row; not a paper
statistic) with the per-language statistics computed on that sample.

phi's p-value per language (and pooled): the 2x2 table source gender (F, M) x outcome (error,
right) tested for independence with scipy.stats.chi2_contingency (Pearson chi-square, Yates
continuity correction, two-sided; ``phi_p_value``), and the one-sided Fisher exact test that
feminine sources have the higher odds of an error (scipy.stats.fisher_exact, alternative
"greater"; ``phi_p_greater``, the direction of the paper's warning marks, Tables 5 and 9).

Language-aware metrics (GEMBA-DA, which names the languages in its prompt) are asked once per
PAIRS ``lang``, about English -> that language (``metric.for_languages``); a metric that takes
the context inside its prompt (GEMBA-DA's "context" / "paraphrased" prompts, paper 003 Table 3)
receives the PAIRS ``context`` column as its contexts, with context mode "none".

Pure functions; statistics from scipy/numpy/pandas, figures from plotly.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from services.common.analysis_input import InputError, Problems
from services.common.analysis_input import cells as _cells
from services.common.analysis_input import numbers as _numbers
from services.common.analysis_input import read_csv_cells as _read_csv
from services.common.analysis_output import json_safe, write_json, write_tables
from services.common.figure_files import write_figures
from services.metrics import context as metrics_context
from services.metrics import registry as metric_registry

BASE = ["instance_id", "lang", "source"]
CONTRASTS = {"F/M": ("f", "m"), "N/G": ("n", "g")}
GOLD = ("F", "M")
CONFIDENCE = 0.95
N_RESAMPLES = 1000
SEED = 0
DEFAULT_UNIT_THRESHOLD = 0.8  # the paper's CometKiwi filtering threshold (figure 3)
MEAN = "mean"  # the paper's "mean results across languages" rows (Tables 1, 4)
POOLED = "pooled"  # every language's instances pooled into one sample (not in the paper)
ALL = MEAN  # the aggregate row the summaries lead with
AGGREGATES = {MEAN: "mean across languages", POOLED: "pooled instances"}
SOURCE_LANG = "en"  # MT-GenEval, GATE and GeNTE sources are English

RATIO_COLUMNS_TEMPLATE = [
    "lang",
    "contrast",
    "source_gender",
    "n",
    "n_missing",
    "n_dropped",
    "mean_{a}",
    "mean_{b}",
    "mean_ratio",
    "sd_ratio",
    "ci_low",
    "ci_high",
    "t",
    "p_value",
    "aggregate",
]
ERROR_COLUMNS = [
    "lang",
    "n",
    "n_f",
    "n_m",
    "n_missing",
    "errors_f",
    "errors_m",
    "er",
    "er_f",
    "er_m",
    "phi",
    "phi_ci_low",
    "phi_ci_high",
    "phi_ci_note",
    "ties",
    "tie_rate",
    "phi_p_value",
    "phi_test",
    "phi_p_greater",
    "aggregate",
]


class QEInputError(InputError):
    """Bad PAIRS input (file, row, column named)."""


# ---------------------------------------------------------------------------------------------
# input


def contrast_of(frame: pd.DataFrame) -> str:
    """'F/M' or 'N/G' from a frame's hypothesis columns."""
    for name, (a, b) in CONTRASTS.items():
        if f"hyp_{a}" in frame.columns and f"hyp_{b}" in frame.columns:
            return name
    raise ValueError("the frame has neither hyp_f/hyp_m nor hyp_n/hyp_g")


def _forms(frame: pd.DataFrame) -> tuple[str, str]:
    return CONTRASTS[contrast_of(frame)]


def has_gold(frame: pd.DataFrame) -> bool:
    return "gold" in frame.columns and bool((frame["gold"] != "").any())


def has_scores(frame: pd.DataFrame) -> bool:
    a, b = _forms(frame)
    return f"score_{a}" in frame.columns and f"score_{b}" in frame.columns


def _normalise(df: pd.DataFrame, source: str) -> pd.DataFrame:
    cols = list(df.columns)
    missing = [c for c in BASE if c not in cols]
    if missing:
        raise QEInputError(
            source,
            1,
            missing[0],
            f"missing column (required: {', '.join(BASE)}, and hyp_f + hyp_m "
            f"or hyp_n + hyp_g; missing: {', '.join(missing)})",
        )
    present = {name: [f"hyp_{x}" for x in forms if f"hyp_{x}" in cols] for name, forms in CONTRASTS.items()}
    if present["F/M"] and present["N/G"]:
        raise QEInputError(
            source,
            1,
            present["N/G"][0],
            "both contrasts mixed: a PAIRS file holds either hyp_f + hyp_m (feminine/masculine) or "
            "hyp_n + hyp_g (neutral/gendered), not both",
        )
    if not present["F/M"] and not present["N/G"]:
        raise QEInputError(source, 1, "hyp_f", "missing column (the hypotheses: hyp_f + hyp_m, or hyp_n + hyp_g)")
    contrast = "F/M" if present["F/M"] else "N/G"
    a, b = CONTRASTS[contrast]
    for x in (a, b):
        if f"hyp_{x}" not in cols:
            raise QEInputError(source, 1, f"hyp_{x}", f"missing column (contrast {contrast} needs hyp_{a} and hyp_{b})")
    other = [x for x in CONTRASTS["N/G" if contrast == "F/M" else "F/M"]]
    wrong_scores = [f"score_{x}" for x in other if f"score_{x}" in cols]
    if wrong_scores:
        raise QEInputError(
            source,
            1,
            wrong_scores[0],
            f"both contrasts mixed: {wrong_scores[0]} with hyp_{a}/hyp_{b} (scores of contrast "
            f"{contrast} are score_{a} and score_{b})",
        )
    score_cols = [f"score_{x}" for x in (a, b)]
    given = [c for c in score_cols if c in cols]
    if len(given) == 1:
        lacking = [c for c in score_cols if c not in given][0]
        raise QEInputError(
            source,
            1,
            lacking,
            f"missing column: precomputed scores need both {score_cols[0]} and "
            f"{score_cols[1]} (or neither, to run a metric)",
        )

    df = df.reset_index(drop=True)
    out = pd.DataFrame(index=df.index)
    problems = Problems(cols, QEInputError)
    for col in BASE:
        out[col] = _cells(df[col])
        problems.flag(col, out[col] == "", lambda pos: "empty value")
    for x in (a, b):
        col = f"hyp_{x}"
        out[col] = _cells(df[col])
        problems.flag(col, out[col] == "", lambda pos: "blank hypothesis")

    if "gold" in cols:
        gold = _cells(df["gold"]).str.upper()
        if (gold != "").any():
            problems.flag(
                "gold",
                (gold != "") & ~gold.isin(GOLD),
                lambda pos: f"gold {str(df['gold'].iloc[pos]).strip()!r} is not F or M",
            )
            problems.flag(
                "gold",
                gold == "",
                lambda pos: (
                    "blank gold while other rows give one (gold must be F or M on every row, or "
                    "blank on every row for the ambiguous setting)"
                ),
            )
            out["gold"] = gold
    if "context" in cols:
        out["context"] = _cells(df["context"])

    for col in given:
        raw = df[col]
        text = _cells(raw)
        value = _numbers(raw)
        problems.flag(
            col,
            (text != "") & value.isna(),
            lambda pos, raw=raw: f"score {str(raw.iloc[pos]).strip()!r} is not a number",
        )
        problems.flag(
            col, np.isinf(value), lambda pos, raw=raw: f"score {str(raw.iloc[pos]).strip()!r} is not a finite number"
        )
        out[col] = value.where(np.isfinite(value))

    key = out[["lang", "instance_id"]]
    dup = key.duplicated(keep="first") & (out["instance_id"] != "")
    if dup.any():
        first_row: dict[tuple, int] = {}
        for i, k in enumerate(map(tuple, key.to_numpy())):
            first_row.setdefault(k, i)
        problems.flag(
            "instance_id",
            dup,
            lambda pos: (
                f"duplicate instance_id {out.at[pos, 'instance_id']!r} in lang "
                f"{out.at[pos, 'lang']!r} (first at row "
                f"{first_row[(out.at[pos, 'lang'], out.at[pos, 'instance_id'])] + 2})"
            ),
        )
    problems.raise_first(source)
    order = BASE + [f"hyp_{a}", f"hyp_{b}"] + [c for c in ("gold", "context") if c in out.columns] + given
    return out[order]


def read_pairs(data, source: str | None = None) -> pd.DataFrame:
    """Read and check PAIRS (a CSV path or a DataFrame); returns the typed frame (texts
    stripped, gold upper-case, scores float with NaN for blank cells; other columns dropped).
    Raises QEInputError naming the file, the row (header = row 1) and the column."""
    if isinstance(data, pd.DataFrame):
        df = data.copy()
        df.columns = [str(c).strip() for c in df.columns]
        return _normalise(df, source or "<DataFrame>")
    path = Path(data)
    df = _read_csv(path, QEInputError, skipinitialspace=False)
    out = _normalise(df, source or str(path))
    if out.empty:
        raise QEInputError(source or path, 2, None, "no instances (only a header row)")
    return out


# ---------------------------------------------------------------------------------------------
# scoring


def _metric_info(metric) -> dict:
    if hasattr(metric, "info"):
        try:
            return dict(metric.info())
        except Exception:
            pass
    return {"name": getattr(metric, "name", type(metric).__name__)}


def score_pairs(
    frame: pd.DataFrame,
    metric=None,
    context: str = "none",
    translate: Callable | None = None,
    database=None,
    progress: Callable[[float, str], Any] | None = None,
) -> pd.DataFrame:
    """The PAIRS frame with score columns filled.

    Precomputed score columns (both present) are used exactly and the metric is never called.
    Otherwise ``metric`` (a services.metrics.registry Metric or its registry name) scores source vs each
    hypothesis column, one batched call per column (``metrics.score_cached(database, ...)``
    when a database is given); None scores become NaN. ``context``: "none", "mon" or "bil"
    (see services.metrics.context; mon/bil need a context column, bil a ``translate`` callable,
    called once on the distinct contexts). ``progress(fraction, description)`` is optional.
    The result's ``attrs["qe_scoring"]`` records the metric and the context mode."""
    d = read_pairs(frame)
    a, b = _forms(d)
    if context not in metrics_context.MODES:
        raise ValueError(f"unknown context mode {context!r} (one of: {', '.join(metrics_context.MODES)})")
    notes: list[str] = []
    if has_scores(d):
        if metric is not None:
            notes.append(
                f"precomputed score_{a}/score_{b} used; metric {getattr(metric, 'name', metric)!r} was not run"
            )
        d.attrs["qe_scoring"] = {
            "metric": {"name": "precomputed"},
            "context": context,
            "precomputed": True,
            "higher_is_better": True,
            "notes": notes,
        }
        if progress:
            progress(1.0, "precomputed scores")
        return d
    if metric is None:
        raise ValueError(f"no score_{a}/score_{b} columns and no metric to compute them")

    if isinstance(metric, str):
        metric = metric_registry.get(metric)
    in_prompt = bool(getattr(metric, "context_in_prompt", False))
    if in_prompt and context != "none":
        raise ValueError(
            f"metric {getattr(metric, 'name', metric)!r} reads the context inside its prompt: use "
            f"context mode 'none' (mode {context!r} would add it a second time)"
        )
    if (context != "none" or in_prompt) and "context" not in d.columns:
        raise ValueError(
            f"context mode {context!r} needs a context column in PAIRS"
            if context != "none"
            else f"metric {getattr(metric, 'name', metric)!r} (a context prompt) needs a context column in PAIRS"
        )
    contexts = list(d["context"]) if "context" in d.columns else None
    n = len(d)
    sources = list(d["source"])
    if progress and context == "bil":
        progress(0.0, "translating contexts")
    # one contextualise call over both columns: bil translates each distinct context once
    srcs, hyps = metrics_context.contextualise(
        sources * 2,
        list(d[f"hyp_{a}"]) + list(d[f"hyp_{b}"]),
        contexts * 2 if contexts is not None else None,
        context,
        translate,
    )
    # a language-aware metric is asked per target language; others once for every row
    langs = list(d["lang"])
    per_lang = hasattr(metric, "for_languages")
    groups = (
        [(lang, [i for i in range(n) if langs[i] == lang]) for lang in dict.fromkeys(langs)]
        if per_lang
        else [(None, list(range(n)))]
    )
    failures: list[dict] = []
    for k, x in enumerate((a, b)):
        if progress:
            progress(k / 2, f"scoring hyp_{x} with {getattr(metric, 'name', 'metric')}")
        s, h = srcs[k * n : (k + 1) * n], hyps[k * n : (k + 1) * n]
        values: list[float] = [math.nan] * n
        for lang, idx in groups:
            m = metric.for_languages(SOURCE_LANG, lang) if lang is not None else metric
            ss, hh = [s[i] for i in idx], [h[i] for i in idx]
            # in_prompt: the context column was required above
            cc = [contexts[i] for i in idx] if in_prompt and contexts is not None else None
            scores = list(
                metric_registry.score_cached(database, m, ss, hh, contexts=cc)
                if database is not None
                else (m.score(ss, hh, contexts=cc) if in_prompt else m.score(ss, hh))
            )
            if len(scores) != len(idx):
                raise ValueError(f"the metric returned {len(scores)} scores for {len(idx)} segments")
            for i, v in zip(idx, scores):
                values[i] = math.nan if v is None else float(v)
            for f in getattr(m, "failures", None) or []:
                if isinstance(f, dict) and "index" in f and 0 <= f["index"] < len(idx):
                    failures.append({**f, "row": idx[f["index"]], "lang": langs[idx[f["index"]]], "column": f"hyp_{x}"})
        d[f"score_{x}"] = pd.Series(values, index=d.index, dtype=float)
    if progress:
        progress(1.0, "scored")
    if d[[f"score_{a}", f"score_{b}"]].isna().all().all():
        raise ValueError(
            f"the metric {getattr(metric, 'name', metric)!r} returned no score at all (a reference-based "
            "metric needs references; this audit is reference-free)"
        )
    if failures:
        notes.append(
            f"{len(failures)} answer(s) of the metric could not be read as a score (left missing; "
            "see qe_scoring['failures'])"
        )
    d.attrs["qe_scoring"] = {
        "metric": _metric_info(metric),
        "failures": failures,
        "context": "prompt" if in_prompt else context,
        "precomputed": False,
        "higher_is_better": bool(getattr(metric, "higher_is_better", True)),
        "context_separator": metrics_context.SEPARATOR,
        "notes": notes,
    }
    return d


def _scored(frame: pd.DataFrame) -> pd.DataFrame:
    d = read_pairs(frame)
    if not has_scores(d):
        a, b = _forms(d)
        raise ValueError(f"no scores: the frame needs score_{a} and score_{b} (run score_pairs first)")
    return d


def _by_lang(d: pd.DataFrame):
    """Each language, then the pooled sample (the mean rows are built from the language rows)."""
    for lang in sorted(d["lang"].unique()):
        yield lang, d[d["lang"] == lang]
    yield POOLED, d


def _aggregate(lang: str) -> str:
    return AGGREGATES.get(lang, "language")


def _nanless_mean(values) -> float:
    """Mean of the values; NaN when there are none or one is NaN; inf when one is inf."""
    v = np.asarray(list(values), dtype=float)
    if len(v) == 0 or np.isnan(v).any():
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.mean(v))


def _mean_rows(
    rows: list[dict],
    keys: Sequence[str],
    mean_cols: Sequence[str],
    sum_cols: Sequence[str],
    nan_cols: Sequence[str] = (),
    text_cols: dict | None = None,
) -> list[dict]:
    """The "mean" rows: per value of ``keys`` (besides lang), the unweighted mean over the
    language rows of ``mean_cols`` and the sum of ``sum_cols``."""
    langs = [r for r in rows if r["lang"] not in AGGREGATES]
    out = []
    for key in dict.fromkeys(tuple(r[k] for k in keys) for r in langs):
        group = [r for r in langs if tuple(r[k] for k in keys) == key]
        row = {"lang": MEAN, "aggregate": AGGREGATES[MEAN], **dict(zip(keys, key))}
        row.update({c: _nanless_mean(r[c] for r in group) for c in mean_cols})
        row.update({c: int(sum(r[c] for r in group)) for c in sum_cols})
        row.update({c: math.nan for c in nan_cols})
        row.update(text_cols or {})
        out.append(row)
    return out


def _with_means(rows: list[dict], means: list[dict]) -> list[dict]:
    """Language rows, then the mean rows, then the pooled rows."""
    return [r for r in rows if r["lang"] not in AGGREGATES] + means + [r for r in rows if r["lang"] == POOLED]


# ---------------------------------------------------------------------------------------------
# ratios


def ratio_columns(contrast: str) -> list[str]:
    a, b = CONTRASTS[contrast]
    return [c.format(a=a, b=b) for c in RATIO_COLUMNS_TEMPLATE]


def instance_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """Per instance: ratio = score_a / score_b and why it is not used (status 'ok', 'missing'
    for a NaN score, 'nonpositive' for a denominator <= 0 or a numerator < 0)."""
    d = _scored(frame)
    a, b = _forms(d)
    sa, sb = d[f"score_{a}"], d[f"score_{b}"]
    missing = sa.isna() | sb.isna()
    nonpos = ~missing & ((sb <= 0) | (sa < 0))
    status = np.where(missing, "missing", np.where(nonpos, "nonpositive", "ok"))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (sa / sb).where(status == "ok")
    return pd.DataFrame({"ratio": ratio, "ratio_status": status}, index=d.index)


def _t_stats(r: np.ndarray) -> tuple[float, float, float, float]:
    """(ci_low, ci_high, t, one-sided p) of the ratios against 1; NaN for fewer than 2."""
    if len(r) < 2:
        return math.nan, math.nan, math.nan, math.nan
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        two = stats.ttest_1samp(r, 1.0)
        ci = two.confidence_interval(CONFIDENCE)
        less = stats.ttest_1samp(r, 1.0, alternative="less")
    return float(ci.low), float(ci.high), float(less.statistic), float(less.pvalue)


def ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """ratios.csv: per language, source_gender 'any' (and F / M when gold is given): n used,
    n_missing, n_dropped, mean scores of the two forms over the used rows, mean ratio, its sd
    (ddof 1), the 95 % t-interval and the one-sided t-test p (H1: mean ratio < 1); then the
    'mean' rows (means over the languages, no interval) and the 'pooled' rows."""
    d = _scored(frame)
    contrast = contrast_of(d)
    a, b = CONTRASTS[contrast]
    r = instance_ratios(d)
    d = d.assign(ratio=r["ratio"], ratio_status=r["ratio_status"])
    groups = [("any", None)] + ([("F", "F"), ("M", "M")] if has_gold(d) else [])
    rows = []
    for lang, g in _by_lang(d):
        for label, gold in groups:
            gg = g if gold is None else g[g["gold"] == gold]
            ok = gg[gg["ratio_status"] == "ok"]
            x = ok["ratio"].to_numpy(dtype=float)
            lo, hi, t, p = _t_stats(x)
            rows.append(
                {
                    "lang": lang,
                    "aggregate": _aggregate(lang),
                    "contrast": contrast,
                    "source_gender": label,
                    "n": len(x),
                    "n_missing": int((gg["ratio_status"] == "missing").sum()),
                    "n_dropped": int((gg["ratio_status"] == "nonpositive").sum()),
                    f"mean_{a}": float(ok[f"score_{a}"].mean()) if len(x) else math.nan,
                    f"mean_{b}": float(ok[f"score_{b}"].mean()) if len(x) else math.nan,
                    "mean_ratio": float(np.mean(x)) if len(x) else math.nan,
                    "sd_ratio": float(np.std(x, ddof=1)) if len(x) > 1 else math.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "t": t,
                    "p_value": p,
                }
            )
    means = _mean_rows(
        rows,
        ["contrast", "source_gender"],
        [f"mean_{a}", f"mean_{b}", "mean_ratio"],
        ["n", "n_missing", "n_dropped"],
        ["sd_ratio", "ci_low", "ci_high", "t", "p_value"],
    )
    return pd.DataFrame(_with_means(rows, means), columns=ratio_columns(contrast))


# ---------------------------------------------------------------------------------------------
# errors (unambiguous setting)


def _phi_stat(f, m, axis=-1):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean(f, axis=axis) / np.mean(m, axis=axis)


def _mean_phi_stat(*samples, axis=-1):
    """Mean over languages of mean(f_k) / mean(m_k); samples = f_1, m_1, f_2, m_2, ..."""
    with np.errstate(divide="ignore", invalid="ignore"):
        phis = [np.mean(samples[i], axis=axis) / np.mean(samples[i + 1], axis=axis) for i in range(0, len(samples), 2)]
        return np.mean(phis, axis=0)


def phi_test(errors_f: int, n_f: int, errors_m: int, n_m: int) -> tuple[float, float]:
    """(two-sided p of scipy.stats.chi2_contingency, one-sided p of scipy.stats.fisher_exact
    with alternative 'greater') on the 2x2 table [[errors_f, right_f], [errors_m, right_m]]:
    is an error independent of the source gender (phi = 1)? NaN where a test is undefined (an
    empty group, or no error / no right answer at all for chi-square)."""
    if n_f < 1 or n_m < 1:
        return math.nan, math.nan
    table = np.array([[errors_f, n_f - errors_f], [errors_m, n_m - errors_m]])
    try:
        chi = float(stats.chi2_contingency(table).pvalue)
    except ValueError:  # a zero row/column sum: expected frequency 0
        chi = math.nan
    fisher = float(stats.fisher_exact(table, alternative="greater").pvalue)
    return chi, fisher


def phi_test_stratified(tables: Sequence[np.ndarray]) -> float:
    """Cochran-Mantel-Haenszel p (two-sided) of the per-language 2x2 gender x error tables
    (statsmodels StratifiedTable.test_null_odds, continuity-corrected): the test for the "mean
    across languages" row. NaN with fewer than one usable table."""
    # lazy import (statsmodels): heavy; needed only when a model is fitted
    from statsmodels.stats.contingency_tables import StratifiedTable

    usable = [
        np.asarray(t, dtype=float)
        for t in tables
        if np.asarray(t).sum(axis=1).min() > 0 and np.asarray(t).sum(axis=0).min() > 0
    ]
    if not usable:
        return math.nan
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(StratifiedTable(usable).test_null_odds(correction=True).pvalue)


def phi(er_f: float, er_m: float) -> float:
    """er_f / er_m; +inf when er_m = 0 < er_f; NaN when both are 0 or either is NaN."""
    if not (math.isfinite(er_f) and math.isfinite(er_m)):
        return math.nan
    if er_m == 0:
        return math.inf if er_f > 0 else math.nan
    return er_f / er_m


def phi_interval(
    err_f, err_m, n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> tuple[float, float, str]:
    """Percentile bootstrap CI of phi = mean(err_f) / mean(err_m) (error indicators 0/1):
    scipy.stats.bootstrap resampling each group independently (see the module docstring);
    (low, high, note). NaN with a note when a group has fewer than 2 instances."""
    f = np.asarray(err_f, dtype=float)
    m = np.asarray(err_m, dtype=float)
    if len(f) < 2 or len(m) < 2:
        return math.nan, math.nan, "fewer than 2 instances in a gender group: no bootstrap"
    return _bootstrap_interval((f, m), _phi_stat, n_resamples, seed, confidence)


def mean_phi_interval(
    groups: Sequence[tuple[Sequence[float], Sequence[float]]],
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> tuple[float, float, str]:
    """Percentile bootstrap CI of the mean over languages of phi_k = mean(f_k) / mean(m_k):
    scipy.stats.bootstrap with every language's feminine and masculine error indicators as
    independent samples (each resampled within itself); same NaN/inf handling as phi_interval."""
    samples: list[np.ndarray] = []
    for f_seq, m_seq in groups:
        f, m = np.asarray(f_seq, dtype=float), np.asarray(m_seq, dtype=float)
        if len(f) < 2 or len(m) < 2:
            return math.nan, math.nan, "fewer than 2 instances in a gender group of a language: no bootstrap"
        samples += [f, m]
    if not samples:
        return math.nan, math.nan, "no language with both gender groups"
    return _bootstrap_interval(tuple(samples), _mean_phi_stat, n_resamples, seed, confidence)


def _bootstrap_interval(samples, statistic, n_resamples, seed, confidence) -> tuple[float, float, str]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            samples,
            statistic,
            n_resamples=n_resamples,
            method="percentile",
            vectorized=True,
            paired=False,
            confidence_level=confidence,
            rng=np.random.default_rng(seed),
        )
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    if np.isfinite(dist).all():
        return float(res.confidence_interval.low), float(res.confidence_interval.high), ""
    undefined = int(np.isnan(dist).sum())
    infinite = int(np.isinf(dist).sum())
    note = (
        f"{infinite + undefined} of {len(dist)} resamples had no masculine error "
        f"({infinite} phi = inf, {undefined} 0/0 left out); bounds are order statistics"
    )
    if undefined == len(dist):
        return math.nan, math.nan, note
    alpha = (1 - confidence) / 2
    lo, hi = np.nanpercentile(dist, [100 * alpha, 100 * (1 - alpha)], method="inverted_cdf")
    return float(lo), float(hi), note


def instance_errors(frame: pd.DataFrame) -> pd.DataFrame:
    """Per instance (F/M with gold): right / wrong form score, error (wrong >= right; ties are
    errors) and tie; error and tie are NA where a score is missing."""
    d = _scored(frame)
    if contrast_of(d) != "F/M" or not has_gold(d):
        raise ValueError("error rates need the F/M contrast and a gold column (F|M)")
    fem = d["gold"] == "F"
    right = d["score_f"].where(fem, d["score_m"])
    wrong = d["score_m"].where(fem, d["score_f"])
    ok = right.notna() & wrong.notna()
    error = (wrong >= right).astype("boolean").where(ok, pd.NA)
    tie = (wrong == right).astype("boolean").where(ok, pd.NA)
    return pd.DataFrame({"score_right": right, "score_wrong": wrong, "error": error, "tie": tie}, index=d.index)


def errors(
    frame: pd.DataFrame, n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
) -> pd.DataFrame:
    """errors.csv (F/M with gold): per language, 'mean' (across languages) and 'pooled': n, n_f,
    n_m (sources whose gold is F / M, with both scores), n_missing, error counts, er, er_f, er_m,
    phi = er_f / er_m with its bootstrap CI (and phi_ci_note), its p-values (phi_p_value with
    the test named in phi_test; phi_p_greater one-sided), ties and tie_rate."""
    d = _scored(frame)
    e = instance_errors(d)
    d = d.assign(error=e["error"], tie=e["tie"])
    rows = []
    for lang, g in _by_lang(d):
        used = g[g["error"].notna()]
        ef = used.loc[used["gold"] == "F", "error"].astype(float).to_numpy()
        em = used.loc[used["gold"] == "M", "error"].astype(float).to_numpy()
        er_f = float(ef.mean()) if len(ef) else math.nan
        er_m = float(em.mean()) if len(em) else math.nan
        lo, hi, note = phi_interval(ef, em, n_resamples, seed, confidence)
        n = len(used)
        ties = int(used["tie"].astype(bool).sum())
        p_chi, p_greater = phi_test(int(ef.sum()), len(ef), int(em.sum()), len(em))
        rows.append(
            {
                "lang": lang,
                "aggregate": _aggregate(lang),
                "n": n,
                "n_f": len(ef),
                "n_m": len(em),
                "n_missing": int(len(g) - n),
                "errors_f": int(ef.sum()),
                "errors_m": int(em.sum()),
                "er": float(used["error"].astype(float).mean()) if n else math.nan,
                "er_f": er_f,
                "er_m": er_m,
                "phi": phi(er_f, er_m),
                "phi_ci_low": lo,
                "phi_ci_high": hi,
                "phi_ci_note": note,
                "phi_p_value": p_chi,
                "phi_test": "chi-square 2x2 (scipy chi2_contingency, Yates)",
                "phi_p_greater": p_greater,
                "ties": ties,
                "tie_rate": ties / n if n else math.nan,
                "_f": ef,
                "_m": em,
            }
        )
    langs = [r for r in rows if r["lang"] not in AGGREGATES]
    lo, hi, note = mean_phi_interval([(r["_f"], r["_m"]) for r in langs], n_resamples, seed, confidence)
    tables = [
        np.array([[r["errors_f"], r["n_f"] - r["errors_f"]], [r["errors_m"], r["n_m"] - r["errors_m"]]])
        for r in langs
        if r["n_f"] and r["n_m"]
    ]
    means = _mean_rows(
        rows,
        [],
        ["er", "er_f", "er_m", "phi", "tie_rate"],
        ["n", "n_f", "n_m", "n_missing", "errors_f", "errors_m", "ties"],
        ["phi_p_greater"],
        {
            "phi_ci_low": lo,
            "phi_ci_high": hi,
            "phi_ci_note": note,
            "phi_p_value": phi_test_stratified(tables)
            if len(langs) > 1
            else (langs[0]["phi_p_value"] if langs else math.nan),
            "phi_test": (
                "Cochran-Mantel-Haenszel, strata = languages (statsmodels)"
                if len(langs) > 1
                else "chi-square 2x2 (scipy chi2_contingency, Yates)"
            ),
        },
    )
    if len(langs) == 1:
        means[0]["phi_p_greater"] = langs[0]["phi_p_greater"]
    return pd.DataFrame(_with_means(rows, means), columns=ERROR_COLUMNS)


# ---------------------------------------------------------------------------------------------
# retention


class Retention(NamedTuple):
    table: pd.DataFrame  # retention.csv
    curves: pd.DataFrame  # lang, form, score, share (CCDF points)


def parse_thresholds(text: str | None) -> list[float] | None:
    """Retention thresholds typed as numbers separated by commas ("0.5,0.8"); None when none are given
    (the audit then picks its default, see default_thresholds). ValueError names the text."""
    try:
        return [float(x) for x in (text or "").split(",") if x.strip()] or None
    except ValueError:
        raise ValueError(f"--thresholds takes numbers separated by commas, not {text!r}") from None


def _check_thresholds(thresholds) -> list[float]:
    out = []
    for t in thresholds:
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t):
            raise ValueError(f"a threshold must be a finite number, not {t!r}")
        out.append(float(t))
    return out


def share_at_least(values, x) -> np.ndarray:
    """Share of the finite values >= each x (the CCDF P(X >= x)); NaN when there are none."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    x = np.atleast_1d(np.asarray(x, dtype=float))
    if len(v) == 0:
        return np.full(len(x), math.nan)
    return (len(v) - np.searchsorted(v, x, side="left")) / len(v)


def retention(frame: pd.DataFrame, thresholds: Sequence[float]) -> Retention:
    """retention.csv: per language (and 'all') and threshold: n and share of instances whose
    score of each form is >= the threshold (share_f, share_m; share_n, share_g), gap = second
    - first (share_m - share_f). Curves: for each language and form, the share >= x at every
    distinct observed score x of that form."""
    d = _scored(frame)
    a, b = _forms(d)
    ts = _check_thresholds(thresholds)
    rows, curves = [], []
    for lang, g in _by_lang(d):
        va = g[f"score_{a}"].dropna().to_numpy(dtype=float)
        vb = g[f"score_{b}"].dropna().to_numpy(dtype=float)
        if ts:
            sa, sb = share_at_least(va, ts), share_at_least(vb, ts)
            for t, x, y in zip(ts, sa, sb):
                rows.append(
                    {
                        "lang": lang,
                        "aggregate": _aggregate(lang),
                        "threshold": t,
                        f"n_{a}": len(va),
                        f"n_{b}": len(vb),
                        f"share_{a}": float(x),
                        f"share_{b}": float(y),
                        "gap": float(y - x),
                    }
                )
        for form, v in ((a, va), (b, vb)):
            xs = np.unique(v)
            for x, s in zip(xs, share_at_least(v, xs)):
                curves.append({"lang": lang, "form": form.upper(), "score": float(x), "share": float(s)})
    means = _mean_rows(rows, ["threshold"], [f"share_{a}", f"share_{b}", "gap"], [f"n_{a}", f"n_{b}"])
    table = pd.DataFrame(
        _with_means(rows, means),
        columns=["lang", "threshold", f"n_{a}", f"n_{b}", f"share_{a}", f"share_{b}", "gap", "aggregate"],
    )
    return Retention(table, pd.DataFrame(curves, columns=["lang", "form", "score", "share"]))


def default_thresholds(frame: pd.DataFrame) -> tuple[list[float], str]:
    """0.8 (the paper's filtering threshold on a 0-1 metric) when every score lies in [0, 1] and
    0.8 falls inside their range; otherwise the pooled median score of both forms (a threshold
    outside the scores' range would show no gap at all)."""
    d = _scored(frame)
    a, b = _forms(d)
    v = pd.concat([d[f"score_{a}"], d[f"score_{b}"]]).dropna().to_numpy(dtype=float)
    if len(v) == 0:
        return [], "no scores"
    if v.min() >= 0 and v.max() <= 1 and v.min() < DEFAULT_UNIT_THRESHOLD < v.max():
        return [DEFAULT_UNIT_THRESHOLD], "0.8, the paper's filtering threshold (scores lie in 0-1)"
    median = float(np.median(v))
    if v.min() >= 0 and v.max() <= 1:
        return [median], (
            f"the pooled median score, {median:.4g}: every score lies on one side of the paper's 0.8, "
            "where nothing would be filtered (set --thresholds for others)"
        )
    return [median], "the pooled median score (scores are not on a 0-1 scale)"


# ---------------------------------------------------------------------------------------------
# the whole audit


@dataclass
class AuditResult:
    contrast: str
    scores: pd.DataFrame  # per instance: scores, ratio (+ error, tie with gold)
    ratios: pd.DataFrame
    errors: pd.DataFrame | None  # F/M with gold only
    retention: pd.DataFrame
    curves: pd.DataFrame  # CCDF points
    thresholds: list[float]
    metric: dict = field(default_factory=dict)
    context: str = "none"
    n_instances: int = 0
    languages: list[str] = field(default_factory=list)
    has_gold: bool = False
    n_resamples: int = N_RESAMPLES
    seed: int = SEED
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def audit(
    frame: pd.DataFrame,
    thresholds: Sequence[float] | None = None,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    metric: dict | str | None = None,
    context: str | None = None,
) -> AuditResult:
    """Ratios, error rates (F/M with gold) and retention of a scored PAIRS frame. ``metric`` and
    ``context`` label the result; by default they come from score_pairs' attrs['qe_scoring']
    ('precomputed' when absent). thresholds None: see default_thresholds."""
    scoring = dict(frame.attrs.get("qe_scoring") or {})
    d = _scored(frame)
    contrast = contrast_of(d)
    a, b = CONTRASTS[contrast]
    gold = has_gold(d)
    warns: list[str] = list(scoring.get("notes") or [])
    notes: list[str] = []
    if metric is None:
        metric_info = dict(scoring.get("metric") or {"name": "precomputed"})
    else:
        metric_info = {"name": metric} if isinstance(metric, str) else dict(metric)
    ctx = context if context is not None else scoring.get("context", "none")
    if scoring.get("higher_is_better") is False:
        warns.append(
            f"metric {metric_info.get('name')!r} is lower-is-better: ratios, error rates and retention "
            "assume higher is better; rescale first (the paper uses 1 - MetricX/25)"
        )

    r = instance_ratios(d)
    table = d.assign(ratio=r["ratio"], ratio_status=r["ratio_status"])
    rat = ratios(d)
    all_row = rat[(rat["lang"] == POOLED) & (rat["source_gender"] == "any")].iloc[0]
    if all_row["n_missing"]:
        warns.append(f"{int(all_row['n_missing'])} instance(s) without both scores left out of every statistic")
    if all_row["n_dropped"]:
        warns.append(
            f"{int(all_row['n_dropped'])} instance(s) left out of the ratios: score_{b} <= 0 or score_{a} < 0 "
            "(a ratio needs scores on a positive scale; rescale a metric whose scale includes 0 or "
            "negative values)"
        )

    err = None
    if gold and contrast == "F/M":
        e = instance_errors(d)
        table = table.assign(error=e["error"], tie=e["tie"])
        err = errors(d, n_resamples=n_resamples, seed=seed)
        for row in err.itertuples():
            if row.lang == MEAN:
                continue
            if math.isinf(row.phi):
                warns.append(f"{row.lang}: no error on masculine sources (er_m = 0): phi = inf")
            elif math.isnan(row.phi) and row.n_f and row.n_m:
                warns.append(f"{row.lang}: no error in either group: phi = 0/0 (NaN)")
            if row.phi_ci_note:
                warns.append(f"{row.lang}: phi CI: {row.phi_ci_note}")
    elif gold:
        notes.append("gold with the N/G contrast splits the ratios by source gender; there are no error rates")

    if thresholds is None:
        ts, why = default_thresholds(d)
        notes.append(f"threshold: {why}")
    else:
        ts = _check_thresholds(thresholds)
    ret = retention(d, ts)
    return AuditResult(
        contrast=contrast,
        scores=table,
        ratios=rat,
        errors=err,
        retention=ret.table,
        curves=ret.curves,
        thresholds=ts,
        metric=metric_info,
        context=ctx,
        n_instances=len(d),
        languages=sorted(d["lang"].unique()),
        has_gold=gold,
        n_resamples=n_resamples,
        seed=seed,
        warnings=warns,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------
# outputs


def _records(frame: pd.DataFrame | None) -> list[dict]:
    if frame is None:
        return []
    return [{k: json_safe(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def summary_dict(result: AuditResult) -> dict:
    """summary.json: what was audited and how, the pooled ('all') rows, warnings. JSON has no
    infinity: an infinite phi is null there (and 'inf' in errors.csv), with a warning."""
    a, b = CONTRASTS[result.contrast]
    rat = result.ratios
    return {
        "contrast": result.contrast,
        "n_instances": result.n_instances,
        "languages": result.languages,
        "setting": "unambiguous (gold given)" if result.has_gold else "ambiguous (no gold)",
        "metric": json_safe(result.metric),
        "context": result.context,
        "thresholds": result.thresholds,
        "ratio": _records(rat[rat["lang"].isin(list(AGGREGATES))]),
        "errors": _records(
            None if result.errors is None else result.errors[result.errors["lang"].isin(list(AGGREGATES))]
        ),
        "retention": _records(result.retention[result.retention["lang"].isin(list(AGGREGATES))]),
        "method": {
            "ratio": f"score_{a} / score_{b} per instance; rows with score_{b} <= 0 or score_{a} < 0 dropped "
            "(n_dropped), rows with a missing score left out (n_missing)",
            "ratio_ci": f"{CONFIDENCE:.0%} t-interval (scipy.stats.ttest_1samp confidence_interval)",
            "ratio_test": "one-sample t-test against 1, alternative 'less' (scipy.stats.ttest_1samp)",
            "error": "wrong form scores >= right form (ties are errors)",
            "phi": "er_f / er_m; inf when er_m = 0 < er_f; NaN when 0/0",
            "phi_ci": f"scipy.stats.bootstrap over the two gender groups (resampled independently), percentile, "
            f"{result.n_resamples} resamples, seed {result.seed}; the mean row resamples every "
            "language's two groups and averages the languages' phi",
            "phi_p": "per language and pooled: chi-square test of the 2x2 gender x error table (scipy "
            "chi2_contingency, Yates) and one-sided Fisher exact (scipy fisher_exact, alternative "
            "'greater': more errors on feminine sources); mean row: Cochran-Mantel-Haenszel over the "
            "languages (statsmodels StratifiedTable)",
            "retention": "share of instances whose score of a form is >= the threshold (CCDF)",
            "aggregates": "'mean' rows: unweighted means of the per-language values (paper 003 Tables 1 and 4, "
            "'mean results across languages'); 'pooled' rows: every language's instances pooled "
            "into one sample (not a paper statistic)",
        },
        "warnings": result.warnings,
        "notes": result.notes,
    }


def figures(result: AuditResult) -> dict:
    """Plotly figures: 'ratios' (mean ratio per language with its 95 % CI and the parity line
    at 1), 'ccdf' (share retained vs score per form, pooled; per-language curves hidden in the
    legend; dotted lines at the thresholds) and, with gold, 'errors' (er_f and er_m per
    language, phi in the hover)."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go

    a, b = CONTRASTS[result.contrast]
    out = {}
    rat = result.ratios
    fig = go.Figure()
    order = [lang for lang in result.languages] + [MEAN, POOLED]
    for label, sub in rat.groupby("source_gender", sort=False):
        sub = sub.set_index("lang").reindex(order)
        name = "all sources" if label == "any" else f"sources with gold {label}"
        fig.add_trace(
            go.Scatter(
                x=order,
                y=sub["mean_ratio"],
                mode="markers",
                name=name,
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=(sub["ci_high"] - sub["mean_ratio"]).tolist(),
                    arrayminus=(sub["mean_ratio"] - sub["ci_low"]).tolist(),
                ),
                customdata=np.stack([sub["n"], sub["p_value"]], axis=-1),
                hovertemplate="%{x}: mean ratio %{y:.4f}<br>n %{customdata[0]}, one-sided p %{customdata[1]:.3g}"
                "<extra></extra>",
            )
        )
    fig.add_hline(y=1, line_dash="dash", line_color="grey", annotation_text="parity")
    fig.update_layout(
        title=f"QE(s, h_{a.upper()}) / QE(s, h_{b.upper()}): mean and {CONFIDENCE:.0%} CI"
        f"<br><sup>{result.metric.get('name', '')}, context {result.context}</sup>",
        xaxis_title="language",
        yaxis_title="ratio",
        height=450,
        width=max(640, 300 + 90 * len(order)),
    )
    out["ratios"] = fig

    fig = go.Figure()
    colors = {a.upper(): "#d62728", b.upper(): "#1f77b4"}
    single = len(result.languages) == 1
    for (lang, form), sub in result.curves.groupby(["lang", "form"], sort=False):
        pooled = lang == POOLED
        if single and not pooled:
            continue  # one language: its curves are the pooled ones
        fig.add_trace(
            go.Scatter(
                x=sub["score"],
                y=sub["share"],
                mode="lines",
                line_shape="vh",
                name=f"{form} ({lang})",
                visible=True if pooled else "legendonly",
                line=dict(color=colors.get(form), dash="solid" if pooled else "dot"),
                hovertemplate=f"{form} {lang}: " + "share %{y:.1%} scored >= %{x:.4g}<extra></extra>",
            )
        )
    for t in result.thresholds:
        fig.add_vline(x=t, line_dash="dot", line_color="grey", annotation_text=f"{t:g}")
    fig.update_layout(
        title="Share of instances scored at least x, by form",
        xaxis_title="score",
        yaxis_title="share retained",
        yaxis_tickformat=".0%",
        height=450,
        width=750,
    )
    out["ccdf"] = fig

    if result.errors is not None:
        e = result.errors
        fig = go.Figure()
        for col, name, color in (
            ("er_f", "ER, feminine sources", "#d62728"),
            ("er_m", "ER, masculine sources", "#1f77b4"),
        ):
            fig.add_trace(
                go.Bar(
                    x=e["lang"],
                    y=e[col],
                    name=name,
                    marker_color=color,
                    customdata=np.stack([e["phi"], e["phi_ci_low"], e["phi_ci_high"]], axis=-1),
                    hovertemplate="%{x}: %{y:.1%}<br>phi %{customdata[0]:.3g} "
                    "[%{customdata[1]:.3g}, %{customdata[2]:.3g}]<extra></extra>",
                )
            )
        fig.update_layout(
            barmode="group",
            title="Error rate by source gender<br><sup>an error: the wrong form "
            "scored >= the right one (ties count)</sup>",
            yaxis_tickformat=".0%",
            xaxis_title="language",
            height=450,
            width=max(640, 300 + 90 * len(e)),
        )
        out["errors"] = fig
    return out


def write_outputs(result: AuditResult, out_dir, include_plotlyjs="directory", png: bool | None = None) -> list[Path]:
    """Write ratios.csv, errors.csv (with gold, F/M), retention.csv, ccdf.csv, scores.csv,
    summary.json and each figure as a standalone HTML file (plotly.min.js written once beside
    them, as the other analyses do)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []

    paths += write_tables(
        out,
        {
            "ratios.csv": result.ratios,
            "errors.csv": result.errors,
            "retention.csv": result.retention,
            "ccdf.csv": result.curves,
            "scores.csv": result.scores,
        },
    )
    paths.append(write_json(out / "summary.json", summary_dict(result)))
    paths += write_figures(figures(result), out, include_plotlyjs, png, notes=result.notes)
    return paths


def summary(result: AuditResult) -> str:
    a, b = CONTRASTS[result.contrast]
    lines = [
        f"QE gender audit: {result.n_instances} instances, {', '.join(result.languages)}; metric "
        f"{result.metric.get('name')}, context {result.context}, contrast {result.contrast}"
    ]
    for row in result.ratios[result.ratios["source_gender"] == "any"].itertuples():
        lines.append(
            f"  {row.lang}: ratio {row.mean_ratio:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}], n {row.n}, "
            f"one-sided p {row.p_value:.3g}"
        )
    if result.errors is not None:
        for row in result.errors.itertuples():
            lines.append(
                f"  {row.lang}: ER {row.er:.3f} (F {row.er_f:.3f}, M {row.er_m:.3f}), phi {row.phi:.3g} "
                f"[{row.phi_ci_low:.3g}, {row.phi_ci_high:.3g}], p {row.phi_p_value:.3g}, "
                f"ties {row.tie_rate:.1%}"
            )
    for row in result.retention[result.retention["lang"] == MEAN].itertuples():
        lines.append(
            f"  retained at >= {row.threshold:g}: {a.upper()} {getattr(row, f'share_{a}'):.1%}, "
            f"{b.upper()} {getattr(row, f'share_{b}'):.1%} (gap {row.gap:+.1%})"
        )
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def run_cli(
    path,
    out_dir,
    metric=None,
    context: str = "none",
    thresholds: Sequence[float] | None = None,
    translate=None,
    database=None,
) -> str:
    """Read PAIRS, score (unless precomputed), audit, write outputs; a short human summary."""
    d = read_pairs(path)
    scored = score_pairs(d, metric=metric, context=context, translate=translate, database=database)
    result = audit(scored, thresholds=thresholds)
    files = write_outputs(result, out_dir)
    return f"QE audit of {path}\n" + summary(result) + f"\n{len(files)} files written to {out_dir}"
