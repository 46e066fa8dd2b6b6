"""The manual review of flagged recordings, and the exclusion rule that follows from it.

A reviewer listens, reads the transcript against the starter, and accepts (the exchange
goes on to the receivers) or rejects (it never does). A sender with more than three
rejected recordings is excluded from analyses (participants.excluded_at) and their open
items are withdrawn; each withdrawn recording item goes to another active sender, of the
same group and gender where possible, who has not had that starter.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from services import workflow
from services.assignment import order_key
from services.recording_qc import FLAG_TEXT, MAX_REJECTED
from storage import participants, queue, results, studies


class ReviewError(ValueError):
    pass


@dataclass
class ReviewOutcome:
    recording_id: int
    status: str
    sender_excluded: bool = False
    reassigned: list[dict] = field(default_factory=list)     # {"exchange", "to"} per item
    unassigned: list[int] = field(default_factory=list)       # withdrawn items nobody could take


def queue_for_review(database, study_id: str | None = None, status: str = "flagged") -> list[dict]:
    rows = results.recordings_for_review(database, study_id, status)
    for r in rows:
        flags = json.loads(r["qc_flags"] or "[]")
        r["flags"] = ", ".join(FLAG_TEXT.get(f, f) for f in flags)
    return rows


def decide(database, recording_id: int, decision: str, reviewer: str) -> ReviewOutcome:
    if decision not in ("accept", "reject"):
        raise ReviewError("decision must be 'accept' or 'reject'")
    rec = results.recording(database, int(recording_id))
    if rec is None:
        raise ReviewError(f"there is no recording {recording_id}")
    if rec["qc_status"] not in ("flagged", "accepted", "rejected"):
        raise ReviewError(f"recording {recording_id} is {rec['qc_status']}: only flagged recordings are reviewed")
    status = "accepted" if decision == "accept" else "rejected"
    ex = queue.exchange(database, rec["exchange_id"])
    out = ReviewOutcome(rec["id"], status)
    with database.write() as db:
        results.review_recording(db, rec["id"], status, reviewer)
        database.log(reviewer, "review", "recordings", rec["id"], {"decision": status})
        sender = participants.get(database, ex["sender_id"]) if ex["sender_id"] else None
        if (status == "rejected" and sender and sender["excluded_at"] is None
                and results.rejected_count(database, sender["id"]) > MAX_REJECTED):
            _exclude_and_reassign(db, database, sender, reviewer, out)
        workflow.refresh(database, ex["study_id"])
    return out


def _exclude_and_reassign(db, database, sender, reviewer, out: ReviewOutcome) -> None:
    sid = sender["study_id"]
    seed = studies.get_study(database, sid)["config"]["study"]["seed"]
    participants.exclude(db, sender["id"], f"more than {MAX_REJECTED} rejected recordings")
    database.log(reviewer, "exclude", "participants", sender["id"], {"reason": "rejected recordings"})
    out.sender_excluded = True
    for a in queue.open_assignments(database, sender["id"]):
        queue.withdraw(db, a["id"])
        if a["phase"] != "record":
            continue      # the excluded sender's surveys have nobody else to answer them
        ex = queue.exchange(database, a["exchange_id"])
        taker = _replacement_sender(database, sid, sender, ex["starter_id"])
        if taker is None:
            out.unassigned.append(ex["id"])
            continue
        eid = queue.insert_exchange(db, sid, ex["starter_id"], ex["system_id"], taker)
        queue.insert_assignment(db, sid, taker, "record", eid, order_key(seed, taker, eid), exchange_id=eid)
        database.log(reviewer, "reassign", "exchanges", ex["id"], {"new_exchange": eid, "to": taker})
        out.reassigned.append({"exchange": ex["id"], "new_exchange": eid, "to": taker})


def _replacement_sender(database, study_id, excluded, starter_id) -> int | None:
    loads = queue.record_loads(database, study_id)
    pool = [p for p in participants.list_for_study(database, study_id, "sender")
            if p["active"] and p["id"] != excluded["id"] and starter_id not in queue.sender_starters(database, p["id"])]
    if not pool:
        return None
    same_cell = lambda p: (p["grp"], p["gender"]) == (excluded["grp"], excluded["gender"])
    pool.sort(key=lambda p: (not same_cell(p), loads.get(p["id"], 0), p["id"]))
    return pool[0]["id"]
