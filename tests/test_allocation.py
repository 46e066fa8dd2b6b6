"""Receivers and validators take their items at random, balanced over the speakers' language
groups and the systems (paper 000: receivers assigned at random), reproducibly from the seed."""

from __future__ import annotations

from collections import Counter

import pytest

from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from storage import open_database
from tests.helpers.workflow import answer_receiver, record_all, study_folder, until_none, wav

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

GROUPS = ("USW", "USB", "Hindi")


def build(tmp_path, seed, name="s.db", senders_per_group=2, **usability):
    db = open_database(tmp_path / name)
    import_study(db, study_folder(tmp_path / name.replace(".", "-"), seed, **usability))
    audio = wav(tmp_path)
    made = []
    for g in GROUPS:
        for s in add_participants(db, "demo", "sender", senders_per_group, g, "Woman"):
            made += record_all(db, s, tmp_path / "media", audio)
    return db, made


def strata_of(db, pid):
    rows = db.query(
        "SELECT p.grp, e.system_id FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
        "JOIN participants p ON p.id = e.sender_id WHERE a.participant_id = ? AND a.phase = 'receive'",
        [pid],
    )
    return Counter((r["grp"], r["system_id"]) for r in rows)


def test_each_receiver_gets_a_balanced_mix_of_groups_and_systems(tmp_path):
    db, exchanges = build(tmp_path, 11)
    assert len(exchanges) == 24  # 6 senders x 4 items: 6 strata (3 groups x 2 systems) of 4
    receivers = add_participants(db, "demo", "receiver", 4)
    for r in receivers:
        assert len(until_none(answer_receiver, db, r.token)) == 6  # items_per_receiver
        # six items over six strata: one of each
        assert sorted(strata_of(db, r.id).values()) == [1] * 6, strata_of(db, r.id)
    # every exchange went to exactly one receiver (redundancy 1)
    assert (
        db.query("SELECT item_id, COUNT(*) n FROM assignments WHERE phase = 'receive' GROUP BY item_id HAVING n != 1")
        == []
    )
    assert db.scalar("SELECT COUNT(*) FROM assignments WHERE phase = 'receive'") == 24


def allocation(db, receivers):
    out = {}
    for r in receivers:
        until_none(answer_receiver, db, r.token)
        out[r.id] = sorted(
            int(x["item_id"])
            for x in db.query("SELECT item_id FROM assignments WHERE participant_id = ? AND phase = 'receive'", [r.id])
        )
    return out


def test_allocation_is_random_and_reproducible_from_the_seed(tmp_path):
    runs = {}
    for name, seed in (("a.db", 5), ("b.db", 5), ("c.db", 6)):
        db, _ = build(tmp_path, seed, name, senders_per_group=1)
        runs[name] = allocation(db, add_participants(db, "demo", "receiver", 2))
    assert runs["a.db"] == runs["b.db"]  # same seed, same events: same allocation
    assert runs["a.db"] != runs["c.db"]  # another seed: another draw
    # not first come, first served: the first receiver does not simply get the first exchanges
    first = next(iter(runs["c.db"].values()))
    assert first != sorted(first)[: len(first)] or first != list(range(min(first), min(first) + len(first)))


def test_nobody_judges_their_own_work(tmp_path):
    # every sender here is design block 0 of their cell, so all exchanges share four starters:
    # repeats allowed, or the receiver stops at four (test_a_receiver_never_gets_two_exchanges...)
    db, _ = build(tmp_path, 3, senders_per_group=1, receiver_repeat_starters="true")
    # the same person (by external id) enrolled as a sender and as a receiver
    (sender,) = add_participants(db, "demo", "sender", 1, "USW", "Man", external_ids=["P-1"])
    record_all(db, sender, tmp_path / "media", wav(tmp_path))
    (r,) = add_participants(db, "demo", "receiver", 1, external_ids=["P-1"])
    until_none(answer_receiver, db, r.token)
    got = {
        g["sender_id"]
        for g in db.query(
            "SELECT e.sender_id FROM assignments a JOIN exchanges e ON e.id = a.exchange_id WHERE a.participant_id = ?",
            [r.id],
        )
    }
    assert len(got) >= 3 and sender.id not in got
    # the sender's exchanges went to nobody else either, yet: they wait for another receiver
    (other,) = add_participants(db, "demo", "receiver", 1)
    until_none(answer_receiver, db, other.token)
    assert (
        db.scalar(
            "SELECT COUNT(*) FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
            "WHERE e.sender_id = ? AND a.phase = 'receive'",
            [sender.id],
        )
        >= 1
    )


def test_redundancy_and_capacity_hold_when_receivers_compete(tmp_path):
    """Each exchange to exactly `redundancy` receivers, nobody past `items_per_receiver`, and
    nobody twice on one exchange, however the receivers' views interleave."""
    db, exchanges = build(tmp_path, 21, redundancy=2, items_per_receiver=5)
    receivers = add_participants(db, "demo", "receiver", 12)
    active = list(receivers)
    while active:  # one answer each in turn, as concurrent receivers would
        active = [r for r in active if answer_receiver(db, r.token) is not None]
    per_item = db.query(
        "SELECT item_id, COUNT(*) n, COUNT(DISTINCT participant_id) d FROM assignments "
        "WHERE phase = 'receive' GROUP BY item_id"
    )
    assert len(per_item) == len(exchanges) == 24 and {(r["n"], r["d"]) for r in per_item} == {(2, 2)}
    loads = [db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ?", [r.id]) for r in receivers]
    assert max(loads) <= 5 and sum(loads) == 48


def test_a_receiver_is_not_starved_by_the_open_places_of_items_they_answered(tmp_path):
    """With redundancy 2 an item a receiver answered keeps a place open for another receiver,
    and started items come first in the pool's order: a scan that dropped a receiver's own items
    only after its LIMIT of 16 left them waiting at 16 of 30 while 30 more items were open."""
    import re

    from benchmarks.browser import RECEIVER_ITEMS, receiver_study

    folder = receiver_study(tmp_path / "study", 1)  # 48 exchanges of one stratum, 30 items a receiver
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    (folder / "study.toml").write_text(re.sub(r"(?m)^redundancy = \d+$", "redundancy = 2", toml), encoding="utf-8")
    db = open_database(tmp_path / "s.db")
    import_study(db, folder)
    [first, second] = add_participants(db, "recv30", "receiver", 2)
    assert len(until_none(answer_receiver, db, first.token)) == RECEIVER_ITEMS
    assert len(until_none(answer_receiver, db, second.token)) == RECEIVER_ITEMS
    # no receiver has an item twice; no item has more than two receivers
    assert (
        db.query(
            "SELECT participant_id, item_id FROM assignments WHERE phase = 'receive' "
            "GROUP BY participant_id, item_id HAVING COUNT(*) > 1"
        )
        == []
    )
    assert (
        db.query("SELECT item_id FROM assignments WHERE phase = 'receive' GROUP BY item_id HAVING COUNT(*) > 2") == []
    )


def _starters_of(db, pid):
    return [
        r["starter_id"]
        for r in db.query(
            "SELECT e.starter_id FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
            "WHERE a.participant_id = ? AND a.phase = 'receive' ORDER BY a.id",
            [pid],
        )
    ]


def _two_senders_one_design(tmp_path, **usability):
    """Two senders of design block 0 in two cells (USW and USB women): the same four starters,
    so every starter has two exchanges (paper 000 section 2.5.1: "The stimuli (starters) are
    shared across all groups")."""
    from tests.helpers.workflow import study_folder as folder

    db = open_database(tmp_path / "s.db")
    import_study(db, folder(tmp_path / "study", 4, items_per_receiver=8, **usability))
    audio = wav(tmp_path)
    made = []
    for g in ("USW", "USB"):
        (s,) = add_participants(db, "demo", "sender", 1, g, "Woman")
        made += record_all(db, s, tmp_path / "media", audio)
    per_starter = Counter(
        r["starter_id"] for r in db.query("SELECT starter_id FROM exchanges WHERE sender_id IS NOT NULL")
    )
    assert len(made) == 8 and set(per_starter.values()) == {2}, per_starter
    return db


def test_a_receiver_never_gets_two_exchanges_of_one_starter(tmp_path):
    """Two exchanges of one starter carry the same questions: a receiver who answered the first
    would answer the second from memory, and the LMM's receiver intercept (paper 000 section 4.2,
    "sender, validator, and receiver as random effects") takes answer sets as independent. With
    room for all eight exchanges the receiver gets one of each of the four starters, then waits
    (not finished: their eight are not done) while the other four stay open for another receiver."""
    from services.participation.items import get_view

    db = _two_senders_one_design(tmp_path)
    first, second = add_participants(db, "demo", "receiver", 2)
    assert len(until_none(answer_receiver, db, first.token)) == 4
    got = _starters_of(db, first.id)
    assert len(got) == len(set(got)) == 4
    assert get_view(db, first.token, "receiver").status == "waiting"
    # the other exchange of each starter goes to the other receiver
    assert len(until_none(answer_receiver, db, second.token)) == 4
    assert sorted(_starters_of(db, second.id)) == sorted(got)
    assert db.scalar("SELECT COUNT(DISTINCT item_id) FROM assignments WHERE phase = 'receive'") == 8
    assert get_view(db, first.token, "receiver").status == "waiting"  # nothing left they may take


def test_a_study_may_let_receivers_repeat_starters(tmp_path):
    """receiver_repeat_starters = true: the old behaviour, one receiver answers all eight."""
    db = _two_senders_one_design(tmp_path, receiver_repeat_starters="true")
    (r,) = add_participants(db, "demo", "receiver", 1)
    assert len(until_none(answer_receiver, db, r.token)) == 8
    assert set(Counter(_starters_of(db, r.id)).values()) == {2}


def test_the_ready_count_leaves_out_starters_the_receiver_had(tmp_path):
    """The page's "n ready" (workflow.ready_in_pool) counts what next_item would give: after one
    of each starter, none of the four open exchanges is theirs to take."""
    from services.usability import workflow
    from storage import participants, studies

    db = _two_senders_one_design(tmp_path)
    (r,) = add_participants(db, "demo", "receiver", 1)
    until_none(answer_receiver, db, r.token)
    p, study = participants.by_token(db, r.token), studies.get_study(db, "demo")
    assert workflow.ready_in_pool(db, p, study) == 0
    assert db.scalar("SELECT COUNT(*) FROM work_pool WHERE phase = 'receive' AND need > 0") == 4


def test_receiver_repeat_starters_must_be_a_boolean(tmp_path):
    """Bad input names the setting and what it takes."""
    import pytest

    from services.study.files import StudyValidationError, load_study
    from tests.helpers.workflow import study_folder as folder

    with pytest.raises(StudyValidationError, match=r"usability.receiver_repeat_starters.*must be true or false"):
        load_study(folder(tmp_path, receiver_repeat_starters='"no"'))
    assert load_study(folder(tmp_path / "ok")).config["usability"]["receiver_repeat_starters"] is False
