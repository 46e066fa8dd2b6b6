"""The Analysis tab's listening-test panel: the report's part for the chosen study
(services/report/listening.py, from services/listening/analysis.py: the figures `app.py analyze
listening` prints); services/listening/protocol.py names it."""

from __future__ import annotations

from tabs.analysis_common import Panel, part_panel


def _listening_part(database, study_id: str, folder):
    # scipy's statistics: on first use only (at the module's top they slow every start)
    from services.report import listening as listening_report

    return listening_report.build(database, study_id, folder)


def panel(shared: Panel) -> None:
    button, what = "Analyse the listening-test ratings", "The listening-test analysis"
    part_panel(shared, "Listening test", "listening", button, _listening_part, what=what)
