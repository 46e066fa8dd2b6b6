"""Error Span Annotation (ESA, Kocmi et al., WMT 2024) as a protocol: an annotator takes one HIT of
whole documents and, segment by segment, marks the translation's error spans (minor or major, a
[MISSING] token for omissions) and then scores it 0-100 (docs/esa.md). Registered with
services/common/protocols.py through the same hooks a plugin has (docs/plugins.md): its tables are
its own (Protocol.tables, shaped as MQM's: services/esa/annotation.py), its rows go through
storage/protocol_rows.py, its page is tabs/esa.py with
assets/js/script/esa.js and assets/css/esa.css."""

from __future__ import annotations

from typing import Any

from services.common import protocols
from services.common.protocols import Column, ExportTable, Phase, Protocol, Role, Tab
from services.esa import annotation, attention, corpus, prefill_store
from services.esa.answers import segment_rows
from services.esa.corpus import ANSWERS, NAME, SEGMENTS
from services.esa.spans import ESA_SEVERITIES, MISSING_TOKEN
from services.participation.submissions import refuse_all
from storage import studies
from storage.db import required
from storage.rows import AssignmentRow, ParticipantRow, StudyRow

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
    "prefill": "",  # ESA-AI: "xcomet" or "gemba-mqm" pre-fills the spans (services/esa/prefill.py)
    "show_source_transcript": True,  # a source with audio: its text shown beside the player too
    **attention.DEFAULTS,  # quality control: attention items, reruns, the tutorial (docs/esa.md)
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

# the answers' prefill column (schema version 2): ESA-AI's outcomes (services/esa/prefill_store.py)
SPANS = annotation.SpanAnnotation(corpus.ESA, "score", extra=(prefill_store.ANSWER_COLUMN.name,))
SEGMENTS_TABLE, HITS_TABLE, TAKERS_TABLE, ANSWERS_TABLE = annotation.tables(
    corpus.ESA, Column("score", "INTEGER", not_null=True), extra=(prefill_store.ANSWER_COLUMN,)
)


def check(section: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [esa] section."""
    out = annotation.queue_problems(NAME, section)
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
    return out + prefill_store.check(section) + attention.check(NAME, section)


# -- the queue, the item, the answer (services/esa/annotation.py) -----------------------------

setup, items, segment_of, save, stored = SPANS.setup, SPANS.items, SPANS.segment_of, SPANS.save, SPANS.stored
held_items, on_leave, collected = SPANS.held_items, SPANS.on_leave, SPANS.collected
after_save, payment_qc = SPANS.after_save, SPANS.qc
parse_spans = annotation.parse_esa_spans
span_words = annotation.span_words


def labels_of(section: dict) -> list[tuple[int, str]]:
    return sorted((int(k), str(v)) for k, v in (section.get("score_labels") or {}).items())


def content(
    database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir
) -> dict | None:
    """The segment (its source and the output to mark), its document's neighbours within
    `context` segments (source and output each), the slider's labels and the instructions; in an
    ESA-AI study its pre-filled spans, None (not ready) until they are stored."""
    section = study["config"][NAME]
    pre: list[dict] | None = []
    if section.get("prefill"):
        pre = prefill_store.spans_of(database, study["id"], int(assignment["item_id"]))
    if pre is None:
        return None
    return {
        **SPANS.document(database, study, assignment, media_dir),
        "labels": labels_of(section),
        "instructions": attention.practice_note(assignment["meta"])
        + (section.get("instructions") or INSTRUCTIONS)
        + prefill_store.instructions(section),
        "prefill": pre,
    }


def validate(database, assignment: AssignmentRow, payload: dict) -> dict:
    """The spans (checked against the output as shown) and the score (0-100, the slider moved);
    every problem at once, each field marked."""
    seg = segment_of(database, assignment["study_id"], assignment)
    text_records, time_records, problems = annotation.split_records(payload.get("spans"))
    spans: list = []
    timed: list = []
    if not problems:
        spans, problems = parse_spans(text_records, seg["target"])
        timed, more = annotation.parse_time_spans(time_records, seg, ESA_SEVERITIES, None)
        problems += more
    study = required(studies.get_study(database, assignment["study_id"]), "study of an ESA answer")
    record, links = prefill_store.answer_record(database, study, seg, text_records, spans)
    problems = problems or links
    score = payload.get("score")
    parts, fields = [], {}
    practice, feedback = None, None
    if not problems:  # a practice item's feedback: what the annotator missed
        practice, feedback = SPANS.practice(seg, [s.to_dict() for s in spans], payload, study["config"][NAME])
    if problems:
        words = "The error spans need fixing: " + "; ".join(problems) + "."
        parts.append(words)
        fields["spans"] = words
    elif feedback:
        parts.append(feedback)
        fields["spans"] = feedback
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 100:
        words = "Move the slider to score the translation (0-100)."
        parts.append(words)
        fields["score"] = words
    refuse_all(parts, fields)
    assert isinstance(score, (int, float))  # refused above otherwise
    ordered = sorted(spans, key=lambda s: (s.missing, s.start, s.end))
    out = {
        "spans": [s.to_dict() for s in [*ordered, *timed]],
        "score": int(round(score)),
        "segment_row": seg["segment_row"],
    }
    if practice is not None:
        out["practice"] = practice
    return {**out, "prefill": record} if record is not None else out


def answer_words(database, assignment: AssignmentRow, answer: dict) -> str:
    """score 70; major 4-7 "cat", minor [MISSING]."""
    if not answer:
        return ""
    spans = ", ".join(span_words(s) for s in answer.get("spans", []))
    pre = prefill_store.words(answer.get("prefill"))
    return f"score {answer['score']}; " + (spans or "no error marked") + (f"; {pre}" if pre else "")


# -- the export ------------------------------------------------------------------------------


EXPORT_TABLES = {
    ANSWERS: ExportTable(
        prefill_store.answer_rows,
        "One row per ESA answer: the error spans an annotator marked in one segment's translation "
        "and the 0-100 score they gave it (docs/esa.md).",
        {
            **annotation.answer_head(corpus.ESA),
            "score": ("integer", "the annotator's score of the translation, 0-100"),
            "spans": (
                "json",
                "the error spans: [{start, end, text, severity, category, missing, side}], start and end "
                "character offsets (code points, from 0, end exclusive) in esa_segments.target, text "
                "the characters between them, severity minor or major; an omission ([MISSING]) has "
                "missing true and start = end = the target's length. A span marked on the output's "
                "audio (esa_segments.target_audio) is {start_s, end_s, severity, category, missing, "
                "words} instead: start_s and end_s in seconds from the audio's start (0 <= start_s < "
                "end_s <= target_audio_s), words the indices in esa_segments.target_words of the "
                "transcript words it overlaps for a positive time (empty without word times)",
            ),
            "n_minor": ("integer", "minor spans (in the text and on the audio), the omission apart"),
            "n_major": ("integer", "major spans (in the text and on the audio), the omission apart"),
            "omission": ("string", "the [MISSING] span's severity, empty when none was marked"),
            **prefill_store.ANSWER_DICTIONARY,
            **attention.ANSWER_DICTIONARY,
            **annotation.ANSWER_TAIL,
        },
    ),
    SEGMENTS: annotation.segments_export(corpus.ESA, segment_rows),
    prefill_store.PREFILL: prefill_store.EXPORT_TABLE,
    corpus.ESA.qc: attention.export_table(corpus.ESA),
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
                qc=payment_qc,  # the Finished list: the attention items' verdict and the tutorial
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
                scripts=(*annotation.WAVESURFER, "assets/js/script/esa.js"),
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
                not_ready=prefill_store.NOT_READY,
                answer_words=answer_words,
                after_save=after_save,  # the HIT's last item: its attention items judged
                not_handed_on="an ESA HIT is annotated whole by one annotator: the next annotator added gets it",
            ),
        ),
        defaults=DEFAULTS,
        check=check,
        load=corpus.load,
        prepare=prefill_store.prepare,
        corpus_files=("segments",),
        store_corpus=prefill_store.store,
        count_corpus=corpus.count,
        count_collected=collected,
        tables=(
            SEGMENTS_TABLE,
            HITS_TABLE,
            TAKERS_TABLE,
            ANSWERS_TABLE,
            prefill_store.PREFILL_TABLE,
            attention.qc_table(corpus.ESA),
        ),
        # 2: ESA-AI's pre-fill; 3: speech (the segments' audio columns); 4: quality control
        schema_version=4,
        schema_steps=(
            prefill_store.SCHEMA_STEP,
            annotation.speech_step(corpus.ESA, 3),
            attention.qc_step(corpus.ESA, 4),
        ),
        jobs="services.esa.prefill_store:background_jobs",  # ESA-AI's pre-fill
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
