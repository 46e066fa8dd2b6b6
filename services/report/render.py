"""The report as one self-contained HTML file: plotly's bundled JS inlined once in the head (no
CDN: it opens offline), every figure a div drawn by it, tables rounded to the paper's precision,
the notes in a short box at the top, the study's settings and the versions at the end, and CSS
for print (a section is not split across pages)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from services.common.analysis_output import rounded
from services.report.sections import Part, Section

NOTES_SHOWN = 4  # per part: the rest fold into "n more" (a box, not a wall)

# the report's stylesheet, a file as the pages' scripts are (tabs/static.py)
CSS = (Path(__file__).resolve().parents[2] / "assets" / "css" / "report.css").read_text(encoding="utf-8")


NOT_ESTIMABLE = "–"
BLANK_WHY = (
    "– : not estimable from these data (too few observations or no variation for this statistic, "
    "e.g. a group of one, or a model that could not be fitted); it fills in as the study grows."
)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _section(part: Part, s: Section, figure_html) -> str:
    anchor = f"{part.protocol}-{slug(s.number)}"
    where = f' <span class="where">(paper section {html.escape(s.where)})</span>' if s.where else ""
    head = (
        f'<figure id="{anchor}" data-item="{html.escape(s.number)}"><figcaption><b>{html.escape(s.number)}.'
        f"</b> {html.escape(s.caption)}{where}</figcaption>"
    )
    if s.table is not None:
        # a blank cell said nothing: a dash, and the sentence why (a small sample's table had several)
        blank = s.table.isna().to_numpy()
        table = rounded(s.table, s.decimals).astype(object).where(~blank, NOT_ESTIMABLE)
        body = '<div class="table-wrap">' + table.to_html(index=False, na_rep=NOT_ESTIMABLE, escape=True, border=0)
        body += "</div>" + (f'<p class="blank-why">{BLANK_WHY}</p>' if blank.any() else "")
    elif s.figure is not None:
        body = figure_html(s.figure)
    else:
        body = f'<p class="missing">{html.escape(s.missing)}</p>'
    return head + body + "</figure>"


def _notes(parts: list[Part]) -> str:
    blocks = []
    for p in parts:
        if not p.notes:
            continue
        items = [f"<li>{html.escape(n)}</li>" for n in p.notes]
        shown, rest = items[:NOTES_SHOWN], items[NOTES_SHOWN:]
        more = f"<details><summary>{len(rest)} more</summary><ul>{''.join(rest)}</ul></details>" if rest else ""
        blocks.append(f"<h3>{html.escape(p.title)}</h3><ul>{''.join(shown)}</ul>{more}")
    if not blocks:
        return ""
    return '<div class="notes" id="notes"><b>Departures from the papers and notes</b>' + "".join(blocks) + "</div>"


def render(title: str, header: list[str], parts: list[Part], settings: dict, versions: dict, files: list[str]) -> str:
    """The whole page as one string."""
    # lazy import (plotly): heavy; its bundled JS is inlined once, each figure is a div after it
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    def figure_html(fig) -> str:
        # as wide as the page allows (a phone's too): the layout's fixed width dropped, its height
        # kept; its title as text above it, which wraps at any width (plotly never wraps one)
        import plotly.graph_objects as go

        fig = go.Figure(fig)
        height = fig.layout.height or 450
        title = fig.layout.title.text or ""
        fig.update_layout(width=None, autosize=True, title_text="", margin_t=30)
        lines = [html.escape(re.sub(r"<[^>]+>", "", line)) for line in re.split(r"<br\s*/?>", title)]
        head = f'<p class="fig-title">{lines[0]}' + "".join(f"<br><small>{x}</small>" for x in lines[1:] if x)
        return (head + "</p>" if title else "") + pio.to_html(
            fig,
            full_html=False,
            include_plotlyjs=False,
            include_mathjax=False,
            config={"displaylogo": False, "responsive": True},
            default_width="100%",
            default_height=f"{height}px",
        )

    toc, body = [], []
    for p in parts:
        toc.append(f'<li><a href="#{p.protocol}">{html.escape(p.title)}</a></li>')
        body.append(f'<section id="{p.protocol}"><h2>{html.escape(p.title)}</h2>')
        if p.summary:
            body.append(f"<p>{html.escape(p.summary)}</p>")
        body += [_section(p, s, figure_html) for s in p.sections]
        body.append("</section>")
    vrows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>" for k, v in versions.items())
    flist = "".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>' for f in files)
    return "".join(
        [
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title>",
            f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>",
            f"<h1>{html.escape(title)}</h1>",
            "".join(f'<p class="meta">{html.escape(h)}</p>' for h in header),
            _notes(parts),
            f'<ul class="toc">{"".join(toc)}<li><a href="#settings">Settings and versions</a></li></ul>',
            *body,
            '<section id="settings"><h2>Settings and versions</h2><h3>Versions, models and metrics</h3>',
            f'<div class="table-wrap"><table>{vrows}</table></div><h3>The study\'s settings</h3>',
            f"<pre>{html.escape(json.dumps(settings, indent=2, ensure_ascii=False, default=str))}</pre>",
            f"<h3>Files beside this report</h3><ul>{flist}</ul></section></body></html>",
        ]
    )
