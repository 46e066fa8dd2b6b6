"""Taking open items from a participant who leaves (deactivated and reassigned, dropped out,
or excluded after rejected recordings) and handing them on, inside the caller's write.

Where open items go when they are reassigned (reassign_open_items):
- a sender's recording items: to another active sender of the same group and gender (the
  design cell, so the stratified design stays exactly balanced) who has not had that starter,
  least loaded (a new exchange; the old one stays withdrawn); when the cell has nobody, the
  item waits for the next sender enrolled in that cell, who records it besides their own;
- a sender's surveys: the sender has dropped out (services/participation/dropouts.py): each exchange whose
  informed survey they have not answered goes to the raters' pool, baseline and informed
  together (third-person perspective, paper 000 appendix A.1);
- receiver and validator items, and a rater's surveys: back to the pool, where the next
  eligible person of the role with room takes them when their page asks for work (never the
  producer of the item, never the person it was withdrawn from);
- not handed on (withdrawn only): a DA rater's open items (a HIT is rated whole by one
  person; the partial HIT stops counting as held, so the next DA rater added gets it in
  full), and an SD participant's pages (each one's layout is personal).
Done items always stay with the participant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.common.seeded import order_key
from services.participation import workflow
from storage import assignments, participants, studies
from storage.db import required

POOLED = {"receive", "validate"}  # their places go back to the work pool


@dataclass
class Reassignment:
    participant_id: int
    moved: list[dict] = field(default_factory=list)  # {"phase", "item", "to"} (+ exchange ids for record)
    waiting: list[dict] = field(default_factory=list)  # {"phase", "item"}: in the pool, nobody had room
    dropped: list[dict] = field(default_factory=list)  # {"phase", "item", "why"}: withdrawn, not handed on

    def summary(self) -> str:
        if not (self.moved or self.waiting or self.dropped):
            return f"Participant {self.participant_id} had no open items."
        parts = [f"{len(self.moved)} open item(s) of participant {self.participant_id} went to other participants"]
        if self.waiting:
            parts.append(
                f"{len(self.waiting)} went back to the pool: the next participant of the role with room "
                "takes them (recordings: the next sender of the same group and gender)"
            )
        if self.dropped:
            whys = sorted({d["why"] for d in self.dropped})
            parts.append(f"{len(self.dropped)} were withdrawn without a successor ({'; '.join(whys)})")
        return "; ".join(parts) + "."


def withdraw_and_reassign(db, database, p: dict, actor: str) -> Reassignment:
    """Withdraws every open item of an inactive participant and hands on what can be handed
    on (see the module's docstring). Runs inside the caller's write transaction; also used
    when a sender is excluded after rejected recordings (services/admin/recording_review) or drops
    out (services/participation/dropouts)."""
    study = required(studies.get_study(database, p["study_id"]), "study of a participant")
    out = Reassignment(p["id"])
    for a in assignments.open_assignments(database, p["id"]):
        assignments.withdraw(db, a["id"])
        phase, item = a["phase"], a["item_id"]
        if phase == "record":
            _move_recording_item(db, database, study, p, a, actor, out)
        elif phase in POOLED or (phase == "survey_baseline" and p["role"] == "rater"):
            workflow.release(db, database, a)
            out.waiting.append({"phase": phase, "item": item})
            database.log(actor, "reassign", "assignments", a["id"], {"item": item, "to": "pool"})
        elif p["role"] == "sender" and phase.startswith("survey"):
            pass  # the exchange goes to the raters below, baseline and informed together
        else:
            why = {
                "survey_informed": "an informed survey follows the person's own baseline",
                "da": "a DA HIT is rated whole by one rater: the next DA rater added gets it",
                "sd": "an SD participant's pages are their own",
            }.get(phase, phase)
            out.dropped.append({"phase": phase, "item": item, "why": why})
    if p["role"] in ("sender", "rater") and "usability" in study["config"]:
        # surveys nobody will finish: the exchange goes (back) to the raters' pool (third person)
        for eid in workflow.hand_surveys_to_raters(db, database, study, p):
            out.waiting.append({"phase": "survey_baseline", "item": str(eid), "third_person": True})
    return out


def _move_recording_item(db, database, study, p, a, actor, out: Reassignment) -> None:
    ex = required(assignments.exchange(database, a["exchange_id"]), "exchange of an assignment")
    taker = replacement_sender(database, study["id"], p, ex["starter_id"])
    if taker is None:
        # the design stays balanced: the item waits for the next sender enrolled in the same cell
        workflow.orphan_recording(db, database, study, p, ex)
        out.waiting.append(
            {
                "phase": "record",
                "item": a["item_id"],
                "exchange": ex["id"],
                "cell": workflow.cell(p["grp"], p["gender"]),
            }
        )
        return
    seed = study["config"]["study"]["seed"]
    sid = study["id"]
    eid = assignments.insert_exchange(db, sid, ex["starter_id"], ex["system_id"], taker)
    assignments.insert_assignment(db, sid, taker, "record", eid, order_key(seed, taker, eid), exchange_id=eid)
    database.log(actor, "reassign", "exchanges", ex["id"], {"new_exchange": eid, "to": taker})
    out.moved.append({"phase": "record", "item": a["item_id"], "exchange": ex["id"], "new_exchange": eid, "to": taker})


def replacement_sender(database, study_id: str, leaving: dict, starter_id: str) -> int | None:
    """An active sender of the same group and gender (the design cell: the stratified design
    stays exactly balanced) who has not had this starter, the least loaded first; None when
    the cell has nobody who can take it."""
    takers = [
        s
        for s in participants.list_for_study(database, study_id, "sender")
        if s["active"]
        and s["id"] != leaving["id"]
        and (s["grp"], s["gender"]) == (leaving["grp"], leaving["gender"])
        and starter_id not in assignments.sender_starters(database, s["id"])
    ]
    if not takers:
        return None
    # each taker's own load (an index lookup), not every sender's record items of the study
    takers.sort(key=lambda s: (assignments.record_load(database, s["id"]), s["id"]))
    return takers[0]["id"]
