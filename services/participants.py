"""Participants: creating slots with their queues, private links, Prolific self-enrolment."""
from __future__ import annotations

import csv
import random
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from services import workflow
from services import da_campaign, sd_form
from services.assignment import order_key, seeded_rng, sender_design
from services.study_files import ROLES
from storage import participants, queue, studies


class ParticipantError(ValueError):
    """A request about participants that cannot be honoured; the message says why."""


def new_token() -> str:
    return secrets.token_urlsafe(18)  # 144 random bits


def _study(database, study_id):
    study = studies.get_study(database, study_id)
    if not study:
        raise ParticipantError(f"unknown study '{study_id}'")
    return study


def _check_role(study, role, group, gender):
    cfg = study["config"]
    protocols = cfg["study"]["protocols"]
    needs = {"sender": "usability", "receiver": "usability", "validator": "usability",
             "rater": "usability", "da": "da", "sd": "sd"}
    if role not in ROLES:
        raise ParticipantError(f"unknown role '{role}' (one of {', '.join(ROLES)})")
    if needs[role] not in protocols:
        raise ParticipantError(f"study '{study['id']}' has no {needs[role]} protocol, so no {role} role")
    groups, genders = cfg["study"]["groups"], cfg["study"]["genders"]
    if group is not None and groups and group not in groups:
        raise ParticipantError(f"unknown group '{group}' (study groups: {', '.join(groups)})")
    if gender is not None and genders and gender not in genders:
        raise ParticipantError(f"unknown gender '{gender}' (study genders: {', '.join(genders)})")
    if role == "sender" and groups and group is None:
        raise ParticipantError(f"senders need a group (one of {', '.join(groups)})")
    if role == "sender" and genders and gender is None:
        raise ParticipantError(f"senders need a gender (one of {', '.join(genders)})")


def _setup_queue(db, database, study, pid: int, role: str, group, gender) -> None:
    cfg, sid = study["config"], study["id"]
    seed = cfg["study"]["seed"]
    if role == "sender":
        us = cfg["usability"]
        index = participants.next_design_index(db, sid, group, gender)
        db.execute("UPDATE participants SET design_index = ? WHERE id = ?", [index, pid])
        systems = [s["id"] for s in studies.systems(database, sid) if s["config"]["assign"]]
        for starter_id, system_id in sender_design(studies.starters(database, sid), systems,
                                                   us["items_per_sender"], seed, index):
            eid = queue.insert_exchange(db, sid, starter_id, system_id, pid)
            queue.insert_assignment(db, sid, pid, "record", eid, order_key(seed, pid, eid), exchange_id=eid)
        # recordings withdrawn from a sender of this cell that no sender of it could take
        workflow.adopt_cell_orphans(db, database, study, pid, group, gender)
    elif role == "da":
        da_campaign.assign_hit(db, database, study, pid)
    elif role == "sd":
        sd_form.setup_queue(db, database, study, pid)


@dataclass
class NewParticipant:
    id: int
    role: str
    group: str | None
    gender: str | None
    external_id: str | None
    token: str


def add_participants(database, study_id: str, role: str, count: int = 1, group: str | None = None,
                     gender: str | None = None, external_ids: list[str | None] | None = None,
                     actor: str = "cli") -> list[NewParticipant]:
    study = _study(database, study_id)
    _check_role(study, role, group, gender)
    if external_ids is None:
        if count < 1:
            raise ParticipantError("count must be at least 1")
        external_ids = [None] * count
    made = []
    with database.write() as db:
        for ext in external_ids:
            token = new_token()
            pid = participants.insert(db, {"study_id": study_id, "role": role, "grp": group,
                                           "gender": gender, "external_id": ext, "token": token})
            _setup_queue(db, database, study, pid, role, group, gender)
            database.log(actor, "add", "participant", pid, {"role": role, "group": group, "gender": gender})
            made.append(NewParticipant(pid, role, group, gender, ext, token))
    return made


def add_from_csv(database, study_id: str, path: str | Path, actor: str = "cli") -> list[NewParticipant]:
    """Columns: role (required), group, gender, external_id. Validated whole before any insert."""
    path = Path(path)
    study = _study(database, study_id)
    rows = list(csv.DictReader(path.read_text(encoding="utf-8-sig").splitlines()))
    if not rows:
        raise ParticipantError(f"{path.name}: no rows")
    problems = []
    for n, r in enumerate(rows, start=2):
        if "role" not in r:
            raise ParticipantError(f"{path.name}: missing column 'role'")
        try:
            _check_role(study, (r.get("role") or "").strip(), (r.get("group") or "").strip() or None,
                        (r.get("gender") or "").strip() or None)
        except ParticipantError as e:
            problems.append(f"{path.name}, row {n}: {e}")
    if problems:
        raise ParticipantError("\n".join(problems))
    made = []
    with database.write():
        for r in rows:
            made += add_participants(database, study_id, r["role"].strip(), 1,
                                     (r.get("group") or "").strip() or None,
                                     (r.get("gender") or "").strip() or None,
                                     [(r.get("external_id") or "").strip() or None], actor)
    return made


def link(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/?{urlencode({'t': token})}"


def links(database, study_id: str, public_url: str) -> list[dict]:
    _study(database, study_id)
    return [{"id": p["id"], "role": p["role"], "group": p["grp"], "gender": p["gender"],
             "external_id": p["external_id"] or p["prolific_pid"], "url": link(public_url, p["token"])}
            for p in participants.list_for_study(database, study_id)]


def prolific_link(public_url: str, study_id: str, role: str, group: str | None = None,
                  gender: str | None = None) -> str:
    """The URL to paste into Prolific; Prolific fills the {{%...%}} placeholders."""
    q = {"study": study_id, "role": role}
    if group:
        q["group"] = group
    if gender:
        q["gender"] = gender
    base = f"{public_url.rstrip('/')}/?{urlencode(q)}"
    return base + "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def enrol(database, study_id: str, role: str, prolific_pid: str, prolific_study: str | None = None,
          session: str | None = None, group: str | None = None, gender: str | None = None) -> dict:
    """A Prolific newcomer takes an open slot of a self-enrolling role; a returning one gets
    their own slot back (their new SESSION_ID is stored)."""
    study = _study(database, study_id)
    if role not in study["config"]["study"]["self_enrol"]:
        raise ParticipantError(f"this study does not take {role} participants from Prolific links")
    pid = (prolific_pid or "").strip()
    if not pid or len(pid) > 64 or not pid.replace("_", "").replace("-", "").isalnum():
        raise ParticipantError("the PROLIFIC_PID in this link is not valid")
    with database.write() as db:
        existing = participants.by_prolific(database, study_id, role, pid)
        if existing:
            if session and session != existing["prolific_session_id"]:
                participants.update_session(db, existing["id"], session)
            return participants.get(database, existing["id"])
        slot = participants.open_slot(db, study_id, role, group, gender)
        if not slot:
            raise ParticipantError("there is no open place in this study right now; "
                                   "please return the study on Prolific")
        participants.claim(db, slot["id"], pid, prolific_study, session)
        database.log(f"prolific:{pid}", "enrol", "participant", slot["id"],
                     {"study": prolific_study, "session": session})
    return participants.get(database, slot["id"])
