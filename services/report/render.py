"""The report as one self-contained HTML file: plotly's bundled JS inlined once in the head (no
CDN: it opens offline), every figure a div drawn by it, tables rounded to the paper's precision,
the notes in a short box at the top, the study's settings and the versions at the end, and CSS
for print (a section is not split across pages)."""

from __future__ import annotations

import html
import json
import re

from services.common.analysis_output import rounded
from services.report.sections import Part, Section

NOTES_SHOWN = 4  # per part: the rest fold into "n more" (a box, not a wall)

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:2em auto;
 padding:0 1em;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:2em}
.meta{color:#555;font-size:.9em}
.notes{background:#fff8e1;border-left:4px solid #f0b400;padding:.6em 1em;margin:1em 0;font-size:.92em}
.notes h3{margin:.2em 0 .4em;font-size:1em} .notes ul{margin:.2em 0 .4em 1.2em;padding:0}
figure{margin:1.5em 0;break-inside:avoid;page-break-inside:avoid}
.table-wrap{overflow-x:auto} .plotly-graph-div{max-width:100%}
.blank-why{color:#555;font-size:.85em;margin:.3em 0}
.fig-title{color:#2a3f5f;margin:.6em 0 0;font-size:1.05em} .fig-title small{color:#555}
figcaption{margin-bottom:.5em} figcaption .where{color:#777;font-size:.85em}
table{border-collapse:collapse;font-size:.85em;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:right} th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
.missing{color:#8a4b00;background:#fdf1e6;padding:.5em .8em;border-radius:4px}
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.8em}
.toc{columns:2;font-size:.9em}
@media print{body{max-width:none;margin:0} h2{page-break-before:always} .notes{break-inside:avoid}
 details>*{display:block} a{color:inherit;text-decoration:none}}
"""


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
