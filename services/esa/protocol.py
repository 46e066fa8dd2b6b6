"""Error Span Annotation (ESA, Kocmi et al., WMT 2024) as a protocol: an annotator takes one HIT of
whole documents and, segment by segment, marks the translation's error spans (minor or major, a
[MISSING] token for omissions) and then scores it 0-100 (docs/esa.md). Registered with
services/common/protocols.py through the same hooks a plugin has (docs/plugins.md): its tables are
its own (Protocol.tables), its rows go through storage/protocol_rows.py, its page is tabs/esa.py
with assets/js/script/esa.js and assets/css/esa.css."""

from __future__ import annotations

import json
from typing import Any

from services.common import protocols
from services.common.hookspecs import Reassignment
from services.common.protocols import Column, ExportTable, Index, Phase, Protocol, Role, Tab, Table
from services.esa import corpus
from services.esa.answers import answer_rows, segment_rows
from services.esa.corpus import ANSWERS, HITS, NAME, SEGMENTS, TAKERS
from services.esa.spans import MISSING_TOKEN, Span, SpanError, check_spans
from services.participation.submissions import refuse_all
from storage import assignments, protocol_rows
from storage.db import Transaction, now, required
from storage.rows import AssignmentRecord, AssignmentRow, ParticipantRow, StudyRow

# Appraise's ESA template (AppraiseDev/Appraise EvalView/templates/EvalView/_instructions-esa.html):
# the slider's four described levels
SCORE_LABELS = {"0": "Broken/poor", "33": "Flawed", "66": "Good", "100": "Perfect"}
# WMT 2024's HITs hold about 100 segments (Kocmi et al. 2024); context "all": the whole document
DEFAULTS: dict[str, Any] = {
    "segments": None,
    "hit_size": 100,
    "context": "all",
    "score_labels": SCORE_LABELS,
    "instructions": "",
}
# the page's instructions, after Appraise's ESA template (docs/esa.md); [esa] instructions replaces them
INSTRUCTIONS = (
    "**Mark the errors** of the highlighted translation: drag across the words (or, with the "
    "keyboard, focus the translation, move with the arrow keys and extend with Shift), then choose "
    "**Minor** (style, grammar or word choice could be better or more natural) or **Major** (the "
    "meaning is changed significantly, or the part is really hard to understand). If something is "
    f"missing, mark the `{MISSING_TOKEN}` token. Mark the general area of an error; it does not need to "
    "be exact. Use one span per error. Keep the whole document in mind: consistency counts.\n\n"
    "**Then score the translation** on the slider: its meaning and its general quality."
)

SEGMENTS_TABLE = Table(
    SEGMENTS,
    (
        Column("study_id", "TEXT", not_null=True, references="studies.id"),
        Column("segment_row", "INTEGER", not_null=True),  # its row in the file, from 0: the item's id
        Column("hit", "INTEGER", not_null=True),
        Column("pos", "INTEGER", not_null=True),  # its place in its HIT
        Column("doc", "INTEGER", not_null=True),  # its document's number in the study
        Column("doc_pos", "INTEGER", not_null=True),  # its place in its document
        Column("doc_id", "TEXT", not_null=True),
        Column("segment_id", "TEXT", not_null=True),
        Column("system", "TEXT", not_null=True),
        Column("source", "TEXT", not_null=True),
        Column("target", "TEXT", not_null=True),
        Column("source_lang", "TEXT", not_null=True, default=""),
        Column("target_lang", "TEXT", not_null=True, default=""),
    ),
    indexes=(
        Index(("study_id", "segment_row"), unique=True),
        Index(("study_id", "hit", "pos")),
        Index(("study_id", "doc", "doc_pos")),
    ),
    study_sized=True,
)
HITS_TABLE = Table(
    HITS,
    (
        Column("study_id", "TEXT", not_null=True, references="studies.id"),
        Column("hit", "INTEGER", not_null=True),
        Column("n_segments", "INTEGER", not_null=True),
        Column("n_documents", "INTEGER", not_null=True),
    ),
    indexes=(Index(("study_id", "hit"), unique=True),),
)
TAKERS_TABLE = Table(  # who took which HIT: a newcomer gets the HIT fewest annotators hold
    TAKERS,
    (
        Column("study_id", "TEXT", not_null=True, references="studies.id"),
        Column("hit", "INTEGER", not_null=True),
        Column("participant_id", "INTEGER", not_null=True, references="participants.id"),
        Column("created_at", "TEXT", not_null=True),
    ),
    indexes=(Index(("study_id", "hit")), Index(("participant_id",), unique=True)),
    study_sized=True,
)
ANSWERS_TABLE = Table(
    ANSWERS,
    (
        Column("assignment_id", "INTEGER", not_null=True, references="assignments.id"),
        Column("segment_row", "INTEGER", not_null=True),
        Column("spans", "TEXT", not_null=True),  # JSON: [Span.to_dict()], ordered as marked in the text
        Column("score", "INTEGER", not_null=True),
        Column("created_at", "TEXT", not_null=True),
    ),
    indexes=(Index(("assignment_id",), unique=True),),
    study_sized=True,
)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check(section: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [esa] section."""
    out: list[tuple[str, str]] = []
    if not _whole(section.get("hit_size")) or section["hit_size"] < 1:
        out.append(("esa.hit_size", "must be a whole number of segments >= 1 (WMT 2024: 100)"))
    ctx = section.get("context")
    if ctx != "all" and not (isinstance(ctx, int) and not isinstance(ctx, bool) and ctx >= 0):
        out.append(("esa.context", 'must be "all" (the whole document) or a whole number of segments >= 0'))
    labels = section.get("score_labels")
    if not isinstance(labels, dict) or not labels:
        example = '{0 = "Broken/poor", 100 = "Perfect"}'
        out.append(("esa.score_labels", f'must be a table of score = "label", e.g. {example}'))
    else:
        for k, v in labels.items():
            if not str(k).isdigit() or not 0 <= int(k) <= 100:
                out.append(("esa.score_labels", f"{k!r} is not a score from 0 to 100"))
            if not isinstance(v, str) or not v.strip():
                out.append(("esa.score_labels", f"the label of {k} must be a non-empty string"))
    if not isinstance(section.get("instructions"), str):
        out.append(("esa.instructions", "must be a string (Markdown; empty: the built-in instructions)"))
    return out


# -- the queue: one HIT per annotator ---------------------------------------------------------


def setup(tx: Transaction, study: StudyRow, pid: int, group, gender, design_index=None) -> None:
    """The annotator's queue is one HIT, the one fewest annotators hold (ties: the first), its
    segments in the HIT's order (each document's segments together, in their order)."""
    sid = study["id"]
    hits = protocol_rows.select(tx.database, HITS, {"study_id": sid}, order_by=("hit",))
    if not hits:
        return
    held = {h["hit"]: protocol_rows.count(tx.database, TAKERS, {"study_id": sid, "hit": h["hit"]}) for h in hits}
    hit = min(hits, key=lambda h: (held[h["hit"]], h["hit"]))
    segs = protocol_rows.select(tx.database, SEGMENTS, {"study_id": sid, "hit": hit["hit"]}, order_by=("pos",))
    for s in segs:
        meta = {"hit": hit["hit"], "pos": s["pos"]}
        assignments.insert_assignment(tx.db, sid, pid, NAME, s["segment_row"], s["pos"], meta=meta)
    row = {"study_id": sid, "hit": hit["hit"], "participant_id": pid, "created_at": now()}
    protocol_rows.insert(tx.db, TAKERS, row)


def items(config: dict) -> int:
    return int((config.get(NAME) or {}).get("hit_size", 0))


def held_items(database, study: StudyRow, participant: ParticipantRow) -> int:
    """The segments of the HIT the annotator holds (whole documents: more or fewer than
    hit_size); before they hold one, the study's mean HIT size, rounded; without HITs, hit_size."""
    taker = protocol_rows.one(database, TAKERS, {"participant_id": participant["id"]})
    if taker is not None:
        hit = protocol_rows.one(database, HITS, {"study_id": study["id"], "hit": taker["hit"]})
        if hit is not None:
            return int(hit["n_segments"])
    sizes = [h["n_segments"] for h in protocol_rows.select(database, HITS, {"study_id": study["id"]})]
    return int(round(sum(sizes) / len(sizes))) if sizes else items(study["config"])


def on_leave(
    tx: Transaction,
    study: StudyRow,
    participant: ParticipantRow,
    withdrawn: list[AssignmentRecord],
    actor: str,
    out: Reassignment,
) -> None:
    """An annotator leaves (deactivated and reassigned, removed): a HIT they left unfinished is
    no longer theirs, so the next annotator added may get it whole (setup gives the least-held
    HIT); their saved answers stay. A finished HIT (nothing withdrawn) stays counted as held."""
    if not withdrawn:
        return
    protocol_rows.delete(tx.db, TAKERS, {"participant_id": participant["id"]})
    for a in withdrawn:
        out.waiting.append({"phase": a["phase"], "item": a["item_id"]})


# -- an item ----------------------------------------------------------------------------------


def segment_of(database, study_id: str, assignment: AssignmentRow) -> dict:
    where = {"study_id": study_id, "segment_row": int(assignment["item_id"])}
    return required(protocol_rows.one(database, SEGMENTS, where), "ESA segment of an assignment")


def labels_of(section: dict) -> list[tuple[int, str]]:
    return sorted((int(k), str(v)) for k, v in (section.get("score_labels") or {}).items())


def content(database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir) -> dict:
    """The segment (its source and the output to mark), its document's neighbours within
    `context` segments (source and output each), the slider's labels and the instructions."""
    section = study["config"][NAME]
    seg = segment_of(database, study["id"], assignment)
    doc = protocol_rows.select(database, SEGMENTS, {"study_id": study["id"], "doc": seg["doc"]}, order_by=("doc_pos",))
    reach = len(doc) if section.get("context", "all") == "all" else int(section["context"])
    k = seg["doc_pos"]

    def shown(rows):
        return [{"source": r["source"], "target": r["target"]} for r in rows]

    return {
        "source": seg["source"],
        "target": seg["target"],
        "source_lang": seg["source_lang"],
        "target_lang": seg["target_lang"],
        "before": shown(doc[max(0, k - reach) : k]),
        "after": shown(doc[k + 1 : k + 1 + reach]),
        "doc_pos": k + 1,
        "doc_len": len(doc),
        "labels": labels_of(section),
        "instructions": section.get("instructions") or INSTRUCTIONS,
    }


def parse_spans(raw, target: str) -> tuple[list[Span], list[str]]:
    """The hidden field's spans (JSON: [{start, end, text, severity, missing}]) checked against the
    exact output (services/esa/spans.check_spans), and every problem, each naming its span."""
    try:
        found = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or [])
    except ValueError:
        return [], ["The error spans could not be read: mark them again."]
    if not isinstance(found, list):
        return [], ["The error spans could not be read: mark them again."]
    spans, problems = [], []
    for i, d in enumerate(found):
        try:
            if not isinstance(d, dict) or not all(_whole(d.get(k)) for k in ("start", "end")):
                raise ValueError("not a start and an end in characters")
            spans.append(Span.from_dict({**d, "category": None, "side": "target"}))
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"span {i}: {e}")
    if problems:
        return [], problems
    try:
        check_spans(spans, target)
    except SpanError as e:
        return [], e.problems
    return spans, []


def validate(database, assignment: AssignmentRow, payload: dict) -> dict:
    """The spans (checked against the output as shown) and the score (0-100, the slider moved);
    every problem at once, each field marked."""
    seg = segment_of(database, assignment["study_id"], assignment)
    spans, problems = parse_spans(payload.get("spans"), seg["target"])
    score = payload.get("score")
    parts, fields = [], {}
    if problems:
        words = "The error spans need fixing: " + "; ".join(problems) + "."
        parts.append(words)
        fields["spans"] = words
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 100:
        words = "Move the slider to score the translation (0-100)."
        parts.append(words)
        fields["score"] = words
    refuse_all(parts, fields)
    assert isinstance(score, (int, float))  # refused above otherwise
    ordered = sorted(spans, key=lambda s: (s.missing, s.start, s.end))
    return {"spans": [s.to_dict() for s in ordered], "score": int(round(score)), "segment_row": seg["segment_row"]}


def save(tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data) -> None:
    row = {
        "assignment_id": assignment["id"],
        "segment_row": data["segment_row"],
        "spans": json.dumps(data["spans"], ensure_ascii=False),
        "score": data["score"],
        "created_at": now(),
    }
    protocol_rows.insert(tx.db, ANSWERS, row)


def collected(database, study_id: str) -> dict[str, int]:
    """The team's progress tab: the segments annotated (one esa_answers row each)."""
    return {"ESA answers": assignments.done_count(database, study_id, NAME)}


def stored(database, assignment: AssignmentRow) -> dict:
    row = protocol_rows.one(database, ANSWERS, {"assignment_id": assignment["id"]})
    return {"spans": json.loads(row["spans"]), "score": row["score"]} if row else {}


def span_words(s: dict) -> str:
    where = MISSING_TOKEN if s.get("missing") else f"{s['start']}-{s['end']} {json.dumps(s.get('text', ''))}"
    return f"{s['severity']} {where}"


def answer_words(database, assignment: AssignmentRow, answer: dict) -> str:
    """score 70; major 4-7 "cat", minor [MISSING]."""
    if not answer:
        return ""
    spans = ", ".join(span_words(s) for s in answer.get("spans", []))
    return f"score {answer['score']}; " + (spans or "no error marked")


# -- the export ------------------------------------------------------------------------------


EXPORT_TABLES = {
    ANSWERS: ExportTable(
        answer_rows,
        "One row per ESA answer: the error spans an annotator marked in one segment's translation "
        "and the 0-100 score they gave it (docs/esa.md).",
        {
            "assignment_id": ("integer", "the answer's item (assignment)"),
            "participant": ("string", "pseudonym of the annotator"),
            "hit": ("integer", "the HIT the segment is in (esa_segments.hit)"),
            "segment_row": ("integer", "the segment's row in the segments file, from 0 (esa_segments.segment_row)"),
            "doc_id": ("string", "the segment's document (the segments file's doc_id)"),
            "segment_id": ("string", "the segment's id (the segments file's segment_id)"),
            "system": ("string", "the system whose translation was annotated"),
            "score": ("integer", "the annotator's score of the translation, 0-100"),
            "spans": (
                "json",
                "the error spans: [{start, end, text, severity, category, missing, side}], start and end "
                "character offsets (code points, from 0, end exclusive) in esa_segments.target, text "
                "the characters between them, severity minor or major; an omission ([MISSING]) has "
                "missing true and start = end = the target's length",
            ),
            "n_minor": ("integer", "minor spans, the omission apart"),
            "n_major": ("integer", "major spans, the omission apart"),
            "omission": ("string", "the [MISSING] span's severity, empty when none was marked"),
            "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
            "created_at": ("timestamp", "when the answer was saved"),
        },
    ),
    SEGMENTS: ExportTable(
        segment_rows,
        "ESA's corpus: one row per segment and system of the [esa] segments file, with its HIT.",
        {
            "segment_row": ("integer", "the row in the segments file, from 0"),
            "hit": ("integer", "the HIT that holds it (documents are never split across HITs)"),
            "pos": ("integer", "its place in the HIT, from 0"),
            "doc_id": ("string", "the document"),
            "doc_pos": ("integer", "its place in its document (one system's translation), from 0"),
            "segment_id": ("string", "the segment's id"),
            "system": ("string", "the system that translated it"),
            "source": ("string", "the source segment"),
            "target": ("string", "the system's translation, as the annotator saw it (the spans' offsets)"),
            "source_lang": ("string", "the source language, when the file gives it"),
            "target_lang": ("string", "the target language, when the file gives it"),
        },
        content=True,
    ),
}


PROTOCOL = protocols.register(
    Protocol(
        name=NAME,
        roles=(
            Role(
                NAME,
                (NAME,),
                "Error span annotation",
                setup,
                items=items,
                held_items=held_items,  # the welcome counts the annotator's own HIT
                on_leave=on_leave,  # an unfinished HIT is free again for the next annotator
                seconds_per_item=40,  # the welcome's estimate per segment
                label="ESA annotator",
            ),
        ),
        tabs=(
            Tab(
                NAME,
                (NAME,),
                "tabs.esa:build",
                label="Error spans",
                scripts=("assets/js/script/esa.js",),
                styles=("assets/css/esa.css",),
            ),
        ),
        phases=(
            Phase(
                NAME,
                content,
                validate,
                save,
                stored,
                label="ESA segment",
                answer_words=answer_words,
                not_handed_on="an ESA HIT is annotated whole by one annotator: the next annotator added gets it",
            ),
        ),
        defaults=DEFAULTS,
        check=check,
        load=corpus.load,
        prepare=corpus.prepare,
        corpus_files=("segments",),
        store_corpus=corpus.store,
        count_corpus=corpus.count,
        count_collected=collected,
        tables=(SEGMENTS_TABLE, HITS_TABLE, TAKERS_TABLE, ANSWERS_TABLE),
        export_tables=EXPORT_TABLES,
        analyze="services.esa.study_analysis:add_analyze",
        report_section="services.report.esa:section",  # services/report sits above the protocols
        analysis_panel="tabs.analysis_esa:panel",
        texts={
            "en": {
                "welcome_esa": "Welcome. You will mark the errors in the translations of about {items} segments, "
                "document by document, and score each one. It takes about {minutes} minutes; you can stop "
                "and come back later with the same link."
            }
        },
    )
)
