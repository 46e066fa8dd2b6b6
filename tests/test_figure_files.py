"""Figures as files: HTML always, PNG through kaleido and the system Chromium when asked."""

from __future__ import annotations

import shutil

import plotly.graph_objects as go
import pytest
from PIL import Image

from services.common import figure_files

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def _figs():
    return {
        "bars": go.Figure(go.Bar(x=["a", "b"], y=[1, 3]), layout={"width": 300, "height": 200}),
        "line": go.Figure(go.Scatter(x=[0, 1, 2], y=[2, 1, 2]), layout={"width": 320, "height": 240}),
    }


def test_html_only_when_png_is_off(tmp_path):
    paths = figure_files.write_figures(_figs(), tmp_path, png=False)
    assert sorted(p.name for p in paths) == ["bars.html", "line.html"]
    assert (tmp_path / "plotly.min.js").exists()  # shared, so the pages open offline
    assert not list(tmp_path.glob("*.png"))


def test_env_turns_png_off(monkeypatch):
    monkeypatch.setenv(figure_files.ENV_PNG, "0")
    assert figure_files.png_wanted() is False
    monkeypatch.setenv(figure_files.ENV_PNG, "1")
    assert figure_files.png_wanted() is figure_files.kaleido_installed()


@pytest.mark.skipif(
    not figure_files.kaleido_installed() or not shutil.which("chromium"), reason="kaleido or chromium not installed"
)
def test_png_rendered_at_scale(tmp_path):
    notes: list[str] = []
    paths = figure_files.write_figures(_figs(), tmp_path, png=True, scale=2, notes=notes)
    assert notes == []
    assert sorted(p.name for p in paths) == ["bars.html", "bars.png", "line.html", "line.png"]
    with Image.open(tmp_path / "bars.png") as im:
        assert im.format == "PNG" and im.size == (600, 400)
    with Image.open(tmp_path / "line.png") as im:
        assert im.size == (640, 480)


def test_failed_render_keeps_html_and_says_why(tmp_path, monkeypatch):
    import plotly.io as pio

    monkeypatch.setattr(figure_files, "kaleido_installed", lambda: True)

    def broken(*a, **k):
        raise RuntimeError("no browser found")

    monkeypatch.setattr(pio, "write_images", broken)
    notes: list[str] = []
    paths = figure_files.write_figures(_figs(), tmp_path, png=True, notes=notes)
    assert sorted(p.name for p in paths) == ["bars.html", "line.html"]
    assert len(notes) == 1 and "no browser found" in notes[0]
