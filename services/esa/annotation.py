"""What ESA (services/esa/protocol.py) and MQM (services/esa/mqm_protocol.py) share as protocols:
the tables' shape (segments, HITs, takers, answers, each under the protocol's name), the queue (one
HIT of whole documents per annotator, the one fewest annotators hold), an item's segment with its
document around it, the spans read from the page's hidden field, and the answer saved and read
back. A SpanAnnotation is these for one protocol; each protocol adds its own checks and score."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from services.common import settings
from services.common.hookspecs import Reassignment
from services.common.protocols import Column, ExportTable, Index, Table
from services.esa import attention
from services.esa.corpus import Corpus
from services.esa.spans import (
    MISSING_TOKEN,
    Span,
    SpanError,
    TimeSpan,
    Word,
    check_spans,
    check_time_spans,
    is_time_record,
    words_in,
)
from storage import assignments, protocol_rows
from storage.db import Transaction, now, required
from storage.protocol_schema import AddColumn, SchemaStep
from storage.rows import AssignmentRecord, AssignmentRow, ParticipantRow, StudyRow


def whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def queue_problems(name: str, section: dict) -> list[tuple[str, str]]:
    """The section's HIT size, context and show_source_transcript checked (both protocols'
    [<name>] sections have them)."""
    out: list[tuple[str, str]] = []
    if not isinstance(section.get("show_source_transcript", True), bool):
        out.append((f"{name}.show_source_transcript", "must be true or false (the source's text beside its audio)"))
    if not whole(section.get("hit_size")) or section["hit_size"] < 1:
        out.append((f"{name}.hit_size", "must be a whole number of segments >= 1 (WMT 2024: 100)"))
    ctx = section.get("context")
    if ctx != "all" and not (isinstance(ctx, int) and not isinstance(ctx, bool) and ctx >= 0):
        out.append((f"{name}.context", 'must be "all" (the whole document) or a whole number of segments >= 0'))
    return out


# the waveform library the pages draw a speech output with (its README: version and source), loaded
# before assets/js/script/esa.js on ESA's and MQM's pages (Tab.scripts)
WAVESURFER = ("assets/vendor/wavesurfer/wavesurfer.min.js", "assets/vendor/wavesurfer/regions.min.js")
# the segments' speech columns (services/esa/corpus.py speech_of): each audio's name in the media
# folder and its duration in seconds ("" and 0 without one), the output transcript's word times (JSON)
SPEECH_COLUMNS = (
    Column("source_audio", "TEXT", not_null=True, default=""),
    Column("source_audio_s", "REAL", not_null=True, default=0),
    Column("target_audio", "TEXT", not_null=True, default=""),
    Column("target_audio_s", "REAL", not_null=True, default=0),
    Column("target_words", "TEXT", not_null=True, default=""),
)


# the export's data dictionary of the speech columns (each protocol's segments table)
SPEECH_DICTIONARY = {
    "source_audio": ("string", "the source's recording in the media folder (speech/<sha256>.<format>), empty without"),
    "source_audio_s": ("number", "its duration in seconds (0 without)"),
    "target_audio": ("string", "the output's audio in the media folder (speech/<sha256>.<format>), empty without"),
    "target_audio_s": ("number", "its duration in seconds (0 without): the bound of the spans' end_s"),
    "target_words": (
        "json",
        "the output transcript's word times, [{word, start, end}] in seconds, as the segments file gave them; "
        "empty without",
    ),
}


def answer_head(corpus: Corpus) -> dict[str, tuple[str, str]]:
    """The data dictionary's first columns of a span protocol's answers (services/esa/answers.py
    answer_rows): the item, its annotator and its segment."""
    return {
        "assignment_id": ("integer", "the answer's item (assignment)"),
        "participant": ("string", "pseudonym of the annotator"),
        "hit": ("integer", f"the HIT the segment is in ({corpus.segments}.hit)"),
        "segment_row": (
            "integer",
            f"the segment's row in the segments file, from 0 ({corpus.segments}.segment_row)",
        ),
        "doc_id": ("string", "the segment's document (the segments file's doc_id)"),
        "segment_id": ("string", "the segment's id (the segments file's segment_id)"),
        "system": ("string", "the system whose translation was annotated"),
    }


# the data dictionary's last columns of a span protocol's answers
ANSWER_TAIL = {
    "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
    "created_at": ("timestamp", "when the answer was saved"),
}


def segments_export(corpus: Corpus, query) -> ExportTable:
    """A span protocol's corpus in the export (esa_segments, mqm_segments): one row per segment
    and system of its segments file, with its HIT and its speech columns."""
    return ExportTable(
        query,
        f"{corpus.name.upper()}'s corpus: one row per segment and system of the [{corpus.name}] "
        "segments file, with its HIT.",
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
            **SPEECH_DICTIONARY,
            **attention.SEGMENTS_DICTIONARY,
        },
        content=True,
    )


def speech_step(corpus: Corpus, version: int) -> SchemaStep:
    """The schema step that adds the speech columns to a protocol's segments table made before them."""
    return SchemaStep(version, tuple(AddColumn(corpus.segments, c) for c in SPEECH_COLUMNS))


def tables(corpus: Corpus, score: Column, extra: tuple[Column, ...] = ()) -> tuple[Table, ...]:
    """The protocol's four tables; `score` is its answers' score column (ESA's 0-100, MQM's sum),
    `extra` the columns a protocol adds after the answers' own (ESA-AI's prefill)."""
    segments = Table(
        corpus.segments,
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
            *SPEECH_COLUMNS,
            *attention.SEGMENT_COLUMNS,
        ),
        indexes=(
            Index(("study_id", "segment_row"), unique=True),
            Index(("study_id", "hit", "pos")),
            Index(("study_id", "doc", "doc_pos")),
        ),
        study_sized=True,
    )
    hits = Table(
        corpus.hits,
        (
            Column("study_id", "TEXT", not_null=True, references="studies.id"),
            Column("hit", "INTEGER", not_null=True),
            Column("n_segments", "INTEGER", not_null=True),
            Column("n_documents", "INTEGER", not_null=True),
        ),
        indexes=(Index(("study_id", "hit"), unique=True),),
    )
    takers = Table(  # who took which HIT: a newcomer gets the HIT fewest annotators hold
        corpus.takers,
        (
            Column("study_id", "TEXT", not_null=True, references="studies.id"),
            Column("hit", "INTEGER", not_null=True),
            Column("participant_id", "INTEGER", not_null=True, references="participants.id"),
            Column("created_at", "TEXT", not_null=True),
        ),
        indexes=(Index(("study_id", "hit")), Index(("participant_id",), unique=True)),
        study_sized=True,
    )
    answers = Table(
        corpus.answers,
        (
            Column("assignment_id", "INTEGER", not_null=True, references="assignments.id"),
            Column("segment_row", "INTEGER", not_null=True),
            Column("spans", "TEXT", not_null=True),  # JSON: [Span.to_dict()], ordered as marked in the text
            score,
            Column("created_at", "TEXT", not_null=True),
            *extra,
        ),
        indexes=(Index(("assignment_id",), unique=True),),
        study_sized=True,
    )
    return segments, hits, takers, answers


def read_spans(raw) -> tuple[list[dict], list[str]]:
    """The hidden field's span records (JSON list of objects with whole start and end), or the
    problems, each naming its span."""
    try:
        found = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or [])
    except ValueError:
        return [], ["The error spans could not be read: mark them again."]
    if not isinstance(found, list):
        return [], ["The error spans could not be read: mark them again."]
    problems = [
        f"span {i}: not a start and an end in characters, nor in seconds"
        for i, d in enumerate(found)
        if not isinstance(d, dict) or not (is_time_record(d) or all(whole(d.get(k)) for k in ("start", "end")))
    ]
    return (found, []) if not problems else ([], problems)


def split_records(raw) -> tuple[list[dict], list[dict], list[str]]:
    """The hidden field's span records: (those in characters, those in seconds, problems)."""
    found, problems = read_spans(raw)
    return [d for d in found if not is_time_record(d)], [d for d in found if is_time_record(d)], problems


def segment_words(seg: dict) -> list[Word]:
    """The output transcript's word times, as checked at import ([] without)."""
    return [Word(w["word"], w["start"], w["end"]) for w in json.loads(seg.get("target_words") or "[]")]


def parse_time_spans(
    records: list[dict], seg: dict, severities: Sequence[str], categories: Iterable[str] | None
) -> tuple[list[TimeSpan], list[str]]:
    """The spans marked on the output's waveform (records with start_s and end_s, in seconds)
    checked against its audio's duration (spans.check_time_spans: inside it, end after start, no
    overlap), each given the transcript's words it covers where the segment has word times
    (spans.words_in); problems name each span by its times. An omission is the [MISSING] token's,
    never a time span."""
    if not records:
        return [], []
    if not seg.get("target_audio"):
        return [], ["this output has no audio, so no span can be marked in seconds"]
    spans, problems = [], []
    for i, d in enumerate(records):
        try:
            span = TimeSpan.from_dict({**d, "words": ()})
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"audio span {i}: {e}")
            continue
        if span.missing:
            problems.append(f"audio span {i}: an omission is marked on the {MISSING_TOKEN} token, not the audio")
            continue
        spans.append(span)
    if problems:
        return [], problems
    try:
        check_time_spans(spans, float(seg["target_audio_s"]), severities=severities, categories=categories)
    except SpanError as e:
        return [], [f"on the audio, {p}" for p in e.problems]
    words = segment_words(seg)
    spans = [replace(s, words=tuple(words_in(s, words))) for s in spans]
    return sorted(spans, key=lambda s: (s.start_s, s.end_s)), []


def speech(seg: dict, section: dict, media_dir=None) -> dict:
    """A segment's audio as its page gets it: the files' paths in the media folder ("" without),
    the output audio's duration and word times, and whether the source's transcript is shown
    (the section's show_source_transcript; always where the source has no audio). The files are
    named by their content (sha256), so only a page that was given an item's name can fetch it."""
    has_source_audio = bool(seg.get("source_audio"))
    # the settings only where there is audio: read afresh from the environment they cost 0.5 ms,
    # a third of a text segment's view (benchmarks/span_load.py)
    folder = Path(media_dir or settings.current().media_dir) if has_source_audio or seg.get("target_audio") else None
    return {
        "source_audio": str(folder / seg["source_audio"]) if folder and has_source_audio else "",
        "target_audio": str(folder / seg["target_audio"]) if folder and seg.get("target_audio") else "",
        "target_audio_s": float(seg.get("target_audio_s") or 0),
        "target_words": [{"word": w.text, "start": w.start_s, "end": w.end_s} for w in segment_words(seg)],
        "show_source_transcript": not has_source_audio or bool(section.get("show_source_transcript", True)),
    }


class SpanAnnotation:
    """One protocol's queue, item and answer on its own tables (module docstring)."""

    def __init__(self, corpus: Corpus, score_column: str, extra: tuple[str, ...] = (), higher_is_better: bool = True):
        self.corpus = corpus
        self.name = corpus.name
        self.score_column = score_column
        self.higher_is_better = higher_is_better  # ESA's 0-100; MQM's weighted sum is lower for better
        # the answers' extra columns (tables' `extra`), each a JSON value the answer carries under
        # its name: stored as "" when the answer has none, and then left out of it when read back
        self.extra = extra

    # -- the queue: one HIT per annotator -----------------------------------------------------

    def setup(self, tx: Transaction, study: StudyRow, pid: int, group, gender, design_index=None) -> None:
        """The annotator's queue is one HIT, the one fewest annotators hold (ties: the first; a HIT
        failed on its attention items and re-run no longer counts its failed annotator), its
        segments in the HIT's order (each document's segments together, in their order), after
        the study's practice items (HIT -1) when it has a tutorial."""
        sid, c = study["id"], self.corpus
        hits = protocol_rows.select(tx.database, c.hits, {"study_id": sid}, order_by=("hit",))
        if not hits:
            return
        held = {
            h["hit"]: protocol_rows.count(tx.database, c.takers, {"study_id": sid, "hit": h["hit"]})
            - attention.reruns_of(tx.database, c.qc, sid, h["hit"])
            for h in hits
        }
        hit = min(hits, key=lambda h: (held[h["hit"]], h["hit"]))
        practice = protocol_rows.select(tx.database, c.segments, {"study_id": sid, "hit": -1}, order_by=("pos",))
        for s in practice:  # before the HIT's first item (its positions are 0 and on)
            meta = {"hit": -1, "pos": s["pos"], "tutorial": True}
            assignments.insert_assignment(
                tx.db, sid, pid, self.name, s["segment_row"], s["pos"] - len(practice), meta=meta
            )
        segs = protocol_rows.select(tx.database, c.segments, {"study_id": sid, "hit": hit["hit"]}, order_by=("pos",))
        for s in segs:
            meta = {"hit": hit["hit"], "pos": s["pos"]}
            assignments.insert_assignment(tx.db, sid, pid, self.name, s["segment_row"], s["pos"], meta=meta)
        row = {"study_id": sid, "hit": hit["hit"], "participant_id": pid, "created_at": now()}
        protocol_rows.insert(tx.db, c.takers, row)

    def items(self, config: dict) -> int:
        return int((config.get(self.name) or {}).get("hit_size", 0))

    def held_items(self, database, study: StudyRow, participant: ParticipantRow) -> int:
        """The segments of the HIT the annotator holds (whole documents: more or fewer than
        hit_size); before they hold one, the study's mean HIT size, rounded; without HITs, hit_size."""
        c = self.corpus
        practice = protocol_rows.count(database, c.segments, {"study_id": study["id"], "hit": -1})
        taker = protocol_rows.one(database, c.takers, {"participant_id": participant["id"]})
        if taker is not None:
            hit = protocol_rows.one(database, c.hits, {"study_id": study["id"], "hit": taker["hit"]})
            if hit is not None:
                return int(hit["n_segments"]) + practice
        sizes = [h["n_segments"] for h in protocol_rows.select(database, c.hits, {"study_id": study["id"]})]
        return (int(round(sum(sizes) / len(sizes))) if sizes else self.items(study["config"])) + practice

    def on_leave(
        self,
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
        protocol_rows.delete(tx.db, self.corpus.takers, {"participant_id": participant["id"]})
        for a in withdrawn:
            out.waiting.append({"phase": a["phase"], "item": a["item_id"]})

    def collected(self, database, study_id: str) -> dict[str, int]:
        """The team's progress tab: the segments annotated (one answers row each)."""
        return {f"{self.name.upper()} answers": assignments.done_count(database, study_id, self.name)}

    # -- an item ------------------------------------------------------------------------------

    def segment_of(self, database, study_id: str, assignment: AssignmentRow) -> dict:
        where = {"study_id": study_id, "segment_row": int(assignment["item_id"])}
        return required(protocol_rows.one(database, self.corpus.segments, where), f"{self.name} segment")

    def document(self, database, study: StudyRow, assignment: AssignmentRow, media_dir=None) -> dict:
        """The segment (its source and the output to mark) and its document's neighbours within
        the section's `context` segments (source and output each): what both pages show; with
        the segment's speech (speech())."""
        section = study["config"][self.name]
        seg = self.segment_of(database, study["id"], assignment)
        # an attention copy is shown among its original's neighbours, never as one of them
        kind = attention.PRACTICE if seg.get("kind") == attention.PRACTICE else attention.ORIGINAL
        where = {"study_id": study["id"], "doc": seg["doc"], "kind": kind}
        doc = protocol_rows.select(database, self.corpus.segments, where, order_by=("doc_pos",))
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
            "practice": seg.get("kind") == attention.PRACTICE,
            **speech(seg, section, media_dir),
        }

    # -- the answer ---------------------------------------------------------------------------

    def save(self, tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data):
        row = {
            "assignment_id": assignment["id"],
            "segment_row": data["segment_row"],
            "spans": json.dumps(data["spans"], ensure_ascii=False),
            self.score_column: data[self.score_column],
            "created_at": now(),
            **{k: json.dumps(data[k], ensure_ascii=False) if data.get(k) is not None else "" for k in self.extra},
        }
        protocol_rows.insert(tx.db, self.corpus.answers, row)
        if data.get("practice") is not None:
            item = {"segment_row": data["segment_row"], **data["practice"]}
            attention.record_practice(tx, self.corpus.qc, study["id"], participant["id"], item)

    def after_save(self, tx: Transaction, study: StudyRow, assignment: AssignmentRow) -> None:
        """Phase.after_save: the annotator's last item judges their HIT's attention items."""
        attention.judge_hit(tx, study, assignment, self.corpus, self.score_column, self.higher_is_better)

    def qc(self, database, study: StudyRow, rows: list[dict]) -> dict[int, str]:
        """Role.qc: each finished annotator's attention verdict and tutorial, in a payer's words."""
        return attention.payment_qc(database, self.corpus.qc, study["config"].get(self.name) or {}, rows)

    def practice(self, seg: dict, spans: list[dict], payload: dict, section: dict) -> tuple[dict | None, str | None]:
        """A practice item's answer: ({"right": ...} to store with it, or None for any other item;
        the refusal's feedback, or None to save) (attention.practice_result)."""
        if seg.get("kind") != attention.PRACTICE:
            return None, None
        blocks = bool(section.get("tutorial_blocks", False))
        right, words = attention.practice_result(seg, spans, payload.get("practice_tries"), blocks)
        return {"right": right}, words

    def stored(self, database, assignment: AssignmentRow) -> dict:
        row = protocol_rows.one(database, self.corpus.answers, {"assignment_id": assignment["id"]})
        if not row:
            return {}
        out = {"spans": json.loads(row["spans"]), self.score_column: row[self.score_column]}
        return {**out, **{k: json.loads(row[k]) for k in self.extra if row.get(k)}}


def parse_esa_spans(raw, target: str) -> tuple[list[Span], list[str]]:
    """The hidden field's spans (JSON: [{start, end, text, severity, missing}]) checked against the
    exact output (services/esa/spans.check_spans, no category), and every problem, each naming its span."""
    found, problems = read_spans(raw)
    if problems:
        return [], problems
    spans = []
    for i, d in enumerate(found):
        try:
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


def span_words(s: dict) -> str:
    """`major 4-7 "cat"`, `minor [MISSING]`, `minor 1.2-1.9 s of the audio`; an MQM span says its
    category after its severity."""
    if is_time_record(s):
        where = f"{s['start_s']:g}-{s['end_s']:g} s of the audio"
    elif s.get("missing"):
        where = MISSING_TOKEN
    else:
        where = f"{s['start']}-{s['end']} {json.dumps(s.get('text', ''))}"
    category = f" {s['category']}" if s.get("category") else ""
    return f"{s['severity']}{category} {where}"
