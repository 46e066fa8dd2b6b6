"""ESA-AI's pre-filled spans in the protocol's tables (services/esa/prefill.py computes them).

When it runs: a study with `[esa] prefill = "xcomet"` or `"gemba-mqm"` queues one background job
at import (kind esa_prefill, Protocol.jobs; the app's worker runs it), which pre-fills every
segment not yet pre-filled, BATCH segments per model call, each batch written at once (a job that
fails or restarts keeps what it wrote). A segment is served only once its pre-filled spans are
stored: until then its page says NOT_READY (Phase.not_ready), so no annotator ever sees it
without them. A backend that is not configured fails the job at once with the message that says
what to set (the designer sees it among the jobs); importing again queues the job again.

Stored: esa_prefill, one row per segment (the spans as JSON, Span.to_dict with the category the
backend gave, how many of its errors were dropped or merged, its raw answer, the backend and the
model); each answer's outcomes in esa_answers.prefill (prefill.outcomes: JSON, "" when the study
has no pre-fill).
"""

from __future__ import annotations

import json

from services.common.protocols import ExportTable
from services.esa import answers, corpus, prefill
from services.esa.corpus import ANSWERS, NAME, SEGMENTS
from services.esa.spans import Span
from services.models.cache import CACHE
from storage import jobs, protocol_rows, studies
from storage.db import Transaction, now, required
from storage.protocol_schema import AddColumn, Column, Index, SchemaStep, Table
from storage.rows import StudyRow

PREFILL = f"{NAME}_prefill"
KIND = f"{NAME}_prefill"
NOT_READY = "This segment's error spans are being pre-filled; it will be ready in a minute or two. Try again soon."

PREFILL_TABLE = Table(
    PREFILL,
    (
        Column("study_id", "TEXT", not_null=True, references="studies.id"),
        Column("segment_row", "INTEGER", not_null=True),
        Column("spans", "TEXT", not_null=True),  # JSON: [Span.to_dict()], the omission last
        Column("dropped", "INTEGER", not_null=True, default=0),  # the backend's errors not placed
        Column("merged", "INTEGER", not_null=True, default=0),  # overlapping ones merged away
        Column("raw", "TEXT", not_null=True, default=""),  # the backend's answer (JSON)
        Column("backend", "TEXT", not_null=True),
        Column("model", "TEXT", not_null=True),
        Column("created_at", "TEXT", not_null=True),
    ),
    indexes=(Index(("study_id", "segment_row"), unique=True),),
    study_sized=True,
)
# esa_answers.prefill: what became of each pre-filled span (prefill.outcomes as JSON; "": none)
ANSWER_COLUMN = Column("prefill", "TEXT", not_null=True, default="")
SCHEMA_STEP = SchemaStep(2, (PREFILL_TABLE, AddColumn(ANSWERS, ANSWER_COLUMN)))


def backend_of(section: dict) -> str:
    return str(section.get("prefill") or "")


# ESA-AI's page: what the pre-filled spans are and what the annotator does with them
PREFILL_INSTRUCTIONS = (
    "\n\n**Some errors are already marked** by an automatic system (shown as *pre-filled*). Check each "
    "one: keep it if it is right, change its severity, mark it again over the right words to resize it, "
    "or remove it if it is not an error; then mark the errors it missed."
)


def instructions(section: dict) -> str:
    """The words added to the instructions of an ESA-AI study ("" for plain ESA)."""
    return PREFILL_INSTRUCTIONS if backend_of(section) else ""


def check(section: dict) -> list[tuple[str, str]]:
    value = section.get("prefill", "")
    if not isinstance(value, str) or value not in ("", *prefill.BACKENDS):
        return [("esa.prefill", f'must be "" (plain ESA), or one of {", ".join(prefill.BACKENDS)} (ESA-AI)')]
    return []


def prepare(bundle) -> None:
    """Protocol.prepare: the HITs (corpus.prepare), and the pre-fill backend's name in the corpus,
    which store() reads."""
    corpus.prepare(bundle)
    if NAME in bundle.corpus:
        bundle.corpus[NAME]["prefill"] = backend_of(bundle.config[NAME])


def store(tx: Transaction, study_id: str, segments) -> None:
    """Protocol.store_corpus: the segments and HITs (corpus.store), then the pre-fill job when the
    study asks for it."""
    corpus.store(tx, study_id, segments)
    if segments and segments.get("prefill"):
        jobs.enqueue(tx.db, KIND, {"study_id": study_id})


# -- the job -------------------------------------------------------------------------------


def missing_rows(database, study_id: str) -> list[dict]:
    done = {r["segment_row"] for r in protocol_rows.select(database, PREFILL, {"study_id": study_id})}
    segs = protocol_rows.select(database, SEGMENTS, {"study_id": study_id}, order_by=("segment_row",))
    return [s for s in segs if s["segment_row"] not in done]


def run(database, study_id: str, cache=CACHE, backend: prefill.Prefill | None = None) -> int:
    """Pre-fill the study's segments that have no pre-filled spans yet; returns how many were
    done. backend: the study's own (prefill.get) unless given."""
    study = required(studies.get_study(database, study_id), "study of an ESA pre-fill job")
    name = backend_of(study["config"].get(NAME) or {})
    if not name:
        return 0
    todo = missing_rows(database, study_id)
    if not todo:
        return 0
    engine = backend or prefill.get(name, study["config"], cache)
    for k in range(0, len(todo), prefill.BATCH):
        batch = todo[k : k + prefill.BATCH]
        found = engine.fill(
            [s["source"] for s in batch],
            [s["target"] for s in batch],
            [s["source_lang"] for s in batch],
            [s["target_lang"] for s in batch],
        )
        rows = [
            {
                "study_id": study_id,
                "segment_row": s["segment_row"],
                "spans": json.dumps([x.to_dict() for x in r.spans], ensure_ascii=False),
                "dropped": r.dropped,
                "merged": r.merged,
                "raw": json.dumps(r.raw, ensure_ascii=False),
                "backend": engine.name,
                "model": engine.model,
                "created_at": now(),
            }
            for s, r in zip(batch, found)
        ]
        with database.write() as db:
            # another run may have written some meanwhile (two workers): keep theirs; this batch's
            # rows looked up by the index, not the study's every row once a batch
            have = {
                r["segment_row"]
                for r in rows
                if protocol_rows.one(database, PREFILL, {"study_id": study_id, "segment_row": r["segment_row"]})
            }
            protocol_rows.insert_many(db, PREFILL, [r for r in rows if r["segment_row"] not in have])
    return len(todo)


def background_jobs(database, cache=None, media_dir=None) -> dict:
    """Protocol.jobs: the pre-fill job."""
    return {KIND: lambda payload: run(database, payload["study_id"], cache or CACHE)}


# -- the page, the answer -----------------------------------------------------------------


def spans_of(database, study_id: str, segment_row: int) -> list[dict] | None:
    """The segment's pre-filled spans (each a Span dict with its index `prefill`), None while
    they are not stored yet."""
    row = protocol_rows.one(database, PREFILL, {"study_id": study_id, "segment_row": int(segment_row)})
    if row is None:
        return None
    return [{**s, "prefill": k} for k, s in enumerate(json.loads(row["spans"]))]


def answer_record(database, study: StudyRow, seg: dict, raw, spans: list[Span]) -> tuple[dict | None, list[str]]:
    """The outcomes of an answer to a segment of a pre-filled study (None for plain ESA), and the
    problems of the spans' `prefill` links; spans as parse_spans gave them (in raw's order), the
    record in the order the answer stores them (protocol.validate's)."""
    if not backend_of(study["config"].get(NAME) or {}):
        return None, []
    pre = spans_of(database, study["id"], seg["segment_row"]) or []
    found = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or [])
    links, problems = prefill.links_of(found, len(pre))
    order = sorted(range(len(spans)), key=lambda i: (spans[i].missing, spans[i].start, spans[i].end))
    record, more = prefill.outcomes(pre, [spans[i] for i in order], [links[i] for i in order])
    return record, problems + more


def outcome_columns(row: dict) -> dict:
    """An answer's export columns of its pre-fill outcomes."""
    text = row.get("prefill") or ""
    record = json.loads(text) if text else None
    if record is None:  # plain ESA: the columns empty
        return {k: None for k in ANSWER_DICTIONARY}
    return {"prefill": record, **prefill.counts(record)}


def answer_rows(database, study_id: str) -> list[dict]:
    """ESA's answers as the export and the analysis read them (services/esa/answers.py), each with
    its pre-fill outcomes' columns (outcome_columns)."""
    return [{**r, **outcome_columns(r)} for r in answers.answer_rows(database, study_id)]


def prefill_rows(database, study_id: str) -> list[dict]:
    """The export's esa_prefill rows (the spans and raw answer as JSON)."""
    return [
        {**r, "spans": json.loads(r["spans"]), "raw": json.loads(r["raw"]) if r["raw"] else None}
        for r in protocol_rows.select(database, PREFILL, {"study_id": study_id}, order_by=("segment_row",))
    ]


def words(record: dict | None) -> str:
    """An answer's outcomes in words for the admin: "pre-filled 3: kept 1, severity 1, deleted 1; added 2"."""
    if not record:
        return ""
    c = prefill.counts(record)
    parts = ", ".join(f"{o} {c[f'prefill_{o}']}" for o in prefill.OUTCOMES if c[f"prefill_{o}"])
    return f"pre-filled {c['n_prefilled']}" + (f": {parts}" if parts else "") + f"; added {c['n_added']}"


# -- the export ----------------------------------------------------------------------------

ANSWER_DICTIONARY = {
    "prefill": (
        "json",
        "ESA-AI (a study with [esa] prefill): what became of each pre-filled span, "
        '{"spans": [{start, end, text, severity, category, missing, outcome, final}], "origin": [...]}: '
        "per pre-filled span (esa_prefill.spans, in order) its outcome (kept: same offsets and severity; "
        "severity: same offsets, severity changed; edited: offsets changed; deleted) and final, the index "
        "in spans of the span it became (null when deleted); origin, per span in spans, the index of the "
        "pre-filled span it came from, or null when the annotator added it; empty for plain ESA",
    ),
    "n_prefilled": ("integer", "ESA-AI: the segment's pre-filled spans (empty for plain ESA)"),
    "prefill_kept": ("integer", "ESA-AI: pre-filled spans kept as they were"),
    "prefill_severity": ("integer", "ESA-AI: pre-filled spans whose severity alone was changed"),
    "prefill_edited": ("integer", "ESA-AI: pre-filled spans resized or moved (their severity may have changed too)"),
    "prefill_deleted": ("integer", "ESA-AI: pre-filled spans removed"),
    "n_added": ("integer", "ESA-AI: spans the annotator added (not from a pre-filled one)"),
}

EXPORT_TABLE = ExportTable(
    prefill_rows,
    "ESA-AI's pre-filled error spans: one row per segment of a study with [esa] prefill, as the "
    "backend gave them before any annotator saw the segment (docs/esa.md, ESA-AI).",
    {
        "segment_row": ("integer", "the segment (esa_segments.segment_row)"),
        "spans": (
            "json",
            "the pre-filled spans: [{start, end, text, severity, category, missing, side}] as esa_answers.spans "
            "(severity minor or major: the backend's critical is major), category the backend's (GEMBA-MQM's "
            '"accuracy/mistranslation"; null for xCOMET); esa_answers.prefill refers to them by their place here',
        ),
        "dropped": (
            "integer",
            "the backend's errors that could not be placed in the output (GEMBA-MQM: quote not found)",
        ),
        "merged": ("integer", "overlapping spans merged into another (the more severe one kept)"),
        "raw": ("json", "the backend's answer: the LLM's text (gemba-mqm) or xCOMET's spans with their confidence"),
        "backend": ("string", "xcomet or gemba-mqm"),
        "model": ("string", "the model that gave the spans (checkpoint and weights' fingerprint, or the LLM)"),
        "created_at": ("timestamp", "when the spans were stored"),
    },
)
