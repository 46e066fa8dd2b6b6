"""The four-phase workflow, event by event: each finished step opens the next one for the
exchange it advances, and a participant who needs work takes one item from the pool.

Every event costs the same however large the study is (storage/usability/pool.py's queries are
bounded by one exchange, one participant or the first rows of one stratum):
- exchange_ready(exchange): its translation exists and its recording passed QC or a
  reviewer accepted it. The receive item goes to the pool (once its starter has accepted
  questions: services/questions/review.py calls starter_changed) and the baseline survey to
  its sender; when there is no active sender (an imported exchange, a sender who dropped
  out: services/usability/dropouts.py) the baseline goes to the raters' pool (third-person perspective).
- after_submit(assignment), inside the answer's transaction: a finished answer set puts its
  validation in the pool; a validation, once every finished answer set of the exchange is
  validated, opens the informed survey of whoever answered its baseline; a baseline answered
  after that opens its informed survey at once.
- next_item(participant): a receiver, validator or rater with room and nothing open takes
  one item (the paper's random allocation, balanced): the stratum (the speaker's language
  group x system) they hold least of, ties broken by the study seed, then the pool's seeded
  random order, items already started first so that exchanges complete. A rater takes their
  own language group first. Nobody gets an item whose work is theirs (same id, external or
  Prolific id) or one that was withdrawn from them.
refresh(study) is the repair, not part of any request: it walks the study in chunks (each
its own short write, so others get a turn) and adds what the events would have added. The
worker runs it periodically (services/participation/maintenance.py) and the admin tab on demand.
services/usability/protocol.py registers these functions as the protocol's hooks
(services/common/protocols.py): after_submit as its tabs' on_submit, may_take, ready_in_pool and
next_item as its pooled roles' Pool, refresh as its repair, starter_changed as questions_changed.
"""

from __future__ import annotations

import datetime as dt

from services.common.seeded import order_key, seeded_rng
from storage import assignments, participants, studies
from storage.db import Transaction, required
from storage.rows import AssignmentRecord, AssignmentRow, ParticipantRow, StudyRow
from storage.usability import exchanges, pool

# the pooled phase a role takes work from, and the study setting that caps it per person
POOL_OF_ROLE = {"receiver": "receive", "validator": "validate", "rater": "survey_baseline"}
CAPACITY = {"receive": "items_per_receiver", "validate": "items_per_validator", "survey_baseline": "items_per_rater"}
SCAN = 16  # candidates looked at per stratum before trying the next one
REPAIR_CHUNK = 200  # exchanges per write transaction of the repair


def capacity(us: dict, phase: str) -> int:
    """How many items of a pooled phase one person takes (a rater: items_per_rater, else a
    sender's share)."""
    if phase == "survey_baseline":
        return us.get("items_per_rater") or us["items_per_sender"]
    return us[CAPACITY[phase]]


def stratum(group: str | None, system: str) -> str:
    """What allocation balances over: the speaker's language group and the system."""
    return f"{group or ''}|{system}"


def cell(group: str | None, gender: str | None) -> str:
    """A sender design cell (group x gender): a withdrawn recording stays in its cell."""
    return f"{group or ''}|{gender or ''}"


def _usability(database, study_id: str) -> tuple[StudyRow, dict] | None:
    study = studies.get_study(database, study_id)
    if not study or "usability" not in study["config"]:
        return None
    return study, study["config"]["usability"]


def _seed(study) -> int:
    return study["config"]["study"]["seed"]


def _sender_identity(ex: dict) -> set[str]:
    if not ex["sender_id"]:
        return set()
    keys = {f"id:{ex['sender_id']}"}
    keys |= {f"ext:{x}" for x in (ex["external_id"], ex["prolific_pid"]) if x}
    return keys


def _needs_rater(database, ex: dict) -> bool:
    """The exchange's surveys need a third person: no sender, or a sender who dropped out
    (services/usability/dropouts.py) before answering its informed survey. A sender who is only
    deactivated (a pause: reactivation gives the queue back) keeps their surveys."""
    if not ex["sender_id"]:
        return True
    if not ex["dropped_out_at"]:
        return False
    done = pool.survey_holders(database, ex["id"], "survey_informed", "done")
    return not any(h["participant_id"] == ex["sender_id"] for h in done)


def _rater_holders(database, ex: dict) -> int:
    """Third persons who hold the exchange's surveys: active ones, and gone ones who finished
    both (one gone between the two leaves the exchange to another rater)."""
    informed = {h["participant_id"] for h in pool.survey_holders(database, ex["id"], "survey_informed", "done")}
    return sum(
        1
        for h in pool.survey_holders(database, ex["id"], "survey_baseline")
        if h["participant_id"] != ex["sender_id"] and (h["active"] or h["participant_id"] in informed)
    )


# -- events ------------------------------------------------------------------------------------


def exchange_ready(database, exchange_id: int) -> int:
    """After a translation, a QC result or a review: opens what the exchange now allows.
    Returns how many things it opened (0 when it was not ready or had them already)."""
    ex = pool.exchange_state(database, int(exchange_id))
    if not ex:
        return 0
    found = _usability(database, ex["study_id"])
    if not found:
        return 0
    with database.transaction() as tx:
        return _open_exchange(tx, found[0], ex)


def starter_changed(tx: Transaction, study_id: str, starter_id: str) -> None:
    """A starter's accepted questions changed (inside the caller's write): its ready exchanges
    open their receive items, or, when it has none left, close the places nobody took."""
    found = _usability(tx.database, study_id)
    if not found:
        return
    for eid in pool.starter_exchanges(tx.database, study_id, starter_id):
        ex = required(pool.exchange_state(tx.database, eid), "exchange")
        if ex["has_questions"]:
            _open_exchange(tx, found[0], ex)
        elif pool.entry(tx.database, study_id, "receive", eid):
            pool.set_need(tx.db, study_id, "receive", eid, 0)


def _open_exchange(tx: Transaction, study: StudyRow, ex: dict) -> int:
    if not ex["translated"] or not ex["qc_ok"] or ex["excluded_at"]:
        return 0
    sid, seed, us = study["id"], _seed(study), study["config"]["usability"]
    eid, where = ex["id"], stratum(ex["grp"], ex["system_id"])
    added = 0
    if ex["has_questions"]:
        need = max(0, us["redundancy"] - pool.holder_count(tx.database, sid, "receive", eid))
        row = pool.entry(tx.database, sid, "receive", eid)
        if row is None:
            added += pool.offer(
                tx.db, sid, "receive", eid, eid, where, _sender_identity(ex), need, order_key(seed, "receive", eid)
            )
        elif row["need"] != need:  # e.g. its questions were withdrawn, then accepted again
            pool.set_need(tx.db, sid, "receive", eid, need)
            added += 1
    if ex["sender_id"] and not ex["dropped_out_at"]:
        added += (
            assignments.insert_assignment(
                tx.db,
                sid,
                ex["sender_id"],
                "survey_baseline",
                eid,
                order_key(seed, ex["sender_id"], eid),
                exchange_id=eid,
            )
            is not None
        )
    elif _needs_rater(tx.database, ex):
        added += _offer_rater(tx, study, ex)
    return added


def _offer_rater(tx: Transaction, study: StudyRow, ex: dict) -> int:
    """Puts the exchange's surveys in the raters' pool, or puts its places right; 1 when that
    changed anything."""
    sid, eid = study["id"], ex["id"]
    need = max(0, 1 - _rater_holders(tx.database, ex))
    row = pool.entry(tx.database, sid, "survey_baseline", eid)
    if row is None:
        return int(
            pool.offer(
                tx.db,
                sid,
                "survey_baseline",
                eid,
                eid,
                stratum(ex["grp"], ex["system_id"]),
                _sender_identity(ex),
                need,
                order_key(_seed(study), "survey", eid),
            )
        )
    if row["need"] != need:
        pool.set_need(tx.db, sid, "survey_baseline", eid, need)
        return 1
    return 0


def hand_surveys_to_raters(tx: Transaction, study: StudyRow, participant: ParticipantRow) -> list[int]:
    """A sender or rater who is gone (inside the caller's write): every exchange whose informed
    survey they will not answer goes (back) to the raters' pool. Returns those exchanges."""
    if participant["role"] == "sender":
        eids = pool.sender_exchanges(tx.database, participant["id"])
    else:
        eids = pool.survey_exchanges(tx.database, participant["id"], "survey_baseline", "done")
    out = []
    for eid in eids:
        ex = required(pool.exchange_state(tx.database, eid), "exchange")
        if ex["translated"] and ex["qc_ok"] and not ex["excluded_at"] and _needs_rater(tx.database, ex):
            _offer_rater(tx, study, ex)
            if required(pool.entry(tx.database, study["id"], "survey_baseline", eid), "offered survey")["need"] > 0:
                out.append(eid)
    return out


def after_submit(tx: Transaction, study: StudyRow, assignment: AssignmentRow) -> int:
    """What a just-saved answer opens (inside its write transaction)."""
    phase, exchange_id = assignment["phase"], assignment["exchange_id"]
    if phase == "receive":
        return _offer_validation(tx, study, assignment["id"])
    if exchange_id is None:  # a validate or survey item always names its exchange
        return 0
    if phase == "validate":
        return _open_informed(tx, study, exchange_id)
    if phase == "survey_baseline":
        return _open_informed(tx, study, exchange_id, only=assignment["participant_id"])
    return 0


def _offer_validation(tx: Transaction, study: StudyRow, receive_id: int) -> int:
    r = pool.receive_assignment_state(tx.database, receive_id)
    if not r or r["status"] != "done":
        return 0
    ex = required(pool.exchange_state(tx.database, r["exchange_id"]), "exchange of a receive item")
    producers = _sender_identity(ex) | set(participants.identities(tx.database, [r["receiver_id"]])[r["receiver_id"]])
    need = study["config"]["usability"]["redundancy"] - pool.holder_count(tx.database, study["id"], "validate", r["id"])
    return int(
        pool.offer(
            tx.db,
            study["id"],
            "validate",
            r["id"],
            ex["id"],
            stratum(ex["grp"], ex["system_id"]),
            producers,
            need,
            order_key(_seed(study), "validate", r["id"]),
        )
    )


def _open_informed(tx: Transaction, study: StudyRow, exchange_id: int, only: int | None = None) -> int:
    if not pool.exchange_validated(tx.database, exchange_id):
        return 0
    added = 0
    for h in pool.survey_holders(tx.database, exchange_id, "survey_baseline", "done"):
        if only is not None and h["participant_id"] != only:
            continue
        # gone: a sender who dropped out, a rater whose items were handed on (a paused sender
        # keeps theirs, for when they are reactivated)
        if h["dropped_out_at"] or (not h["active"] and h["role"] != "sender"):
            continue
        added += (
            assignments.insert_assignment(
                tx.db,
                study["id"],
                h["participant_id"],
                "survey_informed",
                exchange_id,
                order_key(_seed(study), h["participant_id"], exchange_id),
                exchange_id=exchange_id,
            )
            is not None
        )
    return added


# -- a participant takes work --------------------------------------------------------------------


def _strata(database, study: StudyRow) -> list[str]:
    groups = [*study["config"]["study"]["groups"], ""]
    systems = studies.systems(database, study["id"])
    return [stratum(g, s["id"]) for g in groups for s in systems]


def distinct_starters(study: StudyRow, phase: str) -> bool:
    """Whether a receiver may get no second exchange of a starter they had: the same questions
    again, so the second answer set would not be independent of the first (the LMM's receiver
    intercept assumes it is). A study stored before the setting existed has the default (false)."""
    return phase == "receive" and not study["config"]["usability"].get("receiver_repeat_starters", False)


def repeat_cutoff(study: StudyRow, phase: str, now: dt.datetime | None = None) -> str | None:
    """With distinct starters and [usability] receiver_repeat_after_minutes > 0: the time before
    which an item must have entered the pool for a receiver who had its starter to take it (an
    exchange no other receiver could take would otherwise wait for ever: services/usability/plan.py);
    None: never. The receiver gets such an item only when nothing else is left for them
    (next_item), and the assignment records it (meta repeat_starter, the answers' export)."""
    minutes = study["config"]["usability"].get("receiver_repeat_after_minutes", 0)
    if not minutes or not distinct_starters(study, phase):
        return None
    now = now or dt.datetime.now(dt.timezone.utc)
    return (now - dt.timedelta(minutes=minutes)).isoformat(timespec="milliseconds")


def may_take(database, participant: ParticipantRow, study: StudyRow) -> bool:
    """Whether taking an item is worth the write lock: the participant has room and something of
    their phase waits (two indexed reads; a page polling while it waits writes nothing)."""
    phase = POOL_OF_ROLE.get(participant["role"])
    if phase is None or "usability" not in study["config"]:
        return False
    if pool.phase_load(database, participant["id"], phase) >= capacity(study["config"]["usability"], phase):
        return False
    return pool.any_open(database, study["id"], phase)


def ready_in_pool(database, participant: ParticipantRow, study: StudyRow) -> int | None:
    """How many more items the participant could take from the pool now, at most their room left
    (None: their role takes nothing from it). A few indexed reads, however large the study."""
    phase = POOL_OF_ROLE.get(participant["role"])
    if phase is None or "usability" not in study["config"]:
        return None
    load = pool.phase_load(database, participant["id"], phase)
    room = capacity(study["config"]["usability"], phase) - load
    if room <= 0:
        return 0
    mine = participants.identities(database, [participant["id"]])[participant["id"]]
    return pool.takeable(
        database,
        study["id"],
        phase,
        participant["id"],
        mine,
        room,
        scan=room + load + SCAN,
        distinct_starters=distinct_starters(study, phase),
        repeat_before=repeat_cutoff(study, phase),
    )


def next_item(tx: Transaction, participant: ParticipantRow, study: StudyRow) -> AssignmentRow | None:
    """One pooled item for a participant who has nothing open in their phase (inside a write),
    or None: no room left, or nothing they may take is waiting."""
    phase = POOL_OF_ROLE.get(participant["role"])
    if phase is None or "usability" not in study["config"]:
        return None
    sid, pid = study["id"], participant["id"]
    if pool.phase_load(tx.database, pid, phase) >= capacity(study["config"]["usability"], phase):
        return None
    available = pool.open_strata(tx.database, sid, phase, _strata(tx.database, study))
    if not available:
        return None
    held = pool.held_strata(tx.database, pid, phase)
    rng = seeded_rng("pick", _seed(study), pid, sum(held.values()))
    jitter = {s: rng.random() for s in available}
    other_group = (
        (lambda s: s.split("|")[0] != participant["grp"])
        if participant["role"] == "rater" and participant["grp"]
        else (lambda s: False)
    )
    mine = participants.identities(tx.database, [pid])[pid]
    order = sorted(available, key=lambda s: (other_group(s), held.get(s, 0), jitter[s]))
    # a starter they had comes back only when nothing else is left for them, after the wait
    cutoff = repeat_cutoff(study, phase)
    for repeat_before in (None, cutoff) if cutoff else (None,):
        for s in order:
            for c in pool.candidates(
                tx.database,
                sid,
                phase,
                s,
                SCAN,
                pid,  # none they held or had
                distinct_starters=distinct_starters(study, phase),
                repeat_before=repeat_before,
            ):
                if c["producers"] & mine:
                    continue
                if pool.take(tx.db, sid, phase, c["item_id"]):
                    meta = _repeat_meta(c) if c["repeat"] else None
                    aid = assignments.insert_assignment(
                        tx.db,
                        sid,
                        pid,
                        phase,
                        c["item_id"],
                        order_key(_seed(study), pid, c["item_id"]),
                        exchange_id=c["exchange_id"],
                        meta=meta,
                    )
                    if aid is not None and meta:
                        tx.database.log("workflow", "repeat_starter", "assignments", aid, meta)
                    # None: they already had it (the candidates leave those out)
                    return None if aid is None else assignments.assignment(tx.database, aid)
    return None


def _repeat_meta(candidate: dict) -> dict:
    """What an assignment records when its receiver had the starter before: how long the item
    had waited in the pool (minutes)."""
    since = dt.datetime.fromisoformat(candidate["created_at"])
    waited = (dt.datetime.now(dt.timezone.utc) - since).total_seconds() / 60
    return {"repeat_starter": True, "waited_minutes": round(waited, 1)}


def release(tx: Transaction, assignment: AssignmentRow | AssignmentRecord) -> bool:
    """A withdrawn assignment's place goes back to the pool (pooled phases only)."""
    return pool.give_back(tx.db, assignment["study_id"], assignment["phase"], assignment["item_id"])


# -- a sender design cell's withdrawn recordings --------------------------------------------------


def orphan_recording(tx: Transaction, study: StudyRow, leaving: ParticipantRow, exchange: dict) -> None:
    """A recording item withdrawn from a sender that no other sender of their cell can take
    now: it waits for the next sender who enrols in that cell (adopt_cell_orphans)."""
    pool.offer(
        tx.db,
        study["id"],
        "record",
        exchange["id"],
        exchange["id"],
        cell(leaving["grp"], leaving["gender"]),
        [],
        1,
        order_key(_seed(study), "record", exchange["id"]),
    )


def adopt_cell_orphans(tx: Transaction, study: StudyRow, sender_id: int, group, gender) -> list[int]:
    """A new sender of a cell also records the cell's waiting items (those whose starter is not
    already theirs), so the cell's design stays complete. Returns the new exchanges."""
    sid, made = study["id"], []
    for o in pool.cell_orphans(tx.database, sid, cell(group, gender)):
        if o["starter_id"] in exchanges.sender_starters(tx.database, sender_id) or not pool.take(
            tx.db, sid, "record", o["item_id"]
        ):
            continue
        eid = exchanges.insert_exchange(tx.db, sid, o["starter_id"], o["system_id"], sender_id)
        assignments.insert_assignment(
            tx.db, sid, sender_id, "record", eid, order_key(_seed(study), sender_id, eid), exchange_id=eid
        )
        tx.database.log("workflow", "adopt", "exchanges", o["exchange_id"], {"new_exchange": eid, "to": sender_id})
        made.append(eid)
    return made


# -- the repair ------------------------------------------------------------------------------


def refresh(database, study_id: str) -> int:
    """Adds whatever the events should have opened and puts each pooled item's places right;
    idempotent, in chunks. Returns how many things it added or changed (0: nothing was missing)."""
    found = _usability(database, study_id)
    if not found:
        return 0
    study = found[0]
    changed, after = 0, 0
    while ids := pool.study_exchange_ids(database, study_id, after, REPAIR_CHUNK):
        with database.transaction() as tx:
            for eid in ids:
                changed += _open_exchange(tx, study, required(pool.exchange_state(database, eid), "exchange"))
                for rid in pool.done_receive_ids(database, eid):
                    changed += _offer_validation(tx, study, rid)
                changed += _open_informed(tx, study, eid)
        after = ids[-1]
    key = ("", "")
    while rows := pool.pool_entries(database, study_id, key, REPAIR_CHUNK):
        with database.write() as db:
            for r in rows:
                need = _need(database, study, r)
                if need is not None and r["need"] != need:
                    pool.set_need(db, study_id, r["phase"], r["item_id"], need)
                    changed += 1
        key = (rows[-1]["phase"], rows[-1]["item_id"])
    return changed


def _need(database, study: StudyRow, row: dict) -> int | None:
    """How many more people a pooled item should get; None: leave it as it is."""
    redundancy = study["config"]["usability"]["redundancy"]
    if row["phase"] == "validate":
        return max(0, redundancy - row["holders"])
    if row["phase"] not in ("receive", "survey_baseline"):
        return None
    ex = required(pool.exchange_state(database, int(row["item_id"])), "exchange of a pooled item")
    if ex["excluded_at"] or not (ex["translated"] and ex["qc_ok"]):
        return 0
    if row["phase"] == "receive":
        return max(0, redundancy - row["holders"]) if ex["has_questions"] else 0
    return max(0, 1 - _rater_holders(database, ex)) if _needs_rater(database, ex) else 0
