"""The proof that a protocol is a plugin (issue 52, point 6): one package kept outside the
protocol packages, named in TRADLAB_PLUGINS as "tests.plugins.proof:PROTOCOL", that uses every
hook of docs/hooks.md that an Error Span Annotation-like protocol has a use for. An item shows a
source and its translation; the participant marks each error by dragging the mouse across its
characters (proof.js: character offsets, not words), says minor or major, and scores the
translation 0-100. No core file names it; it writes no SQL (its tables are declared here and its
rows go through storage/protocol_rows.py). Driven end to end in headless Chromium by
tests/test_plugin_proof.py; its edge cases in process by tests/test_plugin_tables.py and
tests/test_plugin_hooks.py. Its study is study/ beside this file (study.toml, segments.csv).

Its tables: proof_segments (the corpus, by study and segment), proof_answers (one row per answer:
the score; by assignment, and by participant for the QC), proof_spans (one row per error span:
start_char, end_char, severity; by assignment) and proof_qc (the QC decided per participant). The
last three grow with the study (Table.study_sized): the participant's path reads them through
their indexes only (tests/test_participant_path_plans.py).

Hooks it uses, and for what:
- Protocol.tables (with indexes), store_corpus, count_corpus: its corpus in its own table,
  counted in the import's summary; Protocol.load (segments.csv read and checked) and
  Protocol.check (its section's qc_min_spans).
- Role.setup (one item per stored segment, seeded order), Role.qc (the Finished list's QC
  column: what after_save decided).
- Phase.content, validate (spans inside the sentence, not overlapping; a 0-100 score), save
  (its answers and spans tables), stored, after_save (a participant's last answer: QC decided,
  into proof_qc), answer_words (the admin's "A participant" page).
- Tab.build ("module:name", ui.py) with Tab.scripts and Tab.styles (proof.js, proof.css).
- ExportTable.query for its tables, extras (a span's marked words, from its corpus; an answer's
  number of spans, from the spans table exported before it), warnings (answers that mark errors yet score 100).
- Protocol.report_section (report.py), analysis_panel and admin_section (ui.py), cli
  (`python app.py proof-summary --study ID`).

Hooks it skips, and why:
- Phase.check, intake, discard: no item waits on anything before it may be answered, and
  nothing is made outside the database (validate is all an answer needs).
- Tab.on_submit (no downstream work), total (done + open is right), waiting (items are made at
  enrolment: nothing to wait for); Pool.* (no pool: Role.setup makes every item).
- Role.items and Role.minutes (they read the study's config, and the number of segments is the
  corpus's: the welcome names no count), on_leave (nothing to hand on: a leaver's items drop).
- AudioMetadata (no recordings), Protocol.prepare (nothing is built from the checked files:
  load's per-row checks are all), metrics_report and systems_report (no metrics, no system
  outputs made), drop_inactive (no inactivity setting), repair (its events open nothing later),
  plan (every participant has all the segments from enrolment: nothing can be wanting),
  questions_changed (no comprehension questions), jobs (no background work), demo (the default,
  one participant per role, plays it to the end).
"""

from __future__ import annotations

import json
from pathlib import Path

from services.common.protocols import Column, ExportTable, Index, Phase, Protocol, Role, Tab, Table
from services.common.seeded import order_key
from services.participation.submissions import refuse_all
from services.study.files import read_rows, require_text, safe_file
from storage import assignments, protocol_rows
from storage.db import Transaction, now

NAME = "proof"
HERE = Path(__file__).resolve().parent
STUDY = HERE / "study"
SEVERITIES = ("minor", "major")
SEGMENTS, ANSWERS, SPANS, QC = (f"{NAME}_{t}" for t in ("segments", "answers", "spans", "qc"))

SEGMENTS_TABLE = Table(
    SEGMENTS,
    (
        Column("study_id", "TEXT", not_null=True, references="studies.id"),
        Column("segment_id", "TEXT", not_null=True),
        Column("source", "TEXT", not_null=True),
        Column("target", "TEXT", not_null=True),
    ),
    indexes=(Index(("study_id", "segment_id"), unique=True),),
)
ANSWERS_TABLE = Table(
    ANSWERS,
    (
        Column("assignment_id", "INTEGER", not_null=True, references="assignments.id"),
        Column("participant_id", "INTEGER", not_null=True, references="participants.id"),
        Column("score", "INTEGER", not_null=True),
        Column("created_at", "TEXT", not_null=True),
    ),
    indexes=(Index(("assignment_id",), unique=True), Index(("participant_id",))),
    study_sized=True,
)
SPANS_TABLE = Table(
    SPANS,
    (
        Column("assignment_id", "INTEGER", not_null=True, references="assignments.id"),
        Column("start_char", "INTEGER", not_null=True),
        Column("end_char", "INTEGER", not_null=True),
        Column("severity", "TEXT", not_null=True),
    ),
    indexes=(Index(("assignment_id", "start_char")),),
    study_sized=True,
)
QC_TABLE = Table(
    QC,
    (
        Column("participant_id", "INTEGER", not_null=True, references="participants.id"),
        Column("spans", "INTEGER", not_null=True),
        Column("outcome", "TEXT", not_null=True),
        Column("decided_at", "TEXT", not_null=True),
    ),
    indexes=(Index(("participant_id",), unique=True),),
    study_sized=True,
)


# -- its section and corpus ---------------------------------------------------------------------


def check(section: dict) -> list[tuple[str, str]]:
    n = section.get("qc_min_spans")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return [(f"{NAME}.qc_min_spans", "must be a whole number, 0 or more")]
    return []


def load(folder: Path, config: dict, systems: list[dict], bundle, err) -> None:
    """segments.csv: id, source, target, each given, the ids unique."""
    path = safe_file(folder, config[NAME]["segments"], f"{NAME}.segments", err)
    if path is None:
        return
    found, seen = [], set()
    for rowno, row in read_rows(path, (["id", "source", "target"], []), err):
        if not require_text(err, path.name, rowno, row, "id", "source", "target"):
            continue
        if row["id"] in seen:
            err.add(path.name, rowno, "id", f"segment {row['id']!r} is listed twice")
            continue
        seen.add(row["id"])
        found.append({"segment_id": row["id"], "source": row["source"], "target": row["target"]})
    bundle.corpus[NAME] = found


def store_corpus(tx: Transaction, study_id: str, corpus) -> None:
    protocol_rows.insert_many(tx.db, SEGMENTS, [{"study_id": study_id, **r} for r in corpus or []])


def count_corpus(database, study_id: str) -> dict[str, int]:
    return {SEGMENTS: protocol_rows.count(database, SEGMENTS, {"study_id": study_id})}


def segment(database, study_id: str, segment_id: str) -> dict:
    return protocol_rows.one(database, SEGMENTS, {"study_id": study_id, "segment_id": segment_id}) or {}


# -- the participant's path ---------------------------------------------------------------------


def setup(tx: Transaction, study, pid: int, group, gender, design_index=None) -> None:
    """One item per stored segment, in the study's seeded order."""
    segs = protocol_rows.select(tx.database, SEGMENTS, {"study_id": study["id"]}, order_by=("segment_id",))
    seed = study["config"]["study"]["seed"]
    for i, s in enumerate(segs):
        assignments.insert_assignment(tx.db, study["id"], pid, NAME, s["segment_id"], order_key(seed, pid, i))


def content(database, study, participant, assignment, media_dir=None) -> dict:
    s = segment(database, study["id"], assignment["item_id"])
    return {"source": s.get("source", ""), "text": s.get("target", "")}


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
    target = segment(database, assignment["study_id"], assignment["item_id"]).get("target", "")
    spans, problem = parse_spans(payload.get("spans"), len(target))
    score = payload.get("score")
    score_ok = isinstance(score, (int, float)) and not isinstance(score, bool) and 0 <= score <= 100
    parts, fields = [], {}
    if problem:
        parts.append(problem)
        fields["spans"] = problem
    if not score_ok:
        parts.append("Move the slider to score the translation (0-100).")
        fields["score"] = "Move the slider to score the translation (0-100)."
    refuse_all(parts, fields)
    return {"spans": spans, "score": int(score)}


def save(tx: Transaction, study, participant, assignment, data) -> None:
    protocol_rows.insert(
        tx.db,
        ANSWERS,
        {
            "assignment_id": assignment["id"],
            "participant_id": participant["id"],
            "score": data["score"],
            "created_at": now(),
        },
    )
    aid = assignment["id"]
    spans = [
        {"assignment_id": aid, "start_char": s["start"], "end_char": s["end"], "severity": s["severity"]}
        for s in data["spans"]
    ]
    protocol_rows.insert_many(tx.db, SPANS, spans)


def spans_of(database, assignment_id: int) -> list[dict]:
    rows = protocol_rows.select(database, SPANS, {"assignment_id": assignment_id}, order_by=("start_char",))
    return [{"start": r["start_char"], "end": r["end_char"], "severity": r["severity"]} for r in rows]


def stored(database, assignment) -> dict:
    row = protocol_rows.one(database, ANSWERS, {"assignment_id": assignment["id"]})
    return {"spans": spans_of(database, assignment["id"]), "score": row["score"]} if row else {}


def after_save(tx: Transaction, study, assignment) -> None:
    """The participant's last answer: their QC decided (enough errors marked over all segments,
    the section's qc_min_spans) and kept in proof_qc, which Role.qc reads."""
    database, pid = tx.database, assignment["participant_id"]
    answered = protocol_rows.select(database, ANSWERS, {"participant_id": pid})
    if len(answered) < len(protocol_rows.select(database, SEGMENTS, {"study_id": study["id"]})):
        return
    n = sum(len(spans_of(database, a["assignment_id"])) for a in answered)
    least = study["config"][NAME]["qc_min_spans"]
    outcome = "passed" if n >= least else f"failed: {n} error spans marked, fewer than {least} (proof.qc_min_spans)"
    protocol_rows.insert(tx.db, QC, {"participant_id": pid, "spans": n, "outcome": outcome, "decided_at": now()})


def qc(database, study, rows: list[dict]) -> dict[int, str]:
    out = {}
    for r in rows:
        decided = protocol_rows.one(database, QC, {"participant_id": r["id"]})
        out[r["id"]] = f"{decided['outcome']} ({decided['spans']} spans)" if decided else "not judged yet"
    return out


def said(text: str, spans: list[dict]) -> str:
    return ", ".join(f'{s["severity"]} {s["start"]}-{s["end"]} "{text[s["start"] : s["end"]]}"' for s in spans)


def answer_words(database, assignment, answer: dict) -> str:
    """score 70; minor 4-7 "sit", major 15-18 "teh"."""
    text = segment(database, assignment["study_id"], assignment["item_id"]).get("target", "")
    return f"score {answer['score']}; " + (said(text, answer["spans"]) or "no error marked")


# -- the team's views: the study's answers, summed up -------------------------------------------


def answers_of(database, study_id: str) -> list[dict]:
    """Each answer of the study (admin and analysis: not on a participant's path) with its spans
    and its segment's target: {participant__pid, item_id, score, spans, target}."""
    spans: dict[int, list[dict]] = {}
    for r in protocol_rows.answer_rows(database, SPANS, study_id):
        spans.setdefault(r["assignment_id"], []).append(
            {"start": r["start_char"], "end": r["end_char"], "severity": r["severity"]}
        )
    targets = {s["segment_id"]: s["target"] for s in protocol_rows.select(database, SEGMENTS, {"study_id": study_id})}
    return [
        {**r, "spans": spans.get(r["assignment_id"], []), "target": targets.get(r["item_id"], "")}
        for r in protocol_rows.answer_rows(database, ANSWERS, study_id)
    ]


def summary(database, study_id: str) -> dict:
    rows = answers_of(database, study_id)
    severities = [s["severity"] for r in rows for s in r["spans"]]
    return {
        "answers": len(rows),
        "participants": len({r["participant__pid"] for r in rows}),
        "mean_score": sum(r["score"] for r in rows) / len(rows) if rows else None,
        **{s: severities.count(s) for s in SEVERITIES},
    }


def summary_words(database, study_id: str) -> str:
    s = summary(database, study_id)
    if not s["answers"]:
        return f"study {study_id}: no answers yet"
    n, people, spans = s["answers"], s["participants"], s["minor"] + s["major"]
    return (
        f"study {study_id}: {n} answer{'s' * (n != 1)} by {people} participant{'s' * (people != 1)}, mean score "
        f"{s['mean_score']:.1f}; {spans} error span{'s' * (spans != 1)} ({s['minor']} minor, {s['major']} major)"
    )


def add_commands(subparsers) -> None:
    """`python app.py proof-summary --study ID`: the study's answers and spans summed up."""
    cmd = subparsers.add_parser("proof-summary", help="sum up a study's scores and error spans (proof plugin)")
    cmd.add_argument("--study", required=True, help="the study's id")
    cmd.set_defaults(func=proof_summary)


def proof_summary(args, settings) -> int:
    from services.common import protocols
    from storage import open_database

    database = open_database(settings.db_path, settings.journal_mode, protocols.schemas())  # its tables too
    print(summary_words(database, args.study))
    return 0


# -- its export: the corpus, the spans, the answers (whose extras count the spans exported before) --


def marked_words(rows: list[dict], ctx) -> None:
    corpus = protocol_rows.select(ctx.database, SEGMENTS, {"study_id": ctx.study_id})
    targets = {s["segment_id"]: s["target"] for s in corpus}
    for r in rows:
        r["marked"] = targets.get(r["item_id"], "")[r["start_char"] : r["end_char"]]


def spans_counted(rows: list[dict], ctx) -> None:
    n: dict[int, int] = {}
    for s in ctx.rows.get(SPANS, []):
        n[s["assignment_id"]] = n.get(s["assignment_id"], 0) + 1
    for r in rows:
        r["spans"] = n.get(r["assignment_id"], 0)


def contradictions(rows: list[dict]) -> list[str]:
    odd = [r for r in rows if r["spans"] and r["score"] == 100]
    return [f"{len(odd)} of {len(rows)} answers mark errors yet score 100: check them before averaging."] if odd else []


EXPORT_TABLES = {
    SEGMENTS: ExportTable(
        lambda database, study_id: protocol_rows.select(database, SEGMENTS, {"study_id": study_id}, ("segment_id",)),
        "The proof's corpus, one row per segment of segments.csv.",
        {
            "segment_id": ("string", "the segment's id"),
            "source": ("string", "the source text"),
            "target": ("string", "the translation whose errors are marked"),
        },
        content=True,
    ),
    SPANS: ExportTable(
        lambda database, study_id: protocol_rows.answer_rows(database, SPANS, study_id),
        "One row per error span marked: its characters in the segment's target (0-based, end excluded).",
        {
            "assignment_id": ("integer", "the answer's assignment (proof_answers)"),
            "participant": ("string", "pseudonym of the participant who marked it"),
            "item_id": ("string", "the segment's id"),
            "start_char": ("integer", "the span's first character in the target, from 0"),
            "end_char": ("integer", "the character after the span's last"),
            "severity": ("string", "minor or major"),
            "marked": ("string", "the target's characters the span covers"),
        },
        extras=marked_words,
    ),
    ANSWERS: ExportTable(
        lambda database, study_id: protocol_rows.answer_rows(database, ANSWERS, study_id),
        "One row per answer: the translation's 0-100 score and how many error spans it marks.",
        {
            "assignment_id": ("integer", "the answer's assignment"),
            "participant": ("string", "pseudonym of the participant who answered"),
            "item_id": ("string", "the segment's id"),
            "score": ("integer", "the translation's quality, 0-100"),
            "spans": ("integer", "the error spans the answer marks (proof_spans)"),
            "active_seconds": ("number", "seconds the participant was active on the item"),
            "created_at": ("timestamp", "when the answer was saved"),
        },
        extras=spans_counted,
        warnings=contradictions,
    ),
}


PROTOCOL = Protocol(
    name=NAME,
    roles=(Role(NAME, (NAME,), "Error spans, every hook", setup, seconds_per_item=30, label="span annotator", qc=qc),),
    tabs=(Tab(NAME, (NAME,), f"{__name__}.ui:build_tab", scripts=(HERE / "proof.js",), styles=(HERE / "proof.css",)),),
    phases=(
        Phase(
            NAME, content, validate, save, stored, label="error spans", after_save=after_save, answer_words=answer_words
        ),
    ),
    defaults={"segments": None, "qc_min_spans": 1},
    check=check,
    load=load,
    corpus_files=("segments",),
    export_tables=EXPORT_TABLES,
    texts={"en": {"welcome_proof": "Welcome. Mark the errors of each translation and score it."}},
    tables=(SEGMENTS_TABLE, ANSWERS_TABLE, SPANS_TABLE, QC_TABLE),
    store_corpus=store_corpus,
    count_corpus=count_corpus,
    report_section=f"{__name__}.report:section",
    analysis_panel=f"{__name__}.ui:analysis_panel",
    admin_section=f"{__name__}.ui:admin_section",
    cli=add_commands,
)
