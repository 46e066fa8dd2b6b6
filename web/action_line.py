"""The item forms' JSON routes run their participants' actions on the event loop, a turn at a
time.

Run on a worker thread (as Gradio runs a sync handler), an action's twenty-odd SQLite calls each
gave up the interpreter lock and waited to win it back from the event loop, which under load is
busy with the other participants' requests: at 50 clients a submit that costs 2-4 ms of CPU took
about 250-350 ms at the median, most of it in the participants' line
(services/participation/serial.py) behind holders that were themselves waiting for the
interpreter. On the event loop an action runs straight through in its own few milliseconds
(benchmarks/README.md, issue 34's fourth pass).

The loop also reads the requests and writes the answers, and a request that needs several of
its turns (an upload's parts, a new connection) would wait behind every action ready in each.
So a turn of the loop runs at most TURN_S of actions; the rest wait for the next turn, in the
order they came, while the loop looks at the network in between (Turns).

An action runs on the loop only when nothing in this process holds the participants' line or
the database's write lock (serial.right_away): an action of a Gradio event on a worker thread,
or a long write of the worker's (the workflow's repair). Then it runs on a worker thread, as
before, so the loop never waits on a lock. Another process's write (the CLI's) it waits for
at most LOOP_BUSY_MS.
"""

from __future__ import annotations

import asyncio
import time
import weakref

from services.participation.serial import right_away

TURN_S = 0.010  # the actions run in one turn of the loop, at most; the rest wait for the next
# On the loop an action waits at most this long for another process's write (the CLI importing a
# study), not SQLite's 30 s, since the whole server waits with it; past it the action fails, and
# the page's script sends the answer by the tab's Gradio event, on a worker thread that waits.
LOOP_BUSY_MS = 500
# The loop's one connection runs nearly every participant's action, so it keeps the pages they
# touch: SQLite's default 2 MiB holds a fifth of a study of twice the paper's size (20 MB); at 16
# clients its submits' p95 was 45-55 ms with the default, 37-47 with this (two runs each)
LOOP_CACHE_KIB = 64 * 1024


class Turns:
    """One event loop's actions: each runs at once in its request's task while this turn of the
    loop has run less than TURN_S of them; the others wait for the next turn, in the order they
    came, after the loop has looked at the network (made by turns_for)."""

    def __init__(self, loop):
        self.loop, self.used, self.armed = loop, 0.0, False

    def _next_turn(self) -> None:
        self.used, self.armed = 0.0, False

    def _arm(self) -> None:
        # a callback queued now runs in the loop's next turn, before the tasks that wait for it
        if not self.armed:
            self.armed = True
            self.loop.call_soon(self._next_turn)

    async def run(self, fn, args: tuple, database):
        import anyio

        while self.used >= TURN_S:
            self._arm()
            await asyncio.sleep(0)
        self._arm()
        t = time.perf_counter()
        with right_away(database) as free:
            if free:
                database.tune_this_thread(LOOP_BUSY_MS, LOOP_CACHE_KIB)
                try:
                    return fn(*args)
                finally:
                    self.used += time.perf_counter() - t
        return await anyio.to_thread.run_sync(fn, *args)


_turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def turns_for(loop) -> Turns:
    """The Turns of this event loop (a server has one; tests may start several)."""
    turns = _turns.get(loop)
    if turns is None:
        turns = _turns[loop] = Turns(loop)
    return turns


async def run_action(fn, args: tuple, database, on_loop: bool):
    """fn(*args): on the event loop in its turn when on_loop (and database is given), else on a
    worker thread as Gradio runs a sync handler (a large recording's decoding holds up no one)."""
    if on_loop and database is not None:
        return await turns_for(asyncio.get_running_loop()).run(fn, args, database)
    import anyio

    return await anyio.to_thread.run_sync(fn, *args)
