"""The served app's event loop (web/gradio_patches.py): asyncio's own, and an upload's parts
written on it, since the item forms' actions run there (web/action_line.py)."""

from __future__ import annotations

import asyncio
import tempfile
import threading

import uvicorn

from web.gradio_patches import slow_clients_cut_off, upload_parts_on_loop


async def _app(scope, receive, send):  # an ASGI app for uvicorn.Config to hold
    pass


def test_uvicorn_runs_on_asyncios_loop_even_with_uvloop_installed():
    slow_clients_cut_off(30.0, 1000)
    assert uvicorn.Config(app=_app).loop == "asyncio"
    assert uvicorn.Config(app=_app, loop="uvloop").loop == "uvloop"  # an explicit choice stands


def test_an_uploads_parts_are_written_on_the_loop_not_in_worker_threads(monkeypatch):
    import starlette.datastructures
    from gradio import route_utils

    upload_parts_on_loop()
    upload_parts_on_loop()  # once only

    def no_thread(*args, **kwargs):
        raise AssertionError("a part went to a worker thread")

    monkeypatch.setattr(starlette.datastructures, "run_in_threadpool", no_thread)
    with tempfile.NamedTemporaryFile() as f:
        part = route_utils.GradioUploadFile(f, size=0, filename="a.wav")
        assert type(part).__mro__[1].__name__ == "GradioUploadFile"

        async def write():
            me = threading.get_ident()
            await part.write(b"RIFF")
            await part.write(b"data")
            await part.seek(0)
            return threading.get_ident() == me, await part.read()

        assert asyncio.run(write()) == (True, b"RIFFdata")
        assert part.size == 8


def test_the_start_ups_objects_are_left_out_of_later_garbage_collections():
    import gc

    from web.serving import freeze_start_up_objects

    made_at_start = [{"config": k} for k in range(1000)]
    try:
        freeze_start_up_objects()
        assert gc.get_freeze_count() >= len(made_at_start)
    finally:
        gc.unfreeze()
