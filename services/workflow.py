"""The four-phase workflow runs itself: each finished step opens the next one.

refresh() is idempotent and cheap; it runs after every write that can open work (an import,
a translation, a finished answer set, a validation, a new participant) and when a
participant opens their link, so queues fill as soon as upstream work exists:
- a translation opens receiver items (once its starter has accepted questions) and the
  sender's baseline survey
  (exchanges without a sender, e.g. imported or of a dropped-out sender, go to raters:
  third-person perspective);
- a finished answer set opens a validator item;
- an exchange whose answer sets are all validated opens the informed survey for whoever
  answered its baseline.
"""
from __future__ import annotations

from services.assignment import Candidate, OpenItem, allocate, order_key
from storage import participants, queue, studies


def _candidates(database, study_id, role, phase) -> list[Candidate]:
    people = [p for p in participants.list_for_study(database, study_id, role) if p["active"]]
    loads = queue.phase_loads(database, study_id, phase)
    ids = participants.identities(database, [p["id"] for p in people])
    return [Candidate(p["id"], loads.get(p["id"], 0), ids[p["id"]]) for p in people]


def _assign(db, study_id, seed, phase, pairs, exchange_of):
    for pid, item in pairs:
        queue.insert_assignment(db, study_id, pid, phase, item, order_key(seed, pid, item),
                                exchange_id=exchange_of[item])


def refresh(database, study_id: str) -> None:
    study = studies.get_study(database, study_id)
    if not study or "usability" not in study["config"]:
        return
    cfg = study["config"]
    us, seed = cfg["usability"], cfg["study"]["seed"]
    with database.write() as db:
        translated = queue.translated_exchanges(database, study_id)
        # people whose work is in an exchange must not judge it
        producer_ids = {e["sender_id"] for e in translated if e["sender_id"]}
        receive_done = queue.done_receive_assignments(database, study_id)
        producer_ids |= {r["receiver_id"] for r in receive_done}
        ident = participants.identities(database, sorted(producer_ids))

        # receivers: every translated exchange
        held, gone = queue.holders(database, study_id, "receive"), queue.holders(database, study_id, "receive", True)
        # (a starter whose questions are still being reviewed waits: services/question_review.py)
        items = [OpenItem(str(e["id"]), held.get(str(e["id"]), set()), ident.get(e["sender_id"], frozenset()),
                          frozenset(gone.get(str(e["id"]), ()))) for e in translated if e["has_questions"]]
        pairs = allocate(items, _candidates(database, study_id, "receiver", "receive"),
                         us["redundancy"], us["items_per_receiver"], seed)
        _assign(db, study_id, seed, "receive", pairs, {str(e["id"]): e["id"] for e in translated})

        # validators: every finished answer set
        held, gone = queue.holders(database, study_id, "validate"), queue.holders(database, study_id, "validate", True)
        items = [OpenItem(str(r["id"]), held.get(str(r["id"]), set()),
                          ident.get(r["sender_id"], frozenset()) | ident.get(r["receiver_id"], frozenset()),
                          frozenset(gone.get(str(r["id"]), ())))
                 for r in receive_done]
        pairs = allocate(items, _candidates(database, study_id, "validator", "validate"),
                         us["redundancy"], us["items_per_validator"], seed)
        _assign(db, study_id, seed, "validate", pairs, {str(r["id"]): r["exchange_id"] for r in receive_done})

        # baseline surveys: the sender, or a third-person rater when there is none
        for e in translated:
            if e["sender_id"]:
                queue.insert_assignment(db, study_id, e["sender_id"], "survey_baseline", e["id"],
                                        order_key(seed, e["sender_id"], e["id"]), exchange_id=e["id"])
        held = queue.holders(database, study_id, "survey_baseline")
        gone = queue.holders(database, study_id, "survey_baseline", True)
        items = [OpenItem(str(e["id"]), held.get(str(e["id"]), set()), barred=frozenset(gone.get(str(e["id"]), ())))
                 for e in translated if not e["sender_id"]]
        pairs = allocate(items, _candidates(database, study_id, "rater", "survey_baseline"),
                         1, us["items_per_sender"], seed)
        _assign(db, study_id, seed, "survey_baseline", pairs, {str(e["id"]): e["id"] for e in translated})

        # informed surveys: after validation, for whoever answered the baseline
        baseline_done = queue.done_survey_holders(database, study_id, "survey_baseline")
        for e in queue.validated_exchanges(database, study_id):
            for pid in baseline_done.get(e["id"], set()):
                queue.insert_assignment(db, study_id, pid, "survey_informed", e["id"],
                                        order_key(seed, pid, e["id"]), exchange_id=e["id"])
