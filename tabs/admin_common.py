"""Pieces the admin tab's modules share: the admin check of every event, the caller's address
and paged tables."""

from __future__ import annotations

import functools
import inspect
import logging
import math
from dataclasses import dataclass
from typing import Callable

import gradio as gr

from services.admin import auth as admin
from services.common.paging import Page
from tabs.common import shown_table

log = logging.getLogger(__name__)


@dataclass
class SectionUI:
    """A section of the Admin tab that its refresh fills (on login, Refresh and a change of study):
    a protocol's own (Protocol.admin_section, services/common/hookspecs.py AdminSection)."""

    inputs: list  # what refresh() reads after the study: its pages, its filters
    outputs: list  # what refresh() updates
    refresh: Callable[..., dict]  # refresh(study_id, *values of inputs), after the admin's check
    initial: list  # the values of inputs on login (page 1, no filter)


def details_for_admin(fn):
    """An event handler whose unexpected exception the admin sees in full (a gr.Error with its
    type and text) once the handler's AdminAuth.check has passed; before that (a stranger, a
    participant) it stays a plain exception, which gradio (show_error=False) shows only as
    "Error"."""

    @functools.wraps(fn)
    def handler(*args, **kwargs):
        try:
            return admin.run_checked(fn, *args, **kwargs)
        except gr.Error:
            raise
        except Exception as e:
            if getattr(e, "admin_checked", False):
                raise gr.Error(f"{type(e).__name__}: {e}", title="Admin: unexpected error") from e
            raise

    handler.shows_admin_details = True  # tests/test_admin_hardening.py checks every admin event has it
    return handler


class NotANumber(str):
    """What a blank_number field holds when its text is no number: the message naming the field,
    which admin_only answers with after its admin check (a stranger learns nothing of the form)."""


def blank_number(
    *,
    blank=None,
    zero_is_blank: bool = False,
    precision: int | None = None,
    value=None,
    minimum=None,
    maximum=None,
    step=None,
    **kwargs,
) -> gr.Textbox | gr.Number:
    """A number field whose blank means `blank` (the default it stands for). Gradio 6's Number
    draws a missing value as 0 and sends 0 until something is typed, so the admin saw "0" in
    fields whose blank means "the study's alpha" or "eigenvalue > 1": a field with no value is a
    one-line text field read as a number, shown blank; one with a value stays Gradio's Number.
    Blank, null and NaN are blank, and so is 0 where zero_is_blank
    (an id, a page, a count, which start at 1); text that is no number is refused naming the
    field. No range check here (Gradio's "Value 0 is less than minimum value 1" named no field):
    the handler checks the range and says which field is wrong."""
    label = kwargs.get("label") or "A number field"
    if value is not None:  # never shown blank (a page, a count): Gradio's Number, its spinner and keypad
        field = gr.Number(value=value, precision=precision, minimum=minimum, maximum=maximum, step=step, **kwargs)
    else:
        field = gr.Textbox(value=None, max_lines=1, **kwargs)

    def preprocess(payload):
        if payload is None or isinstance(payload, bool):
            return blank
        if isinstance(payload, (int, float)):
            number = float(payload)
        else:
            text = str(payload).strip()
            if not text:
                return blank
            try:
                number = float(text)
            except ValueError:  # said once the admin check has passed (admin_only), not before it
                return NotANumber(f"{label}: {text[:40]!r} is not a number.")
        if math.isnan(number) or (zero_is_blank and number == 0):
            return blank
        if precision == 0:
            return int(round(number))
        return round(number, precision) if precision is not None else number

    field.preprocess = preprocess
    return field


def shows_failure(out, what: str, refused: tuple = (ValueError,)):
    """An analysis handler whose failure is a message in `out`, never Gradio's bare "Error" in
    every output: one of `refused` (bad input: InputError, a field out of range) as
    "**<what> could not run:** <message>"; anything else is logged with its traceback and shown
    as "**The analysis failed:** <type>: <message>". Put it under admin_only, so only a checked
    admin sees the text."""

    def decorate(fn):
        @functools.wraps(fn)
        def handler(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except gr.Error:
                raise
            except refused as e:
                return {out: f"**{what} could not run:** {e}"}
            except Exception as e:
                log.exception("%s: the analysis failed", what)
                return {out: f"**The analysis failed:** {type(e).__name__}: {e} ({what})"}

        return handler

    return decorate


def admin_only(auth: admin.AdminAuth, out=None, *, refused: Callable[[str], object] | None = None):
    """The admin check of an event handler: fn runs only once auth.check(sess, host(request))
    has passed, on the handler's own parameters `sess` and `request` (by name, wherever they
    are: gradio injects the request by its position in fn's signature, which the wrapper keeps).
    A refusal returns its message: {out: message} when `out` is a component, refused(message)
    when given, else the message itself. The handler then goes through details_for_admin.

        @admin_only(auth, notice)
        def handler(sess, study_id, request: gr.Request): ...
    """

    def decorate(fn):
        signature = inspect.signature(fn)
        if not {"sess", "request"} <= set(signature.parameters):
            raise TypeError(f"admin_only: {fn.__name__} needs the parameters sess and request")

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            given = signature.bind_partial(*args, **kwargs).arguments
            try:
                auth.check(given.get("sess"), host(given.get("request")))
            except PermissionError as e:
                if refused is not None:
                    return refused(str(e))
                return str(e) if out is None else {out: str(e)}
            wrong = next((v for v in [*args, *kwargs.values()] if isinstance(v, NotANumber)), None)
            if wrong is not None:  # a number field's text that is no number (blank_number)
                if refused is not None:
                    return refused(str(wrong))
                return str(wrong) if out is None else {out: str(wrong)}
            return fn(*args, **kwargs)

        return details_for_admin(checked)

    return decorate


def download(
    auth: admin.AdminAuth, file_out, message_out, make: Callable, errors=(ValueError,), failed: str = ""
) -> Callable:
    """The handler of a file the admin downloads: handler(request, session, study, *values) checks
    the admin session and that a study is picked, then make(study, *values) -> (path, note).
    A refusal or one of `errors` leaves no file and says why (after `failed`)."""

    @admin_only(auth, refused=lambda message: {file_out: None, message_out: message})
    def handler(request: gr.Request, sess, study_id, *values):
        if not study_id:
            return {file_out: None, message_out: "Pick a study first."}
        try:
            path, note = make(study_id, *values)
        except errors as e:
            return {file_out: None, message_out: f"{failed}{e}"}
        return {file_out: hand_over(path), message_out: note}

    return handler


def _cache_folder():
    """A fresh 0700 folder in gradio's cache, which gradio serves from without a copy and expires
    (app.UPLOADS_EXPIRE: an hour after, and when the server stops)."""
    import tempfile
    from pathlib import Path

    from gradio.utils import get_upload_folder

    cache = Path(get_upload_folder())
    cache.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="download-", dir=cache))


def hand_over(path) -> str:
    """Moves a file made for download from its private temporary folder into gradio's cache (a
    fresh 0700 folder there), and removes that temporary folder when nothing else is left in it.
    Gradio serves the file from there without copying it and deletes it with the rest of its
    cache (app.UPLOADS_EXPIRE: an hour after, and when the server stops), so no copy of links,
    ids or an export stays behind in a temporary folder."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    src = Path(path)
    target = _cache_folder() / src.name
    shutil.move(str(src), target)
    os.chmod(target, 0o600)
    if src.parent.name.startswith(("tradlab-", "questions-")) and Path(tempfile.gettempdir()) in src.parent.parents:
        try:
            src.parent.rmdir()  # only an emptied folder of its own
        except OSError:
            pass
    return str(target)


def served(files, folder) -> list[str]:
    """The files a run wrote under `folder` moved, as hand_over moves a download, into one fresh
    folder of gradio's cache, each at its path under `folder` (two protocols' tables may share a
    name; the report's links to them stay right): what gr.File is given then has no copy left in
    the temporary folder (gradio had copied the report and left the study's results and settings
    there for ever). The caller removes `folder` (tabs.analysis_common.run_folder)."""
    import os
    import shutil
    from pathlib import Path

    root, target, out = Path(folder).resolve(), _cache_folder(), []
    for f in map(Path, files):
        dest = target / f.resolve().relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(f), dest)
        os.chmod(dest, 0o600)
        out.append(str(dest))
    return out


def host(request: gr.Request | None) -> str | None:
    if request is None or not request.client:
        return None
    return admin.client_address(request.client.host, getattr(request, "headers", None))


@dataclass
class Pager:
    """A table shown one page at a time: the rows, a page number, previous / next, and
    'Page 2 of 5 · 230 rows'."""

    table: gr.Dataframe
    page: gr.Number
    info: gr.Markdown
    prev: gr.Button
    next: gr.Button
    empty: str = "No rows yet."  # what the table says with no rows (never Gradio's "1 2 3")
    headers: dict | None = None  # the stored column names as the table shows them (readable)

    @property
    def outputs(self) -> list:
        return [self.table, self.page, self.info]

    def show(self, p: Page) -> dict:
        rows = p.rows.rename(columns=self.headers) if self.headers and p.rows is not None else p.rows
        return {self.table: shown_table(rows, self.empty), self.page: p.page, self.info: p.label}

    def wire(
        self, auth: admin.AdminAuth, session, inputs: list, load: Callable[..., Page], message, api_name: str
    ) -> Callable:
        """load(page_no, *values of inputs) -> Page. Typing a page and Enter is the API event
        (admin_<name>_page: session, page, *inputs); previous / next are private. Returns a
        handler that reloads the current page and leaves the message alone (to chain after an
        action whose message must stay)."""

        def turn(delta: int, clear: bool = True):
            # the request comes first: gradio passes it only to parameters before *values
            @admin_only(auth, message)
            def handler(request: gr.Request, sess, page_no, *values):
                try:
                    shown = self.show(load(_page_no(page_no) + delta, *values))
                except (PermissionError, ValueError) as e:
                    return {message: str(e)}
                return {message: "", **shown} if clear else shown

            return handler

        outs = [message, *self.outputs]
        self.page.submit(turn(0), [session, self.page, *inputs], outs, api_name=api_name, api_visibility="undocumented")
        self.prev.click(turn(-1), [session, self.page, *inputs], outs, api_visibility="private")
        self.next.click(turn(+1), [session, self.page, *inputs], outs, api_visibility="private")
        return turn(0, clear=False)


def pick_row(table: gr.Dataframe, field):
    """Clicking a row of `table` puts its first column (the id) into `field`, so the admin picks
    a participant, recording, job or draft by clicking rather than typing its number. Only
    table values the admin already sees travel; the action buttons check the session."""

    def picked(evt: gr.SelectData):
        row = evt.row_value or []
        return row[0] if row and row[0] not in ("", None) else gr.skip()

    return table.select(picked, None, field, api_visibility="private")


def _page_no(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 1


def pager(label: str, empty: str = "No rows yet.", headers: dict | None = None, **table_kw) -> Pager:
    table = gr.Dataframe(label=label, interactive=False, value=shown_table(None, empty), **table_kw)
    with gr.Row(equal_height=True):
        prev = gr.Button("◀ Previous", size="sm", scale=0, min_width=110)
        page = blank_number(
            value=1,
            blank=1,
            zero_is_blank=True,
            precision=0,
            minimum=1,
            label="Page",
            show_label=False,
            container=False,
            scale=0,
            min_width=90,
        )
        nxt = gr.Button("Next ▶", size="sm", scale=0, min_width=110)
        info = gr.Markdown()
    return Pager(table, page, info, prev, nxt, empty, headers)
