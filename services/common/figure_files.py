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


def wrapped_title(fig, chars: int | None = None):
    """The figure with its title broken into lines (<br>) of at most `chars` characters (default:
    what its width holds, about 9 px a character): plotly never wraps a title and cut a long one
    at the figure's edge ("... (system outpu"). Each of its lines (<br>) is wrapped on its own."""
    import re
    import textwrap

    text = fig.layout.title.text
    chars = chars or max(30, int((fig.layout.width or 700) / 9))
    if not text:
        return fig
    lines = re.split(r"<br\s*/?>", text)
    if all(len(re.sub(r"<[^>]+>", "", line)) <= chars for line in lines):
        return fig
    # a line's markup (<sup>, <b>) stays whole: textwrap breaks only at spaces
    text = "<br>".join("<br>".join(textwrap.wrap(line, chars)) or line for line in lines)
    # the title lives in the top margin: room for every line (about 20 px each), else it covers the plot
    top = max(fig.layout.margin.t if fig.layout.margin.t is not None else 100, 30 + 24 * (text.count("<br>") + 1))
    fig.update_layout(
        title_text=text, title_y=1, title_yref="container", title_yanchor="top", title_pad_t=12, margin_t=top
    )
    return fig


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
    figures = {name: wrapped_title(fig) for name, fig in figures.items()}
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
