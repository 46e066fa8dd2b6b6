"""Guard, the outermost middleware: only the routes the pages use, bounded bodies, known callers."""

import json
import re

from services.admin.auth import throttle_key
from web.middleware import app_path
from web.sessions import Callers
from web.site import Site, role_pages
from web.uploads import UploadBudget, upload_pages

# -- bounded work per request, only the routes the pages use ------------------------------------
# Gradio parses an event's JSON body on the event loop and walks every input twice there (our
# refuse_remote_files check, then its own file-moving walk) before any handler runs: one 23 MB
# body stalled every other request for 22 s. Guard reads a body first, bounded in size and time,
# and checks its shape off the loop; only what passes reaches Gradio. Honest bodies are small (a
# receiver's ten answers of 2,000 characters: about 25 KB; a study zip goes through /upload).
MAX_JSON_DEPTH = 32
MAX_JSON_VALUES = 20_000
UPLOAD_OVERHEAD = 64 * 1024  # the multipart framing around one file

# Paths within a page (after /<role>) that the pages and gradio_client use; everything else
# Gradio serves (/gradio_api/file/<URL>, process_recording, monitoring, run-history, vibe-edit,
# login, streams...) answers 404 before Gradio sees it.
OPEN_GET = re.compile(
    r"/?|/config/?|/theme\.css|/favicon\.ico|/robots\.txt|/(?:assets|static)/.+|"
    r"/gradio_api/(?:info/?|heartbeat/[^/]+|queue/data|call/[^/]+/[^/]+|file=.+|startup-events)"
)
OPEN_POST = re.compile(
    r"/gradio_api/(?:queue/join|api/[^/]+/?|call/[^/]+/?|run/[^/]+/?|cancel|reset/?)|"
    r"/form/[a-z0-9_]+/(?:submit|view)"  # the item forms' JSON routes (web/form_routes.py)
)
UPLOAD = re.compile(r"/gradio_api/(?:upload|upload_progress)")
# Gradio's heartbeat answered any session hash with a stream that never ends (one address held
# 999 of them, the server's every connection). A page opens its heartbeat together with its first
# event, so the heartbeat may come first: it waits up to HEARTBEAT_WAIT_S for its page's state
# holder to know the session (an event with a valid link vouched for it, or Gradio ran one for
# it), and is refused (404) otherwise; one heartbeat a session.
HEARTBEAT = re.compile(r"/gradio_api/heartbeat/([^/]+)")
HEARTBEAT_WAIT_S = 5.0
# What a page load costs Gradio (its HTML: about 48 ms of CPU on "/"; its config), counted
# against a stranger's share (Callers.admit_page); assets and the rest are cheap.
PAGE_LOAD = re.compile(r"/?|/config/?")


# An escape pair (a backslash and the byte after it) never ends a text. Texts are taken out by
# bytes.replace and split (C speed, linear), not by a regex for a whole text: that regex, on a
# text of escaped quotes with no end, scanned to the body's end from each of its quotes
# (quadratic: a 128 KB body held the interpreter, and every other request, for about two
# minutes); a regex substitution per escape took a second on 1 MB of them.
BRACKETS = re.compile(rb"[\[\]{}]")


def json_problem(body: bytes) -> str | None:
    """Why a JSON body is refused (None: it may go on), from counts, never by parsing it: its
    texts taken out (their commas and brackets are no structure), the brackets and commas left
    bound its values and its depth. Counting (C speed) clears an honest body at once; every step
    is linear in the body's size."""
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH and body.count(b",") < MAX_JSON_VALUES:
        return None
    # a run of backslashes pairs up from its start: drop the pairs, then the escaped quotes
    unescaped = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    if unescaped.count(b'"') > 2 * MAX_JSON_VALUES:  # each text is a value; no split into more
        return f"more than {MAX_JSON_VALUES:,} values"
    bare = b"".join(unescaped.split(b'"')[::2])  # what lies between the texts
    opened = bare.count(b"[") + bare.count(b"{")
    if opened + bare.count(b",") > MAX_JSON_VALUES or bare.count(b"]") + bare.count(b"}") > MAX_JSON_VALUES:
        return f"more than {MAX_JSON_VALUES:,} values"
    depth = 0
    for m in BRACKETS.finditer(bare):  # stops at the first level too deep
        b = m.group()
        depth += 1 if b in (b"[", b"{") else -1
        if depth > MAX_JSON_DEPTH:
            return f"nested deeper than {MAX_JSON_DEPTH} levels"
    return None


class Guard:
    """ASGI middleware, outermost: a request reaches Gradio only on a route the pages use, uploads
    only on a page that takes a file (the sender's and the team's), and a request's body is read
    here first: at most max_body bytes (an upload: one file of max_upload bytes) within
    body_timeout seconds, and a JSON body no deeper than MAX_JSON_DEPTH with at most
    MAX_JSON_VALUES values. Then an event's caller is looked at (Callers: a known session, or the
    team page's participant calls refused to strangers), an upload counted against its client's
    UploadBudget as it arrives and a heartbeat served only for a session its page has. One client
    (throttle_key) has at most per_client requests in progress (streams included; 0: no share).
    Refusals answer at once and close the connection."""

    def __init__(
        self,
        app,
        max_body: int = 1024 * 1024,
        max_upload: int = 50 * 1024 * 1024,
        body_timeout: float = 30.0,
        upload_pages: tuple = (),
        callers: "Callers | None" = None,
        uploads: "UploadBudget | None" = None,
        per_client: int = 0,
        pause: float = 0.0,
    ):
        self.app, self.max_body, self.body_timeout = app, max_body, body_timeout
        self.max_upload = max_upload + UPLOAD_OVERHEAD
        self.upload_pages = set(upload_pages)
        self.callers, self.uploads = callers, uploads
        self.per_client, self.pause = per_client, pause
        self.busy: dict[str, int] = {}  # client -> its requests in progress
        self.beating: set[tuple[str, str]] = set()  # (page, session) of each open heartbeat

    @staticmethod
    async def refuse(send, status: int, text: str, as_json: bool = False, close: bool = True) -> None:
        # an event's refusal as JSON {"error": ...}, which gradio's clients show as the call's error;
        # close=False where the request was read whole (a stranger over its share: a new connection
        # for each of its next requests cost the server more than the refusal)
        body = json.dumps({"error": text}).encode() if as_json else text.encode()
        kind = b"application/json" if as_json else b"text/plain; charset=utf-8"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", kind),
                    *([(b"connection", b"close")] if close else []),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def paced_refusal(self, send, status: int, text: str, as_json: bool = False) -> None:
        """A refusal for pace (Callers: a stranger past its address's share, a link past its own),
        answered after `pause` seconds on a kept connection: refused at once, one script's loop
        sent 5,000-7,000 such requests a round (0.5 s of the server's CPU a second, an honest
        view's p95 2.3x); paused, a loop waits, holding one of its address's requests in progress
        (per_client) and no CPU."""
        if self.pause:
            import anyio

            await anyio.sleep(self.pause)
        await self.refuse(send, status, text, as_json=as_json, close=False)

    def route(self, scope) -> tuple[str, str]:
        """(page, path within it) of a request."""
        path = app_path(scope)
        head, _, rest = path[1:].partition("/")
        if head in role_pages():
            return head, "/" + rest if rest or path.endswith("/") else ""
        return "", path

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        page, path = self.route(scope)
        method = scope["method"]
        upload = UPLOAD.fullmatch(path) is not None
        if upload and page not in self.upload_pages:
            return await self.refuse(send, 403, "This page takes no files.")
        if (
            not upload
            and not (OPEN_POST if method == "POST" else OPEN_GET).fullmatch(path)
            or method not in ("GET", "HEAD", "POST")
        ):
            return await self.refuse(send, 404, "Not found.")
        client = throttle_key((scope.get("client") or ("?",))[0], scope.get("headers", []))
        if not self.per_client:
            return await self.admitted(scope, receive, send, page, path, upload, client)
        # Gradio's streams (a heartbeat, an event's) last as long as the client keeps them, and
        # the server's connections (TRADLAB_MAX_CONNECTIONS) were anyone's to take: one address
        # held them all. A client's share is counted here, where a proxy's visitors are told
        # apart; a direct peer's connections are also counted before any request (timed_protocol).
        busy = self.busy.get(client, 0)
        if busy >= self.per_client:
            return await self.refuse(
                send, 429, f"Too many requests at once from your address (at most {self.per_client})."
            )
        self.busy[client] = busy + 1
        try:
            return await self.admitted(scope, receive, send, page, path, upload, client)
        finally:
            left = self.busy[client] - 1
            if left:
                self.busy[client] = left
            else:
                del self.busy[client]

    async def admitted(self, scope, receive, send, page: str, path: str, upload: bool, client: str):
        """A request on an open route, within its client's share."""
        method = scope["method"]
        if method != "POST":
            beat = HEARTBEAT.fullmatch(path) if self.callers is not None else None
            if beat:
                return await self.heartbeat(scope, receive, send, page, beat.group(1))
            if self.callers is not None and PAGE_LOAD.fullmatch(path):
                refusal = self.callers.admit_page(scope.get("query_string", b""), client)
                if refusal:
                    return await self.paced_refusal(send, *refusal)
            return await self.app(scope, receive, send)
        limit = self.max_upload if upload else self.max_body
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            if upload:  # in the words of gradio's own refusal, which a part past the size gets
                mb = (limit - UPLOAD_OVERHEAD) / 1024 / 1024
                return await self.refuse(send, 413, f"The file is larger than the maximum allowed size ({mb:.1f} MB).")
            return await self.refuse(send, 413, f"The request is larger than this server takes ({limit:,} bytes).")
        if upload:
            if self.uploads is None:
                return await self.app(scope, self.bounded_stream(receive, limit), send)
            refusal = self.uploads.admit(client, int(length) if length is not None else 0)
            if refusal:
                return await self.refuse(send, 429, refusal)
            return await self.counted_upload(scope, receive, send, client, limit)
        import anyio

        body = bytearray()
        try:
            with anyio.fail_after(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    body += message.get("body", b"")
                    if len(body) > limit:
                        return await self.refuse(
                            send, 413, f"The request is larger than this server takes ({limit:,} bytes)."
                        )
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            return await self.refuse(send, 408, f"The request's body did not arrive within {self.body_timeout:g} s.")
        body = bytes(body)
        problem = await anyio.to_thread.run_sync(json_problem, body) if len(body) > 4096 else json_problem(body)
        if problem:
            return await self.refuse(send, 413, f"The request's data is too complex ({problem}).")
        query = scope.get("query_string", b"")
        refusal = self.callers.admit(page, path, query, body, client) if self.callers else None
        if refusal and refusal[0] == 429:
            return await self.paced_refusal(send, *refusal, as_json=True)
        if refusal:
            return await self.refuse(send, *refusal, as_json=True)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    async def heartbeat(self, scope, receive, send, page: str, session: str):
        """Gradio's heartbeat stream, for a session its page has (HEARTBEAT_WAIT_S), once."""
        import anyio

        key = (page, session)
        if key in self.beating:
            return await self.refuse(send, 409, "This session already has its heartbeat.")
        self.beating.add(key)
        try:
            waited, pause = 0.0, 0.02
            while not self.callers.opened(page, session):  # type: ignore[union-attr]
                if waited >= HEARTBEAT_WAIT_S:
                    return await self.refuse(send, 404, "No such session.")
                await anyio.sleep(pause)
                waited, pause = waited + pause, min(2 * pause, 0.25)
            return await self.app(scope, receive, send)
        finally:
            self.beating.discard(key)

    async def counted_upload(self, scope, receive, send, client: str, limit: int):
        """An admitted upload, its bytes counted against the client's budget as they arrive: past
        it the body is cut off (Gradio drops it) and the client answered 429 instead of Gradio."""
        stream, seen, cut = self.bounded_stream(receive, limit), [0], []

        async def counted():
            message = await stream()
            size = len(message.get("body", b""))
            if size and not cut:
                seen[0] += size
                refusal = self.uploads.arrive(client, size)  # type: ignore[union-attr]
                if refusal:  # its bytes leave the count now, not once Gradio has dropped it
                    cut.append(refusal)
                    self.uploads.leave(client, seen[0])  # type: ignore[union-attr]
                    seen[0] = 0
                    return {"type": "http.disconnect"}
            return message

        noting = self.kept_uploads(client, send, seen)

        async def answer(message):
            if not cut:
                await noting(message)

        try:
            await self.app(scope, counted, answer)
        except Exception:
            if not cut:  # Gradio's own failure; a cut body's is expected (its parser's ClientDisconnect)
                raise
        finally:
            self.uploads.leave(client, seen[0])  # type: ignore[union-attr]
        if cut:
            await self.refuse(send, 429, cut[0])

    def kept_uploads(self, client: str, send, seen: list):
        """send, noting the files an upload's answer names (a JSON list of their paths) as the
        client's, with the bytes its body had (gradio moves the files in after answering)."""
        status, parts = 0, []

        async def noting(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message.get("status", 0)
            elif message["type"] == "http.response.body" and status == 200 and sum(map(len, parts)) < 65536:
                parts.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        paths = json.loads(b"".join(parts))
                    except ValueError:
                        paths = []
                    if isinstance(paths, list):
                        self.uploads.keep(client, [p for p in paths if isinstance(p, str)], seen[0])
            await send(message)

        return noting

    def bounded_stream(self, receive, limit: int):
        """An upload's body as it arrives, ended (a disconnect, which Gradio drops) when it passes
        `limit` bytes or stalls for body_timeout seconds."""
        import anyio

        seen = 0

        async def bounded():
            nonlocal seen
            try:
                with anyio.fail_after(self.body_timeout):
                    message = await receive()
            except TimeoutError:
                return {"type": "http.disconnect"}
            seen += len(message.get("body", b""))
            return {"type": "http.disconnect"} if seen > limit else message

        return bounded


def guard(site: Site, settings, database=None):
    from starlette.middleware import Middleware

    held = int(settings.upload_mb_per_client * 1024 * 1024)
    return Middleware(
        Guard,
        max_body=int(settings.max_body_kb * 1024),
        max_upload=int(settings.max_upload_mb * 1024 * 1024),
        body_timeout=settings.body_timeout,
        upload_pages=upload_pages(site),
        callers=Callers(site, database, settings.stranger_requests_per_minute) if database is not None else None,
        uploads=UploadBudget(settings.uploads_per_minute, held, 20 * held),
        per_client=settings.connections_per_client,
        pause=settings.refusal_pause_ms / 1000,
    )
