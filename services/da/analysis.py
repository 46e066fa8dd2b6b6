"""Direct-assessment (DA) analysis for the text-vs-audio study (paper 001).

Input: one row per judgment (see REQUIRED; optional ``run`` defaulting to 1 and
``duration_s``, the seconds spent on that item). Output (:class:`DAResult`):

* workers: per (modality, run, worker) the reliability test. A control item (bad_reference or
  ask_again) pairs with the mean of the same worker's ``system`` scores on the same
  (system, segment_id, modality, run); d_bad = original - bad_reference,
  d_rep = original - ask_again; p = mannwhitneyu(d_rep, d_bad, alternative="less");
  reliable when p < alpha. Flags: constant ratings (sd 0) and unrealistically fast HITs
  (median duration_s per item of a HIT below ``fast_item_s``). Paper 001 (Ethics) rejected HITs
  "completed in an unrealistically short time": by default (keep_fast=False; wmt=True keeps
  them, as WMT's published scores do) a fast HIT's judgments leave the z-scores and the scores,
  and qc_summary counts them (hits_fast_excluded, judgments_fast_excluded). Judgments without a
  time cannot be judged so: qc_summary counts them (judgments_untimed, and hits_untimed: HITs with
  no timed judgment) and summary_notes says that those HITs were not checked.
* z-scores: reliable workers only (wmt=True: every worker); per (worker, modality, run)
  z = (x - mean) / sd over all that worker's judgments (every item type), sample sd; a worker
  with a single judgment or sd 0 is dropped.
* systems: mean over segments of the per-segment mean (raw and z), ``system`` items only
  (wmt=True: ``system`` and ``ask_again``, WMT's published method). Ranked by z_mean; z_means
  equal to two decimals are ordered by raw_mean (paper 001's rule; wmt=True ranks by z alone,
  as WMT does).
* head_to_head: every ordered pair, one-sided Mann-Whitney on the judgments' z (h2h_level=
  "segment": on segment mean z, WMT's unit); clusters with a boundary after rank i when every
  system ranked <= i beats every system ranked > i (p < alpha); both from services/common/ranking.py.
* replication: Pearson r of system (level "system") and segment (level "segment") z between
  run 1 and run 2 per modality and between text and audio per run, where both sides exist.
* qc_summary: per modality, workers total / reliable / kept, judgments total / kept (all
  judgments of kept workers outside fast HITs) / scored (those in system scores), and the fast
  HITs and judgments excluded.
* table1: paper 001's Table 1 from the DA segments (segments and document length per domain).
* score_distribution: paper 001's Figure 3 ("Score distributions of reliable workers across
  different quality control segments: bad_reference, ask_again, and original system
  outputs"): the raw scores of the kept workers' judgments per (modality, run, item_type), as
  a table (n, mean, sd, quartiles: pandas) and the figure 'score_distribution' (box plots,
  one panel per modality and run).

Options beyond the paper: reliability="paired_t" is WMT's published worker check (checked
against WMT22's ad-trk-stats.csv).

Pure functions; statistics come from scipy, tables from pandas; figures from plotly.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from services.common import ranking
from services.common.figure_files import write_figures
from services.da import export_input as da_export
from services.da import importer as da_import
from services.da.judgments import (  # noqa: F401 (re-exported)
    CONTROL_TYPES,
    ITEM_TYPES,
    MODALITIES,
    OPTIONAL,
    REQUIRED,
    DAInputError,
    normalise,
    read_judgments,
)
from services.study import export_reader

FAST_ITEM_S = 2.0  # a HIT whose median seconds per item is below this is flagged as implausibly fast

WORKER_COLUMNS = [
    "modality",
    "run",
    "worker_id",
    "n_judgments",
    "n_bad_pairs",
    "n_repeat_pairs",
    "p_value",
    "reliable",
    "mean",
    "sd",
    "kept",
    "constant",
    "n_hits",
    "n_fast_hits",
    "median_item_s",
    "fast",
]
SYSTEM_COLUMNS = ["modality", "run", "system", "n_judgments", "raw_mean", "z_mean", "rank", "cluster", "n_segments"]
SEGMENT_COLUMNS = ["modality", "run", "system", "segment_id", "n_judgments", "raw", "z"]
H2H_COLUMNS = ["modality", "run", "system_a", "system_b", "z_diff", "p_value", "n_a", "n_b"]
REPLICATION_COLUMNS = ["comparison", "r", "n", "level", "p_value"]
QC_COLUMNS = [
    "modality",
    "workers_total",
    "workers_reliable",
    "judgments_total",
    "judgments_kept",
    "workers_kept",
    "judgments_scored",
    "workers_constant",
    "workers_fast",
    "hits_fast_excluded",
    "judgments_fast_excluded",
    "hits_untimed",
    "judgments_untimed",
]
TABLE1_COLUMNS = [
    "domain",
    "segments",
    "documents",
    "mean_doc_segments",
    "median_doc_segments",
    "mean_doc_words",
    "median_doc_words",
]
DISTRIBUTION_COLUMNS = ["modality", "run", "item_type", "n", "mean", "sd", "median", "q1", "q3"]
OUTPUT_TABLES = ("workers", "systems", "head_to_head", "replication", "qc_summary", "segments", "score_distribution")

_KEY = ["modality", "run", "worker_id"]


@dataclass
class DAResult:
    workers: pd.DataFrame
    systems: pd.DataFrame
    head_to_head: pd.DataFrame
    replication: pd.DataFrame
    qc_summary: pd.DataFrame
    segments: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SEGMENT_COLUMNS))
    alpha: float = 0.05
    wmt: bool = False
    score_distribution: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=DISTRIBUTION_COLUMNS))
    kept_scores: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=["modality", "run", "worker_id", "item_type", "score"])
    )  # the figure's data
    keep_fast: bool = False
    fast_item_s: float = FAST_ITEM_S


# ---------------------------------------------------------------------------------------------
# input


def detect_format(path) -> str:
    """'csv' (this project's schema), 'export' (an export's da_judgments.csv), 'wmt' (WMT DA TSV) or
    'appraise' (Appraise CSV export)."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline().strip("\r\n\ufeff")
    except FileNotFoundError:
        raise DAInputError(path, None, None, "file not found") from None
    if not first:
        raise DAInputError(path, 1, None, "empty file")
    if "\t" in first and {"HITId", "WorkerId", "sys_id", "type", "sid"} <= set(first.split("\t")):
        return "wmt"
    fields = [x.strip().strip('"') for x in first.split(",")]
    if {"worker_id", "item_type", "score"} <= set(fields):
        return "csv"
    if da_export.is_table(fields):
        return "export"
    if (len(fields) >= 7 and fields[3].upper() in ("TGT", "BAD", "REF", "CHK")) or {"username", "itemType"} <= set(
        fields
    ):
        return "appraise"
    raise DAInputError(
        path,
        1,
        None,
        "unrecognised format: expected this project's judgments CSV "
        f"(columns {', '.join(REQUIRED)}), a WMT DA TSV or an Appraise CSV export",
    )


def load_judgments(path, fmt: str = "auto") -> pd.DataFrame:
    """Read judgments in any supported format (fmt: auto, csv, wmt, appraise), or a study's export
    (its folder or its da_judgments table, in any of the export's formats)."""
    export = export_reader.find(path)
    if export is not None and export.table in (None, da_export.TABLE):
        return da_export.judgments(export)
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "csv":
        return read_judgments(path)
    if fmt == "export":
        return da_export.read_file(path)
    if fmt == "wmt":
        return da_import.from_wmt_tsv(path)
    if fmt == "appraise":
        return da_import.from_appraise_csv(path)
    raise ValueError(f"unknown format {fmt!r} (auto, csv, export, wmt, appraise)")


# ---------------------------------------------------------------------------------------------
# analysis


def _paired_t(x, y) -> float:
    if len(x) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.ttest_rel(x, y, alternative="less").pvalue)


def _pearson(x, y) -> tuple[float, float]:
    if len(x) < 2:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue)


def _rounded(z: float, decimals: int) -> float:
    """z as printed with `decimals` decimals (-0.00 is 0.00)."""
    return float(f"{z:.{decimals}f}") + 0.0 if np.isfinite(z) else -math.inf


def _modality_order(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["_m"] = df["modality"].map({m: i for i, m in enumerate(MODALITIES)})
    return df


def _pairs(d: pd.DataFrame) -> pd.DataFrame:
    """Control items joined with the mean of the same worker's system scores on their
    (system, segment_id, modality, run); diff = original - control."""
    keys = _KEY + ["system", "segment_id"]
    orig = d[d["item_type"] == "system"].groupby(keys, sort=False)["score"].mean().rename("original").reset_index()
    ctrl = d[d["item_type"].isin(CONTROL_TYPES)].merge(orig, on=keys, how="inner")
    ctrl["diff"] = ctrl["original"] - ctrl["score"]
    return ctrl


def _workers(d: pd.DataFrame, alpha: float, fast_item_s: float, reliability: str) -> pd.DataFrame:
    g = d.groupby(_KEY, sort=True)["score"]
    w = pd.DataFrame({"n_judgments": g.size(), "mean": g.mean(), "sd": g.std(ddof=1)})
    pairs = _pairs(d)
    for kind, col in (("bad_reference", "n_bad_pairs"), ("ask_again", "n_repeat_pairs")):
        n = pairs[pairs["item_type"] == kind].groupby(_KEY).size()
        w[col] = n.reindex(w.index).fillna(0).astype(int) if len(n) else 0
    p_values = {}
    for key, grp in pairs.groupby(_KEY, sort=False):
        d_bad = grp.loc[grp["item_type"] == "bad_reference", "diff"].to_numpy()
        d_rep = grp.loc[grp["item_type"] == "ask_again", "diff"].to_numpy()
        if reliability == "rank_sum":
            p_values[key] = ranking.rank_sum_p(d_rep, d_bad, "less")
        else:  # WMT's check: paired one-sided t-test, bad_reference scores below their originals
            bad = grp[grp["item_type"] == "bad_reference"]
            p_values[key] = _paired_t(bad["score"].to_numpy(), bad["original"].to_numpy())
    w["p_value"] = pd.Series(p_values, dtype=float).reindex(w.index)
    w["reliable"] = (w["p_value"] < alpha).fillna(False).astype(bool)
    w["constant"] = (w["n_judgments"] >= 2) & (w["sd"] == 0)
    timed = d[d["duration_s"].notna()]
    hits = timed.groupby(_KEY + ["hit_id"])["duration_s"].median()
    w["n_hits"] = d.groupby(_KEY)["hit_id"].nunique().reindex(w.index).astype(int)
    w["n_fast_hits"] = (hits < fast_item_s).groupby(level=_KEY).sum().reindex(w.index).fillna(0).astype(int)
    w.attrs["fast_hits"] = hits[hits < fast_item_s].index  # (modality, run, worker_id, hit_id)
    w["median_item_s"] = timed.groupby(_KEY)["duration_s"].median().reindex(w.index)
    w["fast"] = w["n_fast_hits"] > 0
    return w


def hit_verdict(df: pd.DataFrame, alpha: float = 0.05, fast_item_s: float = FAST_ITEM_S) -> dict:
    """One rater's HIT (their judgments, one modality and run) as the analysis judges it: the
    reliability test's p_value and verdict, and whether the HIT was unrealistically fast."""
    d = normalise(df)
    keys = d[_KEY].drop_duplicates()
    if len(keys) != 1:
        raise ValueError(f"a HIT verdict needs one rater's judgments in one modality and run, got {len(keys)}")
    w = _workers(d, alpha, fast_item_s, "rank_sum").iloc[0]
    p = None if pd.isna(w["p_value"]) else float(w["p_value"])
    return {
        "p_value": p,
        "reliable": bool(w["reliable"]),
        "fast": bool(w["fast"]),
        "median_item_s": None if pd.isna(w["median_item_s"]) else float(w["median_item_s"]),
    }


def table1(segments: pd.DataFrame) -> pd.DataFrame:
    """Paper 001's Table 1 ("Number of segments and average document length (#segments per
    document)") per domain from the DA segments (columns segment_id, doc_id, domain, source; one
    row per system output is fine: a segment counts once): segments, documents, mean and median
    segments per document, and mean and median words per document (the source's whitespace
    tokens). A missing or empty domain is "(none)"; the last row, "all", pools the domains."""
    if segments.empty:
        return pd.DataFrame(columns=TABLE1_COLUMNS)
    seg = segments.copy()
    seg["domain"] = (
        seg["domain"].fillna("").astype(str).str.strip().replace("", "(none)") if "domain" in seg else "(none)"
    )
    seg = seg.drop_duplicates("segment_id")
    seg["words"] = seg["source"].fillna("").astype(str).str.split().str.len()
    docs = seg.groupby(["domain", "doc_id"]).agg(n=("segment_id", "size"), words=("words", "sum")).reset_index()

    def row(name, dd, ss):
        return (name, len(ss), len(dd), dd["n"].mean(), dd["n"].median(), dd["words"].mean(), dd["words"].median())

    rows = [row(dom, g, seg[seg["domain"] == dom]) for dom, g in docs.groupby("domain", sort=True)]
    rows.append(row("all", docs, seg))
    return pd.DataFrame(rows, columns=TABLE1_COLUMNS)


def check_alpha(alpha) -> float:
    """The significance level as a float in (0, 0.5], or a ValueError naming it: paper 001,
    section 2.2.3, "A lower p-value (p < 0.05) indicates higher reliability" (0.05, the
    default); 0 would make every worker unreliable, above 0.5 is no test at all."""
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"the significance level (alpha) must be a number, not {alpha!r}") from None
    if not 0 < value <= 0.5:
        raise ValueError(
            f"the significance level (alpha) must be above 0 and at most 0.5 (paper 001: 0.05), not {value:g}"
        )
    return value


def analyze(
    df: pd.DataFrame,
    alpha: float = 0.05,
    wmt: bool = False,
    *,
    fast_item_s: float = FAST_ITEM_S,
    keep_fast: bool | None = None,
    reliability: str = "rank_sum",
    h2h_level: str = "judgment",
    tie_decimals: int | None | str = "auto",
    source: str = "<DataFrame>",
) -> DAResult:
    """Reliability, z-scores, system rankings, head-to-head tests, clusters and replication.

    wmt=True reproduces WMT's published scores: every worker counts as reliable and segment
    scores average ``system`` and ``ask_again`` judgments.
    reliability: "rank_sum" (paper 001: mannwhitneyu(d_rep, d_bad, "less")) or "paired_t"
      (WMT's published worker check: ttest_rel(bad_reference, original, "less")).
    h2h_level: "judgment" (Mann-Whitney on the judgments' z) or "segment" (on segment mean z,
      which is what WMT's published significance tests use; n_a/n_b then count segments).
    tie_decimals: z_means equal to this many decimals are ordered by raw_mean; "auto" = 2
      (paper 001), or None (z alone, WMT's ranking) when wmt=True.
    keep_fast: False (paper 001, Ethics: unrealistically fast HITs were rejected) drops the
      judgments of HITs whose median seconds per item is below fast_item_s from the z-scores and
      the scores; None = False, or True when wmt=True (WMT's published scores keep them)."""
    alpha = check_alpha(alpha)
    if reliability not in ("rank_sum", "paired_t"):
        raise ValueError(f"reliability must be 'rank_sum' or 'paired_t', not {reliability!r}")
    if h2h_level not in ("judgment", "segment"):
        raise ValueError(f"h2h_level must be 'judgment' or 'segment', not {h2h_level!r}")
    if tie_decimals == "auto":
        tie_decimals = None if wmt else 2
    if isinstance(tie_decimals, str):
        raise ValueError(f"tie_decimals must be a whole number, None or 'auto', not {tie_decimals!r}")
    if keep_fast is None:
        keep_fast = wmt
    d = normalise(df, source)
    w = _workers(d, alpha, fast_item_s, reliability)
    fast_rows = pd.Series(False, index=d.index)
    if not keep_fast and len(w.attrs["fast_hits"]):
        fast_rows = pd.MultiIndex.from_frame(d[_KEY + ["hit_id"]]).isin(w.attrs["fast_hits"])
        fast_rows = pd.Series(fast_rows, index=d.index)
    used = d[~fast_rows]
    # z over the judgments that stay (a fast HIT's are gone from the worker's mean and sd too)
    g = used.groupby(_KEY)["score"]
    zstats = pd.DataFrame({"n": g.size(), "mean": g.mean(), "sd": g.std(ddof=1)}).reindex(w.index)
    w["kept"] = (w["reliable"] | wmt) & (zstats["n"] >= 2) & (zstats["sd"] > 0)

    stdz = zstats.loc[w["kept"], ["mean", "sd"]]
    j = used.merge(stdz.reset_index(), on=_KEY, how="inner")
    j["z"] = (j["score"] - j["mean"]) / j["sd"]
    scored_types = ("system", "ask_again") if wmt else ("system",)
    scored = j[j["item_type"].isin(scored_types)]

    seg_keys = ["modality", "run", "system", "segment_id"]
    sg = scored.groupby(seg_keys, sort=True)
    segments = pd.DataFrame({"n_judgments": sg.size(), "raw": sg["score"].mean(), "z": sg["z"].mean()}).reset_index()
    sy = segments.groupby(["modality", "run", "system"], sort=True)
    systems = pd.DataFrame(
        {
            "n_judgments": sy["n_judgments"].sum(),
            "raw_mean": sy["raw"].mean(),
            "z_mean": sy["z"].mean(),
            "n_segments": sy.size(),
        }
    ).reset_index()

    ranked, h2h_parts = [], []
    unit = scored if h2h_level == "judgment" else segments
    z_by_system = {k: v.to_numpy() for k, v in unit.groupby(["modality", "run", "system"])["z"]}
    for (modality, run), grp in systems.groupby(["modality", "run"], sort=False):
        grp = rank_systems(grp, tie_decimals)
        names = grp["system"].tolist()
        zmean = dict(zip(grp["system"], grp["z_mean"]))
        h2h = ranking.pairwise(names, {s: z_by_system[(modality, run, s)] for s in names}, zmean)
        h2h = h2h.rename(columns={"diff": "z_diff"})
        h2h.insert(0, "run", run)
        h2h.insert(0, "modality", modality)
        h2h = h2h[H2H_COLUMNS]
        grp["cluster"] = ranking.clusters(names, h2h, alpha)
        ranked.append(grp)
        h2h_parts.append(h2h)
    systems = pd.concat(ranked) if ranked else pd.DataFrame(columns=SYSTEM_COLUMNS)
    systems = _sorted(systems, ["rank"])[SYSTEM_COLUMNS]
    h2h = pd.concat(h2h_parts, ignore_index=True) if h2h_parts else pd.DataFrame(columns=H2H_COLUMNS)

    workers = _sorted(w.reset_index(), ["worker_id"])[WORKER_COLUMNS]
    replication = _replication(systems, segments)
    qc = _qc_summary(d, workers, j, scored, d[fast_rows])
    for t in (systems, workers):
        t["run"] = t["run"].astype(int)
    kept_scores = _sorted(j[["modality", "run", "worker_id", "item_type", "score"]], ["item_type"])
    return DAResult(
        workers=workers,
        systems=systems,
        head_to_head=h2h,
        replication=replication,
        qc_summary=qc,
        segments=_sorted(segments, ["system", "segment_id"])[SEGMENT_COLUMNS],
        alpha=alpha,
        wmt=wmt,
        score_distribution=score_distribution(kept_scores),
        kept_scores=kept_scores,
        keep_fast=keep_fast,
        fast_item_s=fast_item_s,
    )


def score_distribution(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (modality, run, item_type) of judgments (columns modality, run, item_type, score):
    n, mean, sd (sample), median and quartiles (pandas' linear interpolation); item types in
    ITEM_TYPES order."""
    if scores.empty:
        return pd.DataFrame(columns=DISTRIBUTION_COLUMNS)
    g = scores.groupby(["modality", "run", "item_type"], sort=False)["score"]
    out = pd.DataFrame(
        {
            "n": g.size(),
            "mean": g.mean(),
            "sd": g.std(ddof=1),
            "median": g.median(),
            "q1": g.quantile(0.25),
            "q3": g.quantile(0.75),
        }
    ).reset_index()
    out["_t"] = out["item_type"].map({t: i for i, t in enumerate(ITEM_TYPES)})
    out = _sorted(out, ["_t"]).drop(columns="_t")
    out["run"] = out["run"].astype(int)
    return out[DISTRIBUTION_COLUMNS]


def rank_systems(systems: pd.DataFrame, tie_decimals: int | None = 2) -> pd.DataFrame:
    """One group's systems (columns system, z_mean, raw_mean) sorted best first with a 1-based
    ``rank``: by z_mean, where z_means are equal to ``tie_decimals`` decimals (None: exactly) by
    raw_mean, then by exact z_mean and name."""
    key = systems["z_mean"] if tie_decimals is None else systems["z_mean"].map(lambda z: _rounded(z, tie_decimals))
    out = (
        systems.assign(_key=key)
        .sort_values(["_key", "raw_mean", "z_mean", "system"], ascending=[False, False, False, True])
        .drop(columns="_key")
    )
    out["rank"] = np.arange(1, len(out) + 1)
    return out


def _sorted(df: pd.DataFrame, then: list[str]) -> pd.DataFrame:
    if df.empty:
        return df.reset_index(drop=True)
    df = _modality_order(df).sort_values(["_m", "run"] + then, kind="stable")
    return df.drop(columns="_m").reset_index(drop=True)


def _replication(systems: pd.DataFrame, segments: pd.DataFrame) -> pd.DataFrame:
    rows = []
    levels = (("system", systems, ["system"], "z_mean"), ("segment", segments, ["system", "segment_id"], "z"))
    comparisons = []
    for m in MODALITIES:
        comparisons.append((f"{m}: run 1 vs run 2", dict(modality=m, run=1), dict(modality=m, run=2)))
    runs = sorted(set(systems["run"])) if len(systems) else []
    for r in runs:
        comparisons.append((f"run {r}: text vs audio", dict(modality="text", run=r), dict(modality="audio", run=r)))
    for label, left, right in comparisons:
        for level, table, keys, col in levels:
            a = table[(table["modality"] == left["modality"]) & (table["run"] == left["run"])]
            b = table[(table["modality"] == right["modality"]) & (table["run"] == right["run"])]
            if a.empty or b.empty:
                continue
            both = a[keys + [col]].merge(b[keys + [col]], on=keys, suffixes=("_x", "_y"))
            r_, p_ = _pearson(both[f"{col}_x"].to_numpy(), both[f"{col}_y"].to_numpy())
            rows.append((label, r_, len(both), level, p_))
    return pd.DataFrame(rows, columns=REPLICATION_COLUMNS)


def _qc_summary(d, workers, j, scored, fast) -> pd.DataFrame:
    rows = []
    for m in MODALITIES:
        dm = d[d["modality"] == m]
        if dm.empty:
            continue
        wm = workers[workers["modality"] == m]
        rows.append(
            (
                m,
                dm["worker_id"].nunique(),
                wm.loc[wm["reliable"], "worker_id"].nunique(),
                len(dm),
                int((j["modality"] == m).sum()),
                wm.loc[wm["kept"], "worker_id"].nunique(),
                int((scored["modality"] == m).sum()),
                wm.loc[wm["constant"], "worker_id"].nunique(),
                wm.loc[wm["fast"], "worker_id"].nunique(),
                len(fast.loc[fast["modality"] == m, _KEY + ["hit_id"]].drop_duplicates()),
                int((fast["modality"] == m).sum()),
                # HITs none of whose judgments has a time: the speed rule cannot judge them
                int((~dm["duration_s"].notna().groupby([dm[k] for k in _KEY + ["hit_id"]]).any()).sum()),
                int(dm["duration_s"].isna().sum()),
            )
        )
    return pd.DataFrame(rows, columns=QC_COLUMNS)


# ---------------------------------------------------------------------------------------------
# outputs


def _stars(p: float) -> str:
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def _groups(systems: pd.DataFrame):
    seen = []
    for key in zip(systems["modality"], systems["run"]):
        if key not in seen:
            seen.append(key)
    return seen


def figures(result: DAResult) -> dict:
    """Plotly figures: 'score_distribution' (paper 001's Figure 3: box plots of the kept
    workers' raw scores per item type, a panel per modality and run), 'ranking' (z_mean bars
    coloured by cluster), 'head_to_head' (z_diff heat map with *, **, *** for p < .05, .01,
    .001) and, when runs or modalities can be compared, 'replication' (system z scatter with
    Pearson r)."""
    # lazy import (plotly): heavy; needed only when figures are drawn
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    out = {}
    scores = result.kept_scores
    if len(scores):
        panels = list(dict.fromkeys(zip(scores["modality"], scores["run"])))
        fig = make_subplots(
            rows=1, cols=len(panels), shared_yaxes=True, subplot_titles=[f"{m}, run {r}" for m, r in panels]
        )
        colours = dict(zip(ITEM_TYPES, qualitative.Plotly))
        for i, (m, r) in enumerate(panels, start=1):
            s = scores[(scores["modality"] == m) & (scores["run"] == r)]
            for t in ITEM_TYPES:
                v = s.loc[s["item_type"] == t, "score"]
                if len(v):
                    fig.add_trace(
                        go.Box(
                            y=v, name=t, marker_color=colours[t], boxmean=True, showlegend=False, boxpoints="outliers"
                        ),
                        row=1,
                        col=i,
                    )
        fig.update_yaxes(title_text="raw score (0-100)", range=[-2, 102], row=1, col=1)
        fig.update_layout(
            title="Score distributions of reliable workers per item type (system outputs and quality controls)",
            height=480,
            width=max(520, 420 * len(panels)),
        )
        out["score_distribution"] = fig
    systems = result.systems
    groups = _groups(systems)
    if not groups:
        return out
    titles = [f"{m}, run {r}" for m, r in groups]
    palette = qualitative.Plotly

    fig = make_subplots(rows=len(groups), cols=1, subplot_titles=titles, vertical_spacing=min(0.1, 0.3 / len(groups)))
    for i, (m, r) in enumerate(groups, start=1):
        g = systems[(systems["modality"] == m) & (systems["run"] == r)].sort_values("rank")
        fig.add_trace(
            go.Bar(
                x=g["system"],
                y=g["z_mean"],
                text=[f"C{c}" for c in g["cluster"]],
                textposition="outside",
                marker_color=[palette[(c - 1) % len(palette)] for c in g["cluster"]],
                showlegend=False,
                customdata=np.stack([g["raw_mean"], g["rank"], g["cluster"], g["n_judgments"]], axis=1),
                hovertemplate="%{x}<br>z %{y:.3f}<br>raw %{customdata[0]:.2f}<br>rank %{customdata[1]}, "
                "cluster %{customdata[2]}<br>%{customdata[3]} judgments<extra></extra>",
            ),
            row=i,
            col=1,
        )
        fig.update_yaxes(title_text="mean z", row=i, col=1)
    fig.update_layout(
        title="System ranking (bar colour and label = significance cluster)", height=max(380, 330 * len(groups))
    )
    out["ranking"] = fig

    h2h = result.head_to_head
    fig = make_subplots(rows=len(groups), cols=1, subplot_titles=titles)
    for i, (m, r) in enumerate(groups, start=1):
        names = systems[(systems["modality"] == m) & (systems["run"] == r)].sort_values("rank")["system"].tolist()
        h = h2h[(h2h["modality"] == m) & (h2h["run"] == r)].set_index(["system_a", "system_b"])
        z = [[h.at[(a, b), "z_diff"] if a != b else None for b in names] for a in names]
        text = [
            [f"{h.at[(a, b), 'z_diff']:.2f}{_stars(h.at[(a, b), 'p_value'])}" if a != b else "–" for b in names]
            for a in names
        ]
        pv = [[h.at[(a, b), "p_value"] if a != b else None for b in names] for a in names]
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=names,
                y=names,
                text=text,
                texttemplate="%{text}",
                customdata=pv,
                colorscale="RdBu",
                zmid=0,
                showscale=(i == 1),
                hovertemplate="%{y} vs %{x}<br>z diff %{z:.3f}<br>p %{customdata:.3g}<extra></extra>",
            ),
            row=i,
            col=1,
        )
        fig.update_yaxes(autorange="reversed", row=i, col=1)
    fig.update_layout(
        title="Head to head: z(row) - z(column); * p<.05, ** p<.01, *** p<.001 (one-sided Mann-Whitney)",
        height=max(450, 480 * len(groups)),
    )
    out["head_to_head"] = fig

    rep = result.replication
    sys_rep = rep[rep["level"] == "system"] if len(rep) else rep
    if len(sys_rep):
        fig = make_subplots(
            rows=1,
            cols=len(sys_rep),
            subplot_titles=[
                f"{c} (r = {r_:.2f}, n = {n})" for c, r_, n in zip(sys_rep["comparison"], sys_rep["r"], sys_rep["n"])
            ],
        )
        for i, comp in enumerate(sys_rep["comparison"], start=1):
            x, y, xl, yl = _replication_sides(systems, comp)
            fig.add_trace(
                go.Scatter(
                    x=x["z_mean"],
                    y=y["z_mean"],
                    mode="markers+text",
                    text=x["system"],
                    textposition="top center",
                    showlegend=False,
                ),
                row=1,
                col=i,
            )
            fig.update_xaxes(title_text=xl, row=1, col=i)
            fig.update_yaxes(title_text=yl, row=1, col=i)
        fig.update_layout(title="Replication: system mean z", height=450, width=max(500, 450 * len(sys_rep)))
        out["replication"] = fig
    return out


def _replication_sides(systems: pd.DataFrame, comparison: str):
    head, _, tail = comparison.partition(": ")
    if head.startswith("run "):
        run = int(head[4:])
        sides = [("text", run), ("audio", run)]
    else:
        sides = [(head, 1), (head, 2)]
    (m1, r1), (m2, r2) = sides
    a = systems[(systems["modality"] == m1) & (systems["run"] == r1)]
    b = systems[(systems["modality"] == m2) & (systems["run"] == r2)]
    both = a[["system", "z_mean"]].merge(b[["system", "z_mean"]], on="system")
    x = both[["system", "z_mean_x"]].rename(columns={"z_mean_x": "z_mean"})
    y = both[["system", "z_mean_y"]].rename(columns={"z_mean_y": "z_mean"})
    return x, y, f"{m1}, run {r1}", f"{m2}, run {r2}"


def write_outputs(result: DAResult, out_dir, include_plotlyjs="directory", png: bool | None = None) -> list[Path]:
    """Write workers, systems, head_to_head, replication, qc_summary and segments CSVs, and each
    figure as a standalone HTML file (plotly.min.js written once beside them: works offline,
    4.8 MB once rather than per figure)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in OUTPUT_TABLES:
        p = out / f"{name}.csv"
        getattr(result, name).to_csv(p, index=False)
        paths.append(p)
    paths += write_figures(figures(result), out, include_plotlyjs, png)
    return paths


def summary_notes(result: DAResult) -> list[str]:
    """What the scores leave out, or keep against paper 001: unrealistically fast HITs."""
    lines = []
    for row in result.qc_summary.itertuples():
        if row.hits_fast_excluded:
            lines.append(
                f"{row.modality}: {row.hits_fast_excluded} unrealistically fast HITs (median under "
                f"{result.fast_item_s:g} s per item) excluded from z-scores and rankings, "
                f"{row.judgments_fast_excluded} judgments"
            )
        elif result.keep_fast and row.workers_fast:
            lines.append(
                f"{row.modality}: {row.workers_fast} workers with unrealistically fast HITs kept "
                "in the scores (keep_fast; paper 001, Ethics, rejected them)"
            )
        if row.hits_untimed:
            lines.append(
                f"{row.modality}: {row.judgments_untimed} of {row.judgments_total} judgments have no "
                f"per-item time (duration_s), so {row.hits_untimed} HITs could not be checked for an "
                f"unrealistically fast pace (median under {result.fast_item_s:g} s per item; paper 001, "
                "Ethics): none of them is left out for speed"
            )
    return lines


def summary(result: DAResult) -> str:
    lines = []
    for row in result.qc_summary.itertuples():
        lines.append(
            f"{row.modality}: {row.workers_total} workers, {row.workers_reliable} reliable "
            f"(p < {result.alpha:g}), {row.workers_kept} used; {row.judgments_total} judgments, "
            f"{row.judgments_scored} in system scores"
        )
    lines += summary_notes(result)
    for m, r in _groups(result.systems):
        g = result.systems[(result.systems["modality"] == m) & (result.systems["run"] == r)].sort_values("rank")
        lines.append(f"{m}, run {r}:")
        width = max(len(s) for s in g["system"])
        for s in g.itertuples():
            lines.append(
                f"  {s.rank:>2}. {s.system:<{width}}  z {s.z_mean:+.3f}  raw {s.raw_mean:6.2f}  "
                f"cluster {s.cluster}  ({s.n_judgments} judgments)"
            )
    for row in result.replication.itertuples():
        lines.append(f"replication {row.comparison} ({row.level}s): r = {row.r:.3f}, n = {row.n}")
    if result.systems.empty:
        lines.append("no system scores: no worker passed quality control")
    return "\n".join(lines)


def load_inputs(paths, fmt: str = "auto", runs_from_inputs: bool = False) -> pd.DataFrame:
    """One input's judgments (load_judgments), or several merged into one campaign, their worker
    and HIT ids prefixed by study id or file name (services/da/export_input.py: merge)."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if len(paths) == 1 and not runs_from_inputs:
        return load_judgments(paths[0], fmt)
    frames = [load_judgments(p, fmt) for p in paths]
    labels = [da_export.label(p, export_reader.find(p)) for p in paths]
    return da_export.merge(frames, labels, runs_from_inputs)


def run_cli(
    path,
    out_dir,
    alpha: float = 0.05,
    wmt: bool = False,
    fmt: str = "auto",
    keep_fast: bool | None = None,
    fast_item_s: float = FAST_ITEM_S,
    runs_from_inputs: bool = False,
) -> str:
    """Read judgments (fmt: auto, csv, wmt, appraise; or an export; several paths: merged),
    analyse, write outputs to out_dir and return a short human summary."""
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    df = load_inputs(paths, fmt, runs_from_inputs)
    named = ", ".join(map(str, paths))
    result = analyze(df, alpha=alpha, wmt=wmt, keep_fast=keep_fast, fast_item_s=fast_item_s, source=named)
    files = write_outputs(result, out_dir)
    mode = " (WMT method: all workers, system + ask_again items)" if wmt else ""
    return f"DA analysis of {named}{mode}\n" + summary(result) + f"\n{len(files)} files written to {out_dir}"
