"""Reviewing comprehension-question drafts: edit, accept, reject, CSV round trip.

The one rule: a starter's `questions` are its accepted drafts, in draft order, numbered 1..n
(at most 10). Every action that changes which drafts are accepted, or the text of an accepted
one, rewrites them. Before any review the drafts are brought in line with the questions in use
(adopt()): questions that came with the study folder become accepted drafts of origin
"imported", so they follow the same rule.

Once a receiver has seen or answered a starter's questions (a receive item of one of its
exchanges was shown, or answers exist) they are fixed: changing them would make the collected
answers point at other questions, so such changes are refused with the reason.

CSV (export and import): draft_id, starter_id, status, origin, en, pt, answer_en.
Import: starter_id and en required; draft_id empty = a new draft (origin "imported"), else
that draft is updated (text changed -> origin "edited"); status draft | accepted | rejected
(default draft); origin is ignored (the app sets it). The whole file is checked first; nothing
is written unless every row is valid.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import pandas as pd

from services.common import protocols
from services.comprehension import settings as question_settings
from services.models import llm
from services.participation.items import bold_key_spans
from services.study.export import FORMULA_START, neutralise
from storage import studies
from storage.db import Transaction, required
from storage.usability import corpus as usability_corpus
from storage.usability import exchanges, question_drafts

CSV_COLUMNS = ["draft_id", "starter_id", "status", "origin", "en", "pt", "answer_en"]
REQUIRED = ["starter_id", "en"]
MAX_CHARS = 300
PAGE_SIZE = 20
DRAFT_COLUMNS = ["id", "status", "origin", "en", "pt", "answer_en", "model"]


class ReviewError(ValueError):
    """A review action refused; the message says why and what to do."""


@dataclass
class ImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    starters_rebuilt: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"Imported: {self.created} new draft(s), {self.updated} updated, {self.unchanged} unchanged; "
            f"questions rewritten for {len(self.starters_rebuilt)} starter(s)."
        )


# -- checks ---------------------------------------------------------------------------------


def draft_or_error(database, draft_id) -> dict:
    try:
        did = int(draft_id)
    except (TypeError, ValueError):
        raise ReviewError(f"Give a draft id (a number from the table), not {draft_id!r}.") from None
    d = question_drafts.get(database, did)
    if d is None:
        raise ReviewError(f"There is no question draft {did}.")
    return d


def check_unlocked(database, study_id: str, starter_id: str) -> None:
    if starter_id in exchanges.starters_in_use(database, study_id):
        raise ReviewError(
            f"The questions of starter '{starter_id}' are in use: receivers have seen or answered "
            "them, so they cannot change any more (the answers would point at other questions). "
            "Edit drafts of other starters, or give a changed study a new id."
        )


class _Revision(TypedDict):
    """A draft as a row of the review CSV gives it."""

    en: str
    pt: str
    answer_en: str | None
    status: str


def _text(value, what: str, required: bool = True) -> str:
    t = " ".join(str(value or "").split())
    if required and not t:
        raise ReviewError(f"The {what} must not be empty.")
    if len(t) > MAX_CHARS:
        raise ReviewError(f"The {what} has {len(t)} characters; at most {MAX_CHARS}.")
    return t


# -- the rule: questions = accepted drafts -----------------------------------------------------


def adopt(database, study_id: str, starter_id: str | None = None) -> None:
    """Make the drafts agree with the questions in use before any review: a question in use
    without an accepted draft (from the study folder, or put back by a re-import) becomes one (a
    draft with the same text is accepted again, otherwise a new one of origin "imported"); an
    accepted draft that is no longer in use (a re-import replaced it) goes back to draft. The
    accepted drafts then take the order of the questions in use, so the next review action
    does not renumber them. The import calls it (services/setup/importer.py), so the study
    folder's questions are accepted drafts, and exported, before anyone opens a starter."""
    targets = [starter_id] if starter_id else [s["id"] for s in usability_corpus.starters(database, study_id)]
    changes = []
    for sid in targets:
        live = usability_corpus.questions(database, study_id, sid)
        drafts = question_drafts.for_starter(database, study_id, sid)
        accepted = [d for d in drafts if d["status"] == "accepted"]
        if [(d["en"], d["pt"]) for d in accepted] != [(q["en"], q["pt"]) for q in live]:
            changes.append((sid, live, drafts, accepted))
    if not changes:
        return
    with database.write() as db:  # one write for the study, not one per starter
        for sid, live, drafts, accepted in changes:
            _adopt_starter(db, study_id, sid, live, drafts, accepted)


def _adopt_starter(db, study_id: str, sid: str, live: list[dict], drafts: list[dict], accepted: list[dict]) -> None:
    # the draft that stands for each text: an accepted one first, then the earliest
    by_key: dict[tuple, dict] = {}
    for d in sorted(drafts, key=lambda d: (d["status"] != "accepted", d["position"], d["id"])):
        by_key.setdefault((d["en"], d["pt"]), d)
    used: set[int] = set()
    ids = []
    for q in live:
        standing = by_key.get((q["en"], q["pt"]))
        if standing is None or standing["id"] in used:
            ids.append(
                question_drafts.insert(
                    db, study_id, sid, q["en"], q["pt"], None, "imported", "study folder", status="accepted"
                )
            )
            continue
        if standing["status"] != "accepted":
            question_drafts.update(db, standing["id"], status="accepted")
        used.add(standing["id"])
        ids.append(standing["id"])
    for d in accepted:  # accepted but no longer in use: back to draft
        if d["id"] not in used:
            question_drafts.update(db, d["id"], status="draft")
    question_drafts.order_accepted(db, study_id, sid, ids)


def _rebuild(tx: Transaction, study_id: str, starter_id: str) -> None:
    accepted = [d for d in question_drafts.for_starter(tx.database, study_id, starter_id) if d["status"] == "accepted"]
    if len(accepted) > question_settings.MAX_QUESTIONS:
        raise ReviewError(
            f"Starter '{starter_id}' would have {len(accepted)} accepted questions; at most "
            f"{question_settings.MAX_QUESTIONS}. Reject or un-accept some first."
        )
    if not accepted and exchanges.has_receive_items(tx.database, study_id, starter_id):
        raise ReviewError(
            f"Starter '{starter_id}' would have no questions, but receivers already have its "
            "translations in their queue: keep at least one accepted question."
        )
    question_drafts.replace_questions(tx.db, study_id, starter_id, accepted)
    for _, changed in protocols.with_hook("questions_changed"):  # its exchanges may go to receivers now
        changed(tx, study_id, starter_id)


def _change(database, draft_id, actor: str, action: str, **fields) -> dict:
    """Update one draft and, when its starter's accepted set or text changed, its questions."""
    d = draft_or_error(database, draft_id)
    if usability_corpus.starter(database, d["study_id"], d["starter_id"]) is None:
        raise ReviewError(
            f"Starter '{d['starter_id']}' is no longer in study '{d['study_id']}' (it was "
            "re-imported without it): its drafts cannot be used."
        )
    adopt(database, d["study_id"], d["starter_id"])
    d = required(question_drafts.get(database, d["id"]), "draft")  # drafts are never deleted
    touches_questions = d["status"] == "accepted" or fields.get("status") == "accepted"
    with database.transaction() as tx:
        if touches_questions:  # in the write: no receiver is shown the item in between
            check_unlocked(database, d["study_id"], d["starter_id"])
        question_drafts.update(tx.db, d["id"], **fields)
        if touches_questions:
            _rebuild(tx, d["study_id"], d["starter_id"])
        database.log(actor, action, "question_draft", d["id"], fields)
    return required(question_drafts.get(database, d["id"]), "draft")


def edit(database, draft_id, en, pt, answer_en, actor: str = "admin") -> dict:
    d = draft_or_error(database, draft_id)
    en, pt = _text(en, "English question"), _text(pt, "Portuguese question", required=False)
    answer = _text(answer_en, "reference answer", required=False) or None
    if d["status"] == "accepted" and not pt:
        raise ReviewError("An accepted question needs its Portuguese: receivers read only that.")
    if (en, pt, answer) == (d["en"], d["pt"], d["answer_en"]):
        return d
    return _change(database, d["id"], actor, "edit_question", en=en, pt=pt, answer_en=answer, origin="edited")


def accept(database, draft_id, actor: str = "admin") -> dict:
    d = draft_or_error(database, draft_id)
    if d["status"] == "accepted":
        return d
    if not d["pt"].strip():
        raise ReviewError(f"Draft {d['id']} has no Portuguese question yet: write it (Save edit) before accepting.")
    return _change(database, d["id"], actor, "accept_question", status="accepted")


def reject(database, draft_id, actor: str = "admin") -> dict:
    return _change(database, draft_or_error(database, draft_id)["id"], actor, "reject_question", status="rejected")


def unaccept(database, draft_id, actor: str = "admin") -> dict:
    """Back to draft: out of the starter's questions, kept for review."""
    return _change(database, draft_or_error(database, draft_id)["id"], actor, "unaccept_question", status="draft")


def replace_text(
    database, draft_id, en: str, pt: str, answer_en: str | None, origin: str, model: str, actor: str = "admin"
) -> dict:
    """A regenerated question in place of a draft; it is a draft again, to be reviewed."""
    return _change(
        database,
        draft_id,
        actor,
        "regenerate_question",
        en=_text(en, "English question"),
        pt=_text(pt, "Portuguese question", required=False),
        answer_en=answer_en,
        origin=origin,
        model=model,
        status="draft",
    )


# -- what the review view shows ------------------------------------------------------------


def study_config(database, study_id: str) -> dict | None:
    study = studies.get_study(database, study_id)
    return study["config"] if study else None


def llm_status(study_config: dict | None) -> str:
    try:
        cfg = llm.config(study_config)
    except llm.BackendUnavailable as e:
        return f"**Generating questions is off:** {e}"
    return f"Questions are written by {cfg.label}."


def starter_choices(database, study_id: str) -> list[tuple[str, str]]:
    in_use = question_drafts.question_counts(database, study_id)
    return [
        (f"{s['id']} ({in_use.get(s['id'], 0)} in use)", s["id"]) for s in usability_corpus.starters(database, study_id)
    ]


def starter_table(database, study_id: str, page: int = 1, page_size: int = PAGE_SIZE) -> pd.DataFrame:
    """One row per starter: questions in use, drafts by status, whether receivers have them."""
    in_use = question_drafts.question_counts(database, study_id)
    counts = question_drafts.counts(database, study_id)
    locked = exchanges.starters_in_use(database, study_id)
    rows = [
        {
            "starter": s["id"],
            "in use": in_use.get(s["id"], 0),
            "drafts": counts.get(s["id"], {}).get("draft", 0),
            "accepted": counts.get(s["id"], {}).get("accepted", 0),
            "rejected": counts.get(s["id"], {}).get("rejected", 0),
            "receivers have them": "yes" if s["id"] in locked else "",
        }
        for s in usability_corpus.starters(database, study_id)
    ]
    pages = max(1, -(-len(rows) // page_size))
    start = (min(max(int(page or 1), 1), pages) - 1) * page_size
    return pd.DataFrame(
        rows[start : start + page_size],
        columns=["starter", "in use", "drafts", "accepted", "rejected", "receivers have them"],
    )


def page_count(database, study_id: str, page_size: int = PAGE_SIZE) -> int:
    return max(1, -(-len(usability_corpus.starters(database, study_id)) // page_size))


def starter_view(database, study_id: str, starter_id: str | None) -> dict:
    """{"html": the starter with its key information in bold, "drafts": DataFrame, "locked": bool}."""
    empty = pd.DataFrame(columns=DRAFT_COLUMNS)
    if not starter_id:
        return {"html": "", "drafts": empty, "locked": False}
    st = usability_corpus.starter(database, study_id, starter_id)
    if st is None:
        raise ReviewError(f"Study '{study_id}' has no starter '{starter_id}'.")
    adopt(database, study_id, starter_id)
    rows = question_drafts.for_starter(database, study_id, starter_id)
    order = {"accepted": 0, "draft": 1, "rejected": 2}
    rows.sort(key=lambda d: (order[d["status"]], d["position"], d["id"]))
    locked = starter_id in exchanges.starters_in_use(database, study_id)
    note = " <em>(receivers have these questions: they can no longer change)</em>" if locked else ""
    return {
        "html": f"<p><b>{starter_id}</b>{note}</p><p>{bold_key_spans(st['text'], st['key_spans'])}</p>",
        "drafts": pd.DataFrame([{k: d[k] for k in DRAFT_COLUMNS} for d in rows], columns=DRAFT_COLUMNS),
        "locked": locked,
    }


# -- CSV ----------------------------------------------------------------------------------------


def _cell(value) -> str:
    return neutralise("" if value is None else str(value))


def export_csv(database, study_id: str, out_dir: str | Path | None = None) -> Path:
    """Every draft of the study (questions from the study folder included) as CSV_COLUMNS."""
    if studies.get_study(database, study_id) is None:
        raise ReviewError(f"There is no study '{study_id}'.")
    adopt(database, study_id)
    folder = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="questions-"))
    folder.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = folder / f"questions-{study_id}-{stamp}.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for d in question_drafts.for_study(database, study_id):
            w.writerow([_cell(d["id"] if c == "draft_id" else d[c]) for c in CSV_COLUMNS])
    return path


def _unguard(text: str) -> str:
    """Undo the export's formula guard ("'=x" -> "=x")."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


def _read_csv(path) -> list[tuple[int, dict]]:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ReviewError(f"Cannot read the file as UTF-8 text: {e}") from e
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader, [])]
    if not header:
        raise ReviewError(f"The file is empty: it needs a header row ({', '.join(CSV_COLUMNS)}).")
    problems = [f"row 1: missing column '{c}'" for c in REQUIRED if c not in header]
    problems += [
        f"row 1: unknown column '{c}' (expected {', '.join(CSV_COLUMNS)})" for c in header if c not in CSV_COLUMNS
    ]
    if len(set(header)) != len(header):
        problems.append("row 1: duplicate column names")
    if problems:
        raise ReviewError("Nothing was imported:\n" + "\n".join(f"- {p}" for p in problems))
    rows = []
    for rowno, values in enumerate(reader, start=2):
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise ReviewError(
                f"Nothing was imported:\n- row {rowno}: {len(values)} cells, the header has {len(header)}"
            )
        rows.append((rowno, {h: _unguard(v.strip()) for h, v in zip(header, values)}))
    return rows


def import_csv(database, study_id: str, path, actor: str = "admin") -> ImportSummary:
    """Drafts created or updated from a CSV; checked whole first, written in one transaction."""
    if studies.get_study(database, study_id) is None:
        raise ReviewError(f"There is no study '{study_id}'.")
    rows = _read_csv(path)
    adopt(database, study_id)
    starters = {s["id"] for s in usability_corpus.starters(database, study_id)}
    drafts = {d["id"]: d for d in question_drafts.for_study(database, study_id)}
    locked = exchanges.starters_in_use(database, study_id)
    problems, plan, seen = [], [], set()
    for rowno, r in rows:

        def bad(msg, col=None):
            problems.append(f"row {rowno}" + (f", column '{col}'" if col else "") + f": {msg}")

        sid = r.get("starter_id", "")
        if sid not in starters:
            bad(f"unknown starter '{sid}'" if sid else "must not be empty", "starter_id")
            continue
        try:
            en = _text(r.get("en"), "English question")
            pt = _text(r.get("pt"), "Portuguese question", required=False)
            answer = _text(r.get("answer_en"), "reference answer", required=False) or None
        except ReviewError as e:
            bad(str(e))
            continue
        status = r.get("status") or "draft"
        if status not in question_drafts.STATUSES:
            bad(f"'{status}' is not one of {', '.join(question_drafts.STATUSES)}", "status")
            continue
        if status == "accepted" and not pt:
            bad("an accepted question needs its Portuguese", "pt")
            continue
        old = None
        if r.get("draft_id"):
            try:
                did = int(r["draft_id"])
            except ValueError:
                bad(f"'{r['draft_id']}' is not a draft id (leave it empty for a new draft)", "draft_id")
                continue
            old = drafts.get(did)
            if old is None:
                bad(f"there is no draft {did} in study '{study_id}'", "draft_id")
                continue
            if did in seen:
                bad(f"draft {did} appears twice", "draft_id")
                continue
            seen.add(did)
            if old["starter_id"] != sid:
                bad(f"draft {did} belongs to starter '{old['starter_id']}', not '{sid}'", "starter_id")
                continue
        new: _Revision = {"en": en, "pt": pt, "answer_en": answer, "status": status}
        changed = old is None or any(old[k] != v for k, v in new.items())
        touches = (status == "accepted" or (old is not None and old["status"] == "accepted")) and (
            old is None or old["status"] != status or (status == "accepted" and (old["en"], old["pt"]) != (en, pt))
        )
        if touches and sid in locked:
            bad(f"the questions of starter '{sid}' are in use by receivers and cannot change")
            continue
        plan.append((old, sid, new, changed, touches))
    # at most 10 accepted per starter once the file is applied
    accepted: dict[str, set] = {}
    for d in drafts.values():
        if d["status"] == "accepted":
            accepted.setdefault(d["starter_id"], set()).add(d["id"])
    for i, (old, sid, new, _, _) in enumerate(plan):
        key = old["id"] if old else f"new{i}"
        accepted.setdefault(sid, set()).discard(key)
        if new["status"] == "accepted":
            accepted[sid].add(key)
    for sid, ids in sorted(accepted.items()):
        if len(ids) > question_settings.MAX_QUESTIONS:
            problems.append(
                f"starter '{sid}' would have {len(ids)} accepted questions; at most {question_settings.MAX_QUESTIONS}"
            )
    if problems:
        raise ReviewError("Nothing was imported:\n" + "\n".join(f"- {p}" for p in problems[:50]))
    out = ImportSummary()
    rebuild = set()
    with database.transaction() as tx:
        for old, sid, new, changed, touches in plan:
            if old is None:
                question_drafts.insert(
                    tx.db,
                    study_id,
                    sid,
                    new["en"],
                    new["pt"],
                    new["answer_en"],
                    "imported",
                    "CSV import",
                    status=new["status"],
                )
                out.created += 1
            elif changed:
                text_changed = any(old[k] != new[k] for k in ("en", "pt", "answer_en"))
                question_drafts.update(tx.db, old["id"], **new, **({"origin": "edited"} if text_changed else {}))
                out.updated += 1
            else:
                out.unchanged += 1
            if touches:
                rebuild.add(sid)
        for sid in sorted(rebuild):
            _rebuild(tx, study_id, sid)
        database.log(
            actor,
            "import_questions",
            "study",
            study_id,
            {"created": out.created, "updated": out.updated, "rebuilt": sorted(rebuild)},
        )
    out.starters_rebuilt = sorted(rebuild)
    return out
