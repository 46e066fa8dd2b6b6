"""Sessions: cheap for anyone, kept for the callers the app knows (Callers, CallerSessions)."""

import re

from web.site import Site


def participant_link(database, value) -> int | None:
    """The id of the active participant whose token value is (None: no such link)."""
    from storage import participants

    if not isinstance(value, str) or not value or len(value) > 200 or "/" in value:
        return None
    participant = participants.by_token(database, value)
    return participant["id"] if participant is not None and participant.get("active", 1) else None


def admin_session(auth, value) -> bool:
    """Whether value is a live admin session."""
    import contextvars

    if not isinstance(value, str) or not value or len(value) > 200 or "/" in value:
        return False
    try:  # the session alone (the handler checks the address), in a copy of the context:
        # the handler's "admin checked" mark (services.admin.auth.run_checked) is left as it was
        contextvars.copy_context().run(auth.check, value, "127.0.0.1")
        return True
    except PermissionError:
        return False


def known_credential(database, auth, value) -> bool:
    """Whether value is an active participant's token or a live admin session."""
    return participant_link(database, value) is not None or admin_session(auth, value)


# -- sessions: cheap for anyone, kept for the callers the app knows ------------------------------
# Gradio keeps a SessionState per session hash (the client chooses it), and built each with a copy
# of every block's config: on "/" (314 blocks) 33-57 ms and about 500 KB a session, kept up to
# 10,000 sessions a page. That copy only serves deep links (/gradio_api/deep_link, closed here):
# an event fills in the config of the blocks it touches anyway. A session that came with an
# active participant's token or a live admin session (Callers.admit) is kept as Gradio keeps it;
# any other is one of at most STRANGER_SESSIONS a page, each dropped STRANGER_SESSION_S after its
# last use. Past that number a stranger's session still lives STRANGER_GRACE_S after its last use:
# a session becomes known only with its next request after a password login (the dashboard's
# tick, 10 s) or a Prolific newcomer's first page (its token comes back in the load's answer).
# Gradio's own cap (10,000 a page) then drops strangers first, never a known caller for them.
STRANGER_SESSIONS = 200
STRANGER_SESSION_S = 600.0
STRANGER_GRACE_S = 20.0
PARTICIPANT_CALLS = ("view", "consent", "demographics")
NOT_YOUR_LINK = "This link is not valid. Please use the personal link you were given."
SESSION_HASH = re.compile(rb'"session_hash"\s*:\s*"([^"\\]{1,64})"')
CREDENTIAL = re.compile(rb'"([A-Za-z0-9_-]{16,64})"')
EVENT = re.compile(r"/gradio_api/(?:api|call|run)/([^/]+)/?")
TOKEN_FIELD = re.compile(rb'"token"\s*:\s*"([^"\\]{1,200})"')
LINKS = 20_000  # links (and sessions) whose participant Callers remembers, at most
FN_INDEX = re.compile(rb'"fn_index"\s*:\s*(\d{1,6})')
_SESSION_CLASSES: list = []


def session_classes() -> tuple:
    """(LeanSession, CallerSessions): gradio's SessionState without its up-front copy of every
    block's config, and a StateHolder that keeps known callers' sessions apart from strangers'."""
    if _SESSION_CLASSES:
        return tuple(_SESSION_CLASSES)
    import time
    from collections import OrderedDict
    from types import SimpleNamespace

    from gradio.state_holder import SessionState, StateHolder

    class LeanSession(SessionState):
        def __init__(self, blocks):
            # gradio's own __init__, given no blocks to copy the config of up front
            super().__init__(SimpleNamespace(default_config=blocks.default_config, blocks={}))

        # Nor later: gradio rebuilds a block's config (its get_config walks the constructor's
        # signature, its api_info makes pydantic JSON schemas) for every input of a session's
        # first event and for every output a gr.update() changes, on every event: a quarter of
        # the server's CPU at 50 clients (benchmarks/README.md). The config is only read back for
        # deep links, closed here (web/guard.py), so none is kept.
        def __setitem__(self, key: int, value) -> None:
            import datetime

            from gradio.components import State

            block = self.blocks_config.blocks.get(key)
            if isinstance(block, State):  # gradio's own, without the config
                self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
                self.state_data[key] = value
            else:
                self.blocks_config.blocks[key] = value

        def _update_config(self, key: int) -> None:
            pass

        def _update_value_in_config(self, key: int, value) -> None:
            pass

    class CallerSessions(StateHolder):
        def __init__(
            self,
            strangers: int = STRANGER_SESSIONS,
            ttl: float = STRANGER_SESSION_S,
            grace: float = STRANGER_GRACE_S,
            clock=time.monotonic,
        ):
            super().__init__()
            self.known: set[str] = set()  # hashes that came with a valid link or admin session
            self.strangers: OrderedDict[str, float] = OrderedDict()  # the others: hash -> last use
            self.stranger_cap, self.ttl, self.grace, self.clock = strangers, ttl, grace, clock

        def vouch(self, session_id: str) -> None:
            with self.lock:
                self.known.add(session_id)
                self.strangers.pop(session_id, None)
                if len(self.known) > 2 * self.capacity:  # those gradio evicted
                    self.known &= set(self.session_data)

        def __getitem__(self, session_id: str):
            if session_id not in self.session_data:
                self.session_data[session_id] = LeanSession(self.blocks)
            if session_id not in self.known:
                with self.lock:
                    self.strangers[session_id] = self.clock()
                    self.strangers.move_to_end(session_id)
                    self.drop_strangers(keep=session_id)
            return super().__getitem__(session_id)

        def drop_strangers(self, keep: str | None = None) -> None:
            """Past the cap, the least recently used unused for grace seconds; any unused for ttl
            seconds (under the lock)."""
            now = self.clock()
            while self.strangers:
                sid, used = next(iter(self.strangers.items()))
                if sid == keep or now - used < (self.grace if len(self.strangers) > self.stranger_cap else self.ttl):
                    break
                self.forget(sid)

        def forget(self, sid: str) -> None:
            self.strangers.pop(sid, None)
            self.session_data.pop(sid, None)
            self.time_last_used.pop(sid, None)

        def update(self, session_id: str):
            """Gradio's: the session to the end, and past capacity the oldest goes; a stranger first."""
            with self.lock:
                if session_id in self.session_data:
                    self.session_data.move_to_end(session_id)
                while len(self.session_data) > self.capacity:
                    oldest = next((s for s in self.strangers if s != session_id), None)
                    if oldest is None:
                        evicted, _ = self.session_data.popitem(last=False)
                        self.time_last_used.pop(evicted, None)
                        self.known.discard(evicted)
                    else:
                        self.forget(oldest)

        def delete_all_expired_state(self):  # gradio calls it every second
            with self.lock:
                self.drop_strangers()
            super().delete_all_expired_state()

    _SESSION_CLASSES.extend([LeanSession, CallerSessions])
    return LeanSession, CallerSessions


class Callers:
    """Who an event request comes from, read in Guard from its query (?t=, ?admin=) and its body:
    a session hash seen with an active participant's token or a live admin session (or the admin
    link's secret) is marked known to its page's CallerSessions. On "/" the participant calls
    (view, consent, demographics), which only scripts use there, are refused to a caller without
    a valid token or admin session before Gradio builds anything (an honest link is sent on to
    its role's page by RoleRedirect)."""

    MAX_LOOKUPS = 8  # token-shaped strings looked up per request, at most
    TOO_MANY = (
        "Too many requests from your address without a valid link: please wait a minute and try "
        "again, or open the personal link you were given."
    )

    def __init__(self, site: Site, database, strangers_per_minute: int = 0):
        from collections import OrderedDict

        from services.participation.rate_limit import TokenBuckets

        self.site, self.database = site, database
        # A stranger's page load and events cost Gradio 5-50 ms of CPU each whatever they carry
        # (the team page's six load events with made-up ?admin= secrets, 24 a second, took the
        # two cores' share an honest view waits for: its p95 2.7x). Per client address, events
        # and page loads that come with no valid link or admin session spend a bucket of
        # strangers_per_minute, its burst a quarter of that (a whole minute's at once had let a
        # flood through for its first 5 s; a designer's login spends about 8, a Prolific
        # newcomer's first page about 3).
        rate = strangers_per_minute / 60
        self.strangers = TokenBuckets(rate, max(10.0, strangers_per_minute / 4)) if rate else None
        # links' participants, for pacing a link before Gradio routes its call (paced)
        self.links: OrderedDict[str, int] = OrderedDict()  # token -> participant id
        self.session_links: OrderedDict[str, int] = OrderedDict()  # session hash -> participant id
        self.too_fast_words: dict[str, str] = {}  # page -> its refusal for pace
        self.team_calls = {
            i for i, fn in getattr(site.team, "fns", {}).items() if getattr(fn, "api_name", None) in PARTICIPANT_CALLS
        }

    def holder(self, page: str):
        blocks = self.site.pages.get(page) if page else self.site.team
        holder = getattr(blocks, "state_holder", None)
        return holder if hasattr(holder, "vouch") else None

    def opened(self, page: str, session: str) -> bool:
        """Whether page's state holder knows the session (a valid caller's) or has it (Gradio ran
        an event for it); a page without a CallerSessions: always."""
        holder = self.holder(page)
        return holder is None or session in holder.known or session in holder.session_data

    def caller(self, query: bytes, body: bytes) -> tuple[bool, int | None]:
        """(whether the call comes with a valid caller, its participant's id where a link's
        token made it valid): the admin link's secret, ?t= or token-shaped strings of the body."""
        import hmac
        from urllib.parse import parse_qs

        auth = self.site.auth
        q = parse_qs(query.decode("latin-1")) if query else {}
        secret = getattr(auth, "local_secret", None)
        if secret and any(hmac.compare_digest(v.encode(), secret.encode()) for v in q.get("admin", [])[:1]):
            return True, None
        values = q.get("t", [])[:1] + [m.decode() for m in CREDENTIAL.findall(body)[: self.MAX_LOOKUPS]]
        for v in values[: self.MAX_LOOKUPS]:
            pid = self.link(v)
            if pid is not None:
                return True, pid
            if admin_session(auth, v):
                return True, None
        return False, None

    def valid(self, query: bytes, body: bytes) -> bool:
        return self.caller(query, body)[0]

    def link(self, token: str, look_up: bool = True) -> int | None:
        """The participant id of an active link's token: remembered (LINKS at most), else looked
        up when look_up."""
        pid = self.links.get(token)
        if pid is not None or not look_up:
            return pid
        pid = participant_link(self.database, token)
        if pid is not None:
            remember(self.links, token, pid)
        return pid

    def link_in(self, query: bytes, body: bytes) -> int | None:
        """The participant whose link a call without a session names: an item form's "token",
        ?t=, or a token-shaped string of an API call's data; remembered links first, at most one
        lookup (a forged token costs what the service's own lookup did)."""
        from urllib.parse import parse_qs

        m = TOKEN_FIELD.search(body)
        named = [m.group(1).decode("latin-1")] if m else []
        named += parse_qs(query.decode("latin-1")).get("t", [])[:1] if query else []
        named += [c.decode() for c in CREDENTIAL.findall(body)[: self.MAX_LOOKUPS]]
        for v in named:
            pid = self.link(v, look_up=False)
            if pid is not None:
                return pid
        return self.link(named[0]) if named else None

    def paced(self, pid: int | None, page: str) -> tuple[int, str] | None:
        """(429, why) when the link has spent its per-link pace (services/participation/
        rate_limit.py): refused here, before Gradio routes the call, which then cost 5-8 ms of
        CPU only for the service to refuse it (a DA link's feedback at 80-100 a second)."""
        from services.participation import rate_limit

        return (429, self.too_fast(page)) if pid is not None and rate_limit.spent(pid) else None

    def too_fast(self, page: str) -> str:
        """The service's own refusal for pace, in the page's language (the receiver's: Portuguese)."""
        words = self.too_fast_words.get(page)
        if words is None:
            from services.common import protocols
            from services.study.texts import DEFAULT_LANGUAGE, Voice, page_language

            lang = page_language(protocols.role(page).tabs[0]) if page in self.site.pages else DEFAULT_LANGUAGE
            words = self.too_fast_words[page] = Voice(lang)("too_many_requests")
        return words

    def participant_call(self, path: str, body: bytes) -> bool:
        m = EVENT.fullmatch(path)
        if m:
            return m.group(1) in PARTICIPANT_CALLS
        m = FN_INDEX.search(body)
        return bool(m) and int(m.group(1)) in self.team_calls

    def spend(self, client: str) -> bool:
        """Whether client may send one more request without a valid caller (strangers' bucket)."""
        return self.strangers is None or self.strangers.allow(client)

    def admit_page(self, query: bytes, client: str) -> tuple[int, str] | None:
        """A page load (its HTML or config): None, or (status, text) when a client without a
        valid link or admin secret in the URL has spent its share."""
        if self.strangers is None or self.valid(query, b""):
            return None
        return None if self.spend(client) else (429, self.TOO_MANY)

    def admit(self, page: str, path: str, query: bytes, body: bytes, client: str = "") -> tuple[int, str] | None:
        """None: on to Gradio (the session marked known when it came with a valid caller);
        else (status, the refusal's text)."""
        holder = self.holder(page)
        m = SESSION_HASH.search(body)
        sid = m.group(1).decode("latin-1") if m else None
        if sid and holder is not None and sid in holder.known:
            return self.paced(self.session_links.get(sid), page)
        if page and not sid:  # a role page's call with no session (an item form's JSON route):
            return self.paced(self.link_in(query, body), page)  # its token is checked by the service
        valid, pid = self.caller(query, body)
        if valid and sid and holder is not None:
            holder.vouch(sid)
            if pid is not None:
                remember(self.session_links, sid, pid)
        if not valid and not page and self.participant_call(path, body):
            return 403, NOT_YOUR_LINK
        if not valid and not self.spend(client):
            return 429, self.TOO_MANY
        return self.paced(pid, page)


def remember(cache, key: str, value: int) -> None:
    """key -> value in an OrderedDict of at most LINKS entries (the least recently added go)."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > LINKS:
        cache.popitem(last=False)
