"""Participant actions (a view, a submit) run one at a time in this process.

Each is a millisecond or two of SQLite reads and one short write. Run side by side on
Gradio's threadpool they only wait on each other: every SQLite call gives up the GIL and
must win it back from the other handlers, and a submit does so some thirty times while it
holds the write lock, so the next submit's wait grows with every request in flight (a convoy:
at 16 clients a submit held the lock 13 ms for 1.5 ms of work and waited 380 ms for it,
benchmarks/usability/study_sim.py --http). One at a time, each runs through in its own
couple of milliseconds; the waiting is in a FIFO line instead of a scramble, so the slowest
participant waits about as long as the median one.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading
from typing import Iterator


class FairLock:
    """A reentrant lock handed to its waiters in the order they came, each woken alone
    (threading.RLock is not fair: under load a thread can lose the race again and again)."""

    def __init__(self):
        self._mutex = threading.Lock()
        self._line: collections.deque = collections.deque()  # (thread id, its gate), in order
        self._owner: int | None = None
        self._depth = 0

    def _take(self, me: int) -> bool:
        """Under _mutex: take the lock if it is free or already this thread's."""
        if self._owner == me:
            self._depth += 1
            return True
        if self._owner is None:
            self._owner, self._depth = me, 1
            return True
        return False

    def __enter__(self):
        me = threading.get_ident()
        with self._mutex:
            if self._take(me):
                return self
            gate = threading.Lock()
            gate.acquire()
            self._line.append((me, gate))
        gate.acquire()  # the owner before us opens it, having made us the owner
        return self

    def try_enter(self) -> bool:
        """Take the lock only if nobody holds it (or this thread does already): never waits."""
        with self._mutex:
            return self._take(threading.get_ident())

    def __exit__(self, *exc):
        with self._mutex:
            self._depth -= 1
            if self._depth:
                return False
            if self._line:
                self._owner, gate = self._line.popleft()
                self._depth = 1
                gate.release()
            else:
                self._owner = None
        return False


ACTIONS = FairLock()


def one_at_a_time(fn):
    """Run fn under ACTIONS (a participant action that calls another holds it once)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with ACTIONS:
            return fn(*args, **kwargs)

    return wrapped


@contextlib.contextmanager
def right_away(database) -> Iterator[bool]:
    """True, holding the participants' line and this process's write lock on the database, when
    both were free: an action run inside then waits on no other thread of this process (only on
    another process's write, as any action does). False, holding neither, when either was taken.

    The item forms' JSON routes run an action on the event loop when this says True
    (web/action_line.py says why); when a long write of the worker's (the workflow's repair) or
    an action on a worker thread makes it False, the action goes to a worker thread as a Gradio
    event's does, so the loop never waits on them."""
    if not ACTIONS.try_enter():
        yield False
        return
    try:
        with database.writes_if_free() as free:
            yield free
    finally:
        ACTIONS.__exit__(None, None, None)
