"""The admin's dashboard: what a study designer checks at a glance (Appraise's campaign status,
Prolific's study dashboard): progress per role and phase, what is waiting on whom and why, each
protocol's own cards (the usability study's recordings to review: Protocol.dashboard), failing
jobs and the participants who stalled. One call, a few indexed aggregates (storage/dashboard.py
and the protocols'), so the page can re-read it every few seconds.

"Stalled": an active participant who has not finished, opened their link at least once, still has
open items, and has not been seen for STALL_MINUTES (last_seen_at: every view and submit, to the
minute). Someone who never opened their link is "not started", counted apart: that is an
invitation problem, not a stalled session.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from services.admin.progress import progress_table
from services.common import protocols
from services.common.vocabulary import count
from services.participation.progress import instruction_items
from storage import dashboard as store

STALL_MINUTES = 30
COUNTS = ("open", "done", "waiting")
SHOWN = 5  # failing jobs and stalled participants listed by name (the counts are complete)


@dataclass
class Dashboard:
    study_id: str
    as_of: str  # ISO time in UTC
    stall_minutes: int
    # {"role", "phase", "open", "done", "waiting"}: services/participation/progress.py, as the page counts
    progress: list[dict] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # one line each: what waits, on whom, why
    # the protocols' cards (Protocol.dashboard): (title, figure, note, whether it asks for attention)
    cards: list[tuple[str, int, str, bool]] = field(default_factory=list)
    failed_jobs: int = 0
    failing: list[dict] = field(default_factory=list)  # {"id", "kind", "attempts", "error", "updated_at"}
    stalled_total: int = 0
    stalled: list[dict] = field(default_factory=list)  # {"id", "role", "open", "last_seen_at"}


def _wait(count: int) -> str:
    return "waits" if count == 1 else "wait"


def _last_line(error: str | None) -> str:
    """A traceback's last line (the exception and its text), shortened: the jobs table has it all."""
    lines = (error or "").strip().splitlines()
    return lines[-1][:160] if lines else ""


def waiting_lines(
    open_roles: list[dict],
    pool: list[dict],
    jobs: dict[str, int],
    stalled_total: int,
    stall_minutes: int,
) -> list[str]:
    """What is waiting on whom and why, in the designer's words, the team's own tasks first (the
    protocols' lines come before these: dashboard())."""
    lines = []
    if jobs.get("failed"):
        lines.append(
            f"{count(jobs['failed'], 'background job')} failed: retry them under Background jobs "
            "(their errors are listed there)."
        )
    for r in open_roles:
        who = count(r["people"], protocols.role_label(r["role"]))
        line = f"{count(r['items'], 'open item')} {_wait(r['items'])} on {who}"
        lines.append(line + (f" ({r['not_started']} not started yet)." if r["not_started"] else "."))
    for p in pool:
        taker = protocols.pool_taker(p["phase"])
        lines.append(
            f"{count(p['places'], p['phase'] + ' place')} ({count(p['items'], 'item')}) {_wait(p['places'])} for "
            f"{taker}: "
            "the next one who opens their link takes them."
        )
    if stalled_total:
        lines.append(
            f"{count(stalled_total, 'participant')} stalled: open items, not seen for {stall_minutes} minutes or more."
        )
    return lines


def dashboard(database, study_id: str, now: dt.datetime | None = None, stall_minutes: int = STALL_MINUTES) -> Dashboard:
    """The dashboard of one study as of `now` (UTC; the clock by default)."""
    if not study_id:
        raise ValueError("Pick a study first.")
    now = now or dt.datetime.now(dt.timezone.utc)
    cutoff = (now - dt.timedelta(minutes=stall_minutes)).isoformat(timespec="milliseconds")
    progress = progress_table(database, study_id).to_dict("records")
    cards, own = [], []
    for _, part in protocols.with_hook("dashboard"):
        c, lines = part(database, study_id)
        cards += c
        own += lines
    jobs = store.job_counts(database)
    stalled, stalled_total = store.stalled(database, study_id, cutoff, SHOWN)
    failing = [
        {
            "id": j["id"],
            "kind": j["kind"],
            "attempts": j["attempts"],
            "error": _last_line(j["last_error"]),
            "updated_at": j["updated_at"],
        }
        for j in store.failed_jobs(database, SHOWN)
    ]
    waiting = own + waiting_lines(
        store.open_by_role(database, study_id, instruction_items()),
        store.pool_waiting(database, study_id),
        jobs,
        stalled_total,
        stall_minutes,
    )
    # what keeps work from anyone who could take it, and what would release it (Protocol.plan)
    waiting += [line for _, plan in protocols.with_hook("plan") for line in plan(database, study_id)]
    return Dashboard(
        study_id=study_id,
        as_of=now.isoformat(timespec="seconds"),
        stall_minutes=stall_minutes,
        progress=[{k: (int(v) if k in COUNTS else v) for k, v in r.items()} for r in progress],
        waiting=waiting,
        cards=cards,
        failed_jobs=jobs.get("failed", 0),
        failing=failing,
        stalled_total=stalled_total,
        stalled=stalled,
    )
