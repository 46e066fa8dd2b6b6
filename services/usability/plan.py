"""Whether a usability study can finish: how many receivers its design needs, and which
exchanges wait because no receiver with room may take them.

A receiver reads at most one exchange of each starter (workflow.distinct_starters), so at most
K = min(items_per_receiver, starters) exchanges. R receivers can answer a study's exchanges
only if R x K >= exchanges x redundancy and, for every starter, R >= its exchanges x redundancy.
The starters are not spread evenly over the senders: the index-th sender of every design cell
(group x gender) gets the same design block (services/participation/assignment.sender_design),
so the starters a block repeats are repeated in every cell and the busiest starter, not the
average, sets the floor. Both bounds are necessary, not sufficient: receivers take work in the
order they come, so the last exchanges of a starter can still be left to receivers who all had
it. The dashboard lists those and what would release them: more receivers, or
[usability] receiver_repeat_after_minutes (after that wait a receiver who had the starter takes
it when nothing else is left for them, and the answer set says so).

plan(database, study_id) is the protocol's `plan` hook (services/common/protocols.py): the lines
the import's result and the admin's dashboard show.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter
from dataclasses import dataclass

from services.common.vocabulary import count
from services.participation.assignment import sender_design
from services.usability import workflow
from storage import studies
from storage.rows import StudyRow
from storage.usability import corpus as usability_corpus
from storage.usability import pool

# senders per design cell the import's plan shows the receivers needed for (30: about the
# paper's 29 per cell, 174 senders in six cells)
PER_CELL = (1, 5, 10, 30)


def receivers_needed(per_starter: dict[str, int], us: dict, n_starters: int) -> int:
    """The fewest receivers that can answer these exchanges (per starter) under the study's
    settings: both bounds of the module's docstring."""
    r = us["redundancy"]
    total = sum(per_starter.values()) * r
    if not total:
        return 0
    if us.get("receiver_repeat_starters"):
        return math.ceil(total / us["items_per_receiver"])
    k = min(us["items_per_receiver"], n_starters)
    return max(math.ceil(total / k), max(per_starter.values()) * r)


def planned_exchanges(study: StudyRow, starters: list[dict], systems: list[str], per_cell: int) -> Counter:
    """Exchanges per starter once every design cell has `per_cell` senders (sender_design's
    blocks 0..per_cell-1, the same in each cell)."""
    cfg, cells = study["config"], _cells(study)
    out: Counter = Counter()
    for index in range(per_cell):
        for starter_id, _ in sender_design(
            starters, systems, cfg["usability"]["items_per_sender"], cfg["study"]["seed"], index
        ):
            out[starter_id] += cells
    return out


def _cells(study: StudyRow) -> int:
    cfg = study["config"]["study"]
    return max(1, len(cfg["groups"] or [None])) * max(1, len(cfg["genders"] or [None]))


def design_lines(database, study: StudyRow) -> list[str]:
    """At import: the receivers the design needs for a few sizes of the sender cells."""
    sid, us = study["id"], study["config"]["usability"]
    starters = usability_corpus.starters(database, sid)
    systems = [s["id"] for s in studies.systems(database, sid) if s["config"]["assign"]]
    if not starters or not systems or us["items_per_sender"] > len(starters):
        return []
    imported = pool.exchanges_per_starter(database, sid)  # the study's own exchanges, before any sender
    cells = _cells(study)
    sizes = []
    for m in PER_CELL:
        per_starter = planned_exchanges(study, starters, systems, m) + Counter(imported)
        sizes.append(f"{m} per cell ({m * cells} senders): {receivers_needed(per_starter, us, len(starters))}")
    k = min(us["items_per_receiver"], len(starters))
    rule = (
        "each receiver reads at most one exchange of a starter"
        if workflow.distinct_starters(study, "receive")
        else "receivers may read a starter more than once"
    )
    return [
        f"Receivers the design needs ({rule}, at most {k} exchanges each, redundancy "
        f"{us['redundancy']}), by senders per group x gender cell: " + "; ".join(sizes) + ". "
        "Enrol at least that many (or self-enrolment slots); the dashboard says if exchanges wait for more."
    ]


def running_lines(database, study: StudyRow, now: dt.datetime | None = None) -> list[str]:
    """While the study runs: whether the enrolled receivers can answer the exchanges there are,
    and the exchanges no receiver with room may take, with what would release them."""
    sid, us = study["id"], study["config"]["usability"]
    n_starters = len(usability_corpus.starters(database, sid))
    lines = []
    per_starter = pool.exchanges_per_starter(database, sid)
    need = receivers_needed(per_starter, us, n_starters)
    enrolled = pool.receivers_enrolled(database, sid)
    if need > enrolled:
        lines.append(
            f"The {sum(per_starter.values())} exchanges need at least {need} receivers "
            f"(the busiest starter has {max(per_starter.values())}); {count(enrolled, 'receiver')} enrolled: "
            f"add {need - enrolled} more."
        )
    b = blocked(database, study, n_starters)
    if b is None:
        return lines
    shown = ", ".join(map(str, b.exchanges[:10])) + (" ..." if len(b.exchanges) > 10 else "")
    line = (
        f"{count(b.places, 'receive place')} of {count(len(b.starters), 'starter')} (exchanges {shown}) wait for a "
        f"receiver who has not read the starter: every receiver with room already has. "
        f"{count(b.more_receivers, 'more receiver')} would take them"
    )
    minutes = us.get("receiver_repeat_after_minutes", 0)
    if minutes and b.oldest:
        at = dt.datetime.fromisoformat(b.oldest) + dt.timedelta(minutes=minutes)
        line += (
            f"; or, after {minutes} minutes in the pool (receiver_repeat_after_minutes), a receiver who had the "
            f"starter takes one when nothing else is left for them (the first from {at:%Y-%m-%d %H:%M} UTC)."
        )
    else:
        line += "; or set [usability] receiver_repeat_after_minutes to let a receiver who had the starter take one."
    return [*lines, line]


@dataclass
class Blocked:
    """Receive places no enrolled receiver with room may take: they all read the starter."""

    places: int
    starters: dict[str, int]  # starter id -> its blocked places
    exchanges: list[int]  # the exchanges of those places (the newest of each starter's)
    more_receivers: int  # new receivers that would take them all (one of each starter each)
    oldest: str | None  # when the longest-waiting of them entered the pool


def blocked(database, study: StudyRow, n_starters: int | None = None) -> Blocked | None:
    """The receive places that wait for a receiver who has not read their starter (None: none,
    or the study lets receivers repeat starters). A starter's open places beyond the receivers
    with room who never had it are blocked; each new receiver takes one of each starter, up to
    min(items_per_receiver, starters)."""
    if not workflow.distinct_starters(study, "receive"):
        return None
    sid, us = study["id"], study["config"]["usability"]
    cap = us["items_per_receiver"]
    free = pool.receivers_with_room(database, sid, cap)
    starters: dict[str, int] = {}
    exchanges: list[int] = []
    oldest = None
    for row in pool.open_receive_by_starter(database, sid, cap):
        stuck = row["places"] - max(0, free - row["had"])
        if stuck > 0:
            starters[row["starter_id"]] = stuck
            exchanges += sorted(json.loads(row["exchanges"]))[-stuck:]
            oldest = min(oldest or row["oldest"], row["oldest"])
    if not starters:
        return None
    places = sum(starters.values())
    k = min(cap, n_starters if n_starters is not None else len(usability_corpus.starters(database, sid)))
    more = max(max(starters.values()), math.ceil(places / k))
    return Blocked(places, starters, exchanges, more, oldest)


def plan(database, study_id: str) -> list[str]:
    """The protocol's plan hook: before anyone enrolled, the design's needs; after, the running
    study's."""
    study = studies.get_study(database, study_id)
    if not study or "usability" not in study["config"]:
        return []
    if not studies.has_participants(database, study_id):
        return design_lines(database, study)
    return running_lines(database, study)
