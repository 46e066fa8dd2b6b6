"""Taking open items from a participant who leaves (deactivated and reassigned, dropped out,
or excluded after rejected recordings) and handing them on, inside the caller's write.

Every open item is withdrawn; the leaving participant's role says where they go (its
on_leave, services/common/protocols.py Role): the usability study's roles hand theirs on
(services/usability/reassignment.py); a role without one hands nothing on, each item is only
withdrawn (a DA rater's HIT, rated whole by one person, and an SD participant's own pages).
Done items always stay with the participant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.common import protocols
from storage import assignments, studies
from storage.db import Transaction, required
from storage.rows import AssignmentRecord, AssignmentRow, ParticipantRow


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

    def drop(self, assignment: AssignmentRow | AssignmentRecord) -> None:
        """An open item withdrawn and not handed on, with its phase's reason."""
        why = protocols.phase(assignment["phase"]).not_handed_on or assignment["phase"]
        self.dropped.append({"phase": assignment["phase"], "item": assignment["item_id"], "why": why})


def withdraw_and_reassign(tx: Transaction, participant: ParticipantRow, actor: str) -> Reassignment:
    """Withdraws every open item of an inactive participant and hands on what can be handed
    on (see the module's docstring). Runs inside the caller's write transaction; also used
    when a sender is excluded after rejected recordings (services/admin/usability_review) or drops
    out (services/usability/dropouts)."""
    study = required(studies.get_study(tx.database, participant["study_id"]), "study of a participant")
    out = Reassignment(participant["id"])
    withdrawn = assignments.open_assignments(tx.database, participant["id"])
    for a in withdrawn:
        assignments.withdraw(tx.db, a["id"])
    on_leave = protocols.role(participant["role"]).on_leave
    if on_leave is None:
        for a in withdrawn:
            out.drop(a)
    else:
        on_leave(tx, study, participant, withdrawn, actor, out)
    return out
