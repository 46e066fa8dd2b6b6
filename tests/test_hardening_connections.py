"""Issue 49, third round: one client's share of the server's connections and streams, heartbeats
only for sessions a page opened, streams the client does not read closed, CORS closed to other
origins, no referrer, and chunked uploads counted as they arrive; against the launched app (one
for the module) and, for the stream cut-offs, uvicorn in process."""

from __future__ import annotations

import socket
import statistics
import threading
import time
import uuid

import httpx
import pytest

from harness.load_app import prepared_app
from tests.helpers.app import AppClient

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

SHARE = 100  # TRADLAB_CONNECTIONS_PER_CLIENT's default (checked below)
MB = 1024 * 1024
STRANGER = "203.0.113.9"  # a visitor behind a proxy on this machine (as a Space's visitors are)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("connections")
    a = prepared_app(
        tmp,
        2,
        extra_roles=True,
        env_extra={
            "TRADLAB_WORKER": "0",
            "TRADLAB_CONNECTIONS_PER_CLIENT": str(SHARE),  # the default, which RunningApp raises
            "TRADLAB_UPLOAD_MB_PER_CLIENT": "3",
            "GRADIO_TEMP_DIR": str(tmp / "uploads"),
        },
    )
    a.start()
    yield a
    a.stop()


def first_line(s: socket.socket) -> str:
    """The status line a raw request got ("closed" when the server closed it unanswered)."""
    try:
        data = s.recv(256)
    except (socket.timeout, ConnectionResetError) as e:
        return type(e).__name__
    return data.split(b"\r\n", 1)[0].decode() if data else "closed"


def get_raw(app, path: str, headers: str = "", source: str | None = None) -> socket.socket:
    s = socket.socket()
    if source:
        s.bind((source, 0))
    s.settimeout(30)  # a loaded 2-core CI machine once took more than 10 s to answer the first
    s.connect(("127.0.0.1", app.port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    return s


def view_ms(app, token: str, n: int) -> list[float]:
    out = []
    with httpx.Client(base_url=app.url, timeout=30) as c:
        for _ in range(n):
            t0 = time.perf_counter()
            r = c.post("/da/gradio_api/api/view", json={"data": [token, "da"], "session_hash": "honest-view"})
            out.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200 and r.json()["data"][0]["status"] == "item", r.text[:300]
    return out


def test_one_address_holds_only_its_share_of_streams_and_participants_are_served(app):
    """Before, one address opened 999 heartbeat streams (each for any session hash, never
    ending) and every participant got 503 while it held them. Now a client (throttle_key: a
    proxy's visitor by the address the proxy appended, a direct peer by its own address, its
    X-Forwarded-For ignored) has at most TRADLAB_CONNECTIONS_PER_CLIENT (100) requests and
    connections at once: past them 429, while a participant's page is served as before."""
    honest = app.tokens("da")[0]
    quiet = view_ms(app, honest, 10)
    # the stranger's sessions: a stranger's event on "/" that Gradio runs, one session each
    sessions = [uuid.uuid4().hex[:11] for _ in range(SHARE + 30)]
    with httpx.Client(base_url=app.url, headers={"x-forwarded-for": STRANGER}, timeout=30) as c:
        for sid in sessions:
            assert c.post("/gradio_api/api/admin_repair", json={"data": ["x", None], "session_hash": sid}).is_success
    t0 = time.perf_counter()
    streams = [get_raw(app, f"/gradio_api/heartbeat/{sid}", f"X-Forwarded-For: {STRANGER}\r\n") for sid in sessions]
    said = [first_line(s) for s in streams]
    opened_s = time.perf_counter() - t0
    held = said.count("HTTP/1.1 200 OK")
    assert held == SHARE and said.count("HTTP/1.1 429 Too Many Requests") == 30, {k: said.count(k) for k in said}
    # meanwhile a participant's page: gradio_client (no Origin, its own heartbeat) and plain views
    t0 = time.perf_counter()
    view = AppClient(app.url).predict(honest, "da", api_name="/view")
    client_ms = (time.perf_counter() - t0) * 1000
    assert view["status"] == "item", view
    during = view_ms(app, honest, 10)
    # a direct client: its forged X-Forwarded-For names no one, its connections are counted as
    # they open (one that sends nothing holds one too)
    direct = [get_raw(app, "/config", f"X-Forwarded-For: 10.0.0.{k % 250}\r\n", "127.0.0.2") for k in range(SHARE + 20)]
    said_direct = [first_line(s) for s in direct]
    assert said_direct.count("HTTP/1.1 200 OK") == SHARE, {k: said_direct.count(k) for k in said_direct}
    assert said_direct.count("HTTP/1.1 429 Too Many Requests") == 20, {k: said_direct.count(k) for k in said_direct}
    for s in streams + direct:
        s.close()
    time.sleep(0.5)
    again = get_raw(app, f"/gradio_api/heartbeat/{sessions[-1]}", f"X-Forwarded-For: {STRANGER}\r\n")
    assert first_line(again) == "HTTP/1.1 200 OK"  # a share given back is there to take again
    again.close()
    from web.guard import HEARTBEAT_WAIT_S

    print(
        f"\none address: {held} of {len(sessions)} streams held (opened in {opened_s:.2f} s, forged heartbeats "
        f"wait {HEARTBEAT_WAIT_S:g} s at most), a direct peer {SHARE} of {len(direct)} connections; honest view "
        f"p50 {statistics.median(quiet):.1f} ms quiet, {statistics.median(during):.1f} ms while held "
        f"(max {max(during):.1f}); gradio_client's first view {client_ms:.0f} ms"
    )
    assert statistics.median(during) < 3 * statistics.median(quiet) + 20, (quiet, during)
    from services.common.settings import Settings

    assert Settings.from_env({}).connections_per_client == SHARE  # the default the module runs with


def heartbeat(app, page: str, sid: str, got: dict, headers: dict | None = None) -> threading.Thread:
    """A heartbeat opened in the background, as a page opens it: its status and first line in got."""

    def run():
        t0 = time.perf_counter()
        with httpx.stream("GET", f"{app.url}{page}/gradio_api/heartbeat/{sid}", headers=headers, timeout=30) as r:
            got["status"], got["s"] = r.status_code, time.perf_counter() - t0
            lines = r.iter_lines()  # kept: a dropped iterator closes the stream
            got["line"] = next(lines, "")
            got["hold"].wait(30)

    got["hold"] = threading.Event()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_heartbeat_needs_a_session_its_page_opened(app):
    """Gradio's heartbeat streamed "ALIVE" to any session hash for ever. A page opens it together
    with its first event (gradio's client: open_heartbeat() in submit()), so it may arrive first:
    it is served once the page's state holder knows the session (a valid link vouched for it,
    or Gradio ran an event for it) and refused (404) after HEARTBEAT_WAIT_S otherwise; a second
    heartbeat of one session is refused at once."""
    t0 = time.perf_counter()
    with httpx.stream("GET", f"{app.url}/da/gradio_api/heartbeat/{uuid.uuid4().hex[:11]}", timeout=30) as r:
        forged_s = time.perf_counter() - t0
        assert r.status_code == 404, (r.status_code, next(r.iter_lines(), ""))
    from web.guard import HEARTBEAT_WAIT_S

    assert forged_s < HEARTBEAT_WAIT_S + 2, forged_s

    honest = app.tokens("da")[1]
    sid, got = uuid.uuid4().hex[:11], {}
    beat = heartbeat(app, "/da", sid, got)
    time.sleep(0.3)  # the heartbeat first, then the page's first event with its link's token
    view = httpx.post(f"{app.url}/da/gradio_api/api/view", json={"data": [honest, "da"], "session_hash": sid})
    assert view.status_code == 200, view.text[:200]
    deadline = time.time() + 10
    while "line" not in got and time.time() < deadline:
        time.sleep(0.05)
    assert got.get("status") == 200 and got.get("line") == "data: ALIVE", got
    second = httpx.get(f"{app.url}/da/gradio_api/heartbeat/{sid}", timeout=10)
    assert second.status_code == 409, second.text[:100]
    got["hold"].set()
    beat.join(10)

    # "/": a stranger's event Gradio runs (the team page's own, before a login) opens the session
    sid, got = uuid.uuid4().hex[:11], {}
    beat = heartbeat(app, "", sid, got)
    time.sleep(0.3)
    httpx.post(f"{app.url}/gradio_api/api/admin_repair", json={"data": ["x", None], "session_hash": sid})
    deadline = time.time() + 10
    while "line" not in got and time.time() < deadline:
        time.sleep(0.05)
    assert got.get("status") == 200 and got.get("line") == "data: ALIVE", got
    got["hold"].set()
    beat.join(10)
    print(f"\nforged heartbeat refused after {forged_s:.2f} s; the page's heartbeat served after {got['s']:.2f} s")


def test_real_pages_get_their_heartbeat_in_the_browser(app, browser):
    """A participant's page (/da/?t=) and the team page opened with the admin link, in Chromium:
    each page's heartbeat is answered 200 (gradio's frontend opens it with the page's first
    event) and the page shows its task."""
    pages = {"da": f"{app.url}/da/?t={app.tokens('da')[1]}", "team": app.admin_url}
    seen: dict[str, list[int]] = {}
    for name, url in pages.items():
        page = browser.new_page()
        page.on("response", lambda r, name=name: "/heartbeat/" in r.url and seen.setdefault(name, []).append(r.status))
        page.goto(url)
        deadline = time.time() + 30
        while not seen.get(name) and time.time() < deadline:
            page.wait_for_timeout(200)
        page.close()
    assert seen == {"da": [200], "team": [200]}, seen


def test_a_stream_the_client_does_not_read_is_closed():
    """uvicorn waited for ever on a client that reads nothing of a stream (its buffers full) and
    kept a stream that sends nothing. timed_protocol drops a connection whose writes waited
    write_timeout seconds and closes a started response with nothing written for idle_timeout
    seconds; a stream the client reads, writing more often than that, stays open. In process:
    uvicorn with the protocol and a three-route app."""
    import asyncio

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from web.gradio_patches import timed_protocol

    ended: dict[str, float] = {}

    def stream(name: str, chunk: bytes, pause: float):
        async def body():
            try:
                yield b"data: start\n\n"
                while True:
                    await asyncio.sleep(pause)
                    yield chunk
            finally:
                ended[name] = time.monotonic()

        return lambda request: StreamingResponse(body(), media_type="text/event-stream")

    routes = [
        Route("/flood", stream("flood", b"x" * 65536, 0)),  # the client reads none of it
        Route("/quiet", stream("quiet", b"", 3600)),  # nothing after its start
        Route("/beat", stream("beat", b"data: ALIVE\n\n", 0.3)),  # read by its client
    ]
    port = free_port()
    config = uvicorn.Config(
        Starlette(routes=routes),
        host="127.0.0.1",
        port=port,
        http=timed_protocol(5, write_timeout=1.0, idle_timeout=1.5),
        lifespan="off",
        log_level="warning",
        loop="asyncio",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 10
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        flood = socket.socket()
        flood.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        flood.connect(("127.0.0.1", port))
        flood.sendall(b"GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
        t0 = time.monotonic()
        quiet = socket.create_connection(("127.0.0.1", port), timeout=10)
        quiet.sendall(b"GET /quiet HTTP/1.1\r\nHost: x\r\n\r\n")
        beat = socket.create_connection(("127.0.0.1", port), timeout=10)
        beat.sendall(b"GET /beat HTTP/1.1\r\nHost: x\r\n\r\n")
        read, beat_open = b"", True
        while time.monotonic() - t0 < 4:
            read += beat.recv(4096)  # read as it comes
            if not read:
                beat_open = False
                break
        deadline = time.time() + 20
        while ("flood" not in ended or "quiet" not in ended) and time.time() < deadline:
            time.sleep(0.1)
        assert "flood" in ended and "quiet" in ended, ended
        quiet_end = b"".join(iter(lambda: quiet.recv(4096), b""))  # the server closed it: recv ends
        assert b"data: start" in quiet_end
        assert beat_open and "beat" not in ended and read.count(b"ALIVE") >= 8, (beat_open, ended, read[-200:])
        print(
            f"\nunread stream dropped after {ended['flood'] - t0:.1f} s (write timeout 1 s), quiet one closed "
            f"after {ended['quiet'] - t0:.1f} s (idle timeout 1.5 s); a read stream stayed open 4 s"
        )
        for s in (flood, quiet, beat):
            s.close()
    finally:
        server.should_exit = True
        thread.join(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_other_origins_cannot_read_the_app_and_its_own_can(app):
    """Gradio's CORS middleware gave any Origin Access-Control-Allow-Origin with credentials
    whenever the Host was not localhost (a page elsewhere could read a participant's answers
    with their cookies). Now a foreign Origin gets no CORS header on any route (its preflight a
    403), the app's own origin and those TRADLAB_FRAME_ANCESTORS names (a Space: huggingface.co)
    are allowed; a request without an Origin (gradio_client) is untouched."""
    host = {"host": "study.example.org"}
    evil = {**host, "origin": "https://evil.example"}
    for path in ("/config", "/da/config", "/gradio_api/info", "/da/", "/nope"):
        r = httpx.get(app.url + path, headers=evil, timeout=30)
        cors = {k: v for k, v in r.headers.items() if k.startswith("access-control")}
        assert cors == {} and "origin" in r.headers.get("vary", "").lower(), (path, r.status_code, cors)
    asked = {"access-control-request-method": "POST", "access-control-request-headers": "content-type"}
    for path in ("/gradio_api/queue/join", "/da/gradio_api/api/view"):
        r = httpx.options(app.url + path, headers={**evil, **asked})
        assert r.status_code == 403 and "access-control-allow-origin" not in r.headers, (path, r.headers)
    own = {**host, "origin": "https://study.example.org"}
    r = httpx.get(app.url + "/da/config", headers=own, timeout=30)
    assert r.headers.get("access-control-allow-origin") == "https://study.example.org", r.headers
    r = httpx.options(app.url + "/da/gradio_api/api/view", headers={**own, **asked})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://study.example.org"
    from services.common.settings import Settings
    from web.middleware import trusted_origins

    space = Settings.from_env({"SPACE_ID": "lab/tradlab", "SPACE_HOST": "lab-tradlab.hf.space"}, data_root="/none")
    assert trusted_origins(space) == ("https://lab-tradlab.hf.space", "https://huggingface.co")


def test_every_answer_says_no_referrer(app):
    """The admin link carries its secret in its address (?admin=SECRET), a participant's link its
    token: every answer, Guard's refusals included, says Referrer-Policy: no-referrer."""
    paths = ["/", "/?admin=x", "/da/", "/da/config", "/theme.css", "/nope", "/gradio_api/file/x"]
    for path in paths:
        r = httpx.get(app.url + path, timeout=30)
        assert r.headers.get("referrer-policy") == "no-referrer", (path, r.status_code, dict(r.headers))


def chunked_upload(app, size: int, client: str) -> tuple[int | str, str]:
    """A file of `size` bytes uploaded to the sender's page without a Content-Length."""
    boundary = "tradlab-chunked"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="r.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\nRIFF"
    ).encode()

    def body():
        yield head
        for _ in range(size // (64 * 1024)):
            yield b"\0" * (64 * 1024)
        yield f"\r\n--{boundary}--\r\n".encode()

    try:
        r = httpx.post(
            f"{app.url}/sender/gradio_api/upload",
            content=body(),
            headers={"content-type": f"multipart/form-data; boundary={boundary}", "x-forwarded-for": client},
            timeout=60,
        )
    except httpx.TransportError as e:  # cut off while sending
        return type(e).__name__, str(e)
    return r.status_code, r.text


def test_a_chunked_upload_counts_as_it_arrives(app):
    """An upload without a Content-Length counted as 0 bytes against its client's allowance
    (TRADLAB_UPLOAD_MB_PER_CLIENT, 3 MB here): a 5 MB one was stored, and any number arriving at
    once passed. Now its bytes count as they arrive, and past the allowance it is cut off with
    a 429; a sender elsewhere still uploads."""
    t0 = time.perf_counter()
    status, text = chunked_upload(app, 5 * MB, "203.0.113.20")
    ms = (time.perf_counter() - t0) * 1000
    assert status == 429 and "limit is 3 MB" in text, (status, text[:200])
    stored = [p for p in (app.tmp / "uploads").rglob("*") if p.is_file() and p.stat().st_size > 4 * MB]
    assert stored == [], stored
    # two at once from one client, 2 MB each: the second passes the allowance while both arrive
    said: list = []
    both = [threading.Thread(target=lambda: said.append(chunked_upload(app, 2 * MB, "203.0.113.21"))) for _ in "ab"]
    for t in both:
        t.start()
    for t in both:
        t.join(60)
    assert sorted(str(s) for s, _ in said) == ["200", "429"], said
    status, text = chunked_upload(app, 1 * MB, "203.0.113.22")  # another sender
    assert status == 200, text[:200]
    print(f"\n5 MB chunked upload past a 3 MB allowance: 429 after {ms:.0f} ms; two 2 MB at once: one taken")
