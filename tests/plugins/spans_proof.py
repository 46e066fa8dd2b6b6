"""A tiny Error Span Annotation-like protocol, the proof that a protocol is a plugin with page code
of its own: one module, its own script (spans_proof.js) and stylesheet (spans_proof.css), and no
core file naming it. An item shows a target sentence; the participant marks each error by dragging
the mouse across its characters (character offsets, not words), says minor or major, and gives the
sentence a 0-100 score. The spans travel as JSON in the form's hidden field `spans`; validate
refuses spans out of the sentence or overlapping, naming them. The admin's "A participant" page
says an answer in words (Phase.answer_words), and `python app.py spans-summary` counts the spans
(Protocol.cli). Loaded by TRADLAB_PLUGINS=tests.plugins.spans_proof:PROTOCOL
(tests/test_plugin_page.py, tests/test_plugin_hooks.py)."""

from __future__ import annotations

import html
import json
from pathlib import Path

from services.common.protocols import Phase, Protocol, Role, Tab
from services.common.seeded import order_key
from services.participation.submissions import refuse_all
from storage import assignments, responses, studies
from storage.db import Transaction

NAME = "spans"
HERE = Path(__file__).resolve().parent
SEVERITIES = ("minor", "major")


def check(section: dict) -> list[tuple[str, str]]:
    texts = section.get("texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        return [("spans.texts", "must be a non-empty list of target sentences")]
    return []


def setup(tx: Transaction, study, pid: int, group, gender, design_index=None) -> None:
    """One item per target sentence, in the study's seeded order."""
    seed = study["config"]["study"]["seed"]
    for i, _ in enumerate(study["config"][NAME]["texts"]):
        assignments.insert_assignment(tx.db, study["id"], pid, NAME, str(i), order_key(seed, pid, i))


def target_of(study: dict, assignment: dict) -> str:
    return study["config"][NAME]["texts"][int(assignment["item_id"])]


def content(database, study, participant, assignment, media_dir=None) -> dict:
    return {"text": target_of(study, assignment)}


def parse_spans(raw, length: int) -> tuple[list[dict], str]:
    """The spans of the hidden field (JSON: [{start, end, severity}]) sorted by start, and what is
    wrong with them ("" when nothing)."""
    try:
        spans = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or [])
    except ValueError:
        return [], "The error spans could not be read: mark them again."
    if not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans):
        return [], "The error spans could not be read: mark them again."
    out = []
    for n, s in enumerate(spans, 1):
        start, end, severity = s.get("start"), s.get("end"), s.get("severity")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)) or severity not in SEVERITIES:
            return [], f"Span {n} is not a start, an end and minor or major."
        if not 0 <= start < end <= length:
            return [], f"Span {n} ({start}-{end}) is outside the sentence's {length} characters."
        out.append({"start": start, "end": end, "severity": severity})
    out.sort(key=lambda s: (s["start"], s["end"]))
    for a, b in zip(out, out[1:]):
        if b["start"] < a["end"]:
            return [], f"Spans {a['start']}-{a['end']} and {b['start']}-{b['end']} overlap: mark each error once."
    return out, ""


def validate(database, assignment, payload) -> dict:
    study = studies.get_study(database, assignment["study_id"]) or {}
    spans, problem = parse_spans(payload.get("spans"), len(target_of(study, assignment)))
    score = payload.get("score")
    score_ok = isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 100
    parts, fields = [], {}
    if problem:
        parts.append(problem)
        fields["spans"] = problem
    if not score_ok:
        parts.append("Move the slider to score the sentence (0-100).")
        fields["score"] = "Move the slider to score the sentence (0-100)."
    refuse_all(parts, fields)
    return {"spans": spans, "score": int(score)}


def save(tx: Transaction, study, participant, assignment, data) -> None:
    responses.insert_response(tx.db, assignment["id"], data)


def stored(database, assignment) -> dict:
    return responses.response(database, assignment["id"]) or {}


def answer_words(database, assignment, answer: dict) -> str:
    """score 70; minor 4-7 "cat", major 15-22 "the mat"."""
    study = studies.get_study(database, assignment["study_id"]) or {}
    text = target_of(study, assignment)
    spans = ", ".join(
        f'{s["severity"]} {s["start"]}-{s["end"]} "{text[s["start"] : s["end"]]}"' for s in answer["spans"]
    )
    return f"score {answer['score']}; " + (spans or "no error marked")


def body_html(c: dict, typed: dict | None = None) -> str:
    """The item: the sentence (spans_proof.js makes its characters markable), the hidden field the
    script writes the spans to, the severity of the next span, the score; a refused answer comes back
    with its spans and score written in."""
    typed = typed or {}
    text = c.get("text", "")
    spans = typed.get("spans") if isinstance(typed.get("spans"), str) else "[]"
    score = typed.get("score")
    moved = isinstance(score, (int, float)) and not isinstance(score, bool)
    severity = "".join(
        f'<label><input type="radio" name="severity" value="{s}"{" checked" if s == "minor" else ""}> {s}</label>'
        for s in SEVERITIES
    )
    return (
        '<form class="spans-item">'
        '<fieldset class="spans-box"><legend>Drag across each error in the translation, then say how bad it is</legend>'
        f'<p class="spans-target" data-text="{html.escape(text, quote=True)}">{html.escape(text)}</p>'
        f'<input type="hidden" name="spans" value="{html.escape(spans, quote=True)}">'
        f'<div class="spans-severity">The next span is {severity}</div>'
        '<ol class="spans-list"></ol></fieldset>'
        '<div class="form-slider"><label for="spans-score">Overall quality, 0-100</label>'
        '<input type="range" id="spans-score" name="score" min="0" max="100" step="1"'
        f' value="{int(score) if moved else 50}"'
        f'{" data-moved" if moved else ""}><output for="spans-score"></output></div>'
        '<button type="submit" class="submit-btn lg primary">Submit</button></form>'
    )


def payload_of(fields: dict) -> dict:
    return {"spans": fields.get("spans"), "score": fields.get("score")}


def build_tab(ctx):
    from tabs.item_form import form_tab  # gradio: only where the page is built

    return form_tab(ctx, NAME, "Error spans", body_html, payload_of)


def add_commands(subparsers) -> None:
    """`python app.py spans-summary --study ID`: the study's spans counted by severity."""
    cmd = subparsers.add_parser("spans-summary", help="count a study's error spans by severity (spans_proof plugin)")
    cmd.add_argument("--study", required=True, help="the study's id")
    cmd.set_defaults(func=spans_summary)


def spans_summary(args, settings) -> int:
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode)
    rows = [json.loads(r["data"]) for r in responses.response_rows(database, args.study, NAME)]
    counts = {s: sum(x["severity"] == s for r in rows for x in r["spans"]) for s in SEVERITIES}
    spans = f"{sum(counts.values())} spans ({counts['minor']} minor, {counts['major']} major)"
    print(f"study {args.study}: {len(rows)} answers, {spans}")
    return 0


PROTOCOL = Protocol(
    name=NAME,
    roles=(
        Role(
            NAME,
            (NAME,),
            "Error spans",
            setup,
            items=lambda cfg: len(cfg[NAME]["texts"]),
            seconds_per_item=30,
            label="span annotator",
        ),
    ),
    tabs=(Tab(NAME, (NAME,), build_tab, scripts=(HERE / "spans_proof.js",), styles=(HERE / "spans_proof.css",)),),
    phases=(Phase(NAME, content, validate, save, stored, label="error spans", answer_words=answer_words),),
    defaults={"texts": None},
    check=check,
    cli=add_commands,
    texts={"en": {"welcome_spans": "Welcome. Mark the errors of {items} translations; about {minutes} minutes."}},
)
