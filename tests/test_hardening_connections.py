"""Issue 49, third round: one client's share of the server's connections and streams, heartbeats
only for sessions a page opened, streams the client does not read closed, CORS closed to other
origins, no referrer, and chunked uploads counted as they arrive; against the launched app (one
for the module) and, for the stream cut-offs, uvicorn in process."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from harness.load_app import prepared_app

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

MB = 1024 * 1024


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("connections")
    a = prepared_app(
        tmp,
        2,
        extra_roles=True,
        env_extra={
            "TRADLAB_WORKER": "0",
            "TRADLAB_UPLOAD_MB_PER_CLIENT": "3",
            "GRADIO_TEMP_DIR": str(tmp / "uploads"),
        },
    )
    a.start()
    yield a
    a.stop()


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
