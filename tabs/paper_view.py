"""A protocol's results in the Analysis tab as its paper lays them out: the same Part the report
writes (services.report), so the tab and the HTML file never differ. At the top the part's
summary and a short box of departures and notes (the first few, the rest folded: the section's
notice); then each table and figure numbered and captioned in the paper's order, or the
sentence saying what is missing and what would fill it."""

from __future__ import annotations

import html

import gradio as gr

from services.report.render import NOTES_SHOWN
from services.report.sections import Part
from tabs.common import plain_markdown, shown_table


def notes_markdown(part: Part | None) -> str:
    """The part's summary line, then its notes as a short box: NOTES_SHOWN bullets, the rest
    behind "n more" (HTML details, which gr.Markdown keeps)."""
    if part is None:
        return ""
    out = [f"**{part.title}.** {part.summary}".strip()]
    if part.notes:
        shown, rest = part.notes[:NOTES_SHOWN], part.notes[NOTES_SHOWN:]
        out += ["", "**Departures from the paper and notes**", *[f"- {n}" for n in shown]]
        if rest:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in rest)
            out += ["", f"<details><summary>{len(rest)} more notes</summary><ul>{items}</ul></details>"]
    return "\n".join(out)


def caption(section) -> str:
    # the captions hold "*" (significance stars) and "_": shown as written, not as emphasis
    where = f" *(paper section {plain_markdown(section.where)})*" if section.where else ""
    return f"**{plain_markdown(section.number)}.** {plain_markdown(section.caption)}{where}"


def build(part_state: gr.State) -> None:
    """The sections of the Part held in part_state, drawn again whenever a run stores a new one
    (the notes box is the section's notice: notes_markdown)."""

    @gr.render(inputs=[part_state])
    def sections(part):
        if part is None:
            return
        for s in part.sections:
            gr.Markdown(caption(s), elem_classes=["paper-caption"])
            if s.table is not None:
                gr.Dataframe(
                    value=shown_table(s.table, s.missing or "(empty)", s.decimals),
                    interactive=False,
                    show_label=False,
                    wrap=True,
                )
            elif s.figure is not None:
                gr.Plot(value=s.figure, show_label=False)
            else:
                gr.Markdown(plain_markdown(s.missing), elem_classes=["paper-missing"])
