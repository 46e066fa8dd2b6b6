"""Uploads over TRADLAB_MAX_UPLOAD_MB are refused by the server before they are stored."""

from __future__ import annotations

import httpx
import pytest

from harness.app import RunningApp


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


def test_an_upload_no_event_used_is_deleted_after_its_time(tmp_path):
    """Issue 30.2: uploads an event did not use are removed after UNUSED_UPLOAD_S (here 0.2 s),
    not after gradio's hour; a fresh one stays."""
    import os
    import time
    from types import SimpleNamespace

    from web.uploads import expire_unused_uploads

    old, new = tmp_path / "old.wav", tmp_path / "new.wav"
    old.write_bytes(b"RIFF")
    new.write_bytes(b"RIFF")
    os.utime(old, (time.time() - 5, time.time() - 5))
    page = SimpleNamespace(upload_file_set={str(old), str(new)})
    expire_unused_uploads(SimpleNamespace(blocks=[page]), seconds=2, every=0.1)
    time.sleep(0.5)
    assert not old.exists() and new.exists()
    assert page.upload_file_set == {str(new)}
