"""Counts of something that may arrive many times a second (a refused enrolment, a wrong admin
link), kept in memory and written at most once every FLUSH_S seconds per database: a client
repeating a refused request costs one small write now and then, not a write under the answers'
lock each time. A count not written at once is written by a timer FLUSH_S seconds later, so a
quiet spell never leaves counts only in memory: a crash loses at most the last FLUSH_S seconds."""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from typing import Hashable


class Tally:
    """Counts per key, written by write(database, {key: count}) (a subclass's) at most once
    every FLUSH_S seconds per database object."""

    FLUSH_S = 2.0

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[object, Counter]] = {}  # per database object
        self._flushed: dict[int, float] = {}
        self._timers: dict[int, threading.Timer] = {}

    def write(self, database, counts: dict) -> None:
        raise NotImplementedError

    def tally(self, database, key: Hashable) -> None:
        now = self.clock()
        with self._lock:
            _, counts = self._pending.setdefault(id(database), (database, Counter()))
            counts[key] += 1
            wait = self.FLUSH_S - (now - self._flushed.get(id(database), -math.inf))
            due = wait <= 0
            if due:
                self._flushed[id(database)] = now
            elif id(database) not in self._timers:
                timer = threading.Timer(wait, self.flush, [database])
                timer.daemon = True
                self._timers[id(database)] = timer
                timer.start()
        if due:
            self.flush(database)

    def flush(self, database) -> None:
        with self._lock:
            _, counts = self._pending.pop(id(database), (None, Counter()))
            self._flushed[id(database)] = self.clock()
            timer = self._timers.pop(id(database), None)
            if timer is not None and timer is not threading.current_thread():
                timer.cancel()
        if counts:
            self.write(database, dict(counts))
