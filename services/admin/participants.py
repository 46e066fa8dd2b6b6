"""The designer's participant management: add people, deactivate and reactivate a link,
hand a deactivated participant's open items to others, issue a new link, and the list of
those who finished (to approve submissions on Prolific). Every change goes to the audit log.

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

import csv
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from services.common.paging import Page, page_bounds
from services.common.vocabulary import ROLES
from services.participation import workflow
from services.participation.assignment import order_key
from services.study.export import neutralise
from services.study.participants import NewParticipant, add_participants, link, links, new_token
from storage import assignments, participants, pool, studies

STATUSES = tuple(assignments.PARTICIPANT_STATUS)       # deactivated, completed, active
MAX_ADD = 500                                    # one form submit; more is almost surely a typo
MAX_EXTERNAL_ID = 64
EXTERNAL_ID_RE = re.compile(r"^[A-Za-z0-9_.:@-]+$")
POOLED = {"receive", "validate"}                 # their places go back to the work pool


class ParticipantAdminError(ValueError):
    """A participant action that cannot be done; the message names what is wrong."""


@dataclass
class Reassignment:
    participant_id: int
    moved: list[dict] = field(default_factory=list)      # {"phase", "item", "to"} (+ exchange ids for record)
    waiting: list[dict] = field(default_factory=list)    # {"phase", "item"}: in the pool, nobody had room
    dropped: list[dict] = field(default_factory=list)    # {"phase", "item", "why"}: withdrawn, not handed on

    def summary(self) -> str:
        if not (self.moved or self.waiting or self.dropped):
            return f"Participant {self.participant_id} had no open items."
        parts = [f"{len(self.moved)} open item(s) of participant {self.participant_id} went to other participants"]
        if self.waiting:
            parts.append(f"{len(self.waiting)} went back to the pool: the next participant of the role with room "
                         "takes them (recordings: the next sender of the same group and gender)")
        if self.dropped:
            whys = sorted({d["why"] for d in self.dropped})
            parts.append(f"{len(self.dropped)} were withdrawn without a successor ({'; '.join(whys)})")
        return "; ".join(parts) + "."


# -- looking people up ------------------------------------------------------------------------

def whole_number(value) -> int | None:
    """An int from a form field (3, 3.0 or "3"); None for anything else (3.5, "x", empty)."""
    if isinstance(value, bool):
        return None
    try:
        n = int(float(str(value).strip()))
    except (TypeError, ValueError, OverflowError):
        return None
    return n if float(str(value).strip()) == n else None


def participant(database, study_id: str | None, participant_id) -> dict:
    """The participant of the selected study with this id, or an error that says why not."""
    pid = whole_number(participant_id)
    if pid is None:
        raise ParticipantAdminError("Give a participant id (a whole number from the participants table).")
    p = participants.get(database, pid)
    if p is None:
        raise ParticipantAdminError(f"There is no participant {pid}.")
    if study_id and p["study_id"] != study_id:
        raise ParticipantAdminError(f"Participant {pid} belongs to study '{p['study_id']}', not '{study_id}'.")
    return p


def status_of(p: dict) -> str:
    if not p["active"]:
        return "deactivated"
    return "completed" if p.get("completed_at") else "active"


def short_link(token: str) -> str:
    return token[:6] + "…"


def form_options(database, study_id: str | None) -> dict:
    """What the add form offers for a study: its roles, groups and genders."""
    study = studies.get_study(database, study_id) if study_id else None
    if not study:
        return {"roles": [], "groups": [], "genders": []}
    cfg = study["config"]["study"]
    needs = {"sender": "usability", "receiver": "usability", "validator": "usability", "rater": "usability",
             "da": "da", "sd": "sd"}
    return {"roles": [r for r in ROLES if needs[r] in cfg["protocols"]],
            "groups": list(cfg["groups"]), "genders": list(cfg["genders"])}


# -- adding ----------------------------------------------------------------------------------

def parse_external_ids(text: str | None) -> list[str]:
    """External (e.g. Prolific) ids typed one per line or separated by commas."""
    ids = [x.strip() for x in re.split(r"[\n,]", text or "") if x.strip()]
    bad = [x for x in ids if len(x) > MAX_EXTERNAL_ID or not EXTERNAL_ID_RE.match(x)]
    if bad:
        raise ParticipantAdminError(f"External id '{bad[0][:80]}' is not valid: use at most {MAX_EXTERNAL_ID} "
                                    "letters, digits and . _ - : @")
    dupes = sorted({x for x in ids if ids.count(x) > 1})
    if dupes:
        raise ParticipantAdminError(f"External id '{dupes[0]}' is listed twice.")
    return ids


def add(database, study_id: str | None, role: str | None, count, group: str | None, gender: str | None,
        external_ids_text: str | None, actor: str, self_enrol: bool = False) -> list[NewParticipant]:
    """New participants with their queues. With external ids: one participant per id (the
    count is then ignored); without: `count` anonymous slots. self_enrol: slots only the signed
    Prolific URL fills (never handed out as private links to Prolific newcomers otherwise)."""
    if not study_id:
        raise ParticipantAdminError("Pick a study first.")
    if not role:
        raise ParticipantAdminError(f"Choose a role ({', '.join(ROLES)}).")
    ids = parse_external_ids(external_ids_text)
    if ids and self_enrol:
        raise ParticipantAdminError("Self-enrolment slots take no external ids: Prolific fills them in.")
    if ids:
        taken = sorted(set(ids) & participants.external_ids(database, study_id, role))
        if taken:
            raise ParticipantAdminError(f"External id '{taken[0]}' already has a {role} link in this study.")
        if len(ids) > MAX_ADD:
            raise ParticipantAdminError(f"At most {MAX_ADD} participants at a time ({len(ids)} ids given).")
        return add_participants(database, study_id, role, len(ids), group or None, gender or None, ids, actor)
    n = whole_number(count)
    if n is None:
        raise ParticipantAdminError("Count must be a whole number of participants.")
    if not 1 <= n <= MAX_ADD:
        raise ParticipantAdminError(f"Count must be between 1 and {MAX_ADD} (got {n}).")
    return add_participants(database, study_id, role, n, group or None, gender or None, None, actor,
                            self_enrol=bool(self_enrol))


# -- access ----------------------------------------------------------------------------------

def deactivate(database, study_id: str | None, participant_id, actor: str) -> str:
    """The link stops working at once; the queue is kept (reactivate restores it)."""
    p = participant(database, study_id, participant_id)
    if not p["active"]:
        raise ParticipantAdminError(f"Participant {p['id']} is already deactivated.")
    with database.write() as db:
        participants.set_active(db, p["id"], False)
        database.log(actor, "deactivate", "participants", p["id"], {"role": p["role"]})
    return f"Participant {p['id']} ({p['role']}) is deactivated: their link no longer opens the study."


def reactivate(database, study_id: str | None, participant_id, actor: str) -> str:
    p = participant(database, study_id, participant_id)
    if p["active"]:
        raise ParticipantAdminError(f"Participant {p['id']} is already active.")
    if p["excluded_at"]:
        # an exclusion (e.g. too many rejected recordings) is an analysis decision, not a pause
        raise ParticipantAdminError(f"Participant {p['id']} was excluded ({p['excluded_reason']}); "
                                    "an exclusion is not undone here.")
    with database.write() as db:
        participants.set_active(db, p["id"], True)
        database.log(actor, "reactivate", "participants", p["id"], {"role": p["role"]})
    return f"Participant {p['id']} ({p['role']}) is active again: their link works."


def regenerate_link(database, study_id: str | None, participant_id, actor: str) -> str:
    """A new private token; the old link stops working at once, the progress stays. Returns
    the token (never logged: the audit log is exported)."""
    p = participant(database, study_id, participant_id)
    token = new_token()
    with database.write() as db:
        participants.set_token(db, p["id"], token)
        # nor does the Prolific URL lead back in (issue 30): the new link is the only way in
        participants.revoke_prolific_return(db, p["id"])
        database.log(actor, "new_link", "participants", p["id"], {"role": p["role"]})
    return token


def full_link(database, study_id: str | None, participant_id, public_url: str) -> str:
    return link(public_url, participant(database, study_id, participant_id)["token"])


# -- reassigning open items -----------------------------------------------------------------------

def reassign_open_items(database, study_id: str | None, participant_id, actor: str) -> Reassignment:
    p = participant(database, study_id, participant_id)
    if p["active"]:
        # an active participant would keep getting items, even the ones taken from them
        raise ParticipantAdminError(f"Participant {p['id']} is active: deactivate them first, then reassign "
                                    "their open items.")
    with database.write() as db:
        if p["role"] == "sender" and not p["excluded_at"]:      # a sender whose items are handed on has dropped out
            pool.mark_dropped_out(db, p["id"], "deactivated by the study team, items reassigned")
        out = withdraw_and_reassign(db, database, p, actor)
        database.log(actor, "reassign_open_items", "participants", p["id"],
                     {"role": p["role"], "status": f"{len(out.moved)} moved, {len(out.waiting)} waiting, "
                                                   f"{len(out.dropped)} withdrawn"})
    return out


def withdraw_and_reassign(db, database, p: dict, actor: str) -> Reassignment:
    """Withdraws every open item of an inactive participant and hands on what can be handed
    on (see the module's docstring). Runs inside the caller's write transaction; also used
    when a sender is excluded after rejected recordings (services/admin/recording_review) or drops
    out (services/participation/dropouts)."""
    study = studies.get_study(database, p["study_id"])
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
            pass        # the exchange goes to the raters below, baseline and informed together
        else:
            why = {"survey_informed": "an informed survey follows the person's own baseline",
                   "da": "a DA HIT is rated whole by one rater: the next DA rater added gets it",
                   "sd": "an SD participant's pages are their own"}.get(phase, phase)
            out.dropped.append({"phase": phase, "item": item, "why": why})
    if p["role"] in ("sender", "rater") and "usability" in study["config"]:
        # surveys nobody will finish: the exchange goes (back) to the raters' pool (third person)
        for eid in workflow.hand_surveys_to_raters(db, database, study, p):
            out.waiting.append({"phase": "survey_baseline", "item": str(eid), "third_person": True})
    return out


def _move_recording_item(db, database, study, p, a, actor, out: Reassignment) -> None:
    ex = assignments.exchange(database, a["exchange_id"])
    taker = replacement_sender(database, study["id"], p, ex["starter_id"])
    if taker is None:
        # the design stays balanced: the item waits for the next sender enrolled in the same cell
        workflow.orphan_recording(db, database, study, p, ex)
        out.waiting.append({"phase": "record", "item": a["item_id"], "exchange": ex["id"],
                            "cell": workflow.cell(p["grp"], p["gender"])})
        return
    seed = study["config"]["study"]["seed"]
    sid = study["id"]
    eid = assignments.insert_exchange(db, sid, ex["starter_id"], ex["system_id"], taker)
    assignments.insert_assignment(db, sid, taker, "record", eid, order_key(seed, taker, eid), exchange_id=eid)
    database.log(actor, "reassign", "exchanges", ex["id"], {"new_exchange": eid, "to": taker})
    out.moved.append({"phase": "record", "item": a["item_id"], "exchange": ex["id"], "new_exchange": eid,
                      "to": taker})


def replacement_sender(database, study_id: str, leaving: dict, starter_id: str) -> int | None:
    """An active sender of the same group and gender (the design cell: the stratified design
    stays exactly balanced) who has not had this starter, the least loaded first; None when
    the cell has nobody who can take it."""
    takers = [s for s in participants.list_for_study(database, study_id, "sender")
              if s["active"] and s["id"] != leaving["id"]
              and (s["grp"], s["gender"]) == (leaving["grp"], leaving["gender"])
              and starter_id not in assignments.sender_starters(database, s["id"])]
    if not takers:
        return None
    # each taker's own load (an index lookup), not every sender's record items of the study
    takers.sort(key=lambda s: (assignments.record_load(database, s["id"]), s["id"]))
    return takers[0]["id"]


# -- tables ------------------------------------------------------------------------------------

PARTICIPANT_COLUMNS = ["id", "role", "status", "grp", "gender", "external_id", "prolific_pid", "done", "open",
                       "last_seen_at", "last_submitted", "link"]


def _check_filters(role: str | None, status: str | None) -> None:
    if role and role not in ROLES:
        raise ParticipantAdminError(f"Unknown role '{role}' (one of {', '.join(ROLES)}).")
    if status and status not in STATUSES:
        raise ParticipantAdminError(f"Unknown status '{status}' (one of {', '.join(STATUSES)}).")


def participants_page(database, study_id: str, page=1, page_size: int = 50, role: str | None = None,
                      status: str | None = None) -> Page:
    """One page of the participants, filtered; links shortened (the full one is shown for
    one participant at a time, or in the links CSV)."""
    _check_filters(role, status)
    total = assignments.participant_count(database, study_id, role or None, status or None)
    page, pages, offset = page_bounds(total, page, page_size)
    rows = assignments.participant_progress(database, study_id, page_size, offset, role or None, status or None)
    for r in rows:
        r["status"] = status_of(r)
        r["link"] = short_link(r.pop("token"))
    return Page(pd.DataFrame(rows, columns=PARTICIPANT_COLUMNS).fillna(""), page, pages, total)


COMPLETION_COLUMNS = ["id", "role", "external_id", "prolific_pid", "prolific_session_id", "completed_at",
                      "status", "completion_code"]


def _completion_rows(database, study_id: str, limit: int | None, offset: int = 0) -> list[dict]:
    code = studies.get_study(database, study_id)["config"]["study"]["completion_code"]
    rows = participants.completed(database, study_id, limit, offset)
    for r in rows:
        r["status"] = "excluded" if r["excluded_at"] else status_of(r)
        r["completion_code"] = code
    return rows


def completion_page(database, study_id: str, page=1, page_size: int = 50) -> Page:
    total = participants.completed_count(database, study_id)
    page, pages, offset = page_bounds(total, page, page_size)
    rows = _completion_rows(database, study_id, page_size, offset)
    return Page(pd.DataFrame(rows, columns=COMPLETION_COLUMNS).fillna(""), page, pages, total)


def _write_csv(name: str, cols: list[str], rows: list[dict]) -> Path:

    path = Path(tempfile.mkdtemp(prefix="tradlab-admin-")) / name      # 0700: ids and links are private
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([neutralise("" if r.get(c) is None else str(r[c])) for c in cols])
    return path


def completion_csv(database, study_id: str) -> Path:
    """Every participant who finished, with their Prolific / external ids, for approving
    submissions (Prolific's bulk approve takes the prolific_pid column)."""
    if not studies.get_study(database, study_id or ""):
        raise ParticipantAdminError("Pick a study first.")
    return _write_csv(f"{study_id}-completions.csv", COMPLETION_COLUMNS, _completion_rows(database, study_id, None))


def links_csv(database, study_id: str, public_url: str) -> Path:
    if not studies.get_study(database, study_id or ""):
        raise ParticipantAdminError("Pick a study first.")
    cols = ["id", "role", "group", "gender", "external_id", "url"]
    return _write_csv(f"{study_id}-links.csv", cols, links(database, study_id, public_url))
