"""Quality control of ESA and MQM as WMT ran it (issue 53, point 5; docs/esa.md, "Quality control"):

- Attention items. At import, in each HIT, a share (`attention_share`) of the text segments gets
  a copy whose output has an injected error: a run of words replaced by a run of the same
  length from another segment, its length by Graham et al.'s rule (the one WMT's DA uses for its
  bad references), deterministic from the study's seed. The copy is shown with its original's
  document around it, later in the same HIT; its injected span's offsets are stored with it.
- The decision. When an annotator's last item of the HIT is saved (Phase.after_save), each
  attention item is judged against the annotator's own answer to its original (item_passes:
  the injected span marked and/or the score lower, `attention_rule`), and the HIT passes when at
  least `attention_pass_share` of them pass (hit_verdict). The outcome is stored once per
  (annotator, HIT) in <name>_qc. A failed HIT no longer counts as held, so the next annotator
  gets it (up to `reruns` times per HIT), and its answers leave the analysis unless `keep_failed`.
- The tutorial. With `tutorial` set, the annotator's queue starts with a few practice segments
  with known errors: a missed one is refused with what was missed (the page's refusal is the
  feedback), the second submit goes on unless `tutorial_blocks`. Passing (every practice item
  right at its first submit) is stored in <name>_qc; practice answers are never analysed.

The pure rules (inject, item_passes, hit_verdict, practice_feedback) take no database."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from services.common.degradation import span_length, span_start
from services.common.protocols import Column, ExportTable, Index, Table
from services.common.seeded import seeded_rng
from services.study import files
from storage import assignments, protocol_rows
from storage.db import Transaction, now
from storage.protocol_schema import AddColumn, SchemaStep
from storage.rows import AssignmentRow, StudyRow


class Corpus(Protocol):
    """A span protocol's table names (services/esa/corpus.py Corpus, which imports this module)."""

    @property
    def name(self) -> str: ...
    @property
    def segments(self) -> str: ...
    @property
    def takers(self) -> str: ...
    @property
    def answers(self) -> str: ...
    @property
    def qc(self) -> str: ...


# a segment's kind: a row of the segments file, an attention copy, a practice item
ORIGINAL, ATTENTION, PRACTICE = "", "attention", "tutorial"
RULES = ("both", "either", "span", "score")
# the settings each span protocol's section takes (services/esa/protocol.py, mqm_protocol.py DEFAULTS)
DEFAULTS = {
    # about one item in ten, as Appraise's DA HITs hold about 10% bad references (WMT); a HIT
    # rounds down, so a HIT of fewer than 10 segments gets none
    "attention_share": 0.1,
    # ESA-AI's attention checks (wmt-conference/ErrorSpanAnnotation): was the perturbation marked,
    # and was it scored lower than the unperturbed copy
    "attention_rule": "both",
    "attention_min_drop": 1,  # "lower": at least this many points (ESA) or MQM points (MQM)
    "attention_pass_share": 0.5,  # the project's: at least half of a HIT's attention items
    "reruns": 2,  # as DA's: a failed HIT is re-run at most twice (three tries)
    "keep_failed": False,  # a pilot's choice: a failed HIT's answers stay, and it is not re-run
    "tutorial": "",  # "": none; "default": the built-in practice; or a CSV/JSONL file of the study
    "tutorial_blocks": False,  # true: a practice item is refused until its error is marked
}
TUTORIAL_COLUMNS = (["source", "target"], ["error", "severity", "note", "source_lang", "target_lang"])
# the built-in practice (English -> German): a major error, a correct translation, a minor error
DEFAULT_TUTORIAL = (
    {
        "source": "The museum opens at nine o'clock every morning.",
        "target": "Das Museum öffnet jeden Abend um neun Uhr.",
        "error": "Abend",
        "severity": "major",
        "note": "'Abend' is evening, the source says morning: the meaning changed",
        "source_lang": "en",
        "target_lang": "de",
    },
    {
        "source": "Please keep your ticket until the end of the journey.",
        "target": "Bitte behalten Sie Ihr Ticket bis zum Ende der Reise.",
        "error": "",
        "severity": "",
        "note": "this translation is correct",
        "source_lang": "en",
        "target_lang": "de",
    },
    {
        "source": "The children played in the garden all afternoon.",
        "target": "Die Kinder spielten den ganzen Nachmittag in dem Garten.",
        "error": "in dem",
        "severity": "minor",
        "note": "'im Garten' is more natural: a style error that keeps the meaning",
        "source_lang": "en",
        "target_lang": "de",
    },
)

# the segments' columns of quality control (schema step: qc_step)
SEGMENT_COLUMNS = (
    Column("kind", "TEXT", not_null=True, default=ORIGINAL),
    Column("original_row", "INTEGER", not_null=True, default=-1),  # an attention copy's original
    Column("error_start", "INTEGER", not_null=True, default=0),  # the injected or known error's
    Column("error_end", "INTEGER", not_null=True, default=0),  # offsets in target (none: equal)
    Column("error_severity", "TEXT", not_null=True, default=""),  # a practice item's
    Column("error_note", "TEXT", not_null=True, default=""),  # a practice item's explanation
)
SEGMENTS_DICTIONARY = {
    "kind": (
        "string",
        'empty for a row of the segments file; "attention" for an attention copy (an injected error), '
        '"tutorial" for a practice item: neither is analysed',
    ),
    "original_row": ("integer", "an attention copy's original (its segment_row); -1 otherwise"),
    "error_start": ("integer", "the injected (attention) or known (tutorial) error's start in target"),
    "error_end": ("integer", "its end (exclusive); equal to error_start when there is none"),
    "error_severity": ("string", "a practice item's known error's severity"),
    "error_note": ("string", "a practice item's explanation, shown when the error is missed"),
}


def qc_table(corpus: Corpus) -> Table:
    """<name>_qc: one row per (annotator, kind): the attention verdict of their HIT, or their tutorial."""
    return Table(
        corpus.qc,
        (
            Column("study_id", "TEXT", not_null=True, references="studies.id"),
            Column("participant_id", "INTEGER", not_null=True, references="participants.id"),
            Column("kind", "TEXT", not_null=True),  # attention or tutorial
            Column("hit", "INTEGER", not_null=True),
            Column("n_checks", "INTEGER", not_null=True),
            Column("n_passed", "INTEGER", not_null=True),
            Column("passed", "INTEGER", not_null=True),
            Column("rerun", "INTEGER", not_null=True, default=0),  # the HIT was given to another annotator
            Column("detail", "TEXT", not_null=True),  # JSON: one record per item judged
            Column("decided_at", "TEXT", not_null=True),
        ),
        indexes=(Index(("participant_id", "kind"), unique=True), Index(("study_id", "hit"))),
        study_sized=True,
    )


def qc_step(corpus: Corpus, version: int) -> SchemaStep:
    """The schema step that adds quality control to a span protocol made before it."""
    return SchemaStep(version, (*(AddColumn(corpus.segments, c) for c in SEGMENT_COLUMNS), qc_table(corpus)))


# -- the section ----------------------------------------------------------------------------


def _number(v, lo: float, hi: float = math.inf) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi


def check(name: str, section: dict) -> list[tuple[str, str]]:
    """(field, message) for every quality-control setting that is wrong (one not given: its default)."""
    section = {**DEFAULTS, **section}
    out: list[tuple[str, str]] = []
    if not _number(section.get("attention_share"), 0, 0.5):
        out.append((f"{name}.attention_share", "must be a number from 0 (none) to 0.5 (default 0.1)"))
    if section.get("attention_rule") not in RULES:
        out.append((f"{name}.attention_rule", f"must be one of {', '.join(RULES)}"))
    if not _number(section.get("attention_min_drop"), 0):
        out.append((f"{name}.attention_min_drop", "must be a number of points >= 0"))
    if not _number(section.get("attention_pass_share"), 0, 1):
        out.append((f"{name}.attention_pass_share", "must be a share from 0 to 1 (default 0.5)"))
    r = section.get("reruns")
    if not isinstance(r, int) or isinstance(r, bool) or r < 0:
        out.append((f"{name}.reruns", "must be a whole number >= 0 (default 2)"))
    for key in ("keep_failed", "tutorial_blocks"):
        if not isinstance(section.get(key), bool):
            out.append((f"{name}.{key}", "must be true or false"))
    if not isinstance(section.get("tutorial"), str):
        out.append((f"{name}.tutorial", 'must be "" (none), "default" or a file of the study folder'))
    return out


# -- attention items --------------------------------------------------------------------------


def inject(target: str, donor: str, rng) -> tuple[str, int, int]:
    """(the output with an error, its start, its end): a run of words replaced by a run of the same
    length from donor, at a random place (the first and last word kept from 5 words on); the
    offsets are the replacement's in the new output (code points, end exclusive)."""
    words = [m.span() for m in re.finditer(r"\S+", target)]
    others = donor.split()
    if not words or not others:
        raise ValueError("an attention item needs an output and a donor with words")
    n = len(words)
    length = span_length(n)
    first = span_start(n, rng)
    length = min(length, n - first)
    cs, ce = words[first][0], words[first + length - 1][1]
    phrase = ""
    for _ in range(5):  # a donor run that equals the words it replaces would inject nothing
        d = rng.randrange(max(1, len(others) - length + 1))
        phrase = " ".join(others[(d + i) % len(others)] for i in range(length))
        if phrase != target[cs:ce]:
            break
    if phrase == target[cs:ce]:
        phrase = f"{phrase} {phrase}"
    return target[:cs] + phrase + target[ce:], cs, cs + len(phrase)


def add_attention(
    segments: list[dict], hits: list[list[int]], share: float, seed, name: str
) -> tuple[list[dict], list[list[int]]]:
    """(the attention copies, the HITs with them): floor(share x the HIT's segments) text outputs of
    each HIT copied with an injected error (inject, a donor output from another document), each
    copy numbered after the file's rows and placed later in the HIT between two documents, after
    its original's. Outputs with audio are never copied (their audio would not match)."""
    rng = seeded_rng(name, "attention", seed)
    copies: list[dict] = []
    out: list[list[int]] = []
    for hit in hits:
        n = math.floor(share * len(hit) + 1e-9)
        eligible = [r for r in hit if not segments[r].get("target_audio") and segments[r]["target"].split()]
        picked = sorted(rng.sample(eligible, min(n, len(eligible))), key=hit.index)
        rows = list(hit)
        for orig in picked:
            seg = segments[orig]
            doc = (seg["doc_id"], seg["system"])
            donors = [i for i in hit if (segments[i]["doc_id"], segments[i]["system"]) != doc] or [
                i for i in range(len(segments)) if i != orig
            ]
            donor = segments[rng.choice(donors)]["target"] if donors else seg["target"][::-1]
            target, start, end = inject(seg["target"], donor, rng)
            number = len(segments) + len(copies)
            copies.append(
                {
                    **seg,
                    "target": target,
                    "kind": ATTENTION,
                    "original_row": orig,
                    "error_start": start,
                    "error_end": end,
                }
            )

            def key(r: int) -> tuple:
                s = segments[r] if r < len(segments) else copies[r - len(segments)]
                return (s["doc_id"], s["system"], s.get("kind", ""))

            after = rows.index(orig) + 1
            while after < len(rows) and key(rows[after]) == key(orig):
                after += 1  # the original's document is never interrupted
            places = [p for p in range(after, len(rows) + 1) if p == len(rows) or key(rows[p - 1]) != key(rows[p])]
            rows.insert(rng.choice(places), number)
        out.append(rows)
    return copies, out


def overlaps(span: dict, start: int, end: int) -> bool:
    """A text span (not the omission, not a time span) over any character of [start, end)."""
    if span.get("missing") or "start" not in span:
        return False
    return int(span["start"]) < end and start < int(span["end"])


def item_passes(
    spans: Sequence[dict],
    score: float | None,
    original_score: float | None,
    start: int,
    end: int,
    rule: str = "both",
    min_drop: float = 1,
    higher_is_better: bool = True,
) -> bool:
    """One attention item: `span` a span over the injected error; `score` scored at least
    min_drop worse than the annotator's own original (no answer to the original: not lower);
    `both` needs the two, `either` one of them."""
    marked = any(overlaps(s, start, end) for s in spans)
    lower = False
    if score is not None and original_score is not None:
        drop = (original_score - score) if higher_is_better else (score - original_score)
        lower = drop >= min_drop
    return {"both": marked and lower, "either": marked or lower, "span": marked, "score": lower}[rule]


def hit_verdict(results: Sequence[bool], pass_share: float) -> dict:
    """A HIT's outcome from its attention items' results: passed when at least pass_share of them
    passed (no attention item: passed, nothing to judge)."""
    n, k = len(results), sum(bool(r) for r in results)
    return {"n_checks": n, "n_passed": k, "passed": n == 0 or k >= pass_share * n - 1e-9}


# -- the tutorial ---------------------------------------------------------------------------


def load_tutorial(name: str, folder: Path, section: dict, err) -> list[dict]:
    """The practice items: none, the built-in ones or the study's file (source, target and, for
    an item with an error, the error's exact text in target and its severity), each with its
    known error's offsets; problems filed under the file's row and column."""
    value = section.get("tutorial") or ""
    if not isinstance(value, str) or not value:
        return []
    if value == "default":
        rows = list(enumerate(DEFAULT_TUTORIAL))
        file = "the built-in tutorial"
    else:
        path = files.safe_file(folder, value, f"{name}.tutorial", err)
        if path is None:
            return []
        rows, file = files.read_rows(path, TUTORIAL_COLUMNS, err), path.name
    out = []
    for rowno, row in rows:
        if not files.require_text(err, file, rowno, row, "source", "target"):
            continue
        target = row["target"].replace("\r\n", "\n")
        error, severity = row.get("error") or "", row.get("severity") or ""
        start = target.find(error) if error else 0
        if error and start < 0:
            err.add(file, rowno, "error", f"'{error}' is not in the target")
            continue
        if error and severity not in ("minor", "major"):
            err.add(file, rowno, "severity", "must be minor or major (the known error's)")
            continue
        out.append(
            {
                "source": row["source"].replace("\r\n", "\n"),
                "target": target,
                "source_lang": row.get("source_lang", ""),
                "target_lang": row.get("target_lang", ""),
                "error_start": start,
                "error_end": start + len(error),
                "error_severity": severity if error else "",
                "error_note": row.get("note", ""),
            }
        )
    if not out and not any(e.file == file for e in err.errors):
        err.add(file, None, None, "has no practice items")
    return out


def practice_feedback(seg: dict, spans: Sequence[dict]) -> str | None:
    """What the annotator got wrong on a practice item, in words (None: right): its known error
    not marked, or an error marked on a correct translation."""
    start, end = int(seg["error_start"]), int(seg["error_end"])
    note = f" ({seg['error_note']})" if seg.get("error_note") else ""
    if end > start:
        if any(overlaps(s, start, end) for s in spans):
            return None
        text = seg["target"][start:end]
        return (
            f'Practice: you missed an error. "{text}" is a {seg["error_severity"]} error{note}. Mark it, then submit.'
        )
    if [s for s in spans if s.get("severity") == "major"]:
        return f"Practice: this translation has no major error{note}. Remove what you marked, then submit."
    return None


def practice_note(meta) -> str:
    """The words above a practice item's instructions (its assignment's meta says it is one)."""
    if not (meta or {}).get("tutorial"):
        return ""
    return (
        "**Practice.** This segment is part of a short tutorial before your HIT: your answer is "
        "checked, you are told what you missed, and it is not part of the results.\n\n"
    )


def practice_result(seg: dict, spans: Sequence[dict], tries, blocks: bool) -> tuple[bool, str | None]:
    """(right at the first submit, the refusal's words or None to save): a miss is refused with its
    feedback at the first submit, and always with tutorial_blocks; `tries` is how many times this
    item was refused already (the page's hidden field; anything else counts as none)."""
    tries = int(tries) if isinstance(tries, (int, str)) and str(tries).isdigit() else 0
    words = practice_feedback(seg, spans)
    if words is None:
        return tries == 0, None
    return False, (words if tries == 0 or blocks else None)


# -- stored outcomes --------------------------------------------------------------------------


def record_practice(tx: Transaction, table: str, study_id: str, pid: int, item: dict) -> None:
    """One practice item's result added to the annotator's tutorial row."""
    old = protocol_rows.one(tx.database, table, {"participant_id": pid, "kind": PRACTICE})
    detail = json.loads(old["detail"]) if old else []
    detail.append(item)
    protocol_rows.delete(tx.db, table, {"participant_id": pid, "kind": PRACTICE})
    n, k = len(detail), sum(bool(d["right"]) for d in detail)
    row = {"study_id": study_id, "participant_id": pid, "kind": PRACTICE, "hit": -1, "n_checks": n}
    protocol_rows.insert(
        tx.db, table, {**row, "n_passed": k, "passed": int(n == k), "detail": json.dumps(detail), "decided_at": now()}
    )


def reruns_of(database, table: str, study_id: str, hit: int) -> int:
    """How many times the HIT was failed and given to another annotator."""
    return protocol_rows.count(database, table, {"study_id": study_id, "hit": hit, "kind": ATTENTION, "rerun": 1})


def judge_hit(
    tx: Transaction, study: StudyRow, assignment: AssignmentRow, corpus: Corpus, score: str, higher_is_better: bool
):
    """After an answer is saved (inside its write): when it was the annotator's last open item of
    the phase, their HIT's attention items are judged against their own originals, the outcome
    stored once, and a failed HIT released for the next annotator (reruns, keep_failed).
    Returns the stored row, or None when nothing was decided."""
    name, table, segments, answers = corpus.name, corpus.qc, corpus.segments, corpus.answers
    pid = assignment["participant_id"]
    db = tx.database
    if assignments.counts(db, pid, (name,))["open"] or protocol_rows.one(
        db, table, {"participant_id": pid, "kind": ATTENTION}
    ):
        return None
    taker = protocol_rows.one(db, corpus.takers, {"participant_id": pid})
    if taker is None:
        return None
    sid, hit = study["id"], int(taker["hit"])
    checks = protocol_rows.select(db, segments, {"study_id": sid, "hit": hit, "kind": ATTENTION}, order_by=("pos",))
    if not checks:
        return None
    section = study["config"][name]

    def answer(row: int) -> dict | None:
        a = assignments.find_assignment(db, pid, name, row)
        return protocol_rows.one(db, answers, {"assignment_id": a["id"]}) if a else None

    detail = []
    for c in checks:
        mine, orig = answer(c["segment_row"]), answer(c["original_row"])
        spans = json.loads(mine["spans"]) if mine else []
        ok = item_passes(
            spans,
            mine[score] if mine else None,
            orig[score] if orig else None,
            int(c["error_start"]),
            int(c["error_end"]),
            section.get("attention_rule", "both"),
            float(section.get("attention_min_drop", 1)),
            higher_is_better,
        )
        detail.append(
            {
                "segment_row": c["segment_row"],
                "original_row": c["original_row"],
                "marked": any(overlaps(s, int(c["error_start"]), int(c["error_end"])) for s in spans),
                "score": mine[score] if mine else None,
                "original_score": orig[score] if orig else None,
                "passed": ok,
            }
        )
    verdict = hit_verdict([d["passed"] for d in detail], float(section.get("attention_pass_share", 0.5)))
    rerun = (
        not verdict["passed"]
        and not section.get("keep_failed", False)
        and reruns_of(db, table, sid, hit) < int(section.get("reruns", 2))
    )
    row = {
        "study_id": sid,
        "participant_id": pid,
        "kind": ATTENTION,
        "hit": hit,
        "n_checks": verdict["n_checks"],
        "n_passed": verdict["n_passed"],
        "passed": int(verdict["passed"]),
        "rerun": int(rerun),
        "detail": json.dumps(detail),
        "decided_at": now(),
    }
    protocol_rows.insert(tx.db, table, row)
    return row


def outcome_words(attention: dict | None, practice: dict | None, section: dict) -> str:
    """An annotator's quality control as the payer reads it (the Finished list)."""
    if attention is None:
        words = "no attention items judged (none in the HIT, or it is not finished)"
    else:
        counts = f"{attention['n_passed']} of {attention['n_checks']} attention items passed"
        if attention["passed"]:
            words = f"passed ({counts})"
        elif section.get("keep_failed"):
            words = f"failed ({counts}); kept (keep_failed)"
        else:
            tail = "HIT re-run" if attention["rerun"] else "HIT not re-run (reruns spent)"
            words = f"failed ({counts}); answers not analysed; {tail}"
    if practice is not None:
        right = f"{practice['n_passed']} of {practice['n_checks']} right at first try"
        words += f"; tutorial {'passed' if practice['passed'] else 'failed'} ({right})"
    return words


def payment_qc(database, table: str, section: dict, rows: list[dict]) -> dict[int, str]:
    """Role.qc: each finished annotator's outcome in words (two indexed reads each)."""
    out = {}
    for r in rows:
        att = protocol_rows.one(database, table, {"participant_id": r["id"], "kind": ATTENTION})
        tut = protocol_rows.one(database, table, {"participant_id": r["id"], "kind": PRACTICE})
        out[r["id"]] = outcome_words(att, tut, section)
    return out


def qc_note(database, corpus: Corpus, study_id: str, section: dict) -> str | None:
    """The analysis's line on quality control (the report, the Analysis tab, `app.py analyze`):
    the HITs judged and failed, and what the analysis left out; None before any HIT is judged."""
    rows = protocol_rows.select(database, corpus.qc, {"study_id": study_id, "kind": ATTENTION})
    if not rows:
        return None
    failed = sum(not r["passed"] for r in rows)
    kept = (
        "their answers are kept (keep_failed)"
        if section.get("keep_failed")
        else "their answers are not analysed (keep_failed = true keeps them)"
    )
    tail = f"; {kept}" if failed else ""
    return (
        f"Quality control: {len(rows)} HITs judged on their attention items, {failed} failed{tail}. "
        "Attention items and practice items are never analysed."
    )


def analysed(rows: list[dict]) -> list[dict]:
    """The answers the analysis reads: no attention copy, no practice item, and no answer of a HIT
    that failed its attention items ("failed (kept)" under keep_failed stays); rows without these
    columns, from an older export, are all kept."""
    return [r for r in rows if not _text(r.get("item_kind")) and _text(r.get("hit_qc")) != "failed"]


def _text(v) -> str:
    """An export cell as text: an empty cell read back by pandas is NaN."""
    return v if isinstance(v, str) else ""


# -- the export -------------------------------------------------------------------------------

# the answers' columns of quality control (services/esa/answers.py answer_rows)
ANSWER_DICTIONARY = {
    "item_kind": (
        "string",
        'the segment\'s kind (<protocol>_segments.kind): empty, "attention" or "tutorial"; the analysis '
        "reads only the empty ones",
    ),
    "hit_qc": (
        "string",
        'the annotator\'s HIT on its attention items: "passed", "failed" (the analysis leaves its answers '
        'out), "failed (kept)" (keep_failed), or empty when not judged',
    ),
}


def hit_qc_of(database, table: str, study_id: str, keep_failed: bool) -> dict[int, str]:
    """Each judged annotator's hit_qc word (ANSWER_DICTIONARY)."""
    rows = protocol_rows.select(database, table, {"study_id": study_id, "kind": ATTENTION})
    failed = "failed (kept)" if keep_failed else "failed"
    return {int(r["participant_id"]): "passed" if r["passed"] else failed for r in rows}


def export_table(corpus: Corpus) -> ExportTable:
    """<name>_qc in the export: each annotator's attention verdict and tutorial."""

    def query(database, study_id: str) -> list[dict]:
        rows = protocol_rows.select(database, corpus.qc, {"study_id": study_id}, order_by=("participant_id", "kind"))
        return [{**r, "participant__pid": r["participant_id"], "detail": json.loads(r["detail"])} for r in rows]

    return ExportTable(
        query,
        f'{corpus.name.upper()}\'s quality control (docs/esa.md, "Quality control"): one row per annotator and '
        "kind, the attention items of their HIT judged when its last item was saved, or their tutorial.",
        {
            "participant": ("string", "pseudonym of the annotator"),
            "kind": ("string", '"attention" (their HIT\'s attention items) or "tutorial" (the practice items)'),
            "hit": ("integer", f"the HIT judged ({corpus.segments}.hit); -1 for the tutorial"),
            "n_checks": ("integer", "attention items (or practice items) judged"),
            "n_passed": ("integer", "those passed (a practice item: right at its first submit)"),
            "passed": (
                "boolean",
                "the HIT passed (at least attention_pass_share of its items); the tutorial: all right",
            ),
            "rerun": ("boolean", "the failed HIT was given to another annotator"),
            "detail": (
                "json",
                "per item: {segment_row, original_row, marked, score, original_score, passed} (attention) or "
                "{segment_row, right} (tutorial)",
            ),
            "decided_at": ("timestamp", "when it was decided"),
        },
    )
