"""Listening tests (issue 54, point 2) as a protocol: a listener rates speech clips one at a time
on ITU-T P.800's scales as ITU-T P.808 uses them in the crowd (method acr: the clip's quality;
dcr: its degradation against its reference; ccr: it compared with its reference, the two in a
seeded order), every clip of a page played to its end before an answer is taken. Before the
first clip, P.808's listening checks: a device check (a tone on one ear: which side?) and a
digit-triplet hearing test; failing them ends the session politely (the tab's waiting words)
and the outcome is stored, shown in the admin's Finished list (Role.qc) and excluded from the MOS
by default, as are listeners who fail the gold or trapping clips placed among their ratings.
Registered through the same hooks a plugin has (docs/plugins.md); its tables are its own and its
rows go through storage/protocol_rows.py; its page is tabs/listening.py with
assets/js/script/listening.js and assets/css/listening.css (docs/listening.md)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pandas as pd

from services.common import protocols, settings, slots
from services.common.listening import load_scales
from services.common.protocols import Column, ExportTable, Index, Phase, Protocol, Role, Tab, Table
from services.common.seeded import seeded_rng
from services.listening import analysis, stimuli
from services.listening.stimuli import (
    ANSWERS,
    CHECK_PHASE,
    METHODS,
    NAME,
    OUTCOMES,
    SCORES,
    SCREENS,
    STIMULI,
    STUDIES,
    TAKERS,
)
from services.participation.submissions import SubmissionError, refuse_all
from storage import assignments, protocol_rows
from storage.db import Transaction, now, required
from storage.rows import AssignmentRow, ParticipantRow, StudyRow
from storage.studies import get_study

DEFAULTS: dict[str, Any] = {
    "stimuli": None,
    "method": "acr",
    "items_per_listener": 10,
    "listeners_per_item": 5,
    "device_check": True,
    "hearing_test": True,
    "hearing_triplets": 4,
    "hearing_pass": 3,
    "gold_tolerance": 1,
    "exclude_failed": True,
    "tts_backend": "espeak",
    "instructions": "",
    "mushra_anchor": "",
}
LISTEN_TOLERANCE_S = 0.5  # a page's clips must have had time to play since it was shown, less this
INSTRUCTIONS = {
    "acr": "Listen to the recording to its end, then **rate the quality of the speech** you heard. "
    "Use headphones, in a quiet place, at a comfortable level.",
    "dcr": "Listen to the **reference** (A) and then to the **sample** (B), each to its end, then rate the "
    "**degradation of B compared with A**. Use headphones, in a quiet place.",
    "ccr": "Listen to the **first** (A) and the **second** (B) recording, each to its end, then rate the "
    "**quality of the second compared to the quality of the first**. Use headphones, in a quiet place.",
    "mushra": "Listen to the **reference** and to **every sample**, each to its end (as often as you like), then "
    "rate the **basic audio quality** of each sample against the reference on its slider, 0-100. One of the "
    "samples is the reference itself: rate it 100. Use headphones, in a quiet place.",
}
CHECK_WORDS = {
    "device": (
        "Device check: put on your headphones and play the tone. **In which ear do you hear it?**",
        [("left", "Left ear"), ("right", "Right ear"), ("both", "Both ears"), ("none", "I hear nothing")],
    ),
    "hearing": ("Hearing test: play the recording and **type the three digits you hear**, in order.", []),
}


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check(section: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [listening] section."""
    out: list[tuple[str, str]] = []
    if section.get("method") not in METHODS:
        out.append((f"{NAME}.method", f"must be one of {', '.join(METHODS)}"))
    for key, lo in (("items_per_listener", 1), ("listeners_per_item", 1), ("hearing_triplets", 1)):
        if not _whole(section.get(key)) or section[key] < lo:
            out.append((f"{NAME}.{key}", f"must be a whole number >= {lo}"))
    for key in ("hearing_pass", "gold_tolerance"):
        if not _whole(section.get(key)) or section[key] < 0:
            out.append((f"{NAME}.{key}", "must be a whole number >= 0"))
    if _whole(section.get("hearing_pass")) and _whole(section.get("hearing_triplets")):
        if section["hearing_pass"] > section["hearing_triplets"]:
            out.append((f"{NAME}.hearing_pass", "must be at most hearing_triplets"))
    for key in ("device_check", "hearing_test", "exclude_failed"):
        if not isinstance(section.get(key), bool):
            out.append((f"{NAME}.{key}", "must be true or false"))
    if section.get("tts_backend") not in ("espeak", "piper"):
        out.append((f"{NAME}.tts_backend", "must be espeak or piper (the hearing test's digits)"))
    for key in ("instructions", "mushra_anchor"):
        if not isinstance(section.get(key), str):
            out.append((f"{NAME}.{key}", "must be a string"))
    return out


# -- the tables ---------------------------------------------------------------------------------

STUDY = Column("study_id", "TEXT", not_null=True, references="studies.id")
ASSIGNMENT = Column("assignment_id", "INTEGER", not_null=True, references="assignments.id")
PARTICIPANT = Column("participant_id", "INTEGER", not_null=True, references="participants.id")
TABLES = (
    Table(  # one row per study: what the assignment's plan needs without reading the stimuli
        STUDIES,
        (STUDY, Column("n_items", "INTEGER", not_null=True), Column("n_controls", "INTEGER", not_null=True)),
        indexes=(Index(("study_id",), unique=True),),
    ),
    Table(
        STIMULI,
        (
            STUDY,
            Column("item", "INTEGER", not_null=True),  # its row in the file, from 0: the assignment's item
            Column("seq", "INTEGER"),  # a rated clip's place in the seeded sequence (gold, trap: none)
            Column("stimulus_id", "TEXT", not_null=True),
            Column("group_id", "TEXT", not_null=True, default=""),  # MUSHRA: its item (one page)
            Column("condition", "TEXT", not_null=True),
            Column("anchor", "INTEGER", not_null=True, default=0),  # MUSHRA: an anchor's condition
            Column("kind", "TEXT", not_null=True),  # rating, gold or trap
            Column("expected", "INTEGER"),
            Column("audio", "TEXT", not_null=True),
            Column("audio_s", "REAL", not_null=True),
            Column("reference_audio", "TEXT", not_null=True, default=""),
            Column("reference_s", "REAL", not_null=True, default=0),
            Column("engine", "TEXT", not_null=True, default=""),
            Column("voice", "TEXT", not_null=True, default=""),
        ),
        indexes=(
            Index(("study_id", "item"), unique=True),
            Index(("study_id", "seq", "item")),
            Index(("study_id", "kind", "item")),
            Index(("study_id", "group_id", "item")),
        ),
        study_sized=True,
    ),
    Table(  # the listening checks' clips, made at import
        SCREENS,
        (
            STUDY,
            Column("place", "INTEGER", not_null=True),
            Column("screen", "TEXT", not_null=True),  # device-<k> or digits-<k>: the assignment's item
            Column("test", "TEXT", not_null=True),  # device or hearing
            Column("expected", "TEXT", not_null=True),  # left / right, or the triplet's digits
            Column("audio", "TEXT", not_null=True),
            Column("audio_s", "REAL", not_null=True),
        ),
        indexes=(Index(("study_id", "screen"), unique=True),),
    ),
    Table(  # who holds which listener slot, in the order they passed the checks
        TAKERS,
        (
            STUDY,
            Column("slot", "INTEGER", not_null=True),
            PARTICIPANT,
            Column("n_items", "INTEGER", not_null=True),
            Column("created_at", "TEXT", not_null=True),
        ),
        indexes=(Index(("study_id", "slot"), unique=True), Index(("participant_id",), unique=True)),
        study_sized=True,
    ),
    Table(  # one row per answer: a rating (of a rated, gold or trap clip) or a check's answer
        ANSWERS,
        (
            ASSIGNMENT,
            PARTICIPANT,
            Column("kind", "TEXT", not_null=True),  # rating, gold, trap, device, hearing
            Column("item", "TEXT", not_null=True),  # the stimulus' row, or the check's screen
            Column("value", "INTEGER"),  # the rating as given (CCR: of the second against the first)
            Column("score", "INTEGER"),  # the rating of the clip (CCR: the sign turned when it came first)
            Column("first_played", "TEXT", not_null=True, default=""),  # CCR: reference-first or clip-first
            Column("typed", "TEXT", not_null=True, default=""),  # a check's answer: the side, the digits
            Column("correct", "INTEGER"),  # gold, trap and checks: 1 right, 0 wrong
            Column("created_at", "TEXT", not_null=True),
        ),
        indexes=(Index(("assignment_id",), unique=True), Index(("participant_id", "kind"))),
        study_sized=True,
    ),
    Table(  # MUSHRA: one row per stimulus of an answered page
        SCORES,
        (
            ASSIGNMENT,
            PARTICIPANT,
            Column("group_id", "TEXT", not_null=True),
            Column("item", "INTEGER", not_null=True),  # the stimulus' row
            Column("condition", "TEXT", not_null=True),
            Column("position", "INTEGER", not_null=True),  # 0 = sample 1
            Column("score", "INTEGER", not_null=True),
        ),
        indexes=(Index(("assignment_id", "position"), unique=True),),
        study_sized=True,
    ),
    Table(  # a listener's outcome of each check: device, hearing (after the checks), gold, trap (at the end)
        OUTCOMES,
        (
            STUDY,
            PARTICIPANT,
            Column("test", "TEXT", not_null=True),
            Column("passed", "INTEGER", not_null=True),
            Column("n_right", "INTEGER", not_null=True),
            Column("n_total", "INTEGER", not_null=True),
            Column("rule", "TEXT", not_null=True),
            Column("created_at", "TEXT", not_null=True),
        ),
        indexes=(Index(("participant_id", "test"), unique=True), Index(("study_id",))),
        study_sized=True,
    ),
)


def store_corpus(tx: Transaction, study_id: str, data) -> None:
    if not data:
        return
    study = required(get_study(tx.database, study_id), "study")
    stimuli.store(tx, study_id, data, study["config"][NAME])
    n_controls = sum(1 for s in data["stimuli"] if s["kind"] != "rating")
    row = {"study_id": study_id, "n_items": len(data["sequence"]), "n_controls": n_controls}
    protocol_rows.insert(tx.db, STUDIES, row)


# -- the queue ----------------------------------------------------------------------------------


def next_slot(database, study_id: str) -> int:
    """The first listener slot nobody holds (services/common/slots.py)."""
    return slots.next_slot(database, TAKERS, study_id)


def _screens(database, study_id: str) -> list[dict]:
    return protocol_rows.select(database, SCREENS, {"study_id": study_id}, order_by=("place",))


def setup(tx: Transaction, study: StudyRow, pid: int, group, gender, design_index=None) -> None:
    """The listening checks first; without any, the clips to rate at once."""
    screens = _screens(tx.database, study["id"])
    for k, s in enumerate(screens):
        assignments.insert_assignment(tx.db, study["id"], pid, CHECK_PHASE, s["screen"], k)
    if not screens:
        _enrol(tx, study, pid)


def _enrol(tx: Transaction, study: StudyRow, pid: int) -> None:
    """The listener's clips: those of their slot of the seeded sequence, the study's gold and trap
    clips placed among them at seeded places; CCR's order of each pair seeded too."""
    sid, section = study["id"], study["config"][NAME]
    plan = protocol_rows.one(tx.database, STUDIES, {"study_id": sid})
    if plan is None:
        return
    k = next_slot(tx.database, sid)
    taken = slots.slots(k, section["items_per_listener"], plan["n_items"], section["listeners_per_item"])
    items = [
        required(
            next(iter(protocol_rows.select(tx.database, STIMULI, {"study_id": sid, "seq": seq}, ("item",), 1)), None),
            "listening stimulus",
        )["item"]
        for seq, _round in taken
    ]
    mushra = section["method"] == "mushra"
    if items and not mushra:
        controls = [
            r["item"]
            for kind in ("gold", "trap")
            for r in protocol_rows.select(tx.database, STIMULI, {"study_id": sid, "kind": kind}, order_by=("item",))
        ]
        rng = seeded_rng(NAME, "controls", study["config"]["study"]["seed"], pid)
        for c in controls:  # never first: the listener has heard one clip of the test before a control
            items.insert(rng.randint(1, len(items)), c)
    for t, item in enumerate(items):
        meta: dict[str, Any] = {}
        if section["method"] == "ccr":
            meta = {"first": "reference" if rng_order(study, pid, item) else "clip"}
        if mushra:  # the item's stimuli in a seeded order of the listener's
            rows = _group(tx.database, sid, item)
            order = [r["item"] for r in rows]
            seeded_rng(NAME, "mushra", study["config"]["study"]["seed"], pid, item).shuffle(order)
            meta = {"order": order}
        assignments.insert_assignment(tx.db, sid, pid, NAME, item, 100 + t, meta=meta or None)
    row = {"study_id": sid, "slot": k, "participant_id": pid, "n_items": len(items), "created_at": now()}
    protocol_rows.insert(tx.db, TAKERS, row)


def _group(database, study_id: str, item) -> list[dict]:
    """MUSHRA: the stimuli of the item whose first row is `item`, in the file's order."""
    first = _stimulus(database, study_id, item)
    return protocol_rows.select(
        database, STIMULI, {"study_id": study_id, "group_id": first["group_id"]}, order_by=("item",)
    )


def rng_order(study: StudyRow, pid: int, item: int) -> bool:
    """CCR: whether the reference comes first on this listener's page of the clip (P.800 Annex E
    presents both orders; seeded)."""
    return seeded_rng(NAME, "ccr", study["config"]["study"]["seed"], pid, item).random() < 0.5


def items(config: dict) -> int:
    return int((config.get(NAME) or {}).get("items_per_listener", 0))


def held_items(database, study: StudyRow, participant: ParticipantRow) -> int:
    taker = protocol_rows.one(database, TAKERS, {"participant_id": participant["id"]})
    return int(taker["n_items"]) if taker is not None else items(study["config"])


def outcomes(database, participant_id: int) -> dict[str, dict]:
    """The listener's outcome of each check decided so far, by check."""
    return {
        r["test"]: r
        for r in protocol_rows.select(database, OUTCOMES, {"participant_id": participant_id}, order_by=("test",))
    }


def screened_out(database, participant_id: int) -> bool:
    found = outcomes(database, participant_id)
    return any(not found[c]["passed"] for c in ("device", "hearing") if c in found)


def total(database, participant: ParticipantRow, study: StudyRow, counts: dict[str, int]) -> int:
    """The tab's count: while the checks run, their items and the clips to come; after a failed
    check one more than done (the tab then waits, saying why: waiting())."""
    have = counts["done"] + counts["open"]
    if screened_out(database, participant["id"]):
        return have + 1
    if protocol_rows.one(database, TAKERS, {"participant_id": participant["id"]}) is None:
        plan = protocol_rows.one(database, STUDIES, {"study_id": study["id"]})
        section = study["config"][NAME]
        n = min(section["items_per_listener"], plan["n_items"]) if plan else 0
        return have + n + (plan["n_controls"] if plan and n else 0)
    return have


def waiting(database, participant: ParticipantRow, voice) -> str | None:
    if screened_out(database, participant["id"]):
        return voice("listening_screened_out") if voice is not None else TEXTS["listening_screened_out"]
    return None


def _decide_checks(tx: Transaction, study: StudyRow, pid: int) -> None:
    """After the last check's answer: the device check passes when every side is heard right;
    the hearing test when at least hearing_pass triplets are typed wholly right. A pass enrols."""
    section = study["config"][NAME]
    answers = protocol_rows.select(tx.database, ANSWERS, {"participant_id": pid, "kind": "device"})
    answers += protocol_rows.select(tx.database, ANSWERS, {"participant_id": pid, "kind": "hearing"})
    passed = True
    for check_, rule in (
        ("device", "every side heard right"),
        ("hearing", f"at least {section['hearing_pass']} triplets wholly right"),
    ):
        mine = [a for a in answers if a["kind"] == check_]
        if not mine:
            continue
        right = sum(a["correct"] for a in mine)
        ok = right == len(mine) if check_ == "device" else right >= section["hearing_pass"]
        passed = passed and ok
        protocol_rows.insert(
            tx.db,
            OUTCOMES,
            {
                "study_id": study["id"],
                "participant_id": pid,
                "test": check_,
                "passed": int(ok),
                "n_right": right,
                "n_total": len(mine),
                "rule": rule,
                "created_at": now(),
            },
        )
    if passed:
        _enrol(tx, study, pid)


def _decide_controls(tx: Transaction, study: StudyRow, pid: int) -> None:
    """After the last clip: the gold clips pass when every rating is within gold_tolerance of the
    expected one, the trapping clips when every answer is the one asked for."""
    tolerance = study["config"][NAME]["gold_tolerance"]
    for kind, rule in (("gold", f"every rating within {tolerance} of the expected"), ("trap", "every answer as asked")):
        mine = protocol_rows.select(tx.database, ANSWERS, {"participant_id": pid, "kind": kind})
        if not mine:
            continue
        right = sum(a["correct"] for a in mine)
        protocol_rows.insert(
            tx.db,
            OUTCOMES,
            {
                "study_id": study["id"],
                "participant_id": pid,
                "test": kind,
                "passed": int(right == len(mine)),
                "n_right": right,
                "n_total": len(mine),
                "rule": rule,
                "created_at": now(),
            },
        )


def after_save(tx: Transaction, study: StudyRow, assignment: AssignmentRow) -> None:
    pid, phase = assignment["participant_id"], assignment["phase"]
    if assignments.counts(tx.database, pid, (phase,))["open"]:
        return
    if phase == CHECK_PHASE:
        _decide_checks(tx, study, pid)
    else:
        _decide_controls(tx, study, pid)


def _post_screening(database, study: StudyRow) -> dict[int, str] | None:
    """MUSHRA: why BS.1534-3's post-screening (analysis.mushra_results) excludes each listener it
    excludes, by participant id, on the study's scores so far (the admin's page, not a
    participant's path); None for a study without MUSHRA scores."""
    section = study["config"][NAME]
    rows = protocol_rows.answer_rows(database, SCORES, study["id"])
    if section["method"] != "mushra" or not rows:
        return None
    anchors = {
        r["condition"] for r in protocol_rows.select(database, STIMULI, {"study_id": study["id"]}) if r["anchor"]
    }
    scores = pd.DataFrame(
        {
            "participant": [r["participant__pid"] for r in rows],
            "item_id": [r["group_id"] for r in rows],
            "condition": [r["condition"] for r in rows],
            "anchor": [int(r["condition"] in anchors) for r in rows],
            "score": [r["score"] for r in rows],
        }
    )
    res = analysis.mushra_results(scores, pd.DataFrame(), section["mushra_anchor"], keep_failed=True)
    screening = res.screening if res.screening is not None else pd.DataFrame()
    return {int(r.assessor): str(r.reason) for r in screening.itertuples() if r.excluded}


def qc(database, study: StudyRow, rows: list[dict]) -> dict[int, str]:
    """Each finished listener's checks in a payer's words: "passed (device 2/2, hearing 4/4,
    gold 1/1, trap 1/1)" or "failed hearing (2/4; needs ...)"; for MUSHRA also BS.1534-3's
    post-screening of their scores ("excluded by post-screening: rated the hidden reference ...")."""
    out = {}
    screened = _post_screening(database, study)
    for r in rows:
        found = outcomes(database, r["id"])
        failed = [o for o in found.values() if not o["passed"]]
        said = ", ".join(f"{c} {o['n_right']}/{o['n_total']}" for c, o in found.items())
        if failed:
            why = "; ".join(f"failed {o['test']} ({o['n_right']}/{o['n_total']}; needs {o['rule']})" for o in failed)
            words = f"{why}; excluded from the MOS"
        elif screened and r["id"] in screened:
            words = f"excluded by post-screening: {screened[r['id']]}"
        else:
            parts = [said] if found else []
            parts += ["BS.1534-3's post-screening"] if screened is not None else []
            words = f"passed ({', '.join(parts)})" if parts else "no listening checks in this study"
        if failed and screened and r["id"] in screened:
            words += f"; excluded by post-screening: {screened[r['id']]}"
        out[r["id"]] = words
    return out


# -- the item ------------------------------------------------------------------------------------


def _media(name: str, media_dir) -> str:
    return str(Path(media_dir or settings.current().media_dir) / name)


def _stimulus(database, study_id: str, item) -> dict:
    return required(
        protocol_rows.one(database, STIMULI, {"study_id": study_id, "item": int(item)}), "listening stimulus"
    )


def _clips(database, study: StudyRow, assignment: AssignmentRow) -> list[dict]:
    """The page's clips in the order played: key, label, media name, seconds."""
    if assignment["phase"] == CHECK_PHASE:
        s = required(
            protocol_rows.one(database, SCREENS, {"study_id": study["id"], "screen": assignment["item_id"]}),
            "listening check",
        )
        label = "The tone" if s["test"] == "device" else "The digits"
        return [{"key": "clip", "label": label, "audio": s["audio"], "seconds": s["audio_s"]}]
    st = _stimulus(database, study["id"], assignment["item_id"])
    method = study["config"][NAME]["method"]
    clip = {"key": "clip", "audio": st["audio"], "seconds": st["audio_s"]}
    if method == "mushra":
        rows = {r["item"]: r for r in _group(database, study["id"], assignment["item_id"])}
        ref = {"key": "reference", "label": "Reference", "audio": st["reference_audio"], "seconds": st["reference_s"]}
        samples = [
            {"key": f"s{k}", "label": f"Sample {k + 1}", "audio": rows[i]["audio"], "seconds": rows[i]["audio_s"]}
            for k, i in enumerate(assignment["meta"]["order"])
        ]
        return [ref, *samples]
    if method == "acr":
        return [{**clip, "label": "Recording"}]
    ref = {"key": "reference", "audio": st["reference_audio"], "seconds": st["reference_s"]}
    if method == "dcr":
        return [{**ref, "label": "A (reference)"}, {**clip, "label": "B (sample)"}]
    first, second = (ref, clip) if (assignment["meta"] or {}).get("first") == "reference" else (clip, ref)
    return [{**first, "label": "A (first)"}, {**second, "label": "B (second)"}]


def content(database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir) -> dict:
    """The page's clips (never a condition's name nor whether a clip is gold or a trap) and what
    it asks: a check's question, or the method's scale with P.800's wording."""
    section = study["config"][NAME]
    clips = [
        {"key": c["key"], "label": c["label"], "src": _media(c["audio"], media_dir), "seconds": c["seconds"]}
        for c in _clips(database, study, assignment)
    ]
    if assignment["phase"] == CHECK_PHASE:
        check_ = "device" if str(assignment["item_id"]).startswith("device") else "hearing"
        words, choices = CHECK_WORDS[check_]
        return {"check": check_, "clips": clips, "instructions": words, "choices": choices}
    method = section["method"]
    scale = load_scales()[method]
    if method == "mushra":
        return {
            "method": method,
            "clips": clips,
            "question": "Basic audio quality of each sample against the reference (0-100)",
            "points": [[int(v), w] for v, w in scale.points],
            "instructions": section["instructions"] or INSTRUCTIONS[method],
        }
    return {
        "method": method,
        "clips": clips,
        "question": _question(method),
        "points": [[int(v), w] for v, w in scale.points],
        "instructions": section["instructions"] or INSTRUCTIONS[method],
    }


def _question(method: str) -> str:
    return {
        "acr": "Quality of the speech",
        "dcr": "Degradation of B compared with A",
        "ccr": "The quality of the second (B) compared to the quality of the first (A)",
        "mushra": "Basic audio quality of each sample against the reference (0-100)",
    }[method]


def check_played(clips: list[dict], assignment: AssignmentRow) -> None:
    """The page's clips must have had time to play to their end since it was shown (the page
    says which it saw played: validate's first check)."""
    if not assignment["first_shown_at"]:
        return
    seconds = sum(float(c["seconds"]) for c in clips)
    shown = dt.datetime.fromisoformat(assignment["first_shown_at"])
    elapsed = (dt.datetime.now(dt.timezone.utc) - shown).total_seconds()
    if elapsed + LISTEN_TOLERANCE_S < seconds:
        raise SubmissionError("Please listen to every recording on the page to its end before you answer.")


def _played(payload: dict) -> set[str]:
    raw = payload.get("played")
    try:
        got = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except ValueError:
        got = None
    return {str(x) for x in got} if isinstance(got, list) else set()


def validate(database, assignment: AssignmentRow, payload: dict) -> dict:
    """The answer, every problem at once, each field named: `played` (each clip of the page
    played to its end, the missing ones named), then `rating` (a point of the method's scale),
    `side` (the device check) or `digits` (three digits, the hearing test); then, the answer whole,
    whether the clips had time to play since the page was shown (check_played)."""
    study = required(get_study(database, assignment["study_id"]), "study")
    section = study["config"][NAME]
    clips = _clips(database, study, assignment)
    parts: list[str] = []
    fields: dict[str, str] = {}

    def refuse(name: str, words: str) -> None:
        parts.append(words)
        fields[name] = words

    missing = [c["label"] for c in clips if c["key"] not in _played(payload)]
    if missing:
        refuse("played", f"Play each recording to its end before you answer; not played yet: {', '.join(missing)}.")
    data: dict[str, Any] = {"item": str(assignment["item_id"]), "value": None, "score": None, "order": ""}
    data.update(typed="", correct=None)
    if assignment["phase"] == CHECK_PHASE:
        s = required(
            protocol_rows.one(database, SCREENS, {"study_id": study["id"], "screen": assignment["item_id"]}),
            "listening check",
        )
        data["kind"] = s["test"]
        if s["test"] == "device":
            side = payload.get("side")
            if side not in [v for v, _ in CHECK_WORDS["device"][1]]:
                refuse("side", "Say in which ear you hear the tone.")
            else:
                data.update(typed=side, correct=int(side == s["expected"]))
        else:
            typed = "".join(str(payload.get("digits") or "").split())
            if len(typed) != 3 or not typed.isdigit():
                refuse("digits", "Type the three digits you heard (for example 4 9 2).")
            else:
                data.update(typed=typed, correct=int(typed == s["expected"]))
        refuse_all(parts, fields)
        check_played(clips, assignment)
        return data
    st = _stimulus(database, study["id"], assignment["item_id"])
    method = section["method"]
    if method == "mushra":
        scores = []
        for k, c in enumerate(clips[1:]):
            v = payload.get(f"score-{k}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
                refuse(f"score-{k}", f"Rate {c['label']}: move its slider (0-100).")
            else:
                scores.append(int(round(v)))
        refuse_all(parts, fields)
        check_played(clips, assignment)
        data.update(kind="mushra", group_id=st["group_id"], scores=scores)
        return data
    values = stimuli.scale_values(method)
    raw = payload.get("rating")
    try:
        value = int(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
    except ValueError:
        value = None
    if value not in values:
        words = {"acr": "Rate the quality of the speech", "dcr": "Rate the degradation of B"}.get(
            method, "Rate the second compared to the first"
        )
        refuse("rating", f"{words}: choose one of the {len(values)} answers.")
    refuse_all(parts, fields)
    assert value is not None
    check_played(clips, assignment)
    data["kind"] = st["kind"]
    data["value"] = value
    data["score"] = value
    if method == "ccr":
        first = (assignment["meta"] or {}).get("first", "reference")
        data["order"] = f"{first}-first"
        data["score"] = value if first == "reference" else -value
    if st["kind"] == "gold":
        data["correct"] = int(abs(data["score"] - st["expected"]) <= section["gold_tolerance"])
    elif st["kind"] == "trap":
        data["correct"] = int(value == st["expected"])
    return data


def save(tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data) -> None:
    protocol_rows.insert(
        tx.db,
        ANSWERS,
        {
            "assignment_id": assignment["id"],
            "participant_id": participant["id"],
            "kind": data["kind"],
            "item": data["item"],
            "value": data["value"],
            "score": data["score"],
            "first_played": data["order"],
            "typed": data["typed"],
            "correct": data["correct"],
            "created_at": now(),
        },
    )
    if data["kind"] == "mushra":
        names = {r["item"]: r["condition"] for r in _group(tx.database, study["id"], assignment["item_id"])}
        protocol_rows.insert_many(
            tx.db,
            SCORES,
            [
                {
                    "assignment_id": assignment["id"],
                    "participant_id": participant["id"],
                    "group_id": data["group_id"],
                    "item": item,
                    "condition": names[item],
                    "position": k,
                    "score": data["scores"][k],
                }
                for k, item in enumerate(assignment["meta"]["order"])
            ],
        )


def _scores(database, assignment_id: int) -> list[dict]:
    return protocol_rows.select(database, SCORES, {"assignment_id": assignment_id}, order_by=("position",))


def stored(database, assignment: AssignmentRow) -> dict:
    """The saved answer as the listener gave it (never whether it was right)."""
    row = protocol_rows.one(database, ANSWERS, {"assignment_id": assignment["id"]})
    if not row:
        return {}
    if row["kind"] in ("device", "hearing"):
        return {"check": row["kind"], "answer": row["typed"]}
    if row["kind"] == "mushra":
        return {"scores": {f"Sample {r['position'] + 1}": r["score"] for r in _scores(database, assignment["id"])}}
    return {"rating": row["value"]}


def answer_words(database, assignment: AssignmentRow, answer: dict) -> str:
    """For the team: `rated 4 (Good)`, `device: left (right)`, `hearing: 492 (wrong)`."""
    row = protocol_rows.one(database, ANSWERS, {"assignment_id": assignment["id"]})
    if not row:
        return ""
    if row["kind"] in ("device", "hearing"):
        return f"{row['kind']}: {row['typed']} ({'right' if row['correct'] else 'wrong'})"
    if row["kind"] == "mushra":
        return ", ".join(
            f"Sample {r['position'] + 1}={r['condition']} {r['score']}" for r in _scores(database, assignment["id"])
        )
    study = required(get_study(database, assignment["study_id"]), "study")
    scale = load_scales()[study["config"][NAME]["method"]]
    said = f"rated {row['value']} ({scale.label(row['value'])})"
    if row["kind"] in ("gold", "trap"):
        said += f", a {row['kind']} clip: {'right' if row['correct'] else 'wrong'}"
    return said


def collected(database, study_id: str) -> dict[str, int]:
    return {"listening ratings": assignments.done_count(database, study_id, NAME)}


# -- the export ----------------------------------------------------------------------------------


def _stimuli(database, study_id: str) -> dict[str, dict]:
    return {
        str(r["item"]): r for r in protocol_rows.select(database, STIMULI, {"study_id": study_id}, order_by=("item",))
    }


def answer_rows(database, study_id: str) -> list[dict]:
    study = get_study(database, study_id)
    method = (study["config"].get(NAME) or {}).get("method", "") if study else ""
    stim = _stimuli(database, study_id)
    out = []
    for r in protocol_rows.answer_rows(database, ANSWERS, study_id):
        s = stim.get(str(r["item"]), {}) if r["kind"] not in ("device", "hearing", "mushra") else {}
        if r["kind"] == "mushra":  # a page: its scores are listening_scores'
            s = {"stimulus_id": stim.get(str(r["item"]), {}).get("group_id", ""), "method": "mushra"}
        out.append(
            {
                "assignment_id": r["assignment_id"],
                "participant__pid": r["participant__pid"],
                "kind": r["kind"],
                "stimulus_id": s.get("stimulus_id", r["item"]),
                "condition": s.get("condition", ""),
                "engine": s.get("engine", ""),
                "voice": s.get("voice", ""),
                "method": method if s else "",
                "value": r["value"],
                "score": r["score"],
                "order": r["first_played"],
                "expected": s.get("expected"),
                "typed": r["typed"],
                "correct": r["correct"],
                "active_seconds": r["active_seconds"],
                "created_at": r["created_at"],
            }
        )
    return out


def score_rows(database, study_id: str) -> list[dict]:
    stim = _stimuli(database, study_id)
    return [
        {
            "assignment_id": r["assignment_id"],
            "participant__pid": r["participant__pid"],
            "item_id": r["group_id"],
            "stimulus_id": stim.get(str(r["item"]), {}).get("stimulus_id", ""),
            "condition": r["condition"],
            "anchor": stim.get(str(r["item"]), {}).get("anchor", 0),
            "position": r["position"],
            "score": r["score"],
        }
        for r in sorted(
            protocol_rows.answer_rows(database, SCORES, study_id), key=lambda r: (r["assignment_id"], r["position"])
        )
    ]


def outcome_rows(database, study_id: str) -> list[dict]:
    return [
        {
            "participant__pid": r["participant_id"],
            "check": r["test"],
            "passed": r["passed"],
            "right": r["n_right"],
            "total": r["n_total"],
            "rule": r["rule"],
            "created_at": r["created_at"],
        }
        for r in protocol_rows.select(database, OUTCOMES, {"study_id": study_id}, order_by=("participant_id", "test"))
    ]


def stimulus_rows(database, study_id: str) -> list[dict]:
    return [
        {
            "stimulus_id": r["stimulus_id"],
            "condition": r["condition"],
            "kind": r["kind"],
            "expected": r["expected"],
            "engine": r["engine"],
            "voice": r["voice"],
            "audio": r["audio"],
            "audio_s": r["audio_s"],
            "reference_audio": r["reference_audio"],
            "reference_s": r["reference_s"],
        }
        for r in _stimuli(database, study_id).values()
    ]


EXPORT_TABLES = {
    ANSWERS: ExportTable(
        answer_rows,
        "One row per listening-test answer: a rating of a clip (kind rating, gold or trap) on the study's "
        "method's scale, or a listening check's answer (kind device or hearing) (docs/listening.md).",
        {
            "assignment_id": ("integer", "the answer's item (assignment)"),
            "participant": ("string", "pseudonym of the listener"),
            "kind": (
                "string",
                "rating (a clip rated as data), gold, trap, mushra (a page: listening_scores), device or hearing",
            ),
            "stimulus_id": ("string", "the clip (the stimuli file's stimulus_id), or the check's screen"),
            "condition": ("string", "the clip's condition (system, TTS engine, degradation)"),
            "engine": ("string", "the TTS engine the clip was made with, when the stimuli file gives it"),
            "voice": ("string", "the TTS voice the clip was made with, when the stimuli file gives it"),
            "method": ("string", "acr, dcr or ccr: the scale the rating is on (empty for a check)"),
            "value": ("integer", "the rating as given (ACR 1-5, DCR 1-5, CCR -3..3 of the second against the first)"),
            "score": ("integer", "the clip's rating: value, except CCR with the clip first, where its sign is turned"),
            "order": ("string", "CCR: reference-first or clip-first; empty otherwise"),
            "expected": ("integer", "a gold clip's known rating, or the answer a trapping clip asks for"),
            "typed": ("string", "a check's answer: the ear (device), the digits typed (hearing)"),
            "correct": ("integer", "gold, trap and checks: 1 right, 0 wrong; empty for a rating"),
            "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
            "created_at": ("timestamp", "when the answer was saved"),
        },
    ),
    SCORES: ExportTable(
        score_rows,
        "MUSHRA: one row per stimulus of an answered page, its condition (hidden_reference: the reference "
        "again, hidden among the samples) and its 0-100 score (docs/listening.md).",
        {
            "assignment_id": ("integer", "the page (listening_answers.assignment_id)"),
            "participant": ("string", "pseudonym of the listener"),
            "item_id": ("string", "the item (the stimuli file's item_id): one reference and its stimuli"),
            "stimulus_id": ("string", "the stimulus"),
            "condition": ("string", "its condition; hidden_reference for the hidden reference"),
            "anchor": ("integer", "1 for an anchor's condition (kind anchor in the stimuli file)"),
            "position": ("integer", "its place on the page, from 0 (0 = Sample 1)"),
            "score": ("integer", "the listener's 0-100 score"),
        },
    ),
    OUTCOMES: ExportTable(
        outcome_rows,
        "One row per listener and check decided: the device check and the hearing test (after the checks), "
        "the gold and trapping clips (after the last clip); a failed one excludes the listener from the MOS "
        "by default.",
        {
            "participant": ("string", "pseudonym of the listener"),
            "check": ("string", "device, hearing, gold or trap"),
            "passed": ("integer", "1 passed, 0 failed"),
            "right": ("integer", "answers right"),
            "total": ("integer", "answers given"),
            "rule": ("string", "what passing needs"),
            "created_at": ("timestamp", "when it was decided"),
        },
    ),
    STIMULI: ExportTable(
        stimulus_rows,
        "The listening test's stimuli: one row per row of the [listening] stimuli file.",
        {
            "stimulus_id": ("string", "the clip"),
            "condition": ("string", "its condition"),
            "kind": ("string", "rating, gold or trap"),
            "expected": ("integer", "gold and trap: the expected answer"),
            "engine": ("string", "the TTS engine, when given"),
            "voice": ("string", "the TTS voice, when given"),
            "audio": ("string", "the clip in the media folder (listening/<sha256>.<format>)"),
            "audio_s": ("number", "its duration in seconds"),
            "reference_audio": ("string", "DCR and CCR: the reference in the media folder"),
            "reference_s": ("number", "its duration in seconds (0 without)"),
        },
        content=True,
    ),
}

TEXTS = {
    "welcome_listening": "Welcome. You will listen to about {items} short recordings (or pages of them) and rate "
    "them; a short check of your headphones and hearing may come first. It takes about {minutes} minutes; please "
    "use headphones in a quiet place. You can stop and come back later with the same link.",
    "listening_screened_out": "Thank you for your time. The listening check showed that your headphones or your "
    "listening conditions do not suit this study, so it ends here for you; nothing is wrong with you. You may close "
    "this page (on Prolific, please return the study).",
}

PROTOCOL = protocols.register(
    Protocol(
        name=NAME,
        roles=(
            Role(
                NAME,
                (NAME,),
                "Listening test",
                setup,
                items=items,
                held_items=held_items,
                seconds_per_item=30,
                qc=qc,
                label="listener",
            ),
        ),
        tabs=(
            Tab(
                NAME,
                (CHECK_PHASE, NAME),
                "tabs.listening:build",
                label="Listening test",
                total=total,
                waiting=waiting,
                scripts=("assets/js/script/listening.js",),
                styles=("assets/css/listening.css",),
            ),
        ),
        phases=(
            Phase(
                CHECK_PHASE,
                content,
                validate,
                save,
                stored,
                after_save=after_save,
                label="listening check",
                answer_words=answer_words,
            ),
            Phase(
                NAME,
                content,
                validate,
                save,
                stored,
                after_save=after_save,
                label="listening clip",
                answer_words=answer_words,
                not_handed_on="listeners are counted as they pass the checks: "
                "listeners_per_item counts the one who left",
            ),
        ),
        defaults=DEFAULTS,
        check=check,
        load=stimuli.load,
        prepare=stimuli.prepare,
        corpus_files=("stimuli",),
        store_corpus=store_corpus,
        count_corpus=stimuli.count,
        count_collected=collected,
        tables=TABLES,
        export_tables=EXPORT_TABLES,
        analyze="services.listening.study_analysis:add_analyze",
        report_section="services.report.listening:section",  # services/report sits above the protocols
        analysis_panel="tabs.analysis_listening:panel",
        texts={"en": TEXTS},
    )
)
