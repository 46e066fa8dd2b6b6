"""The designer's participant management: add people, deactivate and reactivate a link,
hand a deactivated participant's open items to others, issue a new link, and the list of
those who finished (to approve submissions on Prolific). Every change goes to the audit log.

Where open items go when they are reassigned: services/participation/reassignment.py, which
asks the participant's role (the usability roles: services/usability/reassignment.py).
"""

from __future__ import annotations

import csv
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from services.common import protocols
from services.common.paging import Page, page_bounds
from services.participation.progress import participant_rows
from services.participation.reassignment import Reassignment, withdraw_and_reassign
from services.setup.enrolment import NewParticipant, add_participants, link, links, new_token, prolific_links
from services.study.export import neutralise
from storage import assignments, participants, studies
from storage.rows import ParticipantRow, StudyRow

STATUSES = tuple(assignments.PARTICIPANT_STATUS)  # excluded, dropped out, deactivated, completed, active
MAX_ADD = 500  # one form submit; more is almost surely a typo
MAX_EXTERNAL_ID = 64
EXTERNAL_ID_RE = re.compile(r"^[A-Za-z0-9_.:@-]+$")


class ParticipantAdminError(ValueError):
    """A participant action that cannot be done; the message names what is wrong."""


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


def participant(database, study_id: str | None, participant_id) -> ParticipantRow:
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


def status_of(participant: Mapping[str, Any]) -> str:
    """The participant's one status (storage.assignments.PARTICIPANT_STATUS, the table's filter): a
    dropped-out sender is not excluded (what they answered stays in the analyses)."""
    if participant.get("excluded_at"):
        return "excluded"
    if participant.get("dropped_out_at"):
        return "dropped out"
    if not participant["active"]:
        return "deactivated"
    return "completed" if participant.get("completed_at") else "active"


def short_link(token: str) -> str:
    return token[:6] + "…"


def form_options(database, study_id: str | None) -> dict:
    """What the add form offers for a study: its roles, groups and genders."""
    study = studies.get_study(database, study_id) if study_id else None
    if not study:
        return {"roles": [], "groups": [], "genders": []}
    cfg = study["config"]["study"]
    return {
        "roles": [r for r in protocols.roles() if protocols.protocol_of_role(r).name in cfg["protocols"]],
        "groups": list(cfg["groups"]),
        "genders": list(cfg["genders"]),
    }


# -- adding ----------------------------------------------------------------------------------


def parse_external_ids(text: str | None) -> list[str]:
    """External (e.g. Prolific) ids typed one per line or separated by commas."""
    ids = [x.strip() for x in re.split(r"[\n,]", text or "") if x.strip()]
    bad = [x for x in ids if len(x) > MAX_EXTERNAL_ID or not EXTERNAL_ID_RE.match(x)]
    if bad:
        raise ParticipantAdminError(
            f"External id '{bad[0][:80]}' is not valid: use at most {MAX_EXTERNAL_ID} letters, digits and . _ - : @"
        )
    dupes = sorted({x for x in ids if ids.count(x) > 1})
    if dupes:
        raise ParticipantAdminError(f"External id '{dupes[0]}' is listed twice.")
    return ids


def add(
    database,
    study_id: str | None,
    role: str | None,
    count,
    group: str | None,
    gender: str | None,
    external_ids_text: str | None,
    actor: str,
    self_enrol: bool = False,
) -> list[NewParticipant]:
    """New participants with their queues. With external ids: one participant per id (the
    count is then ignored); without: `count` anonymous slots. self_enrol: slots only the signed
    Prolific URL fills (never handed out as private links to Prolific newcomers otherwise)."""
    if not study_id:
        raise ParticipantAdminError("Pick a study first.")
    if not role:
        raise ParticipantAdminError(f"Choose a role ({', '.join(protocols.roles())}).")
    ids = parse_external_ids(external_ids_text)
    if ids and self_enrol:
        raise ParticipantAdminError("Self-enrolment slots take no external ids: Prolific fills them in.")
    if ids:
        # one person, one role (as a Prolific id: services/setup/enrolment.enrol): the same id in a
        # second role would let them judge their own work and count twice (issue 51, point 6)
        held = participants.external_id_roles(database, study_id, ids)
        if held:
            first = sorted(held)[0]
            raise ParticipantAdminError(
                f"External id '{first}' already has a {held[first]} link in this study "
                f"({len(held)} of the ids given are taken); one person takes one role."
            )
        if len(ids) > MAX_ADD:
            raise ParticipantAdminError(f"At most {MAX_ADD} participants at a time ({len(ids)} ids given).")
        return add_participants(database, study_id, role, len(ids), group or None, gender or None, ids, actor)
    n = whole_number(count)
    if n is None:
        raise ParticipantAdminError("Count must be a whole number of participants.")
    if not 1 <= n <= MAX_ADD:
        raise ParticipantAdminError(f"Count must be between 1 and {MAX_ADD} (got {n}).")
    return add_participants(
        database, study_id, role, n, group or None, gender or None, None, actor, self_enrol=bool(self_enrol)
    )


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
        raise ParticipantAdminError(
            f"Participant {p['id']} was excluded ({p['excluded_reason']}); an exclusion is not undone here."
        )
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
        # nor does the Prolific URL lead back in: the new link is the only way in
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
        raise ParticipantAdminError(
            f"Participant {p['id']} is active: deactivate them first, then reassign their open items."
        )
    with database.transaction() as tx:
        out = withdraw_and_reassign(tx, p, actor)  # the role's on_leave says what leaving means for it
        database.log(
            actor,
            "reassign_open_items",
            "participants",
            p["id"],
            {
                "role": p["role"],
                "status": f"{len(out.moved)} moved, {len(out.waiting)} waiting, {len(out.dropped)} withdrawn",
            },
        )
    return out


# -- tables ------------------------------------------------------------------------------------

PARTICIPANT_COLUMNS = [
    "id",
    "role",
    "status",
    "grp",
    "gender",
    "external_id",
    "prolific_pid",
    "done",
    "open",
    "last_seen_at",
    "last_submitted",
    "link",
]


def _check_filters(role: str | None, status: str | None) -> None:
    if role and role not in protocols.roles():
        raise ParticipantAdminError(f"Unknown role '{role}' (one of {', '.join(protocols.roles())}).")
    if status and status not in STATUSES:
        raise ParticipantAdminError(f"Unknown status '{status}' (one of {', '.join(STATUSES)}).")


def participants_page(
    database, study_id: str, page=1, page_size: int = 50, role: str | None = None, status: str | None = None
) -> Page:
    """One page of the participants, filtered; links shortened (the full one is shown for
    one participant at a time, or in the links CSV)."""
    _check_filters(role, status)
    total = assignments.participant_count(database, study_id, role or None, status or None)
    page, pages, offset = page_bounds(total, page, page_size)
    rows = participant_rows(database, study_id, page_size, offset, role or None, status or None)
    for r in rows:
        r["status"] = status_of(r)
        r["link"] = short_link(r.pop("token"))
    return Page(pd.DataFrame(rows, columns=PARTICIPANT_COLUMNS).fillna(""), page, pages, total)


COMPLETION_COLUMNS = [
    "id",
    "role",
    "external_id",
    "prolific_pid",
    "prolific_session_id",
    "completed_at",
    "status",
    "qc",
    "completion_code",
]
NO_QC = "no QC for this role"


def qc_outcomes(database, study: StudyRow, rows: list[dict]) -> dict[int, str]:
    """Each listed participant's quality-control outcome, in the words a payer acts on, by id:
    their role's qc hook (Role.qc: what the protocol's own QC decided), called once with all of
    the role's rows; "no QC for this role" without one."""
    by_role: dict[str, list[dict]] = {}
    for r in rows:
        by_role.setdefault(r["role"], []).append(r)
    out = {r["id"]: NO_QC for r in rows}
    for name, group in by_role.items():
        qc = protocols.role(name).qc if name in protocols.roles() else None
        if qc is not None:
            out.update(qc(database, study, group))
    return out


def _completion_rows(database, study_id: str, limit: int | None, offset: int = 0) -> list[dict]:
    study = studies.get_study(database, study_id or "")
    if study is None:  # the page's API event, or previous / next, before a study is picked
        raise ParticipantAdminError("Pick a study first.")
    code = study["config"]["study"]["completion_code"]
    rows = participants.completed(database, study_id, limit, offset)
    qc = qc_outcomes(database, study, rows)  # once per page or CSV, not per row
    for r in rows:
        r["status"] = status_of(r)
        r["qc"] = qc[r["id"]]
        r["completion_code"] = code
    return rows


def completion_page(database, study_id: str, page=1, page_size: int = 50) -> Page:
    total = participants.completed_count(database, study_id)
    page, pages, offset = page_bounds(total, page, page_size)
    rows = _completion_rows(database, study_id, page_size, offset)
    return Page(pd.DataFrame(rows, columns=COMPLETION_COLUMNS).fillna(""), page, pages, total)


def _write_csv(name: str, cols: list[str], rows: list[dict]) -> Path:

    path = Path(tempfile.mkdtemp(prefix="tradlab-admin-")) / name  # 0700: ids and links are private
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


PROLIFIC_COLUMNS = ["role", "group", "gender", "open_slots", "url"]


def prolific_urls(database, study_id: str, public_url: str) -> list[dict]:
    """The signed Prolific study URL of each self-enrolling role (senders: per group x gender
    cell, to pair with Prolific's screeners) with its open self-enrolment slots: what a study on
    Prolific is given as its study URL (services/setup/enrolment.prolific_links)."""
    if not studies.get_study(database, study_id or ""):
        raise ParticipantAdminError("Pick a study first.")
    return [
        {
            "role": r["role"],
            "group": r["group"] or "",
            "gender": r["gender"] or "",
            "open_slots": r["open"],
            "url": r["url"],
        }
        for r in prolific_links(database, study_id, public_url)
    ]


def prolific_text(rows: list[dict]) -> str:
    """The URLs for the copy box, one block a role (and cell): its open slots, then the URL."""
    if not rows:
        return ""
    out = []
    for r in rows:
        cell = " ".join(x for x in (r["group"], r["gender"]) if x)
        slots = f"{r['open_slots']} open slot{'s' if r['open_slots'] != 1 else ''}"
        out.append(f"# {r['role']}{' ' + cell if cell else ''} ({slots})\n{r['url']}")
    return "\n".join(out)


def prolific_summary(rows: list[dict]) -> str:
    """A sentence for the page: how many URLs, and the roles whose slots are all taken."""
    if not rows:
        return (
            "This study takes nobody from Prolific links: list the roles in [study] self_enrol "
            '(e.g. self_enrol = ["receiver"]) and add self-enrolment slots.'
        )
    empty = [f"{r['role']} {r['group']} {r['gender']}".strip() for r in rows if not r["open_slots"]]
    line = (
        f"{len(rows)} Prolific study URL{'s' if len(rows) != 1 else ''} (give each to its Prolific study; Prolific "
        "fills in PROLIFIC_PID, STUDY_ID and SESSION_ID)."
    )
    if empty:
        line += f" No open slot yet for: {', '.join(empty)}: add self-enrolment slots, or the URL refuses newcomers."
    return line


def prolific_csv(database, study_id: str, public_url: str) -> Path:
    return _write_csv(f"{study_id}-prolific-urls.csv", PROLIFIC_COLUMNS, prolific_urls(database, study_id, public_url))


def links_csv(database, study_id: str, public_url: str) -> Path:
    if not studies.get_study(database, study_id or ""):
        raise ParticipantAdminError("Pick a study first.")
    cols = ["id", "role", "group", "gender", "external_id", "url"]
    return _write_csv(f"{study_id}-links.csv", cols, links(database, study_id, public_url))
