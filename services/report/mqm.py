"""MQM's part of the study report (Freitag et al., TACL 2021, "Experts, Errors, and Context"):
the systems' MQM scores ranked with their significance clusters, the annotators behind the
z-scores, the errors by category and severity, the agreement between annotators, and the
analysis's defaults with their sources. The figures are services/esa/mqm_analysis.py's, the same
the Analysis tab's MQM panel shows and `app.py analyze mqm` prints."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.common.analysis_output import write_tables
from services.esa import attention, mqm_analysis
from services.esa.mqm_protocol import CORPUS, NAME, taxonomy_of
from services.report.sections import Part, fill
from storage import studies

TITLE = "Multidimensional Quality Metrics (MQM, Freitag et al. 2021)"
PAPER = "Freitag et al. 2021, section 3"
ITEMS = [
    (
        "Table 1",
        "Systems ranked by their MQM score (the mean over segments of each segment's mean over annotators; "
        "lower is better), with the mean z (per annotator), the segments and judgments, and the significance "
        "cluster (one-sided rank-sum tests on the segment scores, a boundary where every system above beats "
        "every system below at p < 0.05).",
        "3",
    ),
    (
        "Table 2",
        "Annotators: their judgments and the mean and sd of their MQM scores (each judgment's z is its "
        "distance from the annotator's mean in sds).",
        "",
    ),
    (
        "Table 3",
        "Errors per system and category, by severity, with the category's penalty per judgment (its share "
        "of the system's MQM score).",
        "",
    ),
    (
        "Table 4",
        "Agreement between annotators on the segments two or more annotators judged: character-level F1 "
        "of their error spans (mean over pairs; without labels, with severities, with categories) and "
        "Krippendorff's alpha on their segments' MQM scores (interval).",
        "",
    ),
    ("Table 5", "The analysis's defaults and where they come from.", ""),
]
DECIMALS = {"Table 1": 2, "Table 2": 2, "Table 3": 2, "Table 4": 3}
NO_DATA = "No MQM answers yet: this fills once annotators have marked the errors of the study's HITs."
NOT_LISTED = f"This study has no {NAME} part (study.protocols)."
DEFAULTS = pd.DataFrame(
    [
        ("severities", "major, minor, neutral (the study's taxonomy may add others, each with its weight)", PAPER),
        (
            "weights",
            "major 5, minor 1, neutral 0; minor Fluency/Punctuation 0.1; Non-translation 25 (the study's "
            "taxonomy may set others)",
            f"{PAPER}, the error-weighting table",
        ),
        ("errors per segment", "at most 5, the most severe (refused beyond, not trimmed in scoring)", PAPER),
        ("segment score", "the weighted sum of its errors; 0 without errors; lower is better", PAPER),
        ("system score", "the mean over its segments of the segment's mean over annotators", PAPER),
        (
            "clusters",
            "one-sided Mann-Whitney U on the segment scores between every pair, a boundary when all above beat "
            "all below, p < 0.05",
            "WMT's clusters, as ESA's and DA's (services/common/ranking.py)",
        ),
        (
            "z-scores",
            "per annotator over their segment scores, sample sd; none for an annotator with one judgment or sd 0",
            "WMT's DA, as ESA's",
        ),
        (
            "span agreement",
            "character-level F1 per pair of annotators of a segment, [MISSING] one position, 1.0 when neither "
            "marks anything; without labels, with severities, with categories; mean over pairs",
            "issue 53, as ESA's; the mean over pairs is this product's choice",
        ),
        (
            "score agreement",
            "Krippendorff's alpha, interval level, on the segments' MQM scores, a unit being one system's segment",
            "Krippendorff (2011), Computing Krippendorff's Alpha-Reliability",
        ),
    ],
    columns=["setting", "value", "source"],
)
DEPARTURES = [
    "The clusters, z-scores and agreement are WMT's and issue 53's additions to the paper's system scores "
    "(the paper's own significance tests and rater-agreement figures are not reproduced); "
    "`python app.py analyze mqm` writes head_to_head.csv with every p-value and agreement_pairs.csv.",
    "Each answer is scored again from its spans by the study's weights and must equal its stored score; "
    "spans marked in the source (Source error) count in the scores but not in the span agreement, "
    "which compares the output's characters.",
]


def build(database, study_id: str, out_dir: Path, alpha: float = 0.05) -> Part:
    """MQM's part; part.detail is the MQMResults (or the sentence saying why there are none)."""
    part = Part(NAME, TITLE, notes=list(DEPARTURES))
    content: dict = {"Table 5": DEFAULTS}
    study = studies.get_study(database, study_id)
    listed = study is not None and NAME in (study["config"].get("study", {}).get("protocols") or [])
    rows = mqm_analysis.stored_rows(database, study_id) if listed else []
    if study is None or not rows:
        # the report leaves out a study's unlisted protocols itself; the Analysis tab says why
        why = NO_DATA if listed else NOT_LISTED
        part.detail = part.summary = why
        part.sections = fill(ITEMS, content, why, DECIMALS)
        return part
    res = mqm_analysis.mqm_results(rows, taxonomy_of(study["config"]), alpha=alpha)
    part.detail = res
    content["Table 1"] = res.systems
    content["Table 2"] = res.annotators
    content["Table 3"] = res.categories if not res.categories.empty else "No errors marked yet."
    content["Table 4"] = res.agreement.why or res.agreement.table()
    part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
    first, *rest = res.lines()
    part.summary = first
    part.notes = [*rest[-1:], *part.notes]  # the agreement's line first: the figure a reader checks
    qc = attention.qc_note(database, CORPUS, study_id, study["config"][NAME])
    part.notes = [qc, *part.notes] if qc else part.notes  # what the scores leave out, said first
    folder = Path(out_dir) / NAME
    folder.mkdir(parents=True, exist_ok=True)
    part.files = write_tables(folder, mqm_analysis.tables(res))
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (services/common/protocols.py, Protocol.report_section): the defaults."""
    return build(database, study_id, out_dir)
