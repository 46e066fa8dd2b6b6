"""How the admin's review draws a flagged recording: the prompt and the transcript as QC
compared them (normalised, aligned word by word: services/usability/recording_qc.align), the words that
differ highlighted. Transcripts come from participants' speech: every word is escaped."""

from __future__ import annotations

import html

import pandas as pd

from services.common.paging import Page

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
    """services.admin.progress.review_page's rows as the review table shows them: the alignment as an
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
