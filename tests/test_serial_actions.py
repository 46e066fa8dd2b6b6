"""Participant actions one at a time (services/participation/serial.py), and a submit that
takes the write lock once: the view it returns, and the page's next view, write nothing."""

from __future__ import annotations

import threading
import time

from services.participation.items import get_view
from services.participation.serial import FairLock
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from tests.helpers.sql_trace import Trace
from tests.helpers.workflow import answer_survey


def _wait_for(cond, seconds=5.0):
    end = time.time() + seconds
    while not cond():
        assert time.time() < end, "timed out"
        time.sleep(0.001)


def test_fair_lock_serves_waiters_in_arrival_order_and_is_reentrant():
    lock, order = FairLock(), []

    def take(name):
        with lock:
            with lock:  # reentrant: the same thread enters again without waiting
                order.append(name)

    lock.__enter__()
    threads = []
    for name in "BCDEFG":
        th = threading.Thread(target=take, args=(name,))
        th.start()
        threads.append(th)
        _wait_for(lambda: len(lock._line) == len(threads))  # each waits before the next comes
    assert order == []  # the owner still holds it
    lock.__exit__(None, None, None)
    for th in threads:
        th.join(5)
    assert order == list("BCDEFG")
    assert lock._owner is None and not lock._line


def test_fair_lock_excludes_while_held():
    lock, inside, most = FairLock(), [0], [0]

    def work():
        for _ in range(200):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    [th.start() for th in threads]
    [th.join(10) for th in threads]
    assert most[0] == 1


def _writes(statements) -> int:
    return sum(1 for s in statements if s.lstrip().upper().startswith("BEGIN"))


def test_a_submit_writes_once_and_the_views_after_it_write_nothing(demo_db):
    """The next pooled item is taken, shown and the participant seen inside the submit's own
    write; the view the page then makes (a reload) writes nothing."""
    db = demo_db
    (rater,) = add_participants(db, "demo", "rater", 1)
    v = get_view(db, rater.token, "survey")
    assert v.status == "item"
    with Trace(db) as t:
        res = submit(db, rater.token, "survey", v.item_id, {"satisfaction": 4, "trust": 4, "reliance": 4})
    assert res.saved and res.next.status == "item"
    assert _writes(t.sql) == 1
    a = db.one("SELECT * FROM assignments WHERE participant_id = ? AND status = 'open'", [rater.id])
    assert a["first_shown_at"]  # the next item counts as shown from now
    with Trace(db) as t:
        again = get_view(db, rater.token, "survey")
    assert again.item_id == res.next.item_id
    assert _writes(t.sql) == 0
    assert answer_survey(db, rater.token)  # and it can be answered as usual


def test_a_recording_is_decoded_outside_the_line(demo_db, tmp_path, monkeypatch):
    """Decoding and resampling a long recording must not hold up other participants' clicks:
    the submit leaves the line of actions while it stores the audio."""
    from services.participation.serial import ACTIONS
    from services.usability import protocol as usability_protocol  # the record phase's intake
    from tests.helpers.audio import write_wav

    (sender,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")
    owners = []
    real = usability_protocol.store_recording

    def spy(*args, **kwargs):
        owners.append(ACTIONS._owner)
        return real(*args, **kwargs)

    monkeypatch.setattr(usability_protocol, "store_recording", spy)
    v = get_view(demo_db, sender.token, "record")
    res = submit(
        demo_db,
        sender.token,
        "record",
        v.item_id,
        {"audio": str(write_wav(tmp_path / "a.wav", seconds=4.0))},
        media_dir=tmp_path / "media",
    )
    assert res.saved
    assert owners == [None]


def test_a_first_view_writes_once(demo_db):
    """A participant's first view takes an item from the pool, marks it shown and notes when
    they were last seen: one write transaction, not three; the next view writes nothing."""
    db = demo_db
    (receiver,) = add_participants(db, "demo", "receiver", 1)
    with Trace(db) as t:
        v = get_view(db, receiver.token, "receiver")
    assert v.status == "item"
    assert _writes(t.sql) == 1
    p = db.one("SELECT last_seen_at FROM participants WHERE id = ?", [receiver.id])
    a = db.one("SELECT first_shown_at FROM assignments WHERE participant_id = ? AND status = 'open'", [receiver.id])
    assert p["last_seen_at"] and a["first_shown_at"]
    with Trace(db) as t:
        assert get_view(db, receiver.token, "receiver").item_id == v.item_id
    assert _writes(t.sql) == 0


def test_try_enter_takes_a_free_lock_at_once_and_never_waits_for_a_held_one():
    lock, got = FairLock(), []
    assert lock.try_enter() and lock.try_enter()  # free, then reentrant for its owner
    th = threading.Thread(target=lambda: got.append(lock.try_enter()))
    th.start()
    th.join(5)
    assert got == [False] and not lock._line  # another thread: refused, not queued
    lock.__exit__(None, None, None)
    lock.__exit__(None, None, None)
    assert lock._owner is None


def test_right_away_holds_the_line_and_the_write_lock_only_when_both_are_free(database):
    from services.participation.serial import ACTIONS, right_away

    with right_away(database) as free:
        assert free and ACTIONS._owner == threading.get_ident()
        seen = []
        th = threading.Thread(target=lambda: seen.append(database._write_lock.acquire(blocking=False)))
        th.start()
        th.join(5)
        assert seen == [False]  # the write lock is held for the action too
    assert ACTIONS._owner is None

    held, release = threading.Event(), threading.Event()

    def hold(ctx):
        with ctx:
            held.set()
            release.wait(5)

    for ctx in (ACTIONS, database.write()):  # the participants' line, then a long write elsewhere
        held.clear()
        release.clear()
        th = threading.Thread(target=hold, args=(ctx,))
        th.start()
        held.wait(5)
        with right_away(database) as free:
            assert not free
        assert ACTIONS._owner != threading.get_ident()  # nothing kept when refused
        release.set()
        th.join(5)
    with right_away(database) as free:
        assert free
