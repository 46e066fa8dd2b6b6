"""Error Span Annotation's page (services/esa/protocol.py): one item form per segment
(tabs/item_form.py form_tab). The document's neighbouring segments are shown around the current
one (source and translation each, the current one highlighted); in the current one the annotator
marks error spans in the translation and a [MISSING] token after it (assets/js/script/esa.js:
by dragging with a mouse or a finger, or with the keyboard), each minor or major, then scores the
translation on a 0-100 slider with the study's labelled ticks.

The spans travel as JSON in the hidden field `spans` (the item-form contract, docs/plugins.md),
checked by the service against the exact translation (character offsets, end exclusive, with the
span's text); the translation's text reaches the script in the output's data-text attribute.
Every text of the corpus and the study is escaped.

Speech (docs/esa.md, "Speech"): a source with a recording gets a player above its text (the text
left out where the study hides it); an output with audio gets its waveform above its transcript,
where the annotator drags a span in seconds (wavesurfer.js and its Regions plugin, vendored
under assets/vendor/wavesurfer/ and loaded on the ESA and MQM pages only); such spans travel in
the same hidden field with start_s and end_s."""

from __future__ import annotations

import html
import json

from services.esa.spans import MISSING_TOKEN
from tabs.common import Ctx, TabUI, file_url, markdown_html, plain_html
from tabs.item_form import form_tab

NAME = "esa"


def _attr(text) -> str:
    return html.escape(str(text or ""), quote=True)


def _lang(code) -> str:
    return f' lang="{_attr(code)}"' if code else ""


def _neighbour(seg: dict, c: dict) -> str:
    return (
        f'<li class="esa-seg"><div class="esa-src"{_lang(c.get("source_lang"))}>{plain_html(seg["source"])}</div>'
        f'<div class="esa-mt"{_lang(c.get("target_lang"))}>{plain_html(seg["target"])}</div></li>'
    )


def _breakable(label) -> str:
    return plain_html(label).replace("/", "/<wbr>")


def _ticks(labels) -> str:
    """The slider's labelled values, each at its place on the track; a label may break after a
    slash on a phone ("Broken/poor")."""
    return "".join(
        f'<span class="esa-tick" style="left: {int(v)}%"><b>{int(v)}</b> {_breakable(label)}</span>'
        for v, label in labels
    )


def _score(typed) -> int | None:
    if isinstance(typed, bool) or not isinstance(typed, (int, float)):
        return None
    return int(typed) if 0 <= typed <= 100 else None


def _prefilled_json(c: dict) -> str:
    """ESA-AI: the pre-filled spans as the form starts with them, each with its index (`prefill`),
    which the page keeps on a span the annotator keeps or edits (services/esa/prefill.py)."""
    keys = ("start", "end", "text", "severity", "missing", "prefill")
    return json.dumps([{k: s.get(k) for k in keys} for s in c.get("prefill") or []], ensure_ascii=False)


def _prefill_attr(c: dict) -> str:
    """The output's data-prefill (ESA-AI's pre-filled spans, which assets/js/script/esa.js shows as
    such until touched); none on a page without them."""
    return f' data-prefill="{_attr(_prefilled_json(c))}"' if c.get("prefill") else ""


def _source_html(c: dict) -> str:
    """The current segment's source: its recording's player (where it has one) above its text,
    the text left out where the study hides the transcript (show_source_transcript)."""
    player = ""
    if c.get("source_audio"):
        player = (
            f'<audio class="esa-src-audio" controls preload="metadata" aria-label="The source, spoken"'
            f' src="{_attr(file_url(c["source_audio"]))}"></audio>'
        )
    text = plain_html(c.get("source", "")) if c.get("show_source_transcript", True) else ""
    return f'<div class="esa-src"{_lang(c.get("source_lang"))}>{player}{text}</div>'


def _audio_html(c: dict) -> str:
    """The output's audio, where it has one: the waveform (wavesurfer.js, drawn by
    assets/js/script/esa.js from data-src), its play button and the buttons that set a span's
    start and end at the playhead; its duration and the transcript's word times in data-."""
    if not c.get("target_audio"):
        return ""
    label = (
        "The translation's audio: drag across an error on the waveform, or play it (Space), move with"
        " the arrow keys and press [ at the error's start and ] at its end; then M for major or m for minor"
    )
    words = json.dumps(c.get("target_words") or [], ensure_ascii=False)
    return (
        f'<div class="esa-audio" data-duration="{float(c.get("target_audio_s") or 0):.3f}"'
        f' data-words="{_attr(words)}">'
        f'<div class="esa-wave" tabindex="0" role="group" aria-roledescription="waveform"'
        f' aria-label="{_attr(label)}" data-src="{_attr(file_url(c["target_audio"]))}"></div>'
        f'<div class="esa-audio-tools"><button type="button" class="esa-play">Play</button>'
        f'<button type="button" class="esa-set-start">Start here ([)</button>'
        f'<button type="button" class="esa-set-end">End here (])</button>'
        f'<span class="esa-clock" aria-live="off">0.00 s</span></div>'
        f'<p class="esa-audio-hint">Errors you hear: drag across them on the waveform (or press [ and ] at'
        f" the playhead), then Minor or Major. Errors in the text below: mark them there.</p></div>"
    )


def _practice_field(c: dict, typed: dict) -> str:
    """A practice item's count of refusals so far (services/esa/attention.py practice_result),
    which the page's script raises by one on each refusal; a refused answer comes back with it as
    typed."""
    if not c.get("practice"):
        return ""
    tries = str(typed.get("practice_tries") or "")
    return f'<input type="hidden" name="practice_tries" value="{int(tries) if tries.isdigit() else 0}">'


def document_html(c: dict, typed: dict, tools: str, form_attrs: str = 'class="esa-item"', label: str = "") -> str:
    """The form's instructions and document, the current segment's output to mark with `tools`
    (the severity buttons; MQM's category picker too) and the hidden spans field: what ESA's and
    MQM's pages share (tabs/mqm.py); form_attrs: the form's attributes, escaped; typed: a
    refused answer's fields, written back in; without them, the spans field starts with ESA-AI's
    pre-filled spans (c's `prefill`, none on MQM's page)."""
    spans = typed.get("spans") if isinstance(typed.get("spans"), str) else _prefilled_json(c)
    before = "".join(_neighbour(s, c) for s in c.get("before", []))
    after = "".join(_neighbour(s, c) for s in c.get("after", []))
    where = f"Segment {int(c.get('doc_pos', 1))} of {int(c.get('doc_len', 1))} of this document"
    label = label or (
        "The translation: drag across an error, or move with the arrow keys and extend with Shift;"
        " then M for major or m for minor"
    )
    current = (
        f'<li class="esa-seg esa-current" aria-current="true"><fieldset class="esa-box">'
        f"<legend>{plain_html(where)}: mark its errors</legend>"
        f"{_source_html(c)}{_audio_html(c)}"
        f'<div class="esa-output" tabindex="0" role="group" aria-roledescription="error marking"'
        f' aria-label="{_attr(label)}" data-text="{_attr(c.get("target", ""))}"{_lang(c.get("target_lang"))}'
        f"{_prefill_attr(c)}>"
        f'<span class="esa-text">{plain_html(c.get("target", ""))}</span> '
        f'<span class="esa-missing">{MISSING_TOKEN}</span></div>'
        f'<div class="esa-tools"><span class="esa-picked" aria-live="polite">Select an error first.</span>'
        f"{tools}</div>"
        f'<p class="esa-note" aria-live="polite"></p>'
        f'<ol class="esa-spans" aria-label="Your error spans"></ol>'
        f'<input type="hidden" name="spans" value="{_attr(spans)}">{_practice_field(c, typed)}</fieldset></li>'
    )
    return (
        f'<form {form_attrs} autocomplete="off">'
        f'<details class="instruction esa-instructions" open><summary>Instructions</summary>'
        f"{markdown_html(c.get('instructions', ''))}</details>"
        f'<ol class="esa-doc" aria-label="The document: source and translation">{before}{current}{after}</ol>'
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item's form; typed: the fields of a refused answer (the spans and the score), written
    back in."""
    typed = typed or {}
    score = _score(typed.get("score"))
    labels = [(int(v), str(label)) for v, label in c.get("labels", [])]
    tools = (
        '<button type="button" class="esa-mark" data-severity="minor" disabled>Minor (m)</button>'
        '<button type="button" class="esa-mark" data-severity="major" disabled>Major (M)</button>'
    )
    return (
        document_html(c, typed, tools)
        + f'<div class="form-slider esa-slider"><label for="esa-score">Score this translation (0-100): move the slider'
        f'<output for="esa-score" aria-live="off">–</output></label>'
        f'<input type="range" id="esa-score" name="score" min="0" max="100" step="1" '
        f'value="{score if score is not None else 0}" data-click-sets{" data-moved" if score is not None else ""}'
        f' aria-describedby="esa-ticks">'
        f'<div class="esa-ticks" id="esa-ticks">{_ticks(labels)}</div></div>'
        f'<button type="submit" class="submit-btn lg primary">Submit</button></form>'
    )


def payload_of(fields: dict) -> dict:
    """The service's payload: the spans' JSON as the hidden field holds it, the score (null
    while the slider was not moved)."""
    return {"spans": fields.get("spans"), "score": fields.get("score"), "practice_tries": fields.get("practice_tries")}


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, NAME, "Error spans", body_html, payload_of)
