"""The item forms' actions on the event loop (web/action_line.py): on the loop's own thread when
nothing in the process would make them wait, a turn at a time, and on a worker thread when the
participants' line or the database's write lock is held elsewhere."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from services.participation.serial import ACTIONS
from web import action_line
from web.action_line import Turns, run_action


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_an_action_runs_on_the_loops_thread_holding_the_line(database):
    async def main():
        loop_thread = threading.get_ident()

        def act(x):
            return x, threading.get_ident() == loop_thread, ACTIONS._owner == loop_thread

        return await run_action(act, (7,), database, True)

    assert asyncio.run(main()) == (7, True, True)
    assert ACTIONS._owner is None


def test_off_the_loop_when_asked_or_without_a_database(database):
    async def main(db, on_loop):
        loop_thread = threading.get_ident()
        return await run_action(lambda: threading.get_ident() != loop_thread, (), db, on_loop)

    assert asyncio.run(main(database, False))  # e.g. a large recording: decoded on a worker thread
    assert asyncio.run(main(None, True))


@pytest.mark.parametrize("holder", ["line", "write"])
def test_a_lock_held_elsewhere_sends_the_action_to_a_worker_thread(database, holder):
    """The loop never waits on a lock: the action waits for it on a worker thread instead, and
    runs once the holder is done."""
    held, release, order = threading.Event(), threading.Event(), []

    def hold():
        with ACTIONS if holder == "line" else database.write():
            held.set()
            release.wait(5)
            order.append("holder done")

    th = threading.Thread(target=hold)
    th.start()
    assert held.wait(5)

    async def main():
        loop_thread = threading.get_ident()

        def act():
            with ACTIONS, database.write():  # as the services' submits take them
                order.append("action")
                return threading.get_ident() != loop_thread

        task = asyncio.create_task(run_action(act, (), database, True))
        ticks = 0
        while not task.done() and ticks < 20:  # the loop keeps turning meanwhile
            await asyncio.sleep(0.005)
            ticks += 1
        assert not task.done() and ticks == 20
        release.set()
        return await task

    assert asyncio.run(main())
    th.join(5)
    assert order == ["holder done", "action"]


def test_a_turn_runs_at_most_turn_s_of_actions_and_the_rest_wait_for_the_next(database, monkeypatch):
    monkeypatch.setattr(action_line, "TURN_S", 0.004)

    async def main():
        turns, order = Turns(asyncio.get_running_loop()), []

        def act(name):
            order.append(name)
            busy(0.005)

        a = asyncio.create_task(turns.run(act, ("a",), database))
        b = asyncio.create_task(turns.run(act, ("b",), database))
        await asyncio.sleep(0)  # a's and b's first steps have run: a used the turn, b waits
        assert order == ["a"] and not b.done()
        await asyncio.gather(a, b)
        return order

    assert asyncio.run(main()) == ["a", "b"]


def test_a_refusal_raised_by_an_action_reaches_the_route_and_frees_the_locks(database):
    class Refused(ValueError):
        pass

    def act():
        raise Refused("no")

    async def main():
        with pytest.raises(Refused):
            await run_action(act, (), database, True)

    asyncio.run(main())
    assert ACTIONS._owner is None
    assert database._write_lock.acquire(blocking=False)
    database._write_lock.release()


def test_on_the_loop_another_processs_write_is_waited_for_briefly_not_thirty_seconds(database, monkeypatch):
    """The whole server waits with an action on the loop: a write lock held by another
    connection (another process's, the CLI's) fails it after LOOP_BUSY_MS, and the page sends
    the answer by the Gradio event instead; a worker thread's connection still waits 30 s."""
    import sqlite3

    monkeypatch.setattr(action_line, "LOOP_BUSY_MS", 200)
    other = sqlite3.connect(str(database.path), isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")

    def write():
        with database.write() as d:
            d.execute("CREATE TABLE IF NOT EXISTS t (x)")

    async def main():
        t = time.perf_counter()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await run_action(write, (), database, True)
        return time.perf_counter() - t

    try:
        assert 0.15 < asyncio.run(main()) < 5
        assert database.scalar("PRAGMA cache_size") == -action_line.LOOP_CACHE_KIB  # the loop's
        seen: list = []  # a worker thread's connection: unchanged
        th = threading.Thread(
            target=lambda: seen.append((database.scalar("PRAGMA busy_timeout"), database.scalar("PRAGMA cache_size")))
        )
        th.start()
        th.join(5)
        assert seen == [(30000, -2000)]
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert ACTIONS._owner is None
