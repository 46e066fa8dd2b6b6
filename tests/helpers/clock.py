"""Login throttling on a clock the test moves: the admin's enforced waits advance the clock
instead of sleeping, so hours of waiting take no time."""

from __future__ import annotations

from services.admin.auth import AdminAuth, LoginThrottle


class FakeClock:
    """Seconds that pass only when the test says so."""

    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def paced_auth(password: str, database=None, free: int | None = None, **kw) -> tuple[AdminAuth, FakeClock]:
    """AdminAuth whose throttle (with `free` failures before waits, when given) and sessions run
    on a FakeClock that its waits advance: (auth, clock)."""
    clock = FakeClock()
    if free is not None:
        kw["throttle"] = LoginThrottle(clock, free=free)
    return AdminAuth(password, database, clock=clock, sleep=clock.advance, **kw), clock
