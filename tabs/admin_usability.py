"""The usability study's sections of the Admin tab (its spec's admin_section): the exchanges
and their phase, and the review of recordings QC flagged. The review draws a flagged recording's
prompt and transcript as QC compared them (normalised, aligned word by word:
services/usability/recording_qc.align), the words that differ highlighted. Transcripts come from
participants' speech: every word is escaped."""

from __future__ import annotations

import html

import gradio as gr
import pandas as pd

from services.admin import auth as admin
from services.admin.participants import whole_number
from services.admin.usability_progress import exchanges_page
from services.admin.usability_review import MAX_REASON, ReviewError, decide, review_item, review_page
from services.common.paging import Page
from tabs.admin_common import SectionUI, admin_only, blank_number, pager, pick_row
from tabs.admin_common import host as _host
from tabs.common import Ctx, plain_markdown

# the review table: short columns first, the diff last and widest (read in one line per row)
COLUMNS = ["id", "sender", "starter", "system", "seconds", "WER", "flags", "edge words", "prompt vs transcript"]
DATATYPES = ["number", "number", "str", "str", "number", "number", "str", "str", "html"]
# fixed widths (Gradio sizes an "auto" column to its header only; shares of a phone's width broke
# words letter by letter): on a narrow screen the table scrolls sideways instead
# (1,170 px in all: one desktop screen, the diff two fifths of it; "seconds" needs 72 px and a WER
# of 0.020 64 px, or the header is cut and the number broken over two lines)
COLUMN_WIDTHS = ["52px", "72px", "80px", "104px", "76px", "64px", "112px", "130px", "480px"]
LEGEND = (
    '<span class="qc-legend"><del class="qc-prompt">struck: in the prompt, not heard</del> '
    '<ins class="qc-heard">underlined: heard, not in the prompt</ins></span>'
)


def _esc(words: str) -> str:
    return html.escape(words, quote=True)


def inline_diff(chunks: list[dict]) -> str:
    """One line of HTML: words both texts share as they are, a prompt word the recording lacks
    struck through, a word heard instead (or in addition) underlined."""
    out = []
    for c in chunks:
        if c["op"] == "equal":
            out.append(_esc(c["prompt"]))
            continue
        if c["prompt"]:
            out.append(f'<del class="qc-prompt">{_esc(c["prompt"])}</del>')
        if c["transcript"]:
            out.append(f'<ins class="qc-heard">{_esc(c["transcript"])}</ins>')
    return f'<span class="qc-diff">{" ".join(out)}</span>'


def aligned_table(chunks: list[dict]) -> str:
    """The prompt and the transcript side by side, one row per stretch of the alignment; the
    rows where they differ are marked (and say how)."""
    what = {"substitute": "heard differently", "delete": "not heard", "insert": "heard, not in the prompt"}
    rows = []
    for c in chunks:
        if c["op"] == "equal":
            rows.append(f"<tr><td>{_esc(c['prompt'])}</td><td>{_esc(c['transcript'])}</td><td></td></tr>")
        else:
            ref = f'<del class="qc-prompt">{_esc(c["prompt"])}</del>' if c["prompt"] else ""
            hyp = f'<ins class="qc-heard">{_esc(c["transcript"])}</ins>' if c["transcript"] else ""
            rows.append(
                f'<tr class="qc-differs"><td>{ref}</td><td>{hyp}</td><td>{what.get(c["op"], c["op"])}</td></tr>'
            )
    return (
        '<table class="qc-align"><thead><tr><th>Prompt (normalised)</th><th>Transcript (normalised)</th>'
        f"<th>Difference</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def review_table(page: Page) -> Page:
    """services.admin.usability_review.review_page's rows as the review table shows them: the alignment as an
    inline diff."""
    df = page.rows
    rows = pd.DataFrame(
        {
            "id": df["id"],
            "sender": df["sender_id"],
            "starter": df["starter_id"],
            "system": df["system_id"],
            "seconds": df["duration_s"],
            "WER": df["wer"],
            "flags": df["flags"],
            "edge words": df["edges"],
            "prompt vs transcript": [inline_diff(a or []) for a in df["alignment"]],
        },
        columns=COLUMNS,
    )
    return Page(rows, page.page, page.pages, page.total)


def item_html(item: dict) -> str:
    """The opened recording: status, WER and flags, the QC ASR's probability of each edge word
    of the prompt under the audio (its second opinion), then the aligned table."""
    wer = "" if item["wer"] is None else f" · WER {item['wer']:.2f}"
    flags = f" · {_esc('; '.join(item['flags']))}" if item.get("flags") else ""
    edges = (
        f'<p class="qc-edges"><b>Edge words under the audio:</b> {_esc(item["edges"])}</p>' if item.get("edges") else ""
    )
    return (
        f'<div class="qc-item"><p><b>Status:</b> {_esc(item["status"] or "")}{wer}{flags}</p>'
        f"{edges}{aligned_table(item['alignment'])}<p>{LEGEND}</p></div>"
    )


PICK_RECORDING = "Pick a recording first: click its row in the table above."


def section(ctx: Ctx, auth: admin.AdminAuth, session, study) -> SectionUI:
    """The usability study's sections of the Admin tab (its spec's admin_section): the exchanges
    and where each stands, and the recordings QC flagged, to accept or reject."""
    with gr.Accordion("Exchanges and their phase", open=False):
        exchanges = pager("Exchanges", "No exchanges yet: they start when a sender records.", elem_id="exchanges")
        exchanges_msg = gr.Markdown()
    with gr.Accordion("Recordings to review (flagged by QC)", open=False):
        review = pager(
            "Flagged recordings",
            "No flagged recordings: QC has flagged none to review.",
            wrap=True,
            datatype=DATATYPES,
            column_widths=COLUMN_WIDTHS,
            elem_id="review-table",
        )
        gr.HTML(LEGEND)
        with gr.Row():
            rec_id = blank_number(label="Recording id (click its row above)", zero_is_blank=True, precision=0, scale=1)
            show_rec = gr.Button("Open", scale=1)
        rec_audio = gr.Audio(label="Recording", type="filepath", interactive=False, elem_id="review-audio")
        rec_text = gr.Markdown(elem_id="review-text")
        rec_align = gr.HTML(elem_id="review-align")
        with gr.Row():
            accept = gr.Button("Accept", variant="primary")
            reject = gr.Button("Reject", variant="stop", elem_id="review-reject")
        # Reject sends the recording back to its sender (or excludes them): it asks first,
        # with a reason the sender is shown (issue 51, point 7)
        with gr.Column(visible=False, elem_id="reject-confirm") as reject_box:
            reject_q = gr.Markdown(elem_id="reject-question")
            reject_reason = gr.Textbox(
                label="Reason for the sender (optional; shown on their Record page and exported)",
                lines=2,
                max_length=MAX_REASON,
                elem_id="reject-reason",
            )
            with gr.Row():
                reject_yes = gr.Button("Yes, reject", variant="stop", elem_id="reject-yes")
                reject_no = gr.Button("Cancel", elem_id="reject-cancel")
        review_msg = gr.Markdown(elem_id="review-msg")

    @admin_only(auth, review_msg)
    def open_recording(sess, rid, request: gr.Request):
        if rid is None:
            return {review_msg: PICK_RECORDING, rec_audio: None, rec_text: "", rec_align: ""}
        item = review_item(ctx.database, rid)
        if item is None:
            return {review_msg: f"There is no recording {rid}.", rec_audio: None, rec_text: "", rec_align: ""}
        return {
            review_msg: "",
            rec_audio: item["audio"],
            rec_text: f"**Prompt:** {plain_markdown(item['prompt'])}\n\n"
            f"**Transcript:** {plain_markdown(item['transcript'])}",
            rec_align: item_html(item),
        }

    @admin_only(auth, review_msg)
    def ask_reject(sess, rid, request: gr.Request):
        """Reject's first step: the recording named, a box for the reason, and the button that acts."""
        if rid is None:
            return {review_msg: PICK_RECORDING, reject_box: gr.update(visible=False)}
        item = review_item(ctx.database, rid)
        if item is None:
            return {review_msg: f"There is no recording {rid}.", reject_box: gr.update(visible=False)}
        return {
            review_msg: "",
            reject_q: f"**Reject recording {whole_number(rid)}?** Its sender is asked to record the text again "
            "(or, past three rejections, excluded).",
            reject_box: gr.update(visible=True),
            reject_yes: gr.update(value=f"Yes, reject recording {whole_number(rid)}"),
        }

    def decided(rid, decision: str, reviewer: str, reason: str = "") -> dict:
        if rid is None:
            return {review_msg: PICK_RECORDING}
        try:
            out = decide(ctx.database, rid, decision, reviewer, reason)
        except (PermissionError, ReviewError, TypeError, ValueError) as e:
            return {review_msg: str(e)}
        msg = f"Recording {out.recording_id} {out.status}."
        if out.sender_excluded:
            msg += (
                f" Its sender has more than three rejected recordings and is excluded; "
                f"{len(out.reassigned)} open item(s) went to other senders"
            )
            msg += f", {len(out.unassigned)} found nobody." if out.unassigned else "."
        if out.record_again:
            msg += " Its sender is asked to record it again (their Record tab says why)."
        # the table reloads its page next (.then below)
        return {review_msg: msg, reject_box: gr.update(visible=False), reject_reason: ""}

    @admin_only(auth, review_msg)
    def do_accept(sess, rid, study_id, request: gr.Request):
        return decided(rid, "accept", f"admin@{_host(request)}")

    @admin_only(auth, review_msg)
    def do_reject(sess, rid, study_id, reason, request: gr.Request):
        return decided(rid, "reject", f"admin@{_host(request)}", reason)

    def review_rows(no, sid):
        return review_table(review_page(ctx.database, sid, no))

    reload_review = review.wire(auth, session, [study], review_rows, review_msg, "admin_review_page")
    exchanges.wire(
        auth,
        session,
        [study],
        lambda no, sid: exchanges_page(ctx.database, sid, no),
        exchanges_msg,
        "admin_exchanges_page",
    )
    pick_row(review.table, rec_id)
    show_rec.click(
        open_recording,
        [session, rec_id],
        [review_msg, rec_audio, rec_text, rec_align],
        api_name="admin_open_recording",
        api_visibility="undocumented",
    )
    reject.click(
        ask_reject, [session, rec_id], [review_msg, reject_q, reject_box, reject_yes], api_visibility="private"
    )
    reject_no.click(lambda: (gr.update(visible=False), ""), None, [reject_box, review_msg], api_visibility="private")
    # another recording picked: the question asked about the last one goes
    rec_id.change(lambda: gr.update(visible=False), None, reject_box, api_visibility="private", queue=False)
    for button, decision, handler, inputs in (
        (accept, "accept", do_accept, [session, rec_id, study]),
        (reject_yes, "reject", do_reject, [session, rec_id, study, reject_reason]),
    ):
        button.click(
            handler,
            inputs,
            [review_msg, review.table, reject_box, reject_reason],
            api_name=f"admin_{decision}_recording",
            api_visibility="undocumented",
        ).then(reload_review, [session, review.page, study], [review_msg, *review.outputs], api_visibility="private")

    def refresh(study_id, ex_page, rev_page) -> dict:
        return {
            **exchanges.show(exchanges_page(ctx.database, study_id, ex_page)),
            **review.show(review_table(review_page(ctx.database, study_id, rev_page))),
        }

    return SectionUI(
        inputs=[exchanges.page, review.page],
        outputs=[*exchanges.outputs, *review.outputs],
        refresh=refresh,
        initial=[1, 1],
    )
