"""The manual review of flagged recordings, and the exclusion rule that follows from it.

A reviewer listens, reads the transcript against the starter, and accepts (the exchange
goes on to the receivers) or rejects (it never does). A sender with more than three
rejected recordings is excluded from analyses (participants.excluded_at) and their open
items are withdrawn; each withdrawn recording item goes to another active sender, of the
same group and gender where possible, who has not had that starter
(services/participation/reassignment.withdraw_and_reassign, which the admin's reassign also uses,
handing them on through the usability roles' on_leave: services/usability/reassignment.py).
A rejected recording of a sender who still takes part goes back to them as "record again": a
new record item of the same exchange, first in their queue, whose page says why, with the
reviewer's reason where they gave one (the rejected recording and its translation are kept:
storage.usability.recordings.supersede_translation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from services.common.paging import Page, page_bounds
from services.participation.reassignment import withdraw_and_reassign
from services.usability import workflow
from services.usability.recording_qc import FLAG_TEXT, MAX_REJECTED, align, edges_text, flags_text
from storage import assignments, participants
from storage.db import Transaction, required
from storage.usability import corpus as usability_corpus
from storage.usability import exchanges, recordings


class ReviewError(ValueError):
    pass


@dataclass
class ReviewOutcome:
    recording_id: int
    status: str
    sender_excluded: bool = False
    reassigned: list[dict] = field(default_factory=list)  # {"exchange", "to"} per item
    record_again: bool = False  # the sender got the item back
    unassigned: list[int] = field(default_factory=list)  # withdrawn items nobody could take


def queue_for_review(
    database, study_id: str | None = None, status: str = "flagged", limit: int = 100, offset: int = 0
) -> list[dict]:
    """The recordings to review, each with its flags in words and the normalised prompt and
    transcript aligned word by word (recording_qc.align: what QC compared), and the QC ASR's
    second opinion on the edge words (recording_qc.edges_text; "" where it did not score)."""
    rows = recordings.recordings_for_review(database, study_id, status, limit, offset)
    for r in rows:
        flags = json.loads(r["qc_flags"] or "[]")
        r["flags"] = flags_text(flags, r["transcript"], r["translation"])
        r["alignment"] = align(r["prompt"], r["transcript"] or "")
        r["edges"] = edges_text(json.loads(r["qc_edges"]) if r.get("qc_edges") else None)
    return rows


# a reason is a sentence or two for the sender, not a letter
MAX_REASON = 500


def decide(database, recording_id: int, decision: str, reviewer: str, reason: str | None = None) -> ReviewOutcome:
    """reason: why a recording is rejected (optional), stored with it, exported and shown to the
    sender who records it again."""
    if decision not in ("accept", "reject"):
        raise ReviewError("decision must be 'accept' or 'reject'")
    reason = (" ".join((reason or "").split()) or None) if decision == "reject" else None
    if reason and len(reason) > MAX_REASON:
        raise ReviewError(f"the reason is {len(reason)} characters long; at most {MAX_REASON}")
    rec = recordings.recording(database, int(recording_id))
    if rec is None:
        raise ReviewError(f"there is no recording {recording_id}")
    if rec["qc_status"] not in ("flagged", "accepted", "rejected"):
        raise ReviewError(f"recording {recording_id} is {rec['qc_status']}: only flagged recordings are reviewed")
    if exchanges.sent_back(database, rec["exchange_id"], rec["id"]):
        raise ReviewError(
            f"recording {recording_id} was rejected and its sender asked to record it again: "
            "review the new recording instead"
        )
    status = "accepted" if decision == "accept" else "rejected"
    ex = required(exchanges.exchange(database, rec["exchange_id"]), "exchange of a recording")
    out = ReviewOutcome(rec["id"], status)
    with database.transaction() as tx:
        recordings.review_recording(tx.db, rec["id"], status, reviewer, reason)
        database.log(
            reviewer, "review", "recordings", rec["id"], {"decision": status, **({"reason": reason} if reason else {})}
        )
        sender = participants.get(database, ex["sender_id"]) if ex["sender_id"] else None
        if (
            status == "rejected"
            and sender
            and sender["excluded_at"] is None
            and recordings.rejected_count(database, sender["id"]) > MAX_REJECTED
        ):
            _exclude_and_reassign(tx, sender, reviewer, out)
        elif (
            status == "rejected"
            and sender
            and sender["active"]
            and sender["excluded_at"] is None
            and not sender["dropped_out_at"]
        ):
            _record_again(tx, rec, ex, sender, reviewer, out, reason)
        workflow.exchange_ready(database, ex["id"])
    return out


def _exclude_and_reassign(tx: Transaction, sender, reviewer, out: ReviewOutcome) -> None:
    participants.exclude(tx.db, sender["id"], f"more than {MAX_REJECTED} rejected recordings")
    for a in assignments.open_assignments(tx.database, sender["id"]):
        # their texts to record again are not handed on: a rejected exchange ends with the exclusion
        if a["phase"] == "record" and "record_again" in json.loads(a["meta"] or "{}"):
            assignments.withdraw(tx.db, a["id"])
    tx.database.log(reviewer, "exclude", "participants", sender["id"], {"reason": "rejected recordings"})
    out.sender_excluded = True
    moved = withdraw_and_reassign(tx, required(participants.get(tx.database, sender["id"]), "participant"), reviewer)
    out.reassigned = [m for m in moved.moved if m["phase"] == "record"]
    out.unassigned = [d["exchange"] for d in moved.dropped if d["phase"] == "record"]


def _record_again(tx: Transaction, rec, ex, sender, reviewer, out: ReviewOutcome, reason: str | None) -> None:
    """The sender records the exchange again: a new record item, before their other ones (the
    reason rides in its meta: their page reads it with the item, no other lookup)."""
    attempt = recordings.recording_count(tx.database, ex["id"]) + 1
    recordings.supersede_translation(tx.db, ex["id"], rec["id"])
    position = -1.0  # below every seeded order key (0..1): the item to redo comes first
    aid = assignments.insert_assignment(
        tx.db,
        ex["study_id"],
        sender["id"],
        "record",
        f"{ex['id']}-{attempt}",
        position,
        exchange_id=ex["id"],
        meta={"record_again": rec["id"], **({"reason": reason} if reason else {})},
    )
    tx.database.log(reviewer, "record_again", "assignments", aid, {"recording": rec["id"]})
    out.record_again = aid is not None


def review_page(database, study_id: str, page=1, page_size: int = 20) -> Page:

    total = recordings.review_count(database, study_id)
    page, pages, offset = page_bounds(total, page, page_size)
    # alignment: the prompt and transcript word by word (recording_qc.align), which the tab draws
    cols = ["id", "sender_id", "starter_id", "system_id", "duration_s", "wer", "flags", "edges", "alignment"]
    rows = pd.DataFrame(queue_for_review(database, study_id, limit=page_size, offset=offset), columns=cols)
    return Page(rows, page, pages, total)


def review_item(database, recording_id) -> dict | None:
    """What the reviewer compares for one recording: audio, prompt and transcript, its flags in
    words and the two aligned word by word (recording_qc.align)."""

    try:
        rec = recordings.recording(database, int(recording_id))
    except (TypeError, ValueError):
        return None
    if rec is None:
        return None
    ex = required(exchanges.exchange(database, rec["exchange_id"]), "exchange of a recording")
    starter = required(usability_corpus.starter(database, ex["study_id"], ex["starter_id"]), "starter of an exchange")
    flags = json.loads(rec["qc_flags"] or "[]")
    return {
        "id": rec["id"],
        "audio": rec["path_original"],
        "prompt": starter["text"],
        "transcript": rec["transcript"] or "",
        "wer": rec["wer"],
        "status": rec["qc_status"],
        "flags": [FLAG_TEXT.get(f, f) for f in flags],
        # the QC ASR's second opinion: why a start/end mismatch passed or waits
        "edges": edges_text(json.loads(rec["qc_edges"]) if rec.get("qc_edges") else None),
        "alignment": align(starter["text"], rec["transcript"] or ""),
    }
