"""Shared pieces of the participant tabs."""

from __future__ import annotations

import dataclasses
import functools
import html
import json
from dataclasses import dataclass
from typing import Callable
from urllib.parse import quote

import gradio as gr
import pandas as pd
from markdown_it import MarkdownIt

from services.common.analysis_output import rounded
from services.participation.items import AccessError, ItemView, get_view
from services.participation.submissions import SubmissionError, submit
from services.study.texts import Voice

# A participant's events run outside Gradio's queue, as the page's first load does: one POST
# each, where a queued event costs a join, an event stream and several messages, about as much
# server time as the answer's own work. The services put participant actions in line themselves
# (services/participation/serial.py), which is what the queue's concurrency limit was for here.
PARTICIPANT_EVENT = {"queue": False}
WAIT_POLL_S = 10  # a waiting page asks again this often (a view that writes nothing)


@dataclass
class Ctx:
    database: object
    settings: object
    token: gr.Textbox  # hidden; filled from the link on load
    # the page that holds a tab first names its API endpoint; a copy on another page (the
    # survey on the sender's and the rater's pages) calls the same handler without a name
    api: bool = True
    lang: str = "en"  # the page's language (services/study/texts.py page_language)

    @property
    def form_routes(self) -> bool:
        """Whether the page's item forms post to their JSON routes (web/form_routes.py): the
        setting, off where there are no settings (a tab built on its own, as tests build one)."""
        return bool(getattr(self.settings, "form_routes", False))

    def api_name(self, name: str) -> dict:
        return {"api_name": name, "api_visibility": "undocumented"} if self.api else {"api_visibility": "private"}


def shown_table(df, empty: str, decimals: int | dict = 3):
    """What a gr.Dataframe shows for `df`: its floats as text to `decimals` (one for every float
    column or per column, 3 for the others; whole numbers with gaps, ints that pandas made float,
    without decimals), or, with no table or no rows, one header that is the sentence `empty`
    saying what is missing and what would fill it (Gradio shows "1 2 3" otherwise; no row, so
    nothing to click as an id). Only what is shown is rounded: the analyses' CSV files keep
    every digit."""
    if df is None or len(df) == 0:
        return pd.DataFrame(columns=[empty])
    if not isinstance(df, pd.DataFrame):
        return df
    places = {}
    for col, s in df.items():
        named = isinstance(decimals, dict) and col in decimals
        whole = s.dropna() if pd.api.types.is_float_dtype(s) else None
        # counts with gaps; a measure that is whole by chance (a Δu of 0 in every group) is not one
        if not named and whole is not None and s.isna().any() and (whole % 1 == 0).all() and (whole != 0).any():
            places[col] = 0
        else:
            places[col] = decimals.get(col, 3) if isinstance(decimals, dict) else decimals
    return rounded(df, places)


def shown_plot(fig):
    """A gr.Plot's update: hidden when there is no figure (its section's message says why)."""
    return gr.update(value=fig, visible=fig is not None)


def shown_figures(slots, figs: list) -> dict:
    """Plot slots' updates for a list of (label, figure): the first len(figs) slots show them, the
    rest are hidden."""
    return {
        p: gr.update(
            visible=i < len(figs),
            value=figs[i][1] if i < len(figs) else None,
            label=figs[i][0] if i < len(figs) else None,
        )
        for i, p in enumerate(slots)
    }


def file_url(path: str) -> str:
    """A media file as the page fetches it (gradio serves the app's allowed media folder);
    relative, so it holds behind a proxy's path prefix and on each role's page."""
    return "gradio_api/file=" + quote(str(path))


def plain_html(text) -> str:
    """Participant-supplied (or participant-echoed) text as HTML that shows it as typed: no
    markup, Markdown or link of it is interpreted (for gr.HTML components)."""
    return html.escape(str(text or ""), quote=True).replace("\n", "<br>")


# CommonMark's backslash escapes: every ASCII punctuation character may be escaped
_MD_PUNCT = set("\\`*_{}[]()#+-.!|~:\"'$%,/=?@^")


_MD = MarkdownIt("commonmark", {"html": False})


def markdown_html(text) -> str:
    """A study's Markdown wording (consent text, instructions) as HTML for a gr.HTML component,
    rendered on the server so a participant page loads no Markdown renderer; raw HTML in the
    text is shown as text."""
    return _markdown_html(str(text or ""))


@functools.lru_cache(maxsize=512)
def _markdown_html(text: str) -> str:
    # a study's few wordings come again on every item (the validator's instruction: 0.3 ms each)
    return _MD.render(text)


def summary_markdown(text: str) -> str:
    """An analysis's plain-text summary (the CLI prints it as is) for a gr.Markdown: each line its
    own paragraph, each indented line a bullet under it, instead of one run-on paragraph (Markdown
    joins single newlines). The text is the analysis's own, not escaped."""
    out: list[str] = []
    for line in str(text or "").splitlines():
        if not line.strip():
            continue
        if line.startswith("  "):
            out.append("- " + line.strip())
        else:
            out += ["", line]
    return "\n".join(out).strip("\n")


def plain_markdown(text) -> str:
    """Text for a gr.Markdown component that renders as typed: HTML escaped, then every
    Markdown punctuation escaped, so no image, link, autolink, emphasis or heading survives."""
    escaped = html.escape(str(text or ""), quote=False)
    out = []
    for ch in escaped:
        out.append("\\" + ch if ch in _MD_PUNCT else ch)
    return "".join(out)


def view_dict(view: ItemView | None, message: str = "", error: str = "") -> dict:
    """The JSON state a tab carries: exactly what the page shows, nothing more."""
    if view is None:
        return {"status": "error", "message": error or message}
    # the fields as they are: the view is the services' fresh plain data, made for this answer
    # (dataclasses.asdict deep-copied the item's content, a third of a JSON submit's CPU)
    d = {f.name: getattr(view, f.name) for f in dataclasses.fields(view)}
    d["progress"] = view.progress
    if message:
        d["notice"] = message
    if error:
        d["error"] = error
    return d


class Refusal(str):
    """A refusal's message with its key (services/study/texts.py), so a page can react to which one it
    is (the validator's "move the slider" goes once the slider moves), and the form fields it
    refuses with what is wrong with each (the item form marks them in place)."""

    key: str | None = None
    fields: dict = {}


def refusal_text(e: Exception) -> Refusal:
    r = Refusal(str(e))
    r.key = getattr(e, "key", None)
    r.fields = dict(getattr(e, "fields", None) or {})
    return r


def copy_button(text: str, words: dict) -> str:
    """A button that copies `text` (the page's KEYBOARD_JS in web/pages.py does the copying), labelled in
    the page's language; a participant on a phone need not select a code by hand."""

    def attr(v) -> str:
        return html.escape(str(v), quote=True)

    return (
        f'<button type="button" class="copy-btn" data-copy="{attr(text)}" '
        f'data-copied="{attr(words.get("copied", "Copied"))}" data-failed="{attr(words.get("copy_failed", ""))}">'
        f"{html.escape(words.get('copy', 'Copy'))}</button>"
    )


def header_html(view: ItemView | None, notice: str = "", error: str = "") -> str:
    """Progress (with how many items are ready, where they come one at a time), the notice or
    error, and the waiting or finishing message, in the view's language."""
    words = (
        view.labels
        if view is not None and view.labels
        else {k: Voice()(k) for k in ("progress", "completion_code", "redirect", "copy", "copied", "copy_failed")}
    )
    parts = []
    if view is not None:
        ready = (
            f' <span class="ready">({html.escape(words["ready"])})</span>'
            if view.status == "item" and words.get("ready")
            else ""
        )
        parts.append(
            f'<div class="progress" aria-live="polite">{html.escape(words["progress"])}: '
            f"<b>{view.progress}</b>{ready}</div>"
        )
    if error:
        key = getattr(error, "key", None)
        data = f' data-key="{html.escape(key, quote=True)}"' if key else ""
        fields = getattr(error, "fields", None)
        if fields:  # read by the item form's script (tabs/item_form.py), which marks each field
            data += f' data-fields="{html.escape(json.dumps(fields), quote=True)}"'

        parts.append(f'<div class="msg error" role="alert"{data}>{html.escape(error)}</div>')
    elif notice:
        parts.append(f'<div class="msg ok">{html.escape(notice)}</div>')
    if view is not None and view.status != "item":
        parts.append(f'<div class="msg info">{html.escape(view.message)}</div>')
        if view.status == "complete" and view.completion_code:
            parts.append(
                f'<div class="completion">{html.escape(words["completion_code"])} '
                f'<code id="completion-code">{html.escape(view.completion_code)}</code>'
                f"{copy_button(view.completion_code, words)}</div>"
            )
        if view.status == "complete" and view.redirect_url:
            url = html.escape(view.redirect_url, quote=True)
            parts.append(
                f'<div class="completion"><a href="{url}" id="redirect-link">'
                f"{html.escape(words['redirect'])}</a>{copy_button(view.redirect_url, words)}</div>"
            )
    if view is None:
        return "\n".join(parts)
    return f'<div lang="{html.escape(view.lang, quote=True)}">' + "\n".join(parts) + "</div>"


def safe_view(ctx: Ctx, token: str, tab: str, limited: bool = True) -> tuple[ItemView | None, str]:
    try:
        return get_view(ctx.database, token, tab, media_dir=ctx.settings.media_dir, limited=limited), ""
    except AccessError as e:
        return None, refusal_text(e)


def safe_submit(ctx: Ctx, token: str, tab: str, item_id: str, payload: dict):
    """(view, notice, error): a refused answer keeps the page as it was, with the reason."""
    try:
        res = submit(ctx.database, token, tab, item_id, payload, media_dir=ctx.settings.media_dir)
        return res.next, res.message, ""
    except (SubmissionError, AccessError) as e:
        view, err = safe_view(ctx, token, tab, limited=False)  # the submit counted against the limit
        return view, "", refusal_text(e) if not err else err


def timer_update(view: ItemView | None) -> gr.Timer:
    # Gradio builds a new gr.Timer for this update too (0.3 ms: it copies every updated block for
    # the session); only the Gradio events pay it, the item forms' JSON routes send no timer
    return gr.update(active=view is not None and view.status == "waiting")


def poll_while_waiting(ctx: Ctx, name: str, timer: gr.Timer, outputs: list, render) -> None:
    """Each tick shows the tab afresh, so new work appears without a reload; the tick ends when
    an item (or the end) is shown."""

    def tick(token):
        view, err = safe_view(ctx, token, name)
        return render(view, "", err, token=token)

    timer.tick(tick, ctx.token, outputs, api_visibility="private", **PARTICIPANT_EVENT)


@dataclass
class TabUI:
    name: str
    tab: gr.Tab
    outputs: list  # components render() updates, state first
    render: Callable[..., dict]  # (view, notice, error) -> updates; a form's also takes token=
    # an item form's calls as plain functions (tabs/item_form.FormRoutes), which the page also
    # serves as JSON routes (web/form_routes.py); None for a tab that is no item form
    form: object = None

    def show(self, ctx: Ctx, token: str) -> dict:
        view, err = safe_view(ctx, token, self.name)
        return self.render(view, "", err, token=token) if self.form is not None else self.render(view, "", err)
