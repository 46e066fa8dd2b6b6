"""A study's life after its pilot: which settings a re-import may change in place (they touch no
collected item), and archiving or deleting a study (docs/running-a-study.md, "After the pilot").

A re-import of the same study id whose corpus is unchanged and whose changed settings are all in
SAFE_SETTINGS updates the stored config in place: every collected answer stays, and the audit log
gets one `setting_changed` row per setting (old and new value, who). Any other change, once the
study has participants, is refused naming the settings: the items people answered would no longer
be the ones stored (a new study id keeps both)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from services.common import protocols
from storage import studies
from storage.db import now
from storage.rows import StudyRow

# setting (a dotted key of study.toml, or a prefix of them) -> why changing it touches no collected item
SAFE_SETTINGS: dict[str, str] = {
    "study.name": "the study's name, shown to the team",
    "study.description": "the study's description, shown on the welcome page",
    "study.completion_code": "the code shown when a participant finishes",
    "study.redirect_url": "where a participant who finishes is sent",
    "study.contact": "how participants reach the team, said where a page tells them to",
    "study.expected_minutes": "the time the welcome page announces",
    "study.enrol_per_minute": "a self-enrolment rate limit",
    "study.enrol_per_client_per_minute": "a self-enrolment rate limit",
    "study.enrol_per_client_per_hour": "a self-enrolment rate limit",
    "study.prolific_study_ids": "which Prolific studies may send newcomers",
    "texts": "participant-facing wording (scales.toml)",
    "consent.text": "the consent wording (who agreed to which version is in the audit log)",
    "consent.file": "the file the consent wording is read from",
    "consent.agree": "a button label",
    "consent.decline": "a button label",
    "demographics.submit": "a button label",
    "da.reliability_alpha": "the level of the DA reliability test (HITs judged from now on, the analysis)",
    "da.fast_item_s": "the DA speed check (HITs judged from now on, the analysis)",
    "da.keep_fast": "the DA speed check (HITs judged from now on, the analysis)",
    "sd.expected_seconds": "the time the welcome page announces",
}

# the imported content the study itself holds; each protocol's corpus adds its parts (corpus_parts)
CORPUS_PARTS = ("systems",)


def _hash(content: Any) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def corpus_parts(bundle) -> dict[str, Any]:
    """The parts of the bundle's imported content: its systems, and each protocol's corpus
    (bundle.corpus) by its keys when it is a table of parts (`<protocol>.<key>`), else whole
    (`<protocol> corpus`). An empty part is no part: a study that lists no such content hashes
    as one that never could."""
    out: dict[str, Any] = {part: getattr(bundle, part) for part in CORPUS_PARTS}
    for name, content in sorted(bundle.corpus.items()):
        if isinstance(content, dict):
            out.update({f"{name}.{key}": v for key, v in sorted(content.items()) if v})
        elif content:
            out[f"{name} corpus"] = content
    return out


def corpus_hashes(bundle) -> dict[str, str]:
    """Each part of the bundle's imported content, hashed: what a re-import compares."""
    return {part: _hash(content) for part, content in corpus_parts(bundle).items()}


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = value
    return out


def setting_changes(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    """(setting, old value, new value) for each setting that differs; lists compare whole."""
    # as stored (JSON): a tuple read from the folder equals the list it was saved as
    a, b = (_flat(json.loads(json.dumps(c, default=str)), "", {}) for c in (old, new))
    return [(k, a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def is_safe(setting: str) -> bool:
    return any(setting == s or setting.startswith(s + ".") for s in SAFE_SETTINGS)


def changed_parts(stored_hashes: str | None, bundle) -> list[str] | None:
    """The corpus parts that differ from the stored study's; None when the study was imported
    before their hashes were stored (nothing can be compared)."""
    if not stored_hashes:
        return None
    old = json.loads(stored_hashes)
    new = corpus_hashes(bundle)
    own = sorted((old.keys() | new.keys()) - set(CORPUS_PARTS))  # the protocols' corpora
    return [p for p in (*CORPUS_PARTS, *own) if old.get(p) != new.get(p)]


def refusals(changes: list[tuple[str, Any, Any]], parts: list[str] | None) -> list[str]:
    """Why a re-import cannot update a study with participants in place: one line per reason."""
    out = []
    if parts is None:
        out.append("the study was imported before in-place edits existed, so its corpus cannot be compared")
    else:
        out += [f"the corpus changed ({p}): collected answers refer to its items" for p in parts]
    out += [
        f"setting '{k}' changed ({_short(o)} -> {_short(n)}): it shapes the items people answer or who gets them"
        for k, o, n in changes
        if not is_safe(k)
    ]
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


class LifecycleError(ValueError):
    pass


def _study(database, study_id: str | None) -> StudyRow:
    s = studies.get_study(database, study_id) if study_id else None
    if s is None:
        raise LifecycleError(f"There is no study '{study_id}'.")
    return s


def archive(database, study_id: str | None, actor: str) -> str:
    """Out of the dropdowns and the dashboard, its links closed; every row kept (unarchive undoes it)."""
    s = _study(database, study_id)
    if s["archived_at"]:
        raise LifecycleError(f"Study '{s['id']}' is already archived.")
    with database.write() as db:
        studies.set_archived(db, s["id"], now())
        database.log(actor, "archive", "study", s["id"])
    return f"Study '{s['id']}' is archived: its links say it is closed; its data stays (unarchive brings it back)."


def unarchive(database, study_id: str | None, actor: str) -> str:
    s = _study(database, study_id)
    if not s["archived_at"]:
        raise LifecycleError(f"Study '{s['id']}' is not archived.")
    with database.write() as db:
        studies.set_archived(db, s["id"], None)
        database.log(actor, "unarchive", "study", s["id"])
    return f"Study '{s['id']}' is back: in the dropdowns, its links open again."


def deletion_question(database, study_id: str | None) -> tuple[str, int]:
    """What deleting the study loses, in words, and its number of submitted items (the
    confirmation passes that number back to delete)."""
    s = _study(database, study_id)
    n = studies.collected_count(database, s["id"])
    people = studies.participant_count(database, s["id"])
    said = (
        f"Delete study '{s['id']}' ({s['name']}) for good? {n} submitted answer{'s' if n != 1 else ''} "
        f"from {people} participant{'s' if people != 1 else ''}, its corpus and its recordings' files are "
        "removed; nothing can bring them back (export the data first). Archiving keeps them."
    )
    return said, n


def delete(database, study_id: str | None, actor: str, answers_confirmed: int | None) -> str:
    """Every row of the study in every table and its recording files, once confirmed for the
    number of answers it has now (answers_confirmed: the number the person was shown; answers
    that arrived since mean a new question)."""
    s = _study(database, study_id)
    n = studies.collected_count(database, s["id"])
    if answers_confirmed != n:
        raise LifecycleError(
            f"Study '{s['id']}' has {n} submitted answer{'s' if n != 1 else ''}: confirm the deletion "
            f"for {n} (the confirmation given was for {answers_confirmed})."
        )
    with database.write() as db:
        # each protocol's rows the core cannot find by the study's id, and its files (Protocol.forget)
        files = [f for _, forget in protocols.with_hook("forget") for f in forget(db, s["id"])]
        counts = studies.delete_study(db, s["id"])
        database.log(actor, "delete", "study", s["id"], {"answers": n, "rows": counts, "files": len(files)})
    # after the commit: a failed deletion keeps the files its rows name
    removed = 0
    for f in files:
        p = Path(f)
        if p.is_file():
            p.unlink()
            removed += 1
    return (
        f"Study '{s['id']}' is deleted: {sum(counts.values())} rows ({n} submitted answers) "
        f"and {removed} recording files removed."
    )
