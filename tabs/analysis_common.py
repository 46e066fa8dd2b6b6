"""What the Analysis tab's protocol panels share: the tab's study chooser and session, handed to
each panel, and the helpers their sections use."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import gradio as gr

from services.admin import auth as admin
from services.admin import progress as admin_progress
from tabs.common import Ctx, shown_table

# what an analysis table shows before its button is pressed (never Gradio's "1 2 3")
NOT_RUN = "Not analysed yet: press the section's button above."
# the paper's precision where it prints one (services/report: Section.decimals), 3 elsewhere
PAPER_2 = 2  # paper 000 Tables 1-3; paper 001 Table 2, Table 3's scores; paper 002 Table 1's loadings
FILES_PX = 150  # a protocol's file list scrolls in a short box: the results come first


@dataclass(frozen=True)
class Panel:
    """What a protocol's panel builder (Protocol.analysis_panel) is given (it returns a
    ReportInputs when the report needs something of its panel, else None): the tab's context, the
    admin login it checks, the session box its handlers take first, and the study dropdown."""

    ctx: Ctx
    auth: admin.AdminAuth
    session: gr.Textbox
    study: gr.Dropdown

    def study_id(self, chosen: str | None) -> str | None:
        """The chosen study, else the first one (the dropdown shows it before Show is pressed)."""
        if chosen:
            return chosen
        choices = admin_progress.study_choices(self.ctx.database)
        return choices[0][1] if choices else None


@dataclass(frozen=True)
class ReportInputs:
    """What a panel gives the tab's report button, if anything: its components whose values the
    button reads, and inputs(*values) -> {name: value}, the report's inputs its protocol's
    section takes (services/report/build.py build_report's inputs: the QE audit's runs of this
    session)."""

    components: tuple[Any, ...]
    inputs: Callable[..., dict]


@contextlib.contextmanager
def run_folder(protocol: str, study_id: str | None) -> Iterator[str]:
    """A fresh private folder for one run's files (the report's layout: <folder>/<protocol>/),
    removed with whatever is in it when the run ends, refused or failed too: what the tab shows
    is moved into gradio's cache first (tabs.admin_common.served)."""
    folder = tempfile.mkdtemp(prefix=f"{protocol}-{study_id}-" if study_id else f"{protocol}-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def not_run_table(**kw) -> gr.Dataframe:
    return gr.Dataframe(value=shown_table(None, NOT_RUN), **kw)


def summary_lines(part) -> str:
    """A part's summary as the panels show it: its analysis's lines, or the sentence saying why
    there are none."""
    from tabs.common import plain_markdown

    done = part.detail
    if isinstance(done, str):
        return plain_markdown(done)
    return "\n\n".join(plain_markdown(line.strip()) for line in done.lines())


def part_panel(
    shared: Panel,
    title: str,
    name: str,
    button: str,
    build: Callable,
    labels: tuple[str, ...] = (),
    view: Callable | None = None,
    what: str = "",
) -> None:
    """A protocol's panel that shows the report's part for the chosen study (ESA's, MQM's, side
    by side's, the listening test's): its button, the part from build(database, study_id, folder)
    (so the tab and the HTML file never differ), its CSV files, and in a closed box the summary and
    one table per label: view(part) -> (the summary, a shown table per label); without a view the
    summary's lines alone. what: the analysis as a failure names it ("The ESA analysis failed")."""
    from tabs import paper_view
    from tabs.admin_common import admin_only, served, shows_failure

    with gr.Accordion(title, open=False, elem_id=f"{name}-analysis"):
        run = gr.Button(button)
        notice = gr.Markdown(NOT_RUN, elem_classes=["paper-notes"])
        files_out = gr.File(label="Tables (CSV)", file_count="multiple", interactive=False, height=FILES_PX)
        part_state = gr.State(None)
        paper_view.build(part_state)  # the part's numbered tables, as the report has them
        with gr.Accordion("Every table of the analysis", open=False):
            summary = gr.Markdown()
            tables = [not_run_table(label=label, interactive=False) for label in labels]

    @admin_only(shared.auth, notice)
    @shows_failure(notice, what or f"The {title} analysis")
    def analyse(sess, study_id, request: gr.Request):
        study_id = shared.study_id(study_id)
        if not study_id:
            why = "No study imported yet."
            return {notice: why, part_state: None, files_out: None, summary: why}
        # its files are served from gradio's cache and its folder is removed (run_folder)
        with run_folder(name, study_id) as folder:
            part = build(shared.ctx.database, study_id, folder)
            files = served(part.files, folder) if part.files else None
        lines, values = view(part) if view else (summary_lines(part), [])
        return {
            notice: paper_view.notes_markdown(part),
            part_state: part,
            files_out: files,
            summary: lines,
            **dict(zip(tables, values)),
        }

    analyse.__name__ = f"run_{name}"  # the event's name, as the other panels'
    outputs = [notice, part_state, files_out, summary, *tables]
    run.click(analyse, [shared.session, shared.study], outputs, api_visibility="private")
