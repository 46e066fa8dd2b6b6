"""Every change the app makes to Gradio's (and the uvicorn it starts) own code or objects, in one
place. Written for gradio>=6.21,<7 (requirements.txt's pin): each relies on internals of that
range (processing_utils, route_utils, routes, state_holder, networking, Queue attributes, the
Blocks config) and is where to look first when the pin moves. Each patch is idempotent."""

import contextlib
import re

from web.sessions import session_classes
from web.site import Site
from web.uploads import MAX_FILES_PER_UPLOAD, REMOTE_FILE, UPLOAD_KINDS, is_remote_path

# Each Blocks has its own event queue, and a free queue looks for work every millisecond (gradio's
# Queue.sleep_when_free on Linux): with "/" and six role pages that was 7,000 wake-ups a second,
# about 13% of a core with nobody on the site. Every n ms per queue, n the pages served ("/" and a
# page per role: 8 with ESA's), keeps the total at one page's old rate; an event waits at most n
# ms more to start (n/2 on average). The participant pages show no progress bars, so their
# progress loop (every 10 ms) runs every 70 ms.
QUEUE_POLL_S = 0.001  # one page's queue's (gradio's), shared out among the pages
PROGRESS_POLL_S = 0.07


def quiet_queues(site: Site, seconds: float | None = None) -> None:
    seconds = seconds or QUEUE_POLL_S * len(site.blocks)
    for blocks in site.blocks:
        blocks._queue.sleep_when_free = seconds
    for page in site.pages.values():
        page._queue.progress_update_sleep_when_free = PROGRESS_POLL_S


# Gradio stores what an event's inputs point at while it preprocesses them, before any handler
# sees a token: a FileData whose path is an http(s) URL is downloaded then
# (processing_utils.async_move_files_to_cache -> Block.async_move_resource_to_block_cache ->
# async_ssrf_protected_download, which refuses private addresses but lets any public host and
# hf.co / huggingface.co through). No launch() or GRADIO_* setting turns that off (allowed_paths
# and blocked_paths only concern local paths), so the check sits in front of that step.
# Gradio makes a Blocks' FastAPI app when its `with` block ends (Blocks.__exit__), again at queue()
# and once more at launch() or mount_gradio_app: each time FastAPI and pydantic analyse the
# signature of all ~80 routes (about 0.1 s). The first is replaced by the second before anything
# reads it, for each of the seven pages and for every nested Blocks a tab builds: 14 of the 28 apps
# a start made, 1-2 s of it on the 2-core reference machine.
@contextlib.contextmanager
def no_app_until_queued():
    """While the pages are built: a Blocks' `with` block ends without making an app (its `app` is
    None until queue(), which web.serving and web.app.mount_pages call before serving)."""
    import gradio.blocks

    real = gradio.blocks.App

    class NotYet:
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def create_app(blocks, *args, **kwargs):
            return None

    gradio.blocks.App = NotYet()
    try:
        yield
    finally:
        gradio.blocks.App = real


def refuse_remote_files() -> None:
    """Every event input that carries a file whose path is a URL (any scheme) is refused with
    gr.Error before gradio fetches or copies anything; uploads (paths on this server) pass."""
    from gradio import processing_utils
    from gradio.exceptions import Error
    from gradio_client import utils as client_utils

    move = processing_utils.async_move_files_to_cache
    if getattr(move, "refuses_remote", False):
        return

    def check(d: dict) -> dict:
        if is_remote_path(d.get("path")):
            raise Error(REMOTE_FILE)
        return d

    async def guarded(data, block, postprocess=False, *args, **kwargs):
        if not postprocess:  # inputs only: the app's own outputs are local files
            plain = data.model_dump() if hasattr(data, "model_dump") else data
            # what gradio would fetch (a FileData with its meta) in any input; in a file input,
            # anything with a path (a JSON input's own {"path": ...} is left alone)
            files = (
                client_utils.is_file_obj if type(block).__name__ in UPLOAD_KINDS else client_utils.is_file_obj_with_meta
            )
            client_utils.traverse(plain, check, files)
        return await move(data, block, postprocess, *args, **kwargs)

    guarded.refuses_remote = True
    processing_utils.async_move_files_to_cache = guarded


def same_origin_cors(origins: tuple = ()) -> None:
    """Every gradio App built after this answers cross-origin requests with
    web.middleware.SameOriginCORS (a request's own origin and `origins` only) instead of gradio's
    CustomCORSMiddleware, which allowed any origin, credentials included, unless the Host was
    localhost; gradio has no option for that (strict_cors concerns the origin "null" only)."""
    from gradio import routes

    from web.middleware import SameOriginCORS

    class Configured(SameOriginCORS):
        def __init__(self, app, **gradio_options):
            super().__init__(app, origins)

    routes.CustomCORSMiddleware = Configured


def lean_sessions() -> None:
    """Every gradio App built after this keeps its sessions in CallerSessions, and a request
    without a session hash gets a LeanSession (gradio builds one for it and throws it away)."""
    from gradio import route_utils, routes

    lean, holder = session_classes()
    routes.StateHolder = holder
    route_utils.SessionState = lean


def few_files_per_upload() -> None:
    """Gradio's upload parser takes up to 1,000 files and 1,000 fields a request: a page sends one."""
    from gradio import route_utils

    parser = route_utils.GradioMultiPartParser
    if getattr(parser, "bounded", False):
        return

    class Bounded(parser):
        bounded = True

        def __init__(self, *args, **kwargs):
            kwargs.update(max_files=MAX_FILES_PER_UPLOAD, max_fields=MAX_FILES_PER_UPLOAD * 4)
            super().__init__(*args, **kwargs)

    route_utils.GradioMultiPartParser = Bounded


def upload_parts_on_loop() -> None:
    """Gradio's upload parser writes each part of a file that arrives to its temporary file in a
    worker thread, and seeks it back in another (starlette's UploadFile, for a file on disk): each
    a turn of the event loop to come back from, which the item forms' actions share
    (web/action_line.py), so a recording's upload waited several turns of actions (p95 218-405 ms
    at 16-50 clients against 27-155 before the actions ran there). A part is at most what one
    read of the socket brought (a few hundred KB at most) and a write of it to a local file takes
    microseconds: done on the loop."""
    from gradio import route_utils

    base = route_utils.GradioUploadFile
    if getattr(base, "parts_on_loop", False):
        return

    class PartsOnLoop(base):  # type: ignore[valid-type,misc]
        parts_on_loop = True

        @property
        def _in_memory(self) -> bool:  # starlette's switch between a call here and a worker thread
            return True

    route_utils.GradioUploadFile = PartsOnLoop


# A response the client does not read fills the socket's buffers, then uvicorn's, and its send
# waits for the client for ever: the stream kept its connection and its task. Writes that have
# waited write_timeout seconds (asyncio's buffer past 64 KB and not yet back under 16 KB: at 30 s,
# a client reading under 1.6 KB/s), or a started response with nothing written for STREAM_IDLE_S
# (Gradio's streams write every 15 s: its heartbeat interval), close the connection.
STREAM_IDLE_S = 60.0
OVER_SHARE_S = 1.0  # what a connection past its client's share has to send its request


def timed_protocol(header_timeout: float, per_client: int = 0, write_timeout: float = 30.0, idle_timeout: float = 0.0):
    """uvicorn's HTTP protocol class with the cut-offs of slow_clients_cut_off: header_timeout,
    write_timeout and idle_timeout (0: STREAM_IDLE_S, or four of Gradio's heartbeats if longer)
    seconds, and at most per_client open connections from one peer (0: no share) unless that
    peer forwards for others (services.admin.auth.forwards_for_others, or uvicorn's
    FORWARDED_ALLOW_IPS): a connection past it is answered 429 and closed."""
    import asyncio
    import time

    from gradio import utils
    from uvicorn.middleware.proxy_headers import _TrustedHosts

    from services.admin.auth import forwards_for_others

    idle_timeout = idle_timeout or max(STREAM_IDLE_S, 4 * utils.get_heartbeat_rate())
    # httptools (C) parses a request in a fraction of h11's (pure Python) time, on the event loop
    # that every request shares; both protocols create a request's cycle once its headers are in
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Protocol
    except ImportError:  # httptools not installed: uvicorn's pure-Python parser
        from uvicorn.protocols.http.h11_impl import H11Protocol as Protocol

    held: dict[str, int] = {}  # a direct peer -> its open connections
    proxies: list = []  # uvicorn's FORWARDED_ALLOW_IPS, read from the server's config once

    async def too_many(scope, receive, send):
        body = f"Too many connections from your address (at most {per_client} at once).".encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    class Written:
        """The transport, noting when the server last wrote to it (the idle cut-off)."""

        def __init__(self, transport):
            self.transport, self.at = transport, time.monotonic()

        def write(self, data) -> None:
            self.at = time.monotonic()
            self.transport.write(data)

        def __getattr__(self, name):
            return getattr(self.transport, name)

    class TimedHTTP(Protocol):  # type: ignore[valid-type,misc]
        header_timer: asyncio.TimerHandle | None = None
        write_timer: asyncio.TimerHandle | None = None
        idle_timer: asyncio.TimerHandle | None = None
        peer: str | None = None

        def connection_made(self, transport):
            super().connection_made(Written(transport))
            over = False
            peer = self.client[0] if self.client else None
            if per_client and peer and not self.forwards(peer):
                self.peer = peer
                held[peer] = held.get(peer, 0) + 1
                over = held[peer] > per_client
            if over:  # its request, when it comes, gets the 429 (a refusal sent before it would be lost)
                self.app = too_many
            self.header_timer = self.loop.call_later(OVER_SHARE_S if over else header_timeout, self.too_slow)

        def forwards(self, peer: str) -> bool:
            if not proxies:
                proxies.append(_TrustedHosts(self.config.forwarded_allow_ips) if self.config.proxy_headers else ())
            return forwards_for_others(peer) or peer in proxies[0]

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            waiting = self.cycle is None or self.cycle.response_complete
            if not waiting and self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None
            elif waiting and self.header_timer is None and not self.transport.is_closing():
                self.header_timer = self.loop.call_later(header_timeout, self.too_slow)
            if not waiting and self.idle_timer is None:
                self.idle_timer = self.loop.call_later(idle_timeout, self.idle)

        def too_slow(self) -> None:
            self.header_timer = None
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

        def idle(self) -> None:
            """A started response with nothing written for idle_timeout seconds is closed."""
            self.idle_timer = None
            cycle = self.cycle
            if cycle is None or cycle.response_complete or self.transport.is_closing():
                return
            quiet = time.monotonic() - self.transport.at
            if cycle.response_started and quiet >= idle_timeout:
                self.transport.close()
            else:
                self.idle_timer = self.loop.call_later(
                    idle_timeout - quiet if cycle.response_started else idle_timeout, self.idle
                )

        def pause_writing(self) -> None:
            super().pause_writing()
            if self.write_timer is None:
                self.write_timer = self.loop.call_later(write_timeout, self.not_read)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self.write_timer is not None:
                self.write_timer.cancel()
                self.write_timer = None

        def not_read(self) -> None:
            """The client read nothing of what waits for it for write_timeout seconds: dropped
            with what it left unread (closing would wait for it to read)."""
            self.write_timer = None
            self.transport.abort()

        def connection_lost(self, exc):
            for timer in (self.header_timer, self.write_timer, self.idle_timer):
                if timer is not None:
                    timer.cancel()
            self.header_timer = self.write_timer = self.idle_timer = None
            if self.peer is not None:
                left = held.get(self.peer, 1) - 1
                if left > 0:
                    held[self.peer] = left
                else:
                    held.pop(self.peer, None)
                self.peer = None
            super().connection_lost(exc)

    return TimedHTTP


def slow_clients_cut_off(
    header_timeout: float, max_connections: int, per_client: int = 0, write_timeout: float = 30.0
) -> None:
    """uvicorn (as Gradio starts it) waits for a request's headers forever, for a client to read
    a response forever, and takes any number of connections from anyone: each connection now has
    header_timeout seconds to send its request line and headers (a new one, and a kept-alive one
    from its next byte), a response write_timeout seconds for each wait on the client
    (timed_protocol) and past max_connections open connections a request is answered 503
    (uvicorn's limit_concurrency); one peer holds at most per_client of them. The body's limit
    and the share of a client behind a proxy are Guard's."""
    import uvicorn

    if getattr(uvicorn.Config, "cuts_slow_clients", False):
        return
    http = timed_protocol(header_timeout, per_client, write_timeout)

    class Config(uvicorn.Config):
        cuts_slow_clients = True

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("http", http)
            kwargs.setdefault("limit_concurrency", max_connections)
            # asyncio's own loop, not uvloop (which uvicorn takes when it is installed): uvloop
            # accepts one new connection per turn of the loop, and the item forms' actions run on
            # the loop (web/action_line.py), so fifty participants arriving at once waited up to
            # fifty turns to be let in (a first view's p95 672 against 176 ms on asyncio's loop,
            # benchmarks/README.md, issue 34's fourth pass); asyncio's accepts all that wait
            kwargs.setdefault("loop", "asyncio")
            super().__init__(*args, **kwargs)

    uvicorn.Config = Config


# A gr.State's config holds its delete_callback, a function that the JSON encoder writes as its
# repr ("<function ... at 0x7f...>"): every page's /config and HTML showed memory addresses. The
# page needs none of that.
ADDRESS = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")


def without_addresses(config):
    """The config without the values that would show a memory address (in place)."""
    if isinstance(config, dict):
        for key in [k for k, v in config.items() if callable(v) or isinstance(v, str) and ADDRESS.search(v)]:
            del config[key]
        for v in config.values():
            without_addresses(v)
    elif isinstance(config, list):
        for v in config:
            without_addresses(v)
    return config


def patient_start_probe(seconds: float = 60.0) -> None:
    """Gradio's launch() checks that it can reach its own "/" (a HEAD with a 3 s timeout) and
    gives up on the first timeout with "localhost is not accessible". A restart while
    participants' browsers reconnect all at once (a Space rebuild, a kill -9 mid-study) keeps
    the server busy past that: probe again until `seconds` have passed instead."""
    import time

    from gradio import networking

    once = networking.url_ok
    if getattr(once, "patient", False):
        return

    def url_ok(url: str) -> bool:
        deadline = time.monotonic() + seconds
        while not once(url):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)
        return True

    url_ok.patient = True
    networking.url_ok = url_ok
