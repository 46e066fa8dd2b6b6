"""Quality-aware reranking and the gender of its output (paper 003 section 5:
"N sampled hypotheses reranked by a QE metric; gender accuracy per source gender vs
greedy").

Candidates (:func:`read_candidates`), one row per hypothesis: ``instance_id``, ``lang``,
``source``, ``gold`` (F|M, the gender the source's context calls for) and ``hypothesis``;
optional ``is_greedy`` (1/0, true/false: the greedy translation of that source), ``context``
(for context-aware reranking) and the references ``ref_f`` / ``ref_m`` (the feminine /
masculine reference translations; or join them from a PAIRS frame with
:func:`attach_references`). :func:`sample_candidates` builds the frame from a PAIRS frame and a
sampler ``callable(source, n) -> list[str]`` (plus an optional ``greedy(source) -> str``).

Selection (:func:`select`): method "greedy" is the is_greedy row of each source; method
"reranked" is the candidate with the best score among the sampled (non-greedy) ones — all
candidates when there is no is_greedy column, or with include_greedy=True. A metric that names
the languages in its prompt (GEMBA-DA, ``for_languages``) is asked per candidate ``lang``
(English -> that language). Scores come from
``score``: a callable (sources, hypotheses) -> list[float] or an object with such a
``score`` method (a services.metrics.registry Metric); higher is better unless its
``higher_is_better`` attribute is False. All candidates are scored in one call; ties go to
the first candidate in input order; a None/NaN score is never chosen (a source with no scored
candidate has no reranked output and is counted). Context modes none/mon/bil as in
services.metrics.context (the paper's QAD (CA) rows).

Gender accuracy (:func:`accuracy`) is MT-GenEval's (its accuracy_metric.py, here
services.qe.mtgeneval.gender_decision): after lower-casing and replacing punctuation by spaces,
the words of the correct reference that the wrong one lacks and vice versa; an output is
correct when it contains none of the wrong reference's unique words (require_correct=True
also demands one of the correct reference's unique words, a stricter reading). The table, as
in the paper's Table 2, per method (and language, and 'all'): n, n_f, n_m, acc_f (share of
sources with gold F whose output is correct against the feminine reference), acc_m (gold M,
masculine reference), acc_all, and f_as_m / m_as_f: the share of gold-F (gold-M) outputs
that pass the check against the other gender's reference (the paper's "h_M down" / "h_F down"
columns; an output with no gendered word passes both).

Quality columns of Table 2, beside the accuracy, when configured (:func:`evaluate`'s ``bleu`` and
``comet``): for each source-gender group, the outputs scored against the references of both
genders, as the paper's "Source Gender = F: Comet-22 h_F up, h_M down; Bleu h_F up, h_M down"
(and the mirror for M): ``comet_f`` / ``comet_f_vs_m`` (gold-F outputs against the feminine /
masculine reference), ``comet_m`` / ``comet_m_vs_f``, and the same for ``bleu_*``. BLEU is
sacrebleu's corpus BLEU of the group's outputs against the one reference (0-100, sacrebleu's
defaults: 13a tokenisation, exponential smoothing); COMET is the mean of the reference-based
metric's segment scores times 100 (the paper reports COMET-22, Unbabel/wmt22-comet-da, as
87.10), computed only when a reference-based metric is given or, with ``comet="auto"``, when
metrics.get("comet") is configured (TRADLAB_COMET_CHECKPOINT); otherwise the COMET columns are
absent and a note says why.

Rows: per method, each language, then "mean" (the unweighted mean of the languages' values,
as the paper's multi-language results; counts are sums) and "pooled" (every language's outputs
as one sample; BLEU there is one corpus BLEU over all of them).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from services.common.analysis_input import InputError, Problems, read_csv_cells
from services.common.analysis_input import cells as _cells
from services.metrics import context as metrics_context
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.qe.mtgeneval import gender_decision

REQUIRED = ["instance_id", "lang", "source", "gold", "hypothesis"]
METHODS = ("greedy", "reranked")
TABLE_COLUMNS = ["method", "lang", "n", "n_f", "n_m", "acc_f", "acc_m", "acc_all", "f_as_m", "m_as_f"]
COMET_COLUMNS = ["comet_f", "comet_f_vs_m", "comet_m", "comet_m_vs_f"]
BLEU_COLUMNS = ["bleu_f", "bleu_f_vs_m", "bleu_m", "bleu_m_vs_f"]
MEAN, POOLED = "mean", "pooled"
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}


class RerankInputError(InputError):
    """Bad candidates input (file, row, column named)."""


def read_candidates(data, source: str | None = None) -> pd.DataFrame:
    """Check a candidates table (CSV path or DataFrame): REQUIRED columns, gold F|M, one source
    and gold per (lang, instance_id), is_greedy a boolean with at most one greedy row per
    instance. Keeps ref_f, ref_m and context when present, and the input order (column
    ``candidate``: 0, 1, ... within an instance)."""
    if isinstance(data, pd.DataFrame):
        df, src = data.copy(), source or "<DataFrame>"
    else:
        path = Path(data)
        src = source or str(path)
        df = read_csv_cells(path, RerankInputError, skipinitialspace=False)
    df.columns = [str(c).strip().lstrip("\ufeff") for c in df.columns]
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise RerankInputError(src, 1, missing[0], f"missing column (required: {', '.join(REQUIRED)})")
    df = df.reset_index(drop=True)
    problems = Problems(list(df.columns), RerankInputError)
    out = pd.DataFrame(index=df.index)
    for col in ("instance_id", "lang", "source"):
        out[col] = _cells(df[col])
        problems.flag(col, out[col] == "", lambda pos: "empty value")
    gold = _cells(df["gold"]).str.upper()
    problems.flag(
        "gold", ~gold.isin(["F", "M"]), lambda pos: f"gold {str(df['gold'].iloc[pos]).strip()!r} is not F or M"
    )
    out["gold"] = gold
    out["hypothesis"] = df["hypothesis"].map(
        lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip()
    )
    if "is_greedy" in df.columns:
        g = _cells(df["is_greedy"]).str.lower()
        problems.flag(
            "is_greedy",
            ~g.isin(_TRUE | _FALSE),
            lambda pos: f"is_greedy {str(df['is_greedy'].iloc[pos]).strip()!r} is not 1/0 or true/false",
        )
        out["is_greedy"] = g.isin(_TRUE)
    for col in ("ref_f", "ref_m", "context"):
        if col in df.columns:
            out[col] = _cells(df[col])
    key = ["lang", "instance_id"]
    for col in ("source", "gold"):
        first = out.groupby(key, sort=False)[col].transform("first")
        problems.flag(
            col,
            out[col] != first,
            lambda pos, col=col, first=first: f"{col} differs from this instance's first row ({first.iloc[pos]!r})",
        )
    if "is_greedy" in out.columns:
        twice = out["is_greedy"] & out[out["is_greedy"]].duplicated(key).reindex(out.index, fill_value=False)
        problems.flag("is_greedy", twice, lambda pos: "a second greedy hypothesis for this instance")
    problems.raise_first(src)
    out["candidate"] = out.groupby(key, sort=False).cumcount()
    return out


def attach_references(candidates: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """ref_f / ref_m of each candidate from a PAIRS frame's hyp_f / hyp_m (matched on lang and
    instance_id). Raises ValueError naming an instance that PAIRS lacks."""
    refs = pairs[["lang", "instance_id", "hyp_f", "hyp_m"]].rename(columns={"hyp_f": "ref_f", "hyp_m": "ref_m"})
    refs = refs.astype({"lang": str, "instance_id": str}).drop_duplicates(["lang", "instance_id"])
    out = candidates.drop(columns=[c for c in ("ref_f", "ref_m") if c in candidates.columns])
    out = out.merge(refs, on=["lang", "instance_id"], how="left", validate="many_to_one")
    lacking = out["ref_f"].isna()
    if lacking.any():
        r = out[lacking].iloc[0]
        raise ValueError(f"no references in PAIRS for instance {r['instance_id']!r} (lang {r['lang']!r})")
    return out


def sample_candidates(
    pairs: pd.DataFrame,
    sampler: Callable[[str, int], Sequence[str]],
    n: int,
    greedy: Callable[[str], str] | None = None,
    progress: Callable[[float, str], Any] | None = None,
) -> pd.DataFrame:
    """Candidates for every PAIRS row with gold: greedy(source) first (is_greedy True) when
    given, then sampler(source, n); references and context carried over."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a whole number >= 1, not {n!r}")
    if "gold" not in pairs.columns:
        raise ValueError("reranking needs the gold gender of each source (a gold column, F|M)")
    rows = []
    total = len(pairs)
    for k, r in enumerate(pairs.itertuples(index=False)):
        if progress:
            progress(k / max(total, 1), f"sampling {k + 1}/{total}")
        base = {
            "instance_id": r.instance_id,
            "lang": r.lang,
            "source": r.source,
            "gold": r.gold,
            "ref_f": r.hyp_f,
            "ref_m": r.hyp_m,
        }
        if "context" in pairs.columns:
            base["context"] = getattr(r, "context")
        if greedy is not None:
            rows.append({**base, "hypothesis": greedy(r.source), "is_greedy": True})
        samples = sampler(r.source, int(n))
        if isinstance(samples, str) or not all(isinstance(s, str) for s in samples):
            raise ValueError("the sampler must return a list of strings")
        rows.extend({**base, "hypothesis": s, "is_greedy": False} for s in samples)
    if progress:
        progress(1.0, "sampled")
    return read_candidates(pd.DataFrame(rows))


def _scorer(score) -> tuple[Callable[[list[str], list[str]], Sequence[Any]], bool]:
    higher = bool(getattr(score, "higher_is_better", True))
    method = getattr(score, "score", None)
    if method is not None and callable(method):
        return (lambda s, h: method(s, h)), higher
    if callable(score):
        return score, higher
    raise TypeError("score must be a callable (sources, hypotheses) -> scores or an object with a score() method")


def select(
    candidates: pd.DataFrame, score=None, context: str = "none", translate=None, include_greedy: bool = False
) -> pd.DataFrame:
    """One row per (lang, instance_id, method): the greedy output (when is_greedy rows exist)
    and the reranked one (best score). Columns: method, lang, instance_id, source, gold,
    hypothesis, score (NaN for greedy), candidate, n_candidates, plus ref_f/ref_m when present.
    score may be None when only greedy rows are wanted."""
    c = read_candidates(candidates) if "candidate" not in candidates.columns else candidates.copy()
    has_greedy = "is_greedy" in c.columns and bool(c["is_greedy"].any())
    refs = [col for col in ("ref_f", "ref_m") if col in c.columns]
    keep = ["lang", "instance_id", "source", "gold", "hypothesis", "candidate"] + refs
    parts = []
    if has_greedy:
        g = c[c["is_greedy"]][keep].assign(method="greedy", score=math.nan, n_candidates=1)
        parts.append(g)
    if score is not None:
        pool = c if not has_greedy or include_greedy else c[~c["is_greedy"]]
        pool = pool.copy()
        fn, higher = _scorer(score)
        srcs, hyps = metrics_context.contextualise(
            list(pool["source"]),
            list(pool["hypothesis"]),
            list(pool["context"]) if "context" in pool.columns else None,
            context,
            translate,
        )
        if hasattr(score, "for_languages"):  # a judge that names the languages (GEMBA-DA): per language
            langs = list(pool["lang"])
            values = [None] * len(pool)
            for lang in dict.fromkeys(langs):
                idx = [i for i, x in enumerate(langs) if x == lang]
                part = list(score.for_languages("en", lang).score([srcs[i] for i in idx], [hyps[i] for i in idx]))
                for i, v in zip(idx, part):
                    values[i] = v
        else:
            values = list(fn(srcs, hyps))
        if len(values) != len(pool):
            raise ValueError(f"the score function returned {len(values)} scores for {len(pool)} candidates")
        pool["score"] = [math.nan if v is None else float(v) for v in values]
        pool["n_candidates"] = pool.groupby(["lang", "instance_id"], sort=False)["hypothesis"].transform("size")
        scored = pool[pool["score"].notna()]
        # best first; a stable sort keeps input order among ties
        ranked = scored.sort_values("score", ascending=not higher, kind="stable")
        best = ranked.drop_duplicates(["lang", "instance_id"], keep="first")
        best = best.sort_values(["lang", "instance_id"], kind="stable")
        parts.append(best[keep + ["score", "n_candidates"]].assign(method="reranked"))
    if not parts:
        raise ValueError("nothing to select: no is_greedy rows and no score function")
    out = pd.concat(parts, ignore_index=True)
    cols = [
        "method",
        "lang",
        "instance_id",
        "source",
        "gold",
        "hypothesis",
        "score",
        "candidate",
        "n_candidates",
    ] + refs
    return out[cols]


def judge(selected: pd.DataFrame, require_correct: bool = False) -> pd.DataFrame:
    """Per selected output: correct (against the gold gender's reference, MT-GenEval rule),
    passes_f / passes_m (the check against the feminine / masculine reference) and the
    gendered words found."""
    if not {"ref_f", "ref_m"} <= set(selected.columns):
        raise ValueError("gender accuracy needs ref_f and ref_m (see attach_references)")
    rows = []
    for r in selected.itertuples(index=False):
        pf, fw_f, ww_f = gender_decision(r.hypothesis, r.ref_f, r.ref_m, require_correct)
        pm, fw_m, ww_m = gender_decision(r.hypothesis, r.ref_m, r.ref_f, require_correct)
        rows.append(
            {
                "passes_f": pf,
                "passes_m": pm,
                "correct": pf if r.gold == "F" else pm,
                "feminine_words": " ".join(sorted(fw_f)),
                "masculine_words": " ".join(sorted(fw_m)),
            }
        )
    return pd.concat([selected.reset_index(drop=True), pd.DataFrame(rows)], axis=1)


def comet_scores(selected: pd.DataFrame, comet) -> pd.DataFrame:
    """selected plus comet_vs_f / comet_vs_m: a reference-based metric's segment score of each
    output against the feminine / masculine reference (one batched call per reference)."""
    if not {"ref_f", "ref_m"} <= set(selected.columns):
        raise ValueError("COMET against the references needs ref_f and ref_m (see attach_references)")
    out = selected.copy()
    for g in ("f", "m"):
        values = list(comet.score(list(out["source"]), list(out["hypothesis"]), list(out[f"ref_{g}"])))
        if len(values) != len(out):
            raise ValueError(f"the COMET metric returned {len(values)} scores for {len(out)} outputs")
        out[f"comet_vs_{g}"] = [math.nan if v is None else float(v) for v in values]
    return out


def _bleu(hypotheses, references) -> float:
    """sacrebleu corpus BLEU (0-100) of the outputs against one reference each; NaN for none."""
    # lazy import (sacrebleu): loaded only when the metric scores
    import sacrebleu

    if not len(hypotheses):
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def _group_row(g: pd.DataFrame, bleu: bool, comet: bool) -> dict:
    f, m = g[g["gold"] == "F"], g[g["gold"] == "M"]
    row = {
        "n": len(g),
        "n_f": len(f),
        "n_m": len(m),
        "acc_f": float(f["passes_f"].mean()) if len(f) else math.nan,
        "acc_m": float(m["passes_m"].mean()) if len(m) else math.nan,
        "acc_all": float(g["correct"].mean()) if len(g) else math.nan,
        "f_as_m": float(f["passes_m"].mean()) if len(f) else math.nan,
        "m_as_f": float(m["passes_f"].mean()) if len(m) else math.nan,
    }
    if comet:
        row.update(
            {
                "comet_f": 100 * float(f["comet_vs_f"].mean()) if len(f) else math.nan,
                "comet_f_vs_m": 100 * float(f["comet_vs_m"].mean()) if len(f) else math.nan,
                "comet_m": 100 * float(m["comet_vs_m"].mean()) if len(m) else math.nan,
                "comet_m_vs_f": 100 * float(m["comet_vs_f"].mean()) if len(m) else math.nan,
            }
        )
    if bleu:
        row.update(
            {
                "bleu_f": _bleu(f["hypothesis"], f["ref_f"]),
                "bleu_f_vs_m": _bleu(f["hypothesis"], f["ref_m"]),
                "bleu_m": _bleu(m["hypothesis"], m["ref_m"]),
                "bleu_m_vs_f": _bleu(m["hypothesis"], m["ref_f"]),
            }
        )
    return row


def accuracy(selected: pd.DataFrame, require_correct: bool = False, bleu: bool = False) -> pd.DataFrame:
    """The Table-2-like table (see the module docstring) per method: each language, 'mean' and
    'pooled'. bleu=True adds the BLEU columns; the COMET columns come when ``selected`` holds
    comet_vs_f / comet_vs_m (see comet_scores)."""
    j = judge(selected, require_correct)
    comet = {"comet_vs_f", "comet_vs_m"} <= set(j.columns)
    columns = TABLE_COLUMNS + (COMET_COLUMNS if comet else []) + (BLEU_COLUMNS if bleu else [])
    rows = []
    methods = [m for m in METHODS if m in set(j["method"])] + sorted(set(j["method"]) - set(METHODS))
    for method in methods:
        jm = j[j["method"] == method]
        langs = sorted(jm["lang"].unique())
        per_lang = [
            {"method": method, "lang": lang, **_group_row(jm[jm["lang"] == lang], bleu, comet)} for lang in langs
        ]
        mean = {"method": method, "lang": MEAN}
        for col in columns[2:]:
            values = [r[col] for r in per_lang]
            if col in ("n", "n_f", "n_m"):
                mean[col] = int(sum(values))
            else:
                v = np.asarray(values, dtype=float)
                mean[col] = float(np.mean(v)) if len(v) and not np.isnan(v).any() else math.nan
        rows += per_lang + [mean, {"method": method, "lang": POOLED, **_group_row(jm, bleu, comet)}]
    return pd.DataFrame(rows, columns=columns)


@dataclass
class RerankResult:
    selected: pd.DataFrame  # judged outputs per method
    table: pd.DataFrame  # accuracy per method
    n_sources: int = 0
    n_unscored: int = 0  # sources with no scored candidate (no reranked output)
    notes: list[str] = field(default_factory=list)
    quality: list[str] = field(default_factory=list)  # the quality metrics in the table (bleu, comet)


def _comet_metric(comet, notes: list[str]):
    """The reference-based metric for the COMET columns: a Metric as given, or with "auto" the
    registry's "comet" when it is configured; None (with a note) otherwise."""
    if comet is None or comet is False:
        return None
    if comet != "auto":
        return comet

    try:
        return metrics.get("comet")
    except (BackendUnavailable, KeyError) as e:
        notes.append(f"no COMET columns: the 'comet' metric is not configured ({e})")
        return None


def evaluate(
    candidates: pd.DataFrame,
    score,
    pairs: pd.DataFrame | None = None,
    context: str = "none",
    translate=None,
    include_greedy: bool = False,
    require_correct: bool = False,
    bleu: bool = True,
    comet="auto",
) -> RerankResult:
    """read_candidates, attach_references (when pairs is given), select, accuracy; with the
    references known, the quality columns of the paper's Table 2: BLEU (sacrebleu, unless
    bleu=False) and COMET (``comet``: a reference-based Metric, "auto" for the registry's
    "comet" when configured, None for none)."""
    c = read_candidates(candidates)
    if pairs is not None:
        c = attach_references(c, pairs)
    sel = select(c, score, context=context, translate=translate, include_greedy=include_greedy)
    n_sources = int(c[["lang", "instance_id"]].drop_duplicates().shape[0])
    reranked = int((sel["method"] == "reranked").sum())
    notes = []
    unscored = n_sources - reranked if score is not None else 0
    if unscored:
        notes.append(f"{unscored} source(s) had no scored candidate and no reranked output")
    quality = []
    has_refs = {"ref_f", "ref_m"} <= set(sel.columns)
    if has_refs:
        metric = _comet_metric(comet, notes)
        if metric is not None:
            sel = comet_scores(sel, metric)
            quality.append(f"comet ({getattr(metric, 'name', 'comet')}, x100)")
        if bleu:
            quality.append("bleu (sacrebleu corpus BLEU)")
    return RerankResult(
        selected=judge(sel, require_correct),
        table=accuracy(sel, require_correct, bleu=bool(bleu) and has_refs),
        n_sources=n_sources,
        n_unscored=unscored,
        notes=notes,
        quality=quality,
    )
