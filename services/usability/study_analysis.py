"""The usability analysis of a stored study, as the Analysis tab shows it: the exchanges' frame,
the study's reference corpus, the analysis, its figures and its files (a fresh temporary folder)."""

from __future__ import annotations

import tempfile

from services.usability import analysis as usability_analysis
from services.usability import export as usability_export
from services.usability import paper_figures
from storage import studies


def study_reference(database, study_id: str) -> dict | None:
    """The usability models' reference levels a study sets: its usability.corpus_reference
    (None when unset, or for a study imported before the setting: the analysis's default)."""
    study = studies.get_study(database, study_id)
    ref = (study["config"] if study else {}).get("usability", {}).get("corpus_reference", "")
    return {"corpus": ref} if ref else None


def analyse(database, study_id: str, png: bool = False, out_dir=None):
    """(result, [(name, figure)], files written to out_dir, a fresh temporary folder when None),
    or the message to show instead."""
    df = usability_export.exchanges_frame(database, study_id) if study_id else None
    if df is None or len(df) < 3:
        return "Too few exchanges with both surveys and a validation yet (pick the study above and press Show first)."
    try:
        res = usability_analysis.analyze(df, source=f"study {study_id}", reference=study_reference(database, study_id))
    except ValueError as e:
        return f"**The analysis could not run:** {e}"
    figs = list(usability_analysis.figures(res).items())
    out_dir = out_dir or tempfile.mkdtemp(prefix=f"usability-{study_id}-")
    # PNG copies take kaleido ~1 s a figure: on request only (each plot's camera button saves one too)
    files = [str(p) for p in usability_analysis.write_outputs(res, out_dir, png=bool(png))]
    files.append(str(paper_figures.write_study_starter_statistics(database, study_id, out_dir)))  # Table 3
    return res, figs, files
