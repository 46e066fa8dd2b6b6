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
