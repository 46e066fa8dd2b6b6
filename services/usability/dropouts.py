"""Senders who drop out, and the third-person raters who replace them (paper 000, A.1).

A sender counts as dropped out when the study team deactivates them and reassigns their
items, when they are marked so here (drop_out), or, with the study setting
`usability.dropout_after_days`, when they have not opened their link for that many days
while surveys wait for them (detect_inactive, run by the worker: services/participation/maintenance.py).
Their link stops working; each of their exchanges whose informed survey they have not
answered goes to the raters' pool (baseline, then informed, by one rater: perspective
'third'), their recordings not yet made go to a sender of the same cell
(services/participation/reassignment.withdraw_and_reassign, through the sender role's on_leave:
services/usability/reassignment.py). What they answered stays theirs.
"""

from __future__ import annotations

import datetime as dt

from services.participation.reassignment import Reassignment, withdraw_and_reassign
from storage import participants, studies
from storage.db import required
from storage.usability import pool


class DropoutError(ValueError):
    pass


def drop_out(database, participant_id: int, actor: str, reason: str) -> Reassignment:
    p = participants.get(database, int(participant_id))
    if p is None:
        raise DropoutError(f"There is no participant {participant_id}.")
    if p["role"] != "sender":
        raise DropoutError(
            f"Participant {p['id']} is a {p['role']}: only senders drop out of the four phases "
            "(deactivate and reassign other roles)."
        )
    if p["excluded_at"]:
        raise DropoutError(f"Participant {p['id']} was excluded ({p['excluded_reason']}).")
    with database.transaction() as tx:
        participants.mark_dropped_out(tx.db, p["id"], reason)
        database.log(actor, "drop_out", "participants", p["id"], {"reason": reason})
        return withdraw_and_reassign(tx, required(participants.get(database, p["id"]), "participant"), actor)


def detect_inactive(database, study_id: str, now: dt.datetime | None = None) -> list[int]:
    """Senders not seen for `dropout_after_days` days with surveys open: dropped out. Off (0) by
    default. Returns their ids."""
    study = studies.get_study(database, study_id)
    days = (study or {}).get("config", {}).get("usability", {}).get("dropout_after_days", 0) if study else 0
    if not days:
        return []
    now = now or dt.datetime.now(dt.timezone.utc)
    cutoff = (now - dt.timedelta(days=days)).isoformat(timespec="milliseconds")
    gone = []
    for p in pool.inactive_senders(database, study_id, cutoff):
        drop_out(database, p["id"], "worker", f"not seen for {days} days with surveys open")
        gone.append(p["id"])
    return gone
