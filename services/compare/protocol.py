"""Side by side (issue 54, point 1) as a protocol: an annotator sees one source and two to N
systems' outputs of it on one screen, labelled A, B, C... in a per-annotator counterbalanced
order (services/compare/corpus.py), and, as the study's `mode` says, scores each output on a
0-100 slider (`score`), prefers one of two with an optional tie and strength (`prefer`), or ranks
them, by ordering them or by choosing the best and the worst (`rank`). The order shown is stored
with the answer. Registered through the same hooks a plugin has (docs/plugins.md); its tables are
its own (Protocol.tables) and its rows go through storage/protocol_rows.py; its page is
tabs/compare.py with assets/js/script/compare.js and assets/css/compare.css (docs/side-by-side.md)."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from services.common import protocols, settings, slots
from services.common.protocols import (
    AddColumn,
    Column,
    ExportTable,
    Index,
    Phase,
    Protocol,
    Role,
    SchemaStep,
    Tab,
    Table,
)
from services.compare import corpus
from services.compare.corpus import ANSWERS, ITEMS, MODES, NAME, OUTPUTS, RANKINGS, RATINGS, TAKERS, VACANCIES
from services.participation.submissions import refuse_all
from storage import assignments, protocol_rows
from storage.db import Transaction, now, required
from storage.rows import AssignmentRow, ParticipantRow, StudyRow
from storage.studies import get_study

LETTERS = string.ascii_uppercase
TIE = "tie"
STRENGTHS = ("slightly", "much")
MAX_COMMENT = 2000
# Appraise's pairwise tasks (AppraiseDev/Appraise Examples/Pairwise, PairwiseSQM) score both
# candidates of a source side by side on 0-100 sliders; WMT's DA slider ends (assets/scales.toml [da])
DEFAULTS: dict[str, Any] = {
    "corpus": None,
    "mode": "score",
    "items_per_annotator": 20,
    "annotators_per_item": 3,
    "allow_tie": True,
    "strength": False,
    "ranking": "order",
    "comments": True,
    "show_reference": False,
    "scale_low": "Not at all",
    "scale_high": "Perfectly",
    "instructions": "",
}
INSTRUCTIONS = {
    "score": "Read the source and each translation of it. **Score each translation** on its slider: how well "
    "does it express the source's meaning, in good target-language text? 0 = not at all, 100 = perfectly. "
    "Compare them: a better translation gets a higher score. The order of the translations means nothing.",
    "prefer": "Read the source and the two translations of it. **Which translation is better?** Choose A or B"
    "{tie}. The order of the translations means nothing.",
    "order": "Read the source and the translations of it. **Rank them, best first**: drag a translation by its "
    "handle, or use its Up and Down buttons (or Alt+Arrow keys), then confirm the order. The order they "
    "come in means nothing.",
    "best_worst": "Read the source and the translations of it. **Choose the best and the worst translation.** "
    "The order they come in means nothing.",
    "abx": "Listen to recordings **A** and **B**, then to **X**: X is the same recording as A or as B. "
    "**Which one is X?** Play each to its end (as often as you like) before you answer.",
}
PLAY_ALL = "Play each recording to its end before you answer; not played yet: {missing}."


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check(section: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [sxs] section."""
    out: list[tuple[str, str]] = []
    if section.get("mode") not in MODES:
        out.append((f"{NAME}.mode", f"must be one of {', '.join(MODES)}"))
    if section.get("ranking") not in RANKINGS:
        out.append((f"{NAME}.ranking", f"must be one of {', '.join(RANKINGS)} (used when mode is rank)"))
    for key in ("items_per_annotator", "annotators_per_item"):
        if not _whole(section.get(key)) or section[key] < 1:
            out.append((f"{NAME}.{key}", "must be a whole number >= 1"))
    for key in ("allow_tie", "strength", "comments", "show_reference"):
        if not isinstance(section.get(key), bool):
            out.append((f"{NAME}.{key}", "must be true or false"))
    for key in ("scale_low", "scale_high", "instructions"):
        if not isinstance(section.get(key), str):
            out.append((f"{NAME}.{key}", "must be a string"))
    return out


# -- the tables ---------------------------------------------------------------------------------

STUDY = Column("study_id", "TEXT", not_null=True, references="studies.id")
ASSIGNMENT = Column("assignment_id", "INTEGER", not_null=True, references="assignments.id")
# an output's recording (its media name, "" without) and its length; ABX's hidden X (the system)
AUDIO = Column("audio", "TEXT", not_null=True, default="")
AUDIO_S = Column("audio_s", "REAL", not_null=True, default=0.0)
X = Column("x", "TEXT", not_null=True, default="")
TABLES: tuple[Table, ...] = (
    Table(  # one row per study: what the assignment's plan needs without reading the items
        f"{NAME}_studies",
        (STUDY, Column("n_items", "INTEGER", not_null=True)),
        indexes=(Index(("study_id",), unique=True),),
    ),
    Table(
        ITEMS,
        (
            STUDY,
            Column("item", "INTEGER", not_null=True),  # its place in the file, from 0: the assignment's item
            Column("seq", "INTEGER", not_null=True),  # its place in the assignment's seeded sequence
            Column("item_id", "TEXT", not_null=True),
            Column("doc_id", "TEXT", not_null=True, default=""),
            Column("source", "TEXT", not_null=True),
            Column("reference", "TEXT", not_null=True, default=""),
            Column("n_outputs", "INTEGER", not_null=True),
        ),
        indexes=(Index(("study_id", "item"), unique=True), Index(("study_id", "seq"), unique=True)),
        study_sized=True,
    ),
    Table(
        OUTPUTS,
        (
            STUDY,
            Column("item", "INTEGER", not_null=True),
            Column("system", "TEXT", not_null=True),
            Column("output", "TEXT", not_null=True),
            Column("base", "INTEGER", not_null=True),  # its place in the item's seeded base order
            AUDIO,
            AUDIO_S,
        ),
        indexes=(Index(("study_id", "item", "base"), unique=True),),
        study_sized=True,
    ),
    Table(  # who holds which annotator slot (services/common/slots.py), in enrolment order
        TAKERS,
        (
            STUDY,
            Column("slot", "INTEGER", not_null=True),
            Column("participant_id", "INTEGER", not_null=True, references="participants.id"),
            Column("n_items", "INTEGER", not_null=True),
            Column("created_at", "TEXT", not_null=True),
        ),
        indexes=(Index(("study_id", "slot"), unique=True), Index(("participant_id",), unique=True)),
        study_sized=True,
    ),
    Table(
        ANSWERS,
        (
            ASSIGNMENT,
            Column("item", "INTEGER", not_null=True),
            Column("mode", "TEXT", not_null=True),
            Column("shown", "TEXT", not_null=True),  # JSON: the systems in the order shown (A, B, ...)
            Column("preferred", "TEXT", not_null=True, default=""),  # prefer: a system or "tie"
            Column("strength", "TEXT", not_null=True, default=""),
            Column("best", "TEXT", not_null=True, default=""),
            Column("worst", "TEXT", not_null=True, default=""),
            Column("created_at", "TEXT", not_null=True),
            X,
        ),
        indexes=(Index(("assignment_id",), unique=True),),
        study_sized=True,
    ),
    Table(  # one row per output shown in an answer: its position, its score or its place
        RATINGS,
        (
            ASSIGNMENT,
            Column("item", "INTEGER", not_null=True),
            Column("system", "TEXT", not_null=True),
            Column("position", "INTEGER", not_null=True),  # 0 = A (left, or first)
            Column("score", "INTEGER"),
            Column("place", "INTEGER"),  # rank by order: 1 = best
            Column("comment", "TEXT", not_null=True, default=""),
        ),
        indexes=(Index(("assignment_id", "position"), unique=True),),
        study_sized=True,
    ),
)
# The items an annotator left unanswered when they left (on_leave), in their slot's order with the
# order their outputs were to be shown in, until the next annotator added takes them (setup): rows
# only while they wait, so no study-sized table.
VACANCY_TABLE = Table(
    VACANCIES,
    (
        STUDY,
        Column("slot", "INTEGER", not_null=True),
        Column("t", "INTEGER", not_null=True),  # the item's place in the slot's queue
        Column("item", "INTEGER", not_null=True),
        Column("meta", "TEXT", not_null=True),  # JSON: the order shown and the round (setup's meta)
    ),
    indexes=(Index(("study_id", "slot", "t"), unique=True),),
)
TABLES = (*TABLES, VACANCY_TABLE)
STUDIES = TABLES[0].name


def store_corpus(tx: Transaction, study_id: str, data) -> None:
    corpus.store(tx, study_id, data)
    if data:
        protocol_rows.insert(tx.db, STUDIES, {"study_id": study_id, "n_items": len(data["items"])})


# -- the queue ----------------------------------------------------------------------------------


def next_slot(database, study_id: str) -> int:
    """The first annotator slot nobody holds (services/common/slots.py)."""
    return slots.next_slot(database, TAKERS, study_id)


def setup(tx: Transaction, study: StudyRow, pid: int, group, gender, design_index=None) -> None:
    """The annotator's queue: the items an annotator who left did not answer, where some wait
    (their slot's, whole: take_vacancy), else the items of the next slot of the seeded sequence
    (services/common/slots.py), each with the order its outputs are shown in (the item's base order rotated
    by the round)."""
    sid, section = study["id"], study["config"][NAME]
    plan = protocol_rows.one(tx.database, STUDIES, {"study_id": sid})
    if plan is None or take_vacancy(tx, sid, pid):
        return
    k = next_slot(tx.database, sid)
    taken = slots.slots(k, section["items_per_annotator"], plan["n_items"], section["annotators_per_item"])
    for t, (seq, round_) in enumerate(taken):
        item = required(protocol_rows.one(tx.database, ITEMS, {"study_id": sid, "seq": seq}), "sxs item")
        base = [o["system"] for o in _outputs(tx.database, sid, item["item"])]
        meta: dict[str, Any] = {"order": corpus.shown_order(base, round_), "round": round_}
        if section["mode"] == "abx":  # X at A, B, B, A over an item's rounds; its system s1, s1, s2, s2
            meta["x"] = meta["order"][(round_ + round_ // 2) % 2]
        assignments.insert_assignment(tx.db, sid, pid, NAME, item["item"], t, meta=meta)
    row = {"study_id": sid, "slot": k, "participant_id": pid, "n_items": len(taken), "created_at": now()}
    protocol_rows.insert(tx.db, TAKERS, row)


def take_vacancy(tx: Transaction, study_id: str, pid: int) -> bool:
    """The first slot whose items wait for an annotator (on_leave) becomes pid's: its waiting
    items, in their order and with the order shown they had; False when none waits."""
    first = protocol_rows.select(tx.database, VACANCIES, {"study_id": study_id}, order_by=("slot", "t"), limit=1)
    if not first:
        return False
    slot = first[0]["slot"]
    waiting = protocol_rows.select(tx.database, VACANCIES, {"study_id": study_id, "slot": slot}, order_by=("t",))
    for v in waiting:
        assignments.insert_assignment(tx.db, study_id, pid, NAME, v["item"], v["t"], meta=json.loads(v["meta"]))
    protocol_rows.delete(tx.db, VACANCIES, {"study_id": study_id, "slot": slot})
    protocol_rows.delete(tx.db, TAKERS, {"study_id": study_id, "slot": slot})
    row = {"study_id": study_id, "slot": slot, "participant_id": pid, "n_items": len(waiting), "created_at": now()}
    protocol_rows.insert(tx.db, TAKERS, row)
    return True


def on_leave(tx: Transaction, study: StudyRow, participant: ParticipantRow, withdrawn, actor: str, out) -> None:
    """An annotator leaves (deactivated and reassigned, removed): the items they left unanswered
    wait, in their slot's order and with their order shown, for the next annotator added
    (take_vacancy), so annotators_per_item still holds; their saved answers stay."""
    taker = protocol_rows.one(tx.database, TAKERS, {"participant_id": participant["id"]})
    mine = [a for a in withdrawn if a["phase"] == NAME]
    if taker is None or not mine:
        return
    rows = [
        {"study_id": study["id"], "slot": taker["slot"], "t": int(a["position"]), "item": int(a["item_id"]),
         "meta": a["meta"] or "{}"}
        for a in mine
    ]  # fmt: skip
    protocol_rows.insert_many(tx.db, VACANCIES, rows)
    out.waiting.extend({"phase": a["phase"], "item": a["item_id"]} for a in mine)


def _outputs(database, study_id: str, item: int) -> list[dict]:
    return protocol_rows.select(database, OUTPUTS, {"study_id": study_id, "item": item}, order_by=("base",))


def items(config: dict) -> int:
    return int((config.get(NAME) or {}).get("items_per_annotator", 0))


def held_items(database, study: StudyRow, participant: ParticipantRow) -> int:
    """The items of the annotator's slot (the last slots of a study may hold fewer, a full
    study's none); before they hold one, items_per_annotator."""
    taker = protocol_rows.one(database, TAKERS, {"participant_id": participant["id"]})
    return int(taker["n_items"]) if taker is not None else items(study["config"])


def plan(database, study_id: str) -> list[str]:
    """How many annotators the study needs for annotators_per_item on every item, and whether it is full."""
    study = get_study(database, study_id)
    if study is None or NAME not in study["config"]:  # a study of other protocols
        return []
    row = protocol_rows.one(database, STUDIES, {"study_id": study_id})
    if row is None:
        return []
    section = study["config"][NAME]
    per_item, ipa = section["annotators_per_item"], section["items_per_annotator"]
    need = slots.judges_needed(row["n_items"], ipa, per_item)
    have = next_slot(database, study_id)
    left = protocol_rows.count(database, VACANCIES, {"study_id": study_id})
    if left:
        waiting = f"{left} item(s) left unanswered by annotators who left wait for the next annotator added"
        return [f"Side by side: {waiting}."]
    if have >= need:
        full = f"the study is full ({need} annotators give each item {per_item})"
        return [f"Side by side: {full}; annotators added now get no items."]
    n = row["n_items"]
    more = f"{need - have} more annotator(s) of {min(ipa, n)} items each"
    return [f"Side by side: {more} give each of the {n} items {per_item} annotators."]


# -- the item ------------------------------------------------------------------------------------


def _section(database, study_id: str) -> dict:
    return required(get_study(database, study_id), "study")["config"][NAME]


def content(database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir) -> dict:
    """The source (and reference when shown), the outputs in the annotator's order as A, B, ...
    (never the systems' names), the mode's settings and the instructions."""
    section = study["config"][NAME]
    item = required(
        protocol_rows.one(database, ITEMS, {"study_id": study["id"], "item": int(assignment["item_id"])}), "sxs item"
    )
    outs = {o["system"]: o for o in _outputs(database, study["id"], item["item"])}
    order = assignment["meta"]["order"]
    folder = Path(media_dir or settings.current().media_dir) if any(o["audio"] for o in outs.values()) else None

    def audio(system: str) -> str:
        return str(folder / outs[system]["audio"]) if folder and outs[system]["audio"] else ""

    mode = section["mode"]
    kind = section["ranking"] if mode == "rank" else mode
    words = section["instructions"] or INSTRUCTIONS[kind].replace(
        "{tie}", ", or a tie when they are equally good" if section["allow_tie"] else ""
    )
    return {
        "mode": mode,
        "ranking": section["ranking"],
        "source": item["source"],
        "reference": item["reference"] if section["show_reference"] else "",
        "outputs": [{"label": LETTERS[k], "text": outs[s]["output"], "audio": audio(s)} for k, s in enumerate(order)],
        "x_audio": audio(assignment["meta"]["x"]) if mode == "abx" else "",
        "allow_tie": section["allow_tie"],
        "strength": section["strength"],
        "comments": section["comments"],
        "scale_low": section["scale_low"],
        "scale_high": section["scale_high"],
        "instructions": words,
    }


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
        return None
    return float(v)


def _played(payload: dict) -> set[str]:
    """The recordings the page saw played to their end (its `played` field: JSON letters)."""
    raw = payload.get("played")
    try:
        got = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except ValueError:
        return set()
    return {str(v) for v in got} if isinstance(got, list) else set()


def validate(database, assignment: AssignmentRow, payload: dict) -> dict:
    """The answer of the study's mode, every problem at once, each field named: score-<k> (each
    output's slider moved, 0-100), comment-<k>; preference (A, B or, when allowed, tie) and
    strength; ranking (every output once, best first) or best and worst (two different outputs);
    abx: x_is (A or B); and, where the outputs are recordings, `played` (each, and X, played to
    its end)."""
    section = _section(database, assignment["study_id"])
    order: list[str] = list(assignment["meta"]["order"])
    labels = list(LETTERS[: len(order)])
    mode = section["mode"]
    parts: list[str] = []
    fields: dict[str, str] = {}

    def refuse(name: str, words: str) -> None:
        parts.append(words)
        fields[name] = words

    data: dict[str, Any] = {"item": int(assignment["item_id"]), "mode": mode, "shown": order}
    data.update(scores=[None] * len(order), places=[None] * len(order), comments=[""] * len(order))
    data.update(preferred="", strength="", best="", worst="", x="")
    # every recording on the page played to its end first (the page says which in `played`)
    heard = {o["system"] for o in _outputs(database, assignment["study_id"], int(assignment["item_id"])) if o["audio"]}
    clips = [lab for lab, s in zip(labels, order) if s in heard] + (["X"] if mode == "abx" else [])
    played = _played(payload)
    missing = [c for c in clips if c not in played]
    if missing:
        refuse("played", PLAY_ALL.format(missing=", ".join(missing)))
    if section["comments"]:
        for k, lab in enumerate(labels):
            c = payload.get(f"comment-{k}") or ""
            if not isinstance(c, str) or len(c) > MAX_COMMENT:
                refuse(
                    f"comment-{k}",
                    f"The comment on translation {lab} must be text of at most {MAX_COMMENT} characters.",
                )
            else:
                data["comments"][k] = c.strip()
    if mode == "score":
        for k, lab in enumerate(labels):
            v = _number(payload.get(f"score-{k}"))
            if v is None:
                refuse(f"score-{k}", f"Move the slider of translation {lab} to score it (0-100).")
            else:
                data["scores"][k] = int(round(v))
    elif mode == "prefer":
        choices = [*labels, TIE] if section["allow_tie"] else list(labels)
        pick = payload.get("preference")
        if pick not in choices:
            refuse(
                "preference",
                "Choose the better translation: "
                + (", ".join(labels) + (" or a tie." if section["allow_tie"] else ".")),
            )
        else:
            data["preferred"] = TIE if pick == TIE else order[labels.index(pick)]
            if section["strength"] and pick != TIE:
                strength = payload.get("strength")
                if strength not in STRENGTHS:
                    refuse("strength", "Say how much better it is: slightly or much better.")
                else:
                    data["strength"] = strength
    elif mode == "abx":
        pick = payload.get("x_is")
        if pick not in labels:
            refuse("x_is", "Say which recording X is: A or B.")
        else:
            data["preferred"], data["x"] = order[labels.index(pick)], assignment["meta"]["x"]
    elif section["ranking"] == "order":
        raw = payload.get("ranking")
        try:
            ranking = json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
        except ValueError:
            ranking = None
        if not isinstance(ranking, list) or sorted(map(str, ranking)) != sorted(labels):
            refuse("ranking", f"Rank every translation ({', '.join(labels)}) once, best first, then confirm the order.")
        else:
            for place, lab in enumerate(ranking, start=1):
                data["places"][labels.index(lab)] = place
    else:
        best, worst = payload.get("best"), payload.get("worst")
        if best not in labels:
            refuse("best", "Choose the best translation.")
        if worst not in labels:
            refuse("worst", "Choose the worst translation.")
        elif best == worst:
            refuse("worst", "The worst translation must be another than the best.")
        if best in labels and worst in labels and best != worst:
            data["best"], data["worst"] = order[labels.index(best)], order[labels.index(worst)]
    refuse_all(parts, fields)
    return data


def save(tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data) -> None:
    aid = assignment["id"]
    protocol_rows.insert(
        tx.db,
        ANSWERS,
        {
            "assignment_id": aid,
            "item": data["item"],
            "mode": data["mode"],
            "shown": json.dumps(data["shown"], ensure_ascii=False),
            "preferred": data["preferred"],
            "strength": data["strength"],
            "best": data["best"],
            "worst": data["worst"],
            "created_at": now(),
            "x": data.get("x", ""),
        },
    )
    protocol_rows.insert_many(
        tx.db,
        RATINGS,
        [
            {
                "assignment_id": aid,
                "item": data["item"],
                "system": s,
                "position": k,
                "score": data["scores"][k],
                "place": data["places"][k],
                "comment": data["comments"][k],
            }
            for k, s in enumerate(data["shown"])
        ],
    )


def stored(database, assignment: AssignmentRow) -> dict:
    """The saved answer as the annotator gave it, by the outputs' letters (no system named)."""
    row = protocol_rows.one(database, ANSWERS, {"assignment_id": assignment["id"]})
    if not row:
        return {}
    shown = json.loads(row["shown"])
    rated = protocol_rows.select(database, RATINGS, {"assignment_id": assignment["id"]}, order_by=("position",))

    def letter(system: str) -> str:
        return TIE if system == TIE else LETTERS[shown.index(system)] if system in shown else ""

    out: dict[str, Any] = {"mode": row["mode"], "shown": [LETTERS[k] for k in range(len(shown))]}
    if row["mode"] == "score":
        out["scores"] = {LETTERS[r["position"]]: r["score"] for r in rated}
    if any(r["place"] is not None for r in rated):
        out["ranking"] = [LETTERS[r["position"]] for r in sorted(rated, key=lambda r: r["place"])]
    for key in ("preferred", "best", "worst"):
        if row[key]:
            out[key] = letter(row[key])
    if row["mode"] == "abx" and row["preferred"]:  # the annotator's X, as they said it
        out = {"mode": "abx", "shown": out["shown"], "x_is": letter(row["preferred"])}
    if row["strength"]:
        out["strength"] = row["strength"]
    if any(r["comment"] for r in rated):
        out["comments"] = {LETTERS[r["position"]]: r["comment"] for r in rated if r["comment"]}
    return out


def answer_words(database, assignment: AssignmentRow, answer: dict) -> str:
    """For the team: `A=sysB 70, B=sysA 40`; `A=sysB preferred (much)`; `ranked B=sysA > A=sysB`."""
    if not answer:
        return ""
    order = assignment["meta"]["order"]

    def who(letter: str) -> str:
        return f"{letter}={order[LETTERS.index(letter)]}" if letter in LETTERS[: len(order)] else letter

    if "x_is" in answer:  # ABX: the annotator's X and whether it was right
        x = assignment["meta"].get("x", "")
        said = order[LETTERS.index(answer["x_is"])] if answer["x_is"] in LETTERS[: len(order)] else ""
        words = f"X is {who(answer['x_is'])} ({'right' if said == x else f'wrong: X was {x}'})"
    elif "scores" in answer:
        words = ", ".join(f"{who(k)} {v}" for k, v in answer["scores"].items())
    elif "preferred" in answer:
        words = "tie" if answer["preferred"] == TIE else f"{who(answer['preferred'])} preferred"
        words += f" ({answer['strength']})" if answer.get("strength") else ""
    elif "ranking" in answer:
        words = "ranked " + " > ".join(who(k) for k in answer["ranking"])
    else:
        words = f"best {who(answer.get('best', ''))}, worst {who(answer.get('worst', ''))}"
    comments = "; ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in (answer.get("comments") or {}).items())
    return words + (f"; comments {comments}" if comments else "")


def collected(database, study_id: str) -> dict[str, int]:
    return {"side-by-side answers": assignments.done_count(database, study_id, NAME)}


# -- the export ----------------------------------------------------------------------------------


def _items(database, study_id: str) -> dict[int, dict]:
    return {r["item"]: r for r in protocol_rows.select(database, ITEMS, {"study_id": study_id}, order_by=("item",))}


def answer_rows(database, study_id: str) -> list[dict]:
    items_ = _items(database, study_id)
    out = []
    for r in protocol_rows.answer_rows(database, ANSWERS, study_id):
        it = items_.get(r["item"], {})
        out.append(
            {
                "assignment_id": r["assignment_id"],
                "participant__pid": r["participant__pid"],
                "item_id": it.get("item_id"),
                "doc_id": it.get("doc_id"),
                "mode": r["mode"],
                "shown": r["shown"],
                "preferred": r["preferred"],
                "strength": r["strength"],
                "best": r["best"],
                "worst": r["worst"],
                "x": r["x"],
                "active_seconds": r["active_seconds"],
                "created_at": r["created_at"],
            }
        )
    return out


def rating_rows(database, study_id: str) -> list[dict]:
    items_ = _items(database, study_id)
    return [
        {
            "assignment_id": r["assignment_id"],
            "participant__pid": r["participant__pid"],
            "item_id": items_.get(r["item"], {}).get("item_id"),
            "system": r["system"],
            "position": r["position"],
            "label": LETTERS[r["position"]],
            "score": r["score"],
            "rank": r["place"],
            "comment": r["comment"],
        }
        for r in sorted(
            protocol_rows.answer_rows(database, RATINGS, study_id), key=lambda r: (r["assignment_id"], r["position"])
        )
    ]


def output_rows(database, study_id: str) -> list[dict]:
    items_ = _items(database, study_id)
    return [
        {
            "item_id": items_[i]["item_id"],
            "doc_id": items_[i]["doc_id"],
            "source": items_[i]["source"],
            "reference": items_[i]["reference"],
            "system": o["system"],
            "output": o["output"],
            "audio": o["audio"],
            "audio_s": o["audio_s"],
        }
        for i in items_
        for o in _outputs(database, study_id, i)
    ]


EXPORT_TABLES = {
    ANSWERS: ExportTable(
        answer_rows,
        "One row per side-by-side answer: the item, the order its outputs were shown in, and the "
        "preference or best-worst choice (docs/side-by-side.md); the scores and ranks are in sxs_ratings.",
        {
            "assignment_id": ("integer", "the answer's item (assignment)"),
            "participant": ("string", "pseudonym of the annotator"),
            "item_id": ("string", "the item (the corpus file's item_id)"),
            "doc_id": ("string", "the item's document, when the corpus file gives it"),
            "mode": ("string", "score, prefer, rank or abx: what the annotator was asked"),
            "shown": (
                "json",
                "the systems in the order shown: the first was A (left, or on top on a phone), the second B, ...",
            ),
            "preferred": (
                "string",
                "prefer mode: the system preferred, or tie; abx mode: the system the annotator said X was",
            ),
            "strength": ("string", "prefer mode with strength: slightly or much better; empty for a tie"),
            "best": ("string", "rank mode by best-worst: the system chosen best"),
            "worst": ("string", "rank mode by best-worst: the system chosen worst"),
            "x": ("string", "abx mode: the system X really was (the answer is right when preferred is x)"),
            "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
            "created_at": ("timestamp", "when the answer was saved"),
        },
    ),
    RATINGS: ExportTable(
        rating_rows,
        "One row per output shown in a side-by-side answer: its system, its position on the screen, "
        "and its score (score mode), rank (rank mode by order) and comment.",
        {
            "assignment_id": ("integer", "the answer (sxs_answers.assignment_id)"),
            "participant": ("string", "pseudonym of the annotator"),
            "item_id": ("string", "the item (the corpus file's item_id)"),
            "system": ("string", "the system whose output this is"),
            "position": ("integer", "its position on the screen, from 0 (0 = A: left, or on top on a phone)"),
            "label": ("string", "its letter on the screen (A, B, ...)"),
            "score": ("integer", "score mode: the annotator's 0-100 score of it; empty otherwise"),
            "rank": ("integer", "rank mode by order: its place, 1 = best; empty otherwise"),
            "comment": ("string", "the annotator's comment on it, if any"),
        },
    ),
    OUTPUTS: ExportTable(
        output_rows,
        "The side-by-side corpus: one row per item and system of the [sxs] corpus file.",
        {
            "item_id": ("string", "the item"),
            "doc_id": ("string", "its document, when the file gives it"),
            "source": ("string", "the source shown"),
            "reference": ("string", "the reference, when the file gives it"),
            "system": ("string", "the system"),
            "output": ("string", "the system's output, as shown"),
            "audio": ("string", "the output's recording in the media folder (named by its sha256), when it has one"),
            "audio_s": ("number", "the recording's length in seconds (0 without one)"),
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
                "Side-by-side comparison",
                setup,
                items=items,
                held_items=held_items,
                on_leave=on_leave,  # the items they left wait for the next annotator added
                seconds_per_item=60,  # the welcome's estimate per screen of outputs
                label="side-by-side annotator",
            ),
        ),
        tabs=(
            Tab(
                NAME,
                (NAME,),
                "tabs.compare:build",
                label="Side by side",
                scripts=("assets/js/script/compare.js",),
                styles=("assets/css/compare.css",),
            ),
        ),
        phases=(
            Phase(
                NAME,
                content,
                validate,
                save,
                stored,
                label="side-by-side item",
                answer_words=answer_words,
            ),
        ),
        defaults=DEFAULTS,
        check=check,
        load=corpus.load,
        prepare=corpus.prepare,
        corpus_files=("corpus",),
        store_corpus=store_corpus,
        count_corpus=corpus.count,
        count_collected=collected,
        plan=plan,
        tables=TABLES,
        schema_version=3,  # 2: the items a leaving annotator left (sxs_vacancies); 3: audio outputs, ABX
        schema_steps=(
            SchemaStep(2, (VACANCY_TABLE,)),
            SchemaStep(3, (AddColumn(OUTPUTS, AUDIO), AddColumn(OUTPUTS, AUDIO_S), AddColumn(ANSWERS, X))),
        ),
        export_tables=EXPORT_TABLES,
        analyze="services.compare.study_analysis:add_analyze",
        report_section="services.report.sxs:section",  # services/report sits above the protocols
        analysis_panel="tabs.analysis_sxs:panel",
        texts={
            "en": {
                "welcome_sxs": "Welcome. You will compare the translations of about {items} sources, side by side. "
                "It takes about {minutes} minutes; you can stop and come back later with the same link."
            }
        },
    )
)
