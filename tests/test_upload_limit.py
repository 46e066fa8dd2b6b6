"""Uploads over TRADLAB_MAX_UPLOAD_MB are refused by the server before they are stored."""
from __future__ import annotations

import httpx
import pytest

from tests.conftest import RunningApp


@pytest.fixture(scope="module")
def small_limit_app(tmp_path_factory):
    app = RunningApp(tmp_path_factory.mktemp("limit"), {"TRADLAB_MAX_UPLOAD_MB": "1", "TRADLAB_WORKER": "0"})
    app.start()
    yield app
    app.stop()


def _upload(app, size: int) -> httpx.Response:
    files = {"files": ("x.wav", b"RIFF" + b"\0" * (size - 4), "audio/wav")}
    return httpx.post(f"{app.url}/gradio_api/upload", files=files, timeout=60)


def test_a_file_over_the_limit_is_refused(small_limit_app):
    big = _upload(small_limit_app, 2 * 1024 * 1024)
    assert big.status_code == 413, big.text
    assert "1.0 MB" in big.text or "size" in big.text.lower()
    small = _upload(small_limit_app, 200 * 1024)
    assert small.status_code == 200, small.text
