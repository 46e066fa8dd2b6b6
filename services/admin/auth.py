"""What the study designer sees, access control: the admin tab's login, its throttle and the
start-up exposure warning (the progress tables: services/admin/progress.py)."""

from __future__ import annotations

import contextvars
import hmac
import math
import secrets
import threading
import time
from typing import Callable

from services.common.settings import on_space
from services.common.tally import Tally

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
SESSION_SECONDS = 12 * 3600


FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host")
LOCAL_HOST_NAMES = {"localhost", "127.0.0.1", "[::1]", "::1"}
NOT_LOCAL = "forwarded"  # what client_address calls a caller that must use the password


def _header_map(headers) -> dict[str, str]:
    if headers is None:
        return {}
    if isinstance(headers, (list, tuple)):  # an ASGI scope's (name, value) byte pairs (web.guard)
        return {bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1") for k, v in headers}
    try:
        return {str(k).lower(): str(v) for k, v in headers.items()}
    except AttributeError:
        return {}


def local_host_header(value: str | None) -> bool:
    """Whether a Host header names this machine's loopback: localhost, 127.0.0.1 or [::1], with
    or without a port. A page that rebinds its own DNS name to 127.0.0.1 still sends its name
    (Host: evil.example:7860), so it is told apart from the designer's own browser."""
    host = (value or "").strip().lower()
    if host.startswith("["):  # [::1] or [::1]:7860
        name, _, rest = host.partition("]")
        name, port = name + "]", rest[1:] if rest.startswith(":") else rest
        if rest and not rest.startswith(":"):
            return False
    else:
        name, _, port = host.partition(":")
    return name in LOCAL_HOST_NAMES and (port == "" or port.isdigit())


def client_address(host: str | None, headers=None) -> str | None:
    """The caller's address as the admin rule sees it. A request that came through a reverse
    proxy (it carries a forwarding header) is never local, whatever the socket's peer is: a
    proxy on the same machine would otherwise make every visitor look like 127.0.0.1 and open
    the passwordless admin tab to the world. Nor is a request whose Host header names anything
    but localhost, 127.0.0.1 or [::1] (DNS rebinding: a web page whose name now points at
    127.0.0.1). A request without a Host header (HTTP/1.0, a test) is judged by its peer."""
    if headers is not None:
        h = _header_map(headers)
        if set(h) & set(FORWARDING_HEADERS):
            return NOT_LOCAL
        if "host" in h and not local_host_header(h["host"]):
            return NOT_LOCAL
    return host


def forwards_for_others(host: str | None) -> bool:
    """Whether a peer's requests may be other people's, named in its X-Forwarded-For: a proxy on
    this machine, or a Space's."""
    return (host or "") in LOOPBACK or on_space()


def throttle_key(host: str | None, headers=None) -> str:
    """Whose failed logins, uploads and new enrolments count together: the socket's peer, and
    behind a proxy on this machine or a Space's the address the proxy itself appended (the last
    X-Forwarded-For entry; earlier ones are the client's to forge). From any other peer the
    header is the client's own and is ignored: a direct client forging it got a fresh key each
    request (10 of 10 self-enrolments with invented ids past a cap of 3). A proxy on another
    machine: uvicorn's FORWARDED_ALLOW_IPS names it, and uvicorn then gives the client's address
    as the peer."""
    h = _header_map(headers)
    hop = h.get("x-forwarded-for", "").split(",")[-1].strip() or h.get("x-real-ip", "").strip()
    if hop and forwards_for_others(host):
        return f"{host or '?'}|{hop}"
    return host or "?"


class LoginThrottle:
    """Failed admin logins, per client and overall.

    Per client (`key`): after `free` failures each further one makes that client wait
    base * 2**k seconds (k = 0, 1, ...; at most `cap`) before its next attempt is checked; an
    attempt during the wait is refused unchecked. Only the client's own failures count, so a
    stranger (another key) never makes the team wait.
    Overall: a stranger with a new forged key for every guess is slowed by pacing, never by a
    refusal: while any failure is less than `quiet` seconds old, checks (anyone's) run at most one
    per `global_interval` seconds, each caller waiting for its turn (AdminAuth.login sleeps it;
    the login event runs one at a time, so a waiting caller holds at most one thread). The right
    password is then accepted after its turn: slowed, never refused, so forged keys cannot lock the team out.
    A count starts again after `forget_after` seconds without a failure. Held in memory: a restart
    forgets it (and the sessions). `clock` (seconds) is injectable so tests count the waits
    without sleeping."""

    MAX_KEYS = 10_000

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        free: int = 5,
        base: float = 1.0,
        cap: float = 300.0,
        global_interval: float = 0.6,
        quiet: float = 60.0,
        forget_after: float = 3600.0,
    ):
        self.clock = clock
        self.forget_after = forget_after
        self._last: dict[str, float] = {}
        self.free, self.base, self.cap = free, base, cap
        self.global_interval, self.quiet = global_interval, quiet
        self._fails: dict[str, int] = {}
        self._until: dict[str, float] = {}
        self._last_failure = -math.inf  # any key's
        self._next_turn = -math.inf  # when the next paced check may run
        self._lock = threading.Lock()

    def wait_left(self, key: str) -> float:
        """Seconds before `key` may try again (its own failures only)."""
        now = self.clock()
        with self._lock:
            return max(0.0, self._until.get(key, 0.0) - now)

    def turn(self) -> float:
        """Seconds the caller's check must wait for its turn (0 when nothing failed lately);
        taking the turn books the next one global_interval later."""
        now = self.clock()
        with self._lock:
            if now - self._last_failure > self.quiet:
                return 0.0
            at = max(now, self._next_turn)
            self._next_turn = at + self.global_interval
            return at - now

    def _delay(self, n: int, free: int, cap: float) -> float:
        return 0.0 if n <= free else min(cap, self.base * 2 ** min(n - free - 1, 60))

    def failed(self, key: str) -> float:
        """Count a failure of `key`; returns the wait it now has to sit out."""
        now = self.clock()
        with self._lock:
            if len(self._fails) > self.MAX_KEYS:  # forged keys must not grow memory without end
                for k in [k for k, until in self._until.items() if until <= now]:
                    self._fails.pop(k, None)
                    self._until.pop(k, None)
                    self._last.pop(k, None)
            if now - self._last.get(key, now) > self.forget_after:
                self._fails[key] = 0
            self._last[key] = now
            self._fails[key] = self._fails.get(key, 0) + 1
            self._until[key] = now + self._delay(self._fails[key], self.free, self.cap)
            self._last_failure = now
        return self.wait_left(key)

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._fails.pop(key, None)
            self._until.pop(key, None)
            self._last.pop(key, None)


class WrongLinks(Tally):
    """Wrong admin links (passwordless: /?admin= with another value), counted per (client, key,
    minute) and written as one audit row each ('admin_login_failed', what "admin link", with its
    count) at most every FLUSH_S seconds: a loop of page loads with wrong secrets is no write
    load (each had been an audit row under the write lock, after a paced turn)."""

    FLUSH_S = 10.0

    def write(self, database, counts: dict) -> None:
        with database.write():
            for (client_host, key, minute), n in sorted(counts.items()):
                detail = {"what": "admin link", "count": n, "minute": minute}
                database.log(f"admin@{client_host}", "admin_login_failed", "admin", key, detail)


REMOTE_WITHOUT_PASSWORD = "The admin tab is served only to localhost until TRADLAB_ADMIN_PASSWORD is set."
# what a local caller without the admin link is told (no password set): where the link is
NEEDS_ADMIN_LINK = (
    "This server has no admin password, so the Admin tab opens only from the admin link the "
    'server printed in its terminal when it started (a line "Admin link: .../?admin=..."). '
    "Open that link in this browser; whoever started the server can see it."
)

# what an admin link whose secret is not the server's gets (no password set): most often a link
# from an earlier start, since each start prints a new one (issue 51, point 7)
STALE_ADMIN_LINK = (
    "This admin link is not the one the server printed at its latest start: the link changes each "
    'time the server starts, so an older one stops working. Open the newest "Admin link: '
    ".../?admin=...\" line from the server's terminal (or set TRADLAB_ADMIN_SECRET to keep one link "
    "across restarts)."
)


class AdminAuth:
    """Admin sessions: a password from the settings; with none set, the server's local secret
    (`local_secret`, printed at start as the admin link /?admin=SECRET, as Jupyter prints its
    token) from a local request. Another account on the machine reaches 127.0.0.1 but not the
    server's terminal, so it gets nothing.

    Failed password logins are paced and throttled (LoginThrottle) and, given a database, written
    to the audit log (action 'admin_login_failed'); a wrong admin link is refused at once and
    counted (WrongLinks). Sessions expire after SESSION_SECONDS and end at
    logout(). `sleep` is injectable so tests count the paced waits without sleeping."""

    def __init__(
        self,
        password: str,
        database=None,
        clock: Callable[[], float] = time.monotonic,
        throttle: LoginThrottle | None = None,
        local_secret: str = "",
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.password = password or ""
        # none given: a random one nobody knows, so without a password nobody logs in
        self.local_secret = local_secret or secrets.token_urlsafe(24)
        self.database = database
        self.clock = clock
        self.sleep = sleep
        self.throttle = throttle or LoginThrottle(clock)
        self.wrong_links = WrongLinks()
        self._sessions: dict[str, float] = {}

    @property
    def needs_password(self) -> bool:
        """Whether the admin tab asks for a password: only when one is set (docs/security.md);
        without one a local request with the admin link opens it at once and any other is refused."""
        return bool(self.password)

    def available(self, client_host: str | None) -> bool:
        """Whether the admin tab is offered at all (shown, with its login or its link message)."""
        return bool(self.password) or (client_host or "") in LOOPBACK

    def _log(self, action: str, client_host, key, detail=None) -> None:
        if self.database is not None:
            with self.database.write():
                self.database.log(f"admin@{client_host}", action, "admin", key, detail)

    def login(self, password: str, client_host: str | None, key: str | None = None) -> str:
        """A new session for the right password (with none set: the local secret, from a local
        request). `key` says whose failures count together (throttle_key; default the client
        address). A check waits for its turn while failures are recent (LoginThrottle.turn)."""
        if not self.available(client_host):
            raise PermissionError(REMOTE_WITHOUT_PASSWORD)
        key = key or (client_host or "?")
        if not self.password:
            return self._by_link(password, client_host, key)
        wait = self.throttle.wait_left(key)
        if wait > 0:
            raise PermissionError(f"Too many failed logins from this address: try again in {math.ceil(wait)} s.")
        turn = self.throttle.turn()
        if turn > 0:
            self.sleep(turn)
        if not hmac.compare_digest(self.password.encode(), (password or "").encode()):
            wait = self.throttle.failed(key)
            self._log(
                "admin_login_failed",
                client_host,
                key,
                {"wait_s": round(wait, 1), "paced_s": round(turn, 2), "what": "password"},
            )
            raise PermissionError("Wrong password." + (f" Try again in {math.ceil(wait)} s." if wait else ""))
        self.throttle.succeeded(key)
        return self._open()

    def _by_link(self, secret: str, client_host: str | None, key: str) -> str:
        """No password: the admin link's secret, checked at once. 192 random bits need no throttle
        or pacing; paced, 120 page loads with wrong secrets (0.3 s of work) had held the
        designer's own link for 71 s, and a loop kept it shut. A wrong one is counted
        (WrongLinks), not written each time."""
        if hmac.compare_digest(self.local_secret.encode(), (secret or "").encode()):
            return self._open()
        if self.database is not None:
            minute = time.strftime("%Y-%m-%dT%H:%M", time.gmtime())
            self.wrong_links.tally(self.database, (client_host or "?", key, minute))
        raise PermissionError(STALE_ADMIN_LINK if secret else NEEDS_ADMIN_LINK)

    def _open(self) -> str:
        session = secrets.token_urlsafe(24)
        self._sessions[session] = self.clock() + SESSION_SECONDS
        return session

    def check(self, session: str | None, client_host: str | None) -> None:
        if not self.available(client_host):
            raise PermissionError(REMOTE_WITHOUT_PASSWORD)
        expiry = self._sessions.get(session or "")
        if not expiry or expiry < self.clock():
            self._sessions.pop(session or "", None)
            raise PermissionError("Please log in.")
        _CHECKED.set(True)

    def logout(self, session: str | None, client_host: str | None = None) -> bool:
        """End a session on the server: its id opens nothing from now on (logged as 'admin_logout')."""
        ended = self._sessions.pop(session or "", None) is not None
        if ended:
            self._log("admin_logout", client_host, None)
        return ended


# True once AdminAuth.check passed in the current handler call (tabs use it to show an admin the
# details of an unexpected error, and a participant or a stranger only a generic message)
_CHECKED: contextvars.ContextVar[bool] = contextvars.ContextVar("admin_checked", default=False)


def run_checked(fn: Callable, *args, **kwargs):
    """fn(*args, **kwargs) with the 'admin checked' mark reset first. An exception it raises
    carries the mark as its attribute admin_checked: whether an AdminAuth.check had passed."""
    token = _CHECKED.set(False)
    try:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            setattr(e, "admin_checked", _CHECKED.get())  # on whatever class fn raised; read with getattr
            raise
    finally:
        _CHECKED.reset(token)


def exposure_warning(host: str, password: str, on_space: bool = False, root_path: str | None = None) -> str | None:
    """The start-up warning for a server reachable from other machines (a non-loopback listen
    address, a Space, a proxy's root path) with no admin password: the passwordless admin then
    rests on every request's forwarding headers and Host, which a proxy that adds no forwarding
    header defeats."""
    if password:
        return None
    bare = (host or "").strip("[]")
    if not (on_space or root_path or bare not in ("127.0.0.1", "localhost", "::1")):
        return None
    where = (
        "a Hugging Face Space" if on_space else f"{host}" + (f" behind the root path {root_path}" if root_path else "")
    )
    return (
        f"WARNING: the server listens on {where} and TRADLAB_ADMIN_PASSWORD is not set. The Admin and "
        f"Analysis tabs are served without a password only to direct requests from this machine (loopback "
        f"client, Host localhost/127.0.0.1/[::1], no forwarding header). A reverse proxy that adds no "
        f"forwarding header (X-Forwarded-For, Forwarded, X-Real-IP) would make every visitor local: set "
        f"TRADLAB_ADMIN_PASSWORD before exposing the app."
    )
