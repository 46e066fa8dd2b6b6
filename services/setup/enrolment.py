"""Participants: creating slots with their queues, private links, Prolific self-enrolment.

Prolific enrolment URLs are signed: `sig` is an HMAC-SHA256 over (study, role, group, gender)
with the link secret (TRADLAB_LINK_SECRET, else a random key kept in the database's
app_secrets table); Prolific's PROLIFIC_PID / STUDY_ID / SESSION_ID placeholders stay outside
it. A Prolific newcomer only ever takes a self-enrolment slot (`add_participants(...,
self_enrol=True)`), never one made for a private link; one Prolific id holds one role per
study; a returning one gets their slot back only with the SESSION_ID it was claimed with, and
not once the team made them a new link; new enrolments per minute are capped per study
(study.enrol_per_minute, counted from participants.claimed_at, so a restart forgets nothing)
and per client (study.enrol_per_client_per_minute and enrol_per_client_per_hour, in memory).
Refusals are counted per (study, role, reason, minute) in enrol_refusals (RefusalCounts) and
store nothing else.
"""

from __future__ import annotations

import base64
import csv
import datetime as dt
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from urllib.parse import urlencode

from services.common import protocols as registry
from services.common.settings import current as current_settings
from services.common.tally import Tally
from storage import participants, studies
from storage.db import Transaction, required
from storage.rows import ParticipantRow


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
    if role not in registry.roles():
        raise ParticipantError(f"unknown role '{role}' (one of {', '.join(registry.roles())})")
    needs = registry.protocol_of_role(role).name
    if needs not in protocols:
        raise ParticipantError(f"study '{study['id']}' has no {needs} protocol, so no {role} role")
    groups, genders = cfg["study"]["groups"], cfg["study"]["genders"]
    if group is not None and groups and group not in groups:
        raise ParticipantError(f"unknown group '{group}' (study groups: {', '.join(groups)})")
    if gender is not None and genders and gender not in genders:
        raise ParticipantError(f"unknown gender '{gender}' (study genders: {', '.join(genders)})")
    grouped = registry.role(role).grouped
    if grouped and groups and group is None:
        raise ParticipantError(f"{role}s need a group (one of {', '.join(groups)})")
    if grouped and genders and gender is None:
        raise ParticipantError(f"{role}s need a gender (one of {', '.join(genders)})")


def _setup_queue(tx: Transaction, study, pid: int, role: str, group, gender, design_index: int | None = None) -> None:
    """The role's queue at enrolment, as its protocol makes it (none for a role whose items come later)."""
    setup = registry.role(role).setup
    if setup is not None:
        setup(tx, study, pid, group, gender, design_index)


@dataclass
class NewParticipant:
    id: int
    role: str
    group: str | None
    gender: str | None
    external_id: str | None
    token: str


def add_participants(
    database,
    study_id: str,
    role: str,
    count: int = 1,
    group: str | None = None,
    gender: str | None = None,
    external_ids: Sequence[str | None] | None = None,
    actor: str = "cli",
    self_enrol: bool = False,
    design_index: int | None = None,
) -> list[NewParticipant]:
    """Slots with their queues. self_enrol: slots only a Prolific newcomer (a signed enrolment
    URL) can take; otherwise private-link slots, which self-enrolment never hands out.
    design_index: a sender's design block (default: their cell's next; the demo's dropped-out
    sender takes another block than the demo sender's, services/setup/usability_demo.py)."""
    study = _study(database, study_id)
    _check_role(study, role, group, gender)
    if self_enrol:
        if role not in study["config"]["study"]["self_enrol"]:
            raise ParticipantError(
                f"study '{study_id}' does not take {role} participants from Prolific (add the role to study.self_enrol)"
            )
        if external_ids is not None and any(external_ids):
            raise ParticipantError("self-enrolment slots take no external ids (Prolific fills them in)")
    if external_ids is None:
        if count < 1:
            raise ParticipantError("count must be at least 1")
        external_ids = [None] * count
    made = []
    with database.transaction() as tx:
        for ext in external_ids:
            token = new_token()
            pid = participants.insert(
                tx.db,
                {
                    "study_id": study_id,
                    "role": role,
                    "grp": group,
                    "gender": gender,
                    "external_id": ext,
                    "token": token,
                    "self_enrol": 1 if self_enrol else 0,
                },
            )
            _setup_queue(tx, study, pid, role, group, gender, design_index)
            database.log(
                actor,
                "add",
                "participant",
                pid,
                {"role": role, "group": group, "gender": gender, "self_enrol": bool(self_enrol)},
            )
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
            _check_role(
                study,
                (r.get("role") or "").strip(),
                (r.get("group") or "").strip() or None,
                (r.get("gender") or "").strip() or None,
            )
        except ParticipantError as e:
            problems.append(f"{path.name}, row {n}: {e}")
    if problems:
        raise ParticipantError("\n".join(problems))
    made = []
    with database.write():
        for r in rows:
            made += add_participants(
                database,
                study_id,
                r["role"].strip(),
                1,
                (r.get("group") or "").strip() or None,
                (r.get("gender") or "").strip() or None,
                [(r.get("external_id") or "").strip() or None],
                actor,
            )
    return made


def link(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/?{urlencode({'t': token})}"


def links(database, study_id: str, public_url: str) -> list[dict]:
    _study(database, study_id)
    return [
        {
            "id": p["id"],
            "role": p["role"],
            "group": p["grp"],
            "gender": p["gender"],
            "external_id": p["external_id"] or p["prolific_pid"],
            "url": link(public_url, p["token"]),
        }
        for p in participants.list_for_study(database, study_id)
    ]


SIGNED = ("study", "role", "group", "gender")  # what the signature covers
PROLIFIC = "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def link_secret(database) -> bytes:
    """TRADLAB_LINK_SECRET when set (every process serving or printing links must share it),
    else the random key kept in the database."""
    env = current_settings().link_secret.strip()
    if env:
        return env.encode()
    value = participants.get_secret(database, "link_secret")
    if value is None:
        with database.write() as db:
            value = participants.ensure_secret(db, "link_secret")
    return value.encode()


def sign(secret: bytes, study_id: str, role: str, group: str | None = None, gender: str | None = None) -> str:
    # a JSON list: unambiguous whatever characters a (tampered) field holds
    msg = json.dumps(["tradlab-enrol-v1", study_id or "", role or "", group or "", gender or ""])
    mac = hmac.new(secret, msg.encode("utf-8"), hashlib.sha256).digest()[:18]
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def prolific_link(
    database, public_url: str, study_id: str, role: str, group: str | None = None, gender: str | None = None
) -> str:
    """The signed URL to paste into Prolific; Prolific fills the {{%...%}} placeholders."""
    q = {"study": study_id, "role": role}
    if group:
        q["group"] = group
    if gender:
        q["gender"] = gender
    q["sig"] = sign(link_secret(database), study_id, role, group, gender)
    return f"{public_url.rstrip('/')}/?{urlencode(q)}" + PROLIFIC


def prolific_links(database, study_id: str, public_url: str) -> list[dict]:
    """One signed URL per self-enrolling role (senders: per group x gender), with how many
    self-enrolment slots are still open for it."""
    study = _study(database, study_id)
    cfg = study["config"]["study"]
    out = []
    for role in cfg["self_enrol"]:
        cells = (
            [(g, gen) for g in cfg["groups"] for gen in (cfg["genders"] or [None])]
            if registry.role(role).grouped and cfg["groups"]
            else [(None, None)]
        )
        for g, gen in cells:
            out.append(
                {
                    "role": role,
                    "group": g,
                    "gender": gen,
                    "open": participants.open_self_enrol_count(database, study_id, role, g, gen),
                    "url": prolific_link(database, public_url, study_id, role, g, gen),
                }
            )
    return out


class EnrolRefused(ParticipantError):
    """A Prolific enrolment turned away; `reason` is a short code for the audit log. Its page
    wording is the key enrol_<reason> (assets/texts/<language>.toml), so the page that shows it
    rewords it in its own language (services/study/texts.py reword)."""

    def __init__(self, message: str, reason: str, **values):
        super().__init__(message)
        self.reason = reason
        self.key, self.values = f"enrol_{reason}", values


TAMPERED = (
    "This study link is incomplete or has been changed. Please open the study again "
    "from Prolific, without editing its address."
)


def _clean(v) -> str | None:
    v = (v or "").strip() if isinstance(v, str) else None
    return v or None


def enrol_from_link(database, query: dict, client: str | None = None) -> ParticipantRow:
    """A Prolific URL's query parameters -> the participant (see enrol). Refused, counted and
    nothing stored when its signature does not match its study, role, group and gender.
    client: who is asking (the caller's address, services.admin.auth.throttle_key), for the
    per-client cap on new enrolments."""
    study_id, role = _clean(query.get("study")) or "", _clean(query.get("role")) or ""
    group, gender = _clean(query.get("group")), _clean(query.get("gender"))
    pid, pstudy, session = (
        _clean(query.get("PROLIFIC_PID")),
        _clean(query.get("STUDY_ID")),
        _clean(query.get("SESSION_ID")),
    )
    given = _clean(query.get("sig")) or ""
    expected = sign(link_secret(database), study_id, role, group, gender)
    if not hmac.compare_digest(given.encode(), expected.encode()):
        reason = "unsigned" if not given else "bad_signature"
        _count_refusal(database, "", "", reason)  # its study and role are the caller's to invent
        raise EnrolRefused(TAMPERED, reason)
    return enrol(database, study_id, role, pid or "", pstudy, session, group, gender, client=client)


class RefusalCounts(Tally):
    """Refused enrolments counted per (study, role, reason, minute) in memory and written at most
    once every FLUSH_S seconds (one upsert per key, storage.participants.add_refusals): a client
    reloading a refused URL 30 times a second costs one small write every few seconds, not a
    write under the answers' lock each time (services.common.tally: a timer writes what is
    pending); counts() writes what is pending first."""

    FLUSH_S = 2.0

    def add(self, database, study_id: str, role: str, reason: str) -> None:
        minute = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
        self.tally(database, (study_id[:64], role[:20], reason, minute))

    def write(self, database, counts: dict) -> None:
        with database.write() as db:
            participants.add_refusals(db, counts)

    def counts(self, database, study_id: str | None = None) -> list[dict]:
        self.flush(database)
        return participants.refusal_counts(database, study_id)


REFUSALS = RefusalCounts()


def refusal_counts(database, study_id: str | None = None) -> list[dict]:
    """Refused enrolments: rows of study_id, role, reason, minute (UTC) and count."""
    return REFUSALS.counts(database, study_id)


def _count_refusal(database, study_id: str, role: str, reason: str) -> None:
    REFUSALS.add(database, study_id or "", role or "", reason)


class ClientClaims:
    """New enrolments per (study, client) over the last hour, in this process's memory (a restart
    forgets them; the per-study cap, counted from the database, still holds): one client taking
    slot after slot with invented Prolific ids is stopped at study.enrol_per_client_per_minute,
    and over an hour at study.enrol_per_client_per_hour (the minute's cap alone let one address
    take 2-3 a minute, about 150 an hour). A client's times are at most its hourly cap (a refusal
    adds none). Bounded: past MAX_KEYS clients the idle ones are dropped."""

    MAX_KEYS = 10_000
    WINDOW_S = 3600.0

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._lock = threading.Lock()
        self._times: dict[tuple[str, str], deque] = {}

    def _recent(self, key, now) -> deque:
        q = self._times.setdefault(key, deque())
        while q and now - q[0] >= self.WINDOW_S:
            q.popleft()
        return q

    def count(self, study_id: str, client: str, seconds: float = 60.0) -> int:
        """The client's new enrolments in the study over the last `seconds` (at most an hour)."""
        now = self.clock()
        with self._lock:
            return sum(1 for t in self._recent((study_id, client), now) if now - t < seconds)

    def add(self, study_id: str, client: str) -> None:
        now = self.clock()
        with self._lock:
            if len(self._times) > self.MAX_KEYS:
                for k in [k for k, q in self._times.items() if not q or now - q[-1] >= self.WINDOW_S]:
                    del self._times[k]
            self._recent((study_id, client), now).append(now)


CLIENT_CLAIMS = ClientClaims()


def _bound_ids(cfg: dict, role: str) -> list[str]:
    v = (cfg["study"].get("prolific_study_ids") or {}).get(role)
    return [] if v is None else ([v] if isinstance(v, str) else list(v))


def _valid_id(v: str | None) -> bool:
    return v is not None and 0 < len(v) <= 64 and v.replace("_", "").replace("-", "").isalnum()


def enrol(
    database,
    study_id: str,
    role: str,
    prolific_pid: str,
    prolific_study: str | None = None,
    session: str | None = None,
    group: str | None = None,
    gender: str | None = None,
    client: str | None = None,
) -> ParticipantRow:
    """A Prolific newcomer takes an open self-enrolment slot of a self-enrolling role; a
    returning one gets their own slot back only with the SESSION_ID it was claimed with (a
    Prolific id alone is no key: anyone with the role's URL could type someone's id), and not
    after the team made them a new link. The URL's signature is checked before this
    (enrol_from_link). Refusals are counted (refusal_counts), nothing else is stored."""
    try:
        return _enrol(database, study_id, role, prolific_pid, prolific_study, session, group, gender, client)
    except EnrolRefused as e:
        _count_refusal(database, "" if e.reason == "unknown_study" else study_id, role, e.reason)
        raise


def _enrol(database, study_id, role, prolific_pid, prolific_study, session, group, gender, client) -> ParticipantRow:
    study = studies.get_study(database, study_id)
    if not study:
        raise EnrolRefused(f"unknown study '{study_id}'", "unknown_study", study=study_id)
    cfg = study["config"]
    if role not in cfg["study"]["self_enrol"]:
        raise EnrolRefused(
            f"this study does not take {role} participants from Prolific links", "role_closed", role=role
        )
    pid = (prolific_pid or "").strip()
    if not _valid_id(pid):
        raise EnrolRefused("the PROLIFIC_PID in this link is not valid", "bad_pid")
    session = (session or "").strip()
    if not _valid_id(session):
        raise EnrolRefused(
            "the SESSION_ID in this link is missing or not valid; please open the study from Prolific again",
            "bad_session",
        )
    bound = _bound_ids(cfg, role)
    if bound and (prolific_study or "") not in bound:
        raise EnrolRefused(
            "this link belongs to another Prolific study; please open the study from Prolific again",
            "study_id_mismatch",
        )
    with database.write() as db:
        held = participants.holders_of(db, study_id, pid)
        mine = [p for p in held if p["role"] == role and p["prolific_pid"] == pid]
        if mine:
            existing = mine[0]
            if existing["prolific_return_revoked_at"]:
                raise EnrolRefused(
                    "the study team has given you a new personal link for this study; please use that link",
                    "link_renewed",
                )
            if not hmac.compare_digest(session.encode(), (existing["prolific_session_id"] or "").encode()):
                raise EnrolRefused(
                    "this Prolific account has already started this study in another Prolific "
                    "session; please continue from the study's page on Prolific, or write to "
                    "the study team",
                    "other_session",
                )
            return required(participants.get(database, existing["id"]), "participant")
        if held and held[0]["role"] == role:
            raise EnrolRefused(
                "you already have a personal link for this study; please use that link", "has_private_link"
            )
        if held:
            raise EnrolRefused(
                f"this Prolific account already takes part in this study as a {held[0]['role']}; "
                "one person can hold only one role, so please return this study on Prolific",
                "second_role",
                role=held[0]["role"],
            )
        per_client = cfg["study"].get("enrol_per_client_per_minute", 3)
        if per_client and client and CLIENT_CLAIMS.count(study_id, client) >= per_client:
            raise EnrolRefused(
                "many people are joining from your network right now; please reload this page in a minute",
                "client_rate_limited",
                role=role,
            )
        per_hour = cfg["study"].get("enrol_per_client_per_hour", 10)
        if per_hour and client and CLIENT_CLAIMS.count(study_id, client, 3600.0) >= per_hour:
            raise EnrolRefused(
                "many people have joined from your network in the last hour; please try again later",
                "client_hourly_limited",
                role=role,
            )
        limit = cfg["study"].get("enrol_per_minute", 60)
        if limit:
            since = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=60)).isoformat(timespec="milliseconds")
            if participants.claims_since(db, study_id, since) >= limit:
                raise EnrolRefused(
                    "many people are joining right now; please reload this page in a minute", "rate_limited"
                )
        slot = participants.open_slot(db, study_id, role, group, gender)
        if not slot:
            raise EnrolRefused(
                "there is no open place in this study right now; please return the study on Prolific", "no_slot"
            )
        participants.claim(db, slot["id"], pid, prolific_study, session)
        database.log(
            f"prolific:{pid}", "enrol", "participant", slot["id"], {"study": prolific_study, "session": session}
        )
        if client:
            CLIENT_CLAIMS.add(study_id, client)
    return required(participants.get(database, slot["id"]), "claimed participant")
