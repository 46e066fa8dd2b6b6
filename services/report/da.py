"""Paper 001's results from a stored DA campaign, in the paper's order: Table 1 (section 2.1),
Table 2 (2.4), Figure 3 (2.4), Table 3 (3), Figure 4 (3.1), Figure 5 (3.2), then appendix A's
head-to-head matrices, Tables 4-6. Precision as printed: one decimal for Table 1's document
length, two for Table 2's percentages, Table 3's scores and the matrices' z differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from services.common.vocabulary import count
from services.da import analysis as da_analysis
from services.da import study_analysis as da_study
from services.report.sections import Part, fill

TITLE = "Direct assessment, text-only vs audio (paper 001)"
ITEMS = [
    (
        "Table 1",
        "Number of segments and average document length (#segments per document) of the data assessed, per domain.",
        "2.1",
    ),
    (
        "Table 2",
        "Numbers of workers and translations, before and after quality control, per modality "
        "(approved: the workers whose judgments are used; pass QC: the reliability test).",
        "2.4",
    ),
    (
        "Figure 3",
        "Score distributions of reliable workers across the quality-control segments: bad_reference, "
        "ask_again, and original system outputs.",
        "2.4",
    ),
    (
        "Table 3",
        "System rankings from the text-only and multimodal (text + audio) setups: raw average, average "
        "z and order; ordered by z, ties to two decimals broken by the raw average.",
        "3",
    ),
    (
        "Figure 4",
        "Significance test outcomes (one-sided Mann-Whitney / Wilcoxon rank-sum on z): z(row) - "
        "z(column), * p < .05, ** p < .01, *** p < .001.",
        "3.1",
    ),
    (
        "Figure 5",
        "Correlation (Pearson r) of system z between two runs of the same modality (self-replication) "
        "and between text-only and multimodal.",
        "3.2",
    ),
    (
        "Table 4",
        "Head-to-head comparison matrix of text-only judgments with significance levels and number of judgments.",
        "appendix A",
    ),
    (
        "Table 5",
        "Head-to-head comparison matrix of multimodal annotations with significance levels and number of judgments.",
        "appendix A",
    ),
    ("Table 6", "Head-to-head comparison matrix of WMT22 official rankings.", "appendix A"),
]
DECIMALS = {"Table 1": 1}
NO_DATA = "No DA judgments yet: this fills once raters have done HITs of the campaign."
NO_RELIABLE = (
    "No DA judgments from reliable raters yet: this fills once a rater passes the reliability test (section 2.4)."
)


def no_scores(qc: pd.DataFrame, modality: str | None = None) -> str:
    """Why no system has scores (of one modality): nobody passed the reliability test yet, or the
    raters who did had only unrealistically fast HITs, which paper 001 (Ethics) rejected and the
    analysis leaves out of the scores (before, both read "no ... reliable raters yet", also when
    the QC table beside it counted raters who passed)."""
    q = qc if modality is None else qc[qc["modality"] == modality]
    reliable, fast = int(q["workers_reliable"].sum()), int(q["hits_fast_excluded"].sum())
    what = f"{modality} judgments" if modality else "DA judgments"
    if reliable and fast and not int(q["judgments_scored"].sum()):
        return (
            f"No {what} in the scores yet: {reliable} rater(s) passed the reliability test, but "
            f"their HITs were unrealistically fast and are left out (paper 001, Ethics; {fast} HIT(s), "
            "see the notes): this fills once a reliable rater does a HIT at a realistic pace."
        )
    if modality:
        article = "an" if modality[0] in "aeiou" else "a"
        return (
            f"No {what} from reliable raters yet: this fills once {article} {modality} rater passes "
            "the reliability test."
        )
    return NO_RELIABLE


WMT22 = (
    "WMT22's official judgments are not part of a study's data: `python app.py analyze da FILE --wmt` "
    "analyses WMT's published scores (its head-to-head table is written there)."
)


def table2(qc: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for r in qc.itertuples():
        rows.append(
            {
                "modality": r.modality,
                "workers total": r.workers_total,
                "workers approved": r.workers_kept,
                "workers pass QC": r.workers_reliable,
                "pass QC %": 100 * r.workers_reliable / r.workers_total if r.workers_total else np.nan,
                "translations total": r.judgments_total,
                "translations approved": r.judgments_kept,
                "translations pass QC": r.judgments_scored,
                "translations pass QC %": 100 * r.judgments_scored / r.judgments_total if r.judgments_total else np.nan,
            }
        )
    return pd.DataFrame(rows)


def table3(systems: pd.DataFrame) -> pd.DataFrame:
    """One row per system, per (modality, run) its raw average, average z and order; rows in the
    first setup's order."""
    if systems.empty:
        return pd.DataFrame()
    out = None
    for (m, run), g in systems.groupby(["modality", "run"], sort=False):
        label = f"{m}" if systems["run"].nunique() == 1 else f"{m} run {run}"
        g = g.sort_values("rank")[["system", "raw_mean", "z_mean", "rank"]].rename(
            columns={"raw_mean": f"{label} raw ave.", "z_mean": f"{label} ave. z", "rank": f"{label} order"}
        )
        out = g if out is None else out.merge(g, on="system", how="outer", sort=False)
    assert out is not None  # systems is not empty: the loop ran at least once
    return out.reset_index(drop=True)


def _stars(p: float) -> str:
    return "" if not np.isfinite(p) else "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def h2h_matrix(h2h: pd.DataFrame, modality: str, run: int = 1) -> pd.DataFrame:
    """Appendix A's layout: z(row) - z(column) to two decimals with its stars, and the row
    system's number of judgments."""
    h = h2h[(h2h["modality"] == modality) & (h2h["run"] == run)]
    if h.empty:
        return pd.DataFrame()
    names = sorted(set(h["system_a"]) | set(h["system_b"]))
    cell = {
        (a, b): f"{z:.2f}{_stars(p)}" for a, b, z, p in zip(h["system_a"], h["system_b"], h["z_diff"], h["p_value"])
    }
    judged = h.groupby("system_a")["n_a"].first()
    rows = [
        {
            "": a,
            **{b: "–" if a == b else cell.get((a, b), "") for b in names},
            "No. of Judgments": int(judged.get(a, 0)),
        }
        for a in names
    ]
    return pd.DataFrame(rows)


def build(database, study_id: str, out_dir: Path, alpha: float | None = None) -> Part:
    """Paper 001's part; alpha None: the study's da.reliability_alpha (as the tab's blank field)."""
    part = Part("da", TITLE)
    content: dict = {"Table 6": WMT22}
    t1 = da_study.segments_table1(database, study_id)
    content["Table 1"] = t1 if len(t1) else "No DA segments imported: the study's [da] segments file fills it."
    done = da_study.analyse(database, study_id, alpha)
    part.detail = done
    if isinstance(done, str):
        part.summary = done.replace(" (pick the study above and press Show first)", "")
        part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
        return part
    res = done.result
    figs = done.figures
    content["Table 2"] = table2(res.qc_summary)
    why = no_scores(res.qc_summary)
    content["Figure 3"] = figs.get("score_distribution", why)
    content["Table 3"] = table3(res.systems) if len(res.systems) else why
    content["Figure 4"] = figs.get("head_to_head", why)
    content["Figure 5"] = figs.get(
        "replication",
        "No second run and no second modality to correlate: a study "
        'with runs = 2 or modality "both" fills it (section 3.2).',
    )
    for number, modality in (("Table 4", "text"), ("Table 5", "audio")):
        m = h2h_matrix(res.head_to_head, modality)
        content[number] = m if len(m) else no_scores(res.qc_summary, modality)
    part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
    df = done.judgments
    part.summary = f"{count(len(df), 'judgment')} by {count(df['worker_id'].nunique(), 'rater')}."
    part.notes = [*done.notes, *da_analysis.summary_notes(res)]
    folder = Path(out_dir) / "da"
    part.files = da_analysis.write_outputs(res, folder, png=False)
    for name, table in (("table1", done.table1), ("hit_outcomes", done.hit_outcomes)):
        table.to_csv(folder / f"{name}.csv", index=False)
        part.files.append(folder / f"{name}.csv")
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (services/common/protocols.py, Protocol.report_section): the defaults."""
    return build(database, study_id, out_dir)
