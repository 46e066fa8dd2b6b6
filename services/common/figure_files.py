"""Writing an analysis's plotly figures to files: a standalone HTML page each, and a PNG each
when kaleido (>= 1, which drives the system's Chromium) can render them.

HTML pages share one plotly.min.js written beside them ("directory"), so they open offline.
PNGs are rendered in one batch (plotly.io.write_images: one browser for all the figures,
about 3-4 s in all on 2 cores rather than that per figure).

Whether PNGs are written: png=True/False, or by default TRADLAB_FIGURE_PNG ("1"/"0"), else
whenever kaleido is installed. A missing browser or a failed render is not an error: the HTML
is there, and the reason goes to the returned notes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from services.common.settings import current as current_settings

ENV_PNG = "TRADLAB_FIGURE_PNG"


def kaleido_installed() -> bool:
    return importlib.util.find_spec("kaleido") is not None


def png_wanted(png: bool | None = None) -> bool:
    if png is not None:
        return bool(png) and kaleido_installed()
    env = current_settings().figure_png.strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    return kaleido_installed()


def write_figures(
    figures: dict,
    out_dir,
    include_plotlyjs="directory",
    png: bool | None = None,
    scale: float = 2.0,
    notes: list[str] | None = None,
) -> list[Path]:
    """name.html for each figure (and name.png when png_wanted(png)); returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for name, fig in figures.items():
        p = out / f"{name}.html"
        fig.write_html(str(p), include_plotlyjs=include_plotlyjs, full_html=True)
        paths.append(p)
    if figures and png_wanted(png):
        # lazy import (plotly): heavy; needed only when figures are drawn
        import plotly.io as pio

        targets = [out / f"{name}.png" for name in figures]
        figs = list(figures.values())
        try:
            # each at the size its layout asks for (the batch call would use plotly's default)
            pio.write_images(
                figs,
                [str(t) for t in targets],
                scale=scale,
                width=[f.layout.width for f in figs],
                height=[f.layout.height for f in figs],
            )
            paths += [t for t in targets if t.exists()]
        except Exception as e:  # kaleido without a usable browser: HTML only, and say why
            if notes is not None:
                notes.append(f"PNG figures not written ({type(e).__name__}: {e}); the HTML files are there")
    return paths
