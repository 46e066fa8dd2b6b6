"""ESA's part of the study report (Kocmi et al., WMT 2024): the systems ranked with their
significance clusters, the error spans per severity, the agreement between annotators, and the
analysis's defaults with their sources. The figures are services/esa/results.py's, the same the
Analysis tab's panel shows and `app.py analyze esa` prints."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.common.analysis_output import write_tables
from services.esa import attention, results, study_analysis
from services.esa.corpus import ESA, NAME
from services.report.sections import Part, fill
from storage import studies

TITLE = "Error span annotation (ESA, Kocmi et al. 2024)"
ITEMS = [
    (
        "Table 1",
        "Systems ranked by their mean score (0-100; the mean over segments of each segment's mean), "
        "with the mean z (per annotator, WMT's), the judgments and segments, and the significance "
        "cluster (one-sided rank-sum tests on the scores, a boundary where every system above beats "
        "every system below at p < 0.05).",
        "",
    ),
    (
        "Table 2",
        "Error spans per system: minor and major (the omissions included), the omissions ([MISSING]) "
        "apart, all spans and spans per judgment.",
        "",
    ),
    (
        "Table 3",
        "Agreement between annotators on the segments two or more annotators judged: character-level F1 "
        "of their spans (mean over pairs, without and with severities) and Krippendorff's alpha on their "
        "0-100 scores (interval).",
        "",
    ),
    ("Table 4", "The analysis's defaults and where they come from.", ""),
]
PREFILL_ITEM = (
    "Table 5",
    "ESA-AI (Zouhar et al. 2025): the spans pre-filled by the study's backend and what became of each "
    "(kept, severity changed, edited, deleted; counts and shares of the pre-filled spans) and the spans "
    "the annotators added, per system and overall.",
    "",
)
DECIMALS = {"Table 1": 2, "Table 2": 2, "Table 3": 3, "Table 5": 3}
NO_DATA = "No ESA answers yet: this fills once annotators have scored segments of the study's HITs."
NOT_LISTED = f"This study has no {NAME} part (study.protocols)."
SOURCES = "wmt-conference/ErrorSpanAnnotation"
DEFAULTS = pd.DataFrame(
    [
        ("scores", "0-100 per segment, after its spans", "Kocmi et al. 2024 (the protocol)"),
        ("severities", "minor, major; an omission as a [MISSING] token after the output", "Kocmi et al. 2024"),
        (
            "z-scores",
            "per annotator over all their judgments, sample sd; none for an annotator with one judgment or sd 0",
            "WMT's DA (as paper 001's analysis)",
        ),
        (
            "system score",
            "mean over segments of the segment's mean over annotators; ranked by the raw mean",
            f"the ESA paper's scripts ({SOURCES}, ESA/experiments/clusters_and_ranking.py)",
        ),
        (
            "clusters",
            "one-sided Mann-Whitney U between every pair, boundary when all above beat all below, p < 0.05",
            "WMT's clusters (as DA); the ESA scripts call scipy's ranksums",
        ),
        (
            "span agreement",
            "character-level F1 per pair of annotators of a segment, [MISSING] one position, 1.0 when "
            "neither marks anything; mean over pairs",
            "issue 53; the mean over pairs is this product's choice",
        ),
        (
            "score agreement",
            "Krippendorff's alpha, interval level, a unit being one system's segment",
            "Krippendorff (2011), Computing Krippendorff's Alpha-Reliability",
        ),
    ],
    columns=["setting", "value", "source"],
)
DEPARTURES = [
    "Clusters use scipy's mannwhitneyu (tie-corrected, exact for small samples without ties) where the "
    "ESA scripts call ranksums (the normal approximation): the same test as the DA analysis; "
    "`python app.py analyze esa` writes head_to_head.csv with every p-value.",
    "The paper's section numbers are not given here: its text was not reachable when this part was "
    "written, so each default names its source instead.",
]


def build(database, study_id: str, out_dir: Path, alpha: float = 0.05) -> Part:
    """ESA's part; part.detail is the Results (or the sentence saying why there are none)."""
    part = Part("esa", TITLE, notes=list(DEPARTURES))
    content: dict = {"Table 4": DEFAULTS}
    study = studies.get_study(database, study_id)
    listed = study is not None and NAME in (study["config"].get("study", {}).get("protocols") or [])
    rows = study_analysis.stored_rows(database, study_id) if listed else []
    if not rows:
        # the report leaves out a study's unlisted protocols itself; the Analysis tab says why
        why = NO_DATA if listed else NOT_LISTED
        part.detail = part.summary = why
        part.sections = fill(ITEMS, content, why, DECIMALS)
        return part
    res = results.results(rows, alpha=alpha)
    part.detail = res
    content["Table 1"] = res.systems
    content["Table 2"] = res.severities
    content["Table 3"] = res.agreement.why or res.agreement.table()
    prefill = study_analysis.prefill_outcomes(rows)  # empty for plain ESA: no Table 5
    if not prefill.empty:
        content["Table 5"] = prefill
        res.notes.append(study_analysis.prefill_line(prefill))
    part.sections = fill([*ITEMS, *([PREFILL_ITEM] if not prefill.empty else [])], content, NO_DATA, DECIMALS)
    first, *rest = res.lines()
    part.summary = first
    part.notes = [*rest[len(rest) - 1 - len(res.notes) :], *part.notes]  # agreement's (and ESA-AI's) line first
    qc = attention.qc_note(database, ESA, study_id, study["config"][NAME]) if study else None
    part.notes = [qc, *part.notes] if qc else part.notes  # what the scores leave out, said first
    folder = Path(out_dir) / "esa"
    folder.mkdir(parents=True, exist_ok=True)
    tables = study_analysis.tables(res)
    part.files = write_tables(folder, {**tables, **({"prefill.csv": prefill} if not prefill.empty else {})})
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (services/common/protocols.py, Protocol.report_section): the defaults."""
    return build(database, study_id, out_dir)
