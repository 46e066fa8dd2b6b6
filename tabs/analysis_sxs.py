"""The Analysis tab's side-by-side panel: the report's part for the chosen study
(services/report/sxs.py, from services/compare/analysis.py: the figures `app.py analyze sxs`
prints), and the bootstrap's pairwise p-values and the outcomes beside them
(services/compare/protocol.py names it)."""

from __future__ import annotations

from tabs.analysis_common import Panel, part_panel, summary_lines
from tabs.common import shown_table


def _sxs_part(database, study_id: str, folder):
    # choix, trueskill and scipy: on first use only (at the module's top they slow every start)
    from services.report import sxs as sxs_report

    return sxs_report.build(database, study_id, folder)


def view(part):
    """The summary and the bootstrap's pairwise p-values (or why there are none)."""
    done = part.detail
    if isinstance(done, str):
        return summary_lines(part), [shown_table(None, done)]
    return summary_lines(part), [shown_table(done.pairs, "One system only (or ABX): nothing to compare.")]


def panel(shared: Panel) -> None:
    labels = ("Bootstrap: p that the first system is not stronger",)
    button = "Analyse the side-by-side answers"
    part_panel(shared, "Side-by-side comparison", "sxs", button, _sxs_part, labels, view, "The side-by-side analysis")
