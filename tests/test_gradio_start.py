"""What the app changes in Gradio's start-up (web/gradio_import.py, web/gradio_patches.py
no_app_until_queued): the type-stub files Gradio rewrites at import are left alone, and a page's
first FastAPI app is made at queue(), not when its `with` block ends."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.app import ROOT

pytestmark = pytest.mark.slow  # two fresh imports of gradio in subprocesses: seconds

CHILD = """
import sys, time
from web.gradio_import import leave_stubs_alone
assert leave_stubs_alone() {first}
t = time.perf_counter()
import gradio as gr
import gradio.component_meta as meta
seconds = time.perf_counter() - t
assert leave_stubs_alone() is False  # too late once gradio is imported: nothing changes
with gr.Blocks() as demo:
    box = gr.Textbox(label="words")
    gr.Button("Go").click(lambda s: s.upper(), box, box)
print(meta.create_or_modify_pyi.__name__, len(demo.blocks), round(seconds, 2))
"""


def _child(first: str) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", CHILD.format(first=first)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_gradio_imported_after_the_finder_leaves_its_stub_files_alone():
    name, blocks, _ = _child("is True")
    assert name == "_no_stub" and int(blocks) >= 2


def test_without_the_finder_gradio_rewrites_its_stubs():
    """The control: the same child without the finder keeps Gradio's own stub writer."""
    code = CHILD.replace("assert leave_stubs_alone() {first}\n", "").replace(
        "assert leave_stubs_alone() is False", "assert True"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[0] == "create_or_modify_pyi"


def test_a_page_gets_its_app_at_queue_and_gradio_is_restored():
    import gradio as gr
    import gradio.blocks
    from gradio.routes import App

    from web.gradio_patches import no_app_until_queued

    with no_app_until_queued():
        with gr.Blocks() as page:
            with gr.Blocks() as inner:  # a nested Blocks, as some tabs build
                gr.Markdown("inside")
            gr.Textbox()
        assert page.app is None and inner.app is None
        assert gradio.blocks.App.__name__ == "App"  # other attributes still Gradio's
    assert gradio.blocks.App is App
    page.queue()
    assert isinstance(page.app, App)
    with gr.Blocks() as plain:
        gr.Textbox()
    assert isinstance(plain.app, App)  # outside the block, Gradio's own behaviour
