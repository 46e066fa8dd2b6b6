"""What counts as progress, by one definition for whoever shows it: the participant's page
(services/participation/items.py: "3 / 12"), the admin's dashboard and progress table, and the
participants table (services/admin). Issue 51: the pages disagreed with each other.

- done: items submitted; open: items held, not yet submitted. An item withdrawn from someone who
  left is neither: its place went back to the pool or was dropped.
- A tab's instruction pages (Tab.instruction_items: the SD welcome and example) are not items,
  so none of the counts holds them.
- waiting (the study's counts only): places in the study's work pool that no one has taken yet (a
  dropped-out sender's unrecorded starters, an exchange's receive places): work of the phase no
  one holds. A phase's total is done + open + waiting.
"""

from __future__ import annotations

from functools import cache

from services.common import protocols
from storage import assignments
from storage import dashboard as pool_store


@cache
def instruction_items() -> dict[str, tuple[str, ...]]:
    """{phase: item ids} of every tab's instruction pages (the registry is fixed once imported)."""
    out: dict[str, set[str]] = {}
    for name in protocols.tabs():
        t = protocols.tab(name)
        for phase in t.phases if t.instruction_items else ():
            out.setdefault(phase, set()).update(t.instruction_items)
    return {phase: tuple(sorted(items)) for phase, items in out.items()}


def participant_counts(database, participant_id: int, tab: str) -> dict[str, int]:
    """{"open", "done"}: the participant's items of the tab (the page's progress)."""
    phases = protocols.tab(tab).phases
    skip = {ph: items for ph, items in instruction_items().items() if ph in phases}
    return assignments.counts(database, participant_id, phases, skip)


@cache
def pool_role(phase: str) -> str:
    """The role whose people take a pool place of the phase: the role that takes its tab from the
    pool (a rater takes a survey place, never the exchange's sender), else the role whose tab shows
    the phase (a record place goes to a new sender)."""
    holders = [r for r in protocols.roles() if any(phase in protocols.tab(t).phases for t in protocols.role(r).tabs)]
    pooled = [r for r in holders if (pool := protocols.role(r).pool) and phase in protocols.tab(pool.tab).phases]
    return (pooled or holders or [phase])[0]


def study_counts(database, study_id: str) -> list[dict]:
    """{"role", "phase", "open", "done", "waiting"} per role and phase, by role then phase."""
    rows: dict[tuple[str, str], dict] = {}

    def row(role: str, phase: str) -> dict:
        return rows.setdefault((role, phase), {"role": role, "phase": phase, "open": 0, "done": 0, "waiting": 0})

    for r in assignments.study_progress(database, study_id, instruction_items()):
        if r["status"] in ("open", "done"):
            row(r["role"], r["phase"])[r["status"]] += r["n"]
    for p in pool_store.pool_waiting(database, study_id):
        row(pool_role(p["phase"]), p["phase"])["waiting"] += p["places"]
    return [rows[k] for k in sorted(rows)]


def participant_rows(database, study_id: str, limit: int, offset: int, role: str | None, status: str | None):
    """A page of participants with their done and open items (the participants table)."""
    return assignments.participant_progress(database, study_id, limit, offset, role, status, instruction_items())
