"""The Analysis tab's ESA panel (Kocmi et al. 2024): the report's ESA part for the chosen study,
its systems ranked with their clusters, spans per severity, agreement between annotators and
the defaults (services/report/esa.py, from services/esa/results.py: the figures `app.py analyze
esa` prints), and the per-pair and head-to-head tables beside them (services/esa/protocol.py
names it)."""

from __future__ import annotations

from typing import Callable

from tabs.analysis_common import Panel, part_panel, summary_lines
from tabs.common import shown_table


def shown(part) -> dict:
    """What the panel shows of a part beside its sections: the summary (a line each: the systems,
    for MQM the annotators and categories, the agreement), the pairs' span agreement and the
    head-to-head tests, each with the sentence saying why it is empty."""
    done = part.detail
    if isinstance(done, str):  # the sentence saying why there are no results
        why = done
        return {"summary": summary_lines(part), "pairs": shown_table(None, why), "h2h": shown_table(None, why)}
    return {
        "summary": summary_lines(part),
        "pairs": shown_table(done.agreement.pairs, done.agreement.why or "No pairs of annotators."),
        "h2h": shown_table(done.head_to_head, "One system only: nothing to compare."),
    }


def _esa_part(database, study_id: str, folder):
    # scipy and krippendorff: on first use only (at the module's top they added 1.4 s to every
    # start of the app)
    from services.report import esa as esa_report

    return esa_report.build(database, study_id, folder)


def panel(shared: Panel) -> None:
    span_panel(shared, "Error span annotation (ESA, Kocmi et al. 2024)", "esa", "ESA", _esa_part)


def span_panel(shared: Panel, title: str, name: str, short: str, build: Callable) -> None:
    """A span protocol's panel (ESA's, MQM's: tabs/analysis_mqm.py): the report's part, and beside
    it the span agreement per pair of annotators and the head-to-head tests (shown)."""

    def view(part):
        got = shown(part)
        return got["summary"], [got["pairs"], got["h2h"]]

    labels = ("Span agreement per pair of annotators of a segment", "Head to head: one-sided rank-sum tests")
    part_panel(shared, title, name, f"Analyse the {short} answers", build, labels, view, f"The {short} analysis")
