"""The Analysis tab's MQM panel (Freitag et al. 2021): the report's MQM part for the chosen study,
its systems ranked with their clusters, the annotators, the errors by category and severity, the
agreement between annotators and the defaults (services/report/mqm.py, from
services/esa/mqm_analysis.py: the figures `app.py analyze mqm` prints), and the per-pair and
head-to-head tables beside them (services/esa/mqm_protocol.py names it)."""

from __future__ import annotations

from tabs.analysis_common import Panel
from tabs.analysis_esa import span_panel

TITLE = "Multidimensional Quality Metrics (MQM, Freitag et al. 2021)"  # services/report/mqm.py's


def _mqm_part(database, study_id: str, folder):
    # scipy and krippendorff: on first use only, as the ESA panel's (at the module's top they add
    # to every start of the app)
    from services.report import mqm as mqm_report

    return mqm_report.build(database, study_id, folder)


def panel(shared: Panel) -> None:
    span_panel(shared, TITLE, "mqm", "MQM", _mqm_part)
