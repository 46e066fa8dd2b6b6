"""Paper 003's QE gender audit as a protocol: no participants (no roles, tabs or phases) and no
study data (the audit runs on files: `app.py analyze qe-audit PAIRS.csv --out DIR`), so a study
does not list it; its part of every study's report is built from the audit folders given to the
report (services/report/qe.py). Its export is the audit's own output folder, not the study's."""

from __future__ import annotations

from services.common import protocols
from services.common.protocols import Protocol

PROTOCOL = protocols.register(
    Protocol(
        name="qe",
        in_studies=False,
        report_section="services.report.qe:section",
        analysis_panel="tabs.qe_audit:analysis_panel",  # the audit, run on files in the tab
    )
)
