"""Where a leaving usability participant's open items go (their roles' on_leave; the items are
withdrawn already by services/participation/reassignment.py withdraw_and_reassign, inside the
caller's write):
- a sender's recording items: to another active sender of the same group and gender (the
  design cell, so the stratified design stays exactly balanced) who has not had that starter,
  least loaded (a new exchange; the old one stays withdrawn); when the cell has nobody, the
  item waits for the next sender enrolled in that cell, who records it besides their own;
- a sender's surveys: the sender has dropped out (services/usability/dropouts.py): each exchange whose
  informed survey they have not answered goes to the raters' pool, baseline and informed
  together (third-person perspective, paper 000 appendix A.1);
- receiver and validator items, and a rater's surveys: back to the pool, where the next
  eligible person of the role with room takes them when their page asks for work (never the
  producer of the item, never the person it was withdrawn from);
- a rater's informed survey is not handed on: it follows the person's own baseline.
"""

from __future__ import annotations

from services.common.seeded import order_key
from services.participation.reassignment import Reassignment
from services.usability import workflow
from storage import assignments, participants
from storage.db import Transaction, required
from storage.rows import AssignmentRecord, ParticipantRow, StudyRow
from storage.usability import exchanges

POOLED = {"receive", "validate"}  # their places go back to the work pool


def on_leave(
    tx: Transaction,
    study: StudyRow,
    participant: ParticipantRow,
    withdrawn: list[AssignmentRecord],
    actor: str,
    out: Reassignment,
) -> None:
    """Hands on a leaving sender's, receiver's, validator's or rater's withdrawn items (see
    the module's docstring). A sender the team deactivated and whose items it hands on has
    dropped out (one who dropped out or was excluded is marked so already)."""
    if participant["role"] == "sender" and not participant["excluded_at"] and not participant["dropped_out_at"]:
        participants.mark_dropped_out(tx.db, participant["id"], "deactivated by the study team, items reassigned")
    for a in withdrawn:
        phase, item = a["phase"], a["item_id"]
        if phase == "record":
            _move_recording_item(tx, study, participant, a, actor, out)
        elif phase in POOLED or (phase == "survey_baseline" and participant["role"] == "rater"):
            workflow.release(tx, a)
            out.waiting.append({"phase": phase, "item": item})
            tx.database.log(actor, "reassign", "assignments", a["id"], {"item": item, "to": "pool"})
        elif participant["role"] == "sender" and phase.startswith("survey"):
            pass  # the exchange goes to the raters below, baseline and informed together
        else:
            out.drop(a)
    if participant["role"] in ("sender", "rater") and "usability" in study["config"]:
        # surveys nobody will finish: the exchange goes (back) to the raters' pool (third person)
        for eid in workflow.hand_surveys_to_raters(tx, study, participant):
            out.waiting.append({"phase": "survey_baseline", "item": str(eid), "third_person": True})


def _move_recording_item(tx: Transaction, study, participant, assignment, actor, out: Reassignment) -> None:
    ex = required(exchanges.exchange(tx.database, assignment["exchange_id"]), "exchange of an assignment")
    taker = replacement_sender(tx.database, study["id"], participant, ex["starter_id"])
    if taker is None:
        # the design stays balanced: the item waits for the next sender enrolled in the same cell
        workflow.orphan_recording(tx, study, participant, ex)
        out.waiting.append(
            {
                "phase": "record",
                "item": assignment["item_id"],
                "exchange": ex["id"],
                "cell": workflow.cell(participant["grp"], participant["gender"]),
            }
        )
        return
    seed = study["config"]["study"]["seed"]
    sid = study["id"]
    eid = exchanges.insert_exchange(tx.db, sid, ex["starter_id"], ex["system_id"], taker)
    assignments.insert_assignment(tx.db, sid, taker, "record", eid, order_key(seed, taker, eid), exchange_id=eid)
    tx.database.log(actor, "reassign", "exchanges", ex["id"], {"new_exchange": eid, "to": taker})
    out.moved.append(
        {"phase": "record", "item": assignment["item_id"], "exchange": ex["id"], "new_exchange": eid, "to": taker}
    )


def replacement_sender(database, study_id: str, leaving: ParticipantRow, starter_id: str) -> int | None:
    """An active sender of the same group and gender (the design cell: the stratified design
    stays exactly balanced) who has not had this starter, the least loaded first; None when
    the cell has nobody who can take it."""
    takers = [
        s
        for s in participants.list_for_study(database, study_id, "sender")
        if s["active"]
        and s["id"] != leaving["id"]
        and (s["grp"], s["gender"]) == (leaving["grp"], leaving["gender"])
        and starter_id not in exchanges.sender_starters(database, s["id"])
    ]
    if not takers:
        return None
    # each taker's own load (an index lookup), not every sender's record items of the study
    takers.sort(key=lambda s: (exchanges.record_load(database, s["id"]), s["id"]))
    return takers[0]["id"]
