"""Issue 49, third round: one client's share of the server's connections and streams, heartbeats
only for sessions a page opened, streams the client does not read closed, CORS closed to other
origins, no referrer, and chunked uploads counted as they arrive; against the launched app (one
for the module) and, for the stream cut-offs, uvicorn in process."""

from __future__ import annotations

import httpx
import pytest

from harness.load_app import prepared_app

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


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


def test_every_answer_says_no_referrer(app):
    """The admin link carries its secret in its address (?admin=SECRET), a participant's link its
    token: every answer, Guard's refusals included, says Referrer-Policy: no-referrer."""
    paths = ["/", "/?admin=x", "/da/", "/da/config", "/theme.css", "/nope", "/gradio_api/file/x"]
    for path in paths:
        r = httpx.get(app.url + path, timeout=30)
        assert r.headers.get("referrer-policy") == "no-referrer", (path, r.status_code, dict(r.headers))
