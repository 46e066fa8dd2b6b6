"""The study's periodic upkeep, run by the worker as a job that schedules its next run:
participants inactive past the study's limit are dropped out (Protocol.drop_inactive: the
usability senders, services/usability/dropouts.py), then each registered protocol's repair
(Protocol.repair, services/common/protocols.py; the usability workflow's refresh) adds anything
an event missed (a crash between two writes, a database from before the work pool). Never part
of a participant's request."""

from __future__ import annotations

import datetime as dt

from services.common import protocols
from storage import jobs, studies

KIND = "study_maintenance"
EVERY_S = 600


def _key(study_id: str) -> str:
    return f"{KIND}:{study_id}:"


def schedule(db, study_id: str, delay_s: float = 0) -> int | None:
    due = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=delay_s)).isoformat(timespec="milliseconds")
    return jobs.enqueue(db, KIND, {"study_id": study_id}, dedupe_key=_key(study_id) + due, run_after=due)


def schedule_all(database) -> int:
    """At start: one pending upkeep job per study that lists a protocol with a repair (the
    four-phase studies; none added where one waits)."""
    repaired = {p.name for p, _ in protocols.with_hook("repair")}
    n = 0
    with database.write() as db:
        for s in studies.list_studies(database):
            if repaired & set(s["config"]["study"]["protocols"]) and not jobs.pending_with_key_prefix(
                database, _key(s["id"])
            ):
                n += schedule(db, s["id"]) is not None
    return n


def repair(database, study_id: str) -> int:
    """Every registered protocol's repair of the study, in registration order: how many things
    they added or changed."""
    return sum(fn(database, study_id) for _, fn in protocols.with_hook("repair"))


def run(database, study_id: str, every_s: float = EVERY_S) -> dict:
    dropped = [pid for _, fn in protocols.with_hook("drop_inactive") for pid in fn(database, study_id)]
    repaired = repair(database, study_id)
    if every_s:
        with database.write() as db:
            schedule(db, study_id, every_s)
    return {"dropped_out": dropped, "repaired": repaired}
