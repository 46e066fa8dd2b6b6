"""A per-token request limit for participant views and submits (a token bucket per link).

An honest page makes a few requests a second at most (a view, a submit, a poll every few
seconds); a script hammering one link is refused ("too many requests, slow down")
once it has spent its burst. The buckets live in this process's memory: a restart empties
them, and several app processes would each keep their own (the app runs as one process).

The app turns it on at start with TRADLAB_RATE_LIMIT (services/common/settings.py: requests per second
per token, default 20; 0 turns it off; the burst is twice the rate): configure(). Code that
calls the services in-process (the command line, the benchmarks, the tests) is not limited
unless it configures a rate itself.
"""

from __future__ import annotations

import threading
import time

ENV = "TRADLAB_RATE_LIMIT"
DEFAULT_PER_SECOND = 20.0
MESSAGE = "Too many requests from this link: please slow down and try again in a moment."
MAX_BUCKETS = 100_000  # forget idle tokens beyond this many (memory stays bounded)


class TokenBuckets:
    def __init__(self, rate: float | None = None, burst: float | None = None, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # token -> (tokens left, last time)

    def allow(self, key: str) -> bool:
        rate = self.rate
        if not rate or rate <= 0:
            return True
        burst = self.burst if self.burst is not None else 2 * rate
        now = self.clock()
        with self._lock:
            left, last = self._buckets.get(key, (burst, now))
            left = min(burst, left + (now - last) * rate)
            ok = left >= 1.0
            self._buckets[key] = (left - 1.0 if ok else left, now)
            if len(self._buckets) > MAX_BUCKETS:
                self._prune(now, burst, rate)
            return ok

    def empty(self, key: str) -> bool:
        """Whether key's bucket holds less than one request now (nothing spent): web.guard
        refuses such a link before Gradio routes its call, which then cost 5-8 ms of CPU only to
        be refused by allow()."""
        rate = self.rate
        if not rate or rate <= 0:
            return False
        with self._lock:
            held = self._buckets.get(key)
        return held is not None and held[0] + (self.clock() - held[1]) * rate < 1.0

    def _prune(self, now: float, burst: float, rate: float) -> None:
        # a bucket that has refilled completely carries no information
        full = [k for k, (left, last) in self._buckets.items() if left + (now - last) * rate >= burst]
        for k in full:
            del self._buckets[k]

    def reset(self) -> None:
        with self._lock:
            self._buckets.clear()


BUCKETS = TokenBuckets()


def configure(per_second: float | None) -> None:
    """The limit from now on (None or 0: none); the buckets start full."""
    BUCKETS.rate = per_second
    BUCKETS.reset()


def spent(participant_id: int) -> bool:
    """Whether this participant's link has no request left for now (allow() would refuse it)."""
    return BUCKETS.empty(str(participant_id))


def allow(token: str | None) -> bool:
    """False when this link has made more requests than the limit allows (the caller refuses
    with MESSAGE: services/participation/items.py raises TooManyRequests, an AccessError). The
    key is a participant found by its token (its id), never the string a caller sent."""
    return not token or BUCKETS.allow(str(token))
