"""The usability study's part of the admin dashboard (the protocol's `dashboard` hook): the
recordings QC flagged, which wait on the study team, as a card and a line, and the recordings
still on the worker for QC and translation. A study without the usability protocol shows none."""

from __future__ import annotations

from services.common.vocabulary import count
from storage import studies
from storage.dashboard import job_counts
from storage.usability.recordings import recordings_waiting


def _wait(n: int) -> str:
    return "waits" if n == 1 else "wait"


def dashboard(database, study_id: str) -> tuple[list[tuple[str, int, str, bool]], list[str]]:
    study = studies.get_study(database, study_id)
    if not study or "usability" not in study["config"]:
        return [], []
    recordings = recordings_waiting(database, study_id)
    flagged, pending = recordings.get("flagged", 0), recordings.get("pending", 0)
    lines = []
    if flagged:
        lines.append(
            f"{count(flagged, 'recording')} flagged by QC {_wait(flagged)} on the study team: "
            "review them under Recordings to review."
        )
    if pending:
        jobs = job_counts(database)
        queued = jobs.get("pending", 0) + jobs.get("running", 0)
        lines.append(
            f"{count(pending, 'recording')} {_wait(pending)} on the worker for QC and translation "
            f"({count(queued, 'job')} queued or running)."
        )
    return [("recordings to review", flagged, "flagged by QC", flagged > 0)], lines
