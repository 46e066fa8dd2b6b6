"""The listening-test part of the study report (issue 54, point 2): the MOS (DMOS, CMOS) per
condition with its 95% interval, the listeners left out and why, and the defaults with their
sources. The figures are services/listening/analysis.py's, the same the Analysis tab's panel shows
and `app.py analyze listening` prints (docs/listening.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.common.analysis_output import write_tables
from services.listening import study_analysis
from services.listening.stimuli import NAME
from services.report.sections import Part, fill
from storage import studies

TITLE = "Listening test"
ITEMS = [
    (
        "Table 1",
        "Per condition: the number of ratings, the mean opinion score (MOS for ACR, DMOS for DCR, CMOS for "
        "CCR), the sample standard deviation and the 95% interval 1.96 sd / sqrt(n), as the P.808 toolkit "
        "reports it; the rated clips only, not the gold or trapping clips. MUSHRA: the mean with Student's t "
        "95% interval, median and quartiles (BS.1534-3 clause 9), after the post-screening.",
        "",
    ),
    (
        "Table 2",
        "The listeners who failed a listening check (device, hearing, gold, trap) and what they failed; for "
        "MUSHRA also BS.1534-3's post-screening (the hidden reference below 90 or the anchor above 90 on more "
        "than 15% of the items).",
        "",
    ),
    ("Table 3", "The analysis's defaults and where they come from.", ""),
]
DECIMALS = {"Table 1": 2}
NO_DATA = "No listening-test ratings yet: this fills once listeners have rated clips of the study."
NOT_LISTED = f"This study has no {NAME} part (study.protocols)."
DEFAULTS = pd.DataFrame(
    [
        ("scales", "ACR, DCR and CCR with their wording (assets/listening_scales.toml)", "ITU-T P.800 Annexes B, D, E"),
        ("interval", "1.96 sd / sqrt(n), sample sd; none below 2 ratings", "the P.808 toolkit's result_parser.py"),
        ("CCR", "a rating with the clip played first has its sign turned", "ITU-T P.800 Annex E"),
        ("exclusion", "listeners who failed any check left out (exclude_failed)", "issue 54; docs/listening.md"),
    ],
    columns=["setting", "value", "source"],
)


def build(database, study_id: str, out_dir: Path) -> Part:
    """The part; part.detail is the Results (or the sentence saying why there are none)."""
    part = Part(NAME, TITLE)
    content: dict = {"Table 3": DEFAULTS}
    study = studies.get_study(database, study_id)
    listed = study is not None and NAME in (study["config"].get("study", {}).get("protocols") or [])
    if not listed:
        part.detail = part.summary = NOT_LISTED
        part.sections = fill(ITEMS, content, NOT_LISTED, DECIMALS)
        return part
    frames = study_analysis.stored_frames(database, study_id)
    rated = frames.scores if frames.method == "mushra" else frames.answers
    if rated.empty or (frames.method != "mushra" and not (rated["kind"] == "rating").any()):
        part.detail = part.summary = NO_DATA
        part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
        return part
    res = study_analysis.results(frames)
    part.detail = res
    content["Table 1"] = res.mos
    if res.screening is not None:
        content["Table 2"] = res.screening
    else:
        content["Table 2"] = res.excluded if len(res.excluded) else "No listener failed a check"
    part.sections = fill(ITEMS, content, NO_DATA, DECIMALS)
    first, *rest = res.lines()
    part.summary = first
    part.notes = res.notes
    folder = Path(out_dir) / NAME
    folder.mkdir(parents=True, exist_ok=True)
    part.files = write_tables(folder, res.tables())
    return part


def section(database, study_id: str, out_dir: Path, inputs) -> Part:
    """The report's call (Protocol.report_section)."""
    return build(database, study_id, out_dir)
