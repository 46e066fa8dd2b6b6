"""The usability study's corpus files, read and checked into the StudyBundle at import
(Protocol.load of services/usability/protocol.py); the reading and checking helpers shared by
every protocol's loader are services/study/files.py's."""

from __future__ import annotations

from typing import TypedDict

from services.common.vocabulary import ID_RE, MAX_QUESTIONS
from services.metrics import exchange as exchange_metrics
from services.study import files
from storage.db import Transaction
from storage.usability import corpus as stored
from storage.usability import exchanges as stored_exchanges
from storage.usability import recordings

NAME = "usability"


class Corpus(TypedDict):
    """What load puts in bundle.corpus["usability"]; each list is a part of the study's corpus
    hash (services/study/lifecycle.py: `usability.starters`...)."""

    starters: list[dict]
    questions: list[dict]
    exchanges: list[dict]  # imported translations: {starter_id, system, translation}
    references: list[dict]  # {starter_id, translator, translation}


DOMAINS = ("health", "everyday")
SOURCES = ("natural", "synthetic")
# each file's (required, optional) columns
COLUMNS = {
    "starters": (["id", "domain", "source", "corpus", "text", "key_spans"], []),
    "questions": (["starter_id", "index", "en", "pt"], []),
    "exchanges": (["starter_id", "system", "translation"], []),
    "references": (["starter_id", "translation"], ["translator"]),
}


def load(folder, cfg, systems, bundle, err) -> None:
    """The [usability] section's corpus files (Protocol.load): starters, questions, imported
    exchanges and reference translations, checked into the bundle."""
    us = cfg["usability"]
    corpus: Corpus = {"starters": [], "questions": [], "exchanges": [], "references": []}
    bundle.corpus[NAME] = corpus
    spath = files.safe_file(folder, us["starters"], "usability.starters", err)
    qpath = files.safe_file(folder, us["questions"], "usability.questions", err)
    given = us.get("starter_words")
    lo, hi = given if isinstance(given, list) and len(given) == 2 else (40, 60)
    starters: dict[str, dict] = {}
    refs = _StarterRefs(starters, spath.name if spath else None)
    if spath:
        name = spath.name
        rows = files.read_rows(spath, COLUMNS["starters"], err)
        refs.unread = not rows and any(e.file == name for e in err.errors)
        for rowno, row in rows:
            refs.named.add(row.get("id") or "")
            if not files.require_text(err, name, rowno, row, "id", "domain", "source", "corpus", "text"):
                continue
            sid = row["id"]
            if not ID_RE.match(sid):
                err.add(name, rowno, "id", f"'{sid}' must be letters, digits, '_', '-' or '.'")
                continue
            if sid in starters:
                err.add(name, rowno, "id", f"duplicate starter id '{sid}'")
                continue
            ok = True
            if row["domain"] not in DOMAINS:
                err.add(name, rowno, "domain", f"'{row['domain']}' is not one of {', '.join(DOMAINS)}")
                ok = False
            if row["source"] not in SOURCES:
                err.add(name, rowno, "source", f"'{row['source']}' is not one of {', '.join(SOURCES)}")
                ok = False
            words = len(row["text"].split())
            if not lo <= words <= hi:
                err.add(
                    name, rowno, "text", f"has {words} words; starters must have {lo}-{hi} (usability.starter_words)"
                )
                ok = False
            spans = row.get("key_spans", "")
            spans = spans if isinstance(spans, list) else [s.strip() for s in spans.split("|") if s.strip()]
            if not spans:
                err.add(name, rowno, "key_spans", "must list at least one key span (separate spans with |)")
                ok = False
            for s in spans:
                if not isinstance(s, str) or s not in row["text"]:
                    err.add(name, rowno, "key_spans", f"span '{s}' does not occur in the text")
                    ok = False
            if ok:
                starters[sid] = {
                    "id": sid,
                    "domain": row["domain"],
                    "source": row["source"],
                    "corpus": row["corpus"],
                    "text": row["text"],
                    "key_spans": spans,
                }
        if not starters and not any(e.file == name for e in err.errors):
            err.add(name, None, None, "has no starters")
    if qpath:
        name = qpath.name
        seen = set()
        for rowno, row in files.read_rows(qpath, COLUMNS["questions"], err):
            if not files.require_text(err, name, rowno, row, "starter_id", "index", "en", "pt"):
                continue
            if spath and refs.unknown(err, name, rowno, row["starter_id"]):
                continue
            idx = files.whole_number(err, name, rowno, "index", row["index"], 1, MAX_QUESTIONS)
            if idx is None:
                continue
            key = (row["starter_id"], idx)
            if key in seen:
                err.add(name, rowno, "index", f"duplicate question {idx} for starter '{row['starter_id']}'")
                continue
            seen.add(key)
            corpus["questions"].append({"starter_id": row["starter_id"], "idx": idx, "en": row["en"], "pt": row["pt"]})
        for sid in starters if not refs.unread else ():
            # with a [questions] section, missing questions are generated and reviewed in the app
            if "questions" not in cfg and not any(q["starter_id"] == sid for q in corpus["questions"]):
                err.add(name, None, "starter_id", f"starter '{sid}' has no questions")
    corpus["starters"] = list(starters.values())
    if us.get("exchanges"):
        epath = files.safe_file(folder, us["exchanges"], "usability.exchanges", err)
        if epath:
            name = epath.name
            system_ids = {s["id"] for s in systems}
            seen = set()
            for rowno, row in files.read_rows(epath, COLUMNS["exchanges"], err):
                if not files.require_text(err, name, rowno, row, "starter_id", "system", "translation"):
                    continue
                if refs.unknown(err, name, rowno, row["starter_id"]):
                    continue
                if row["system"] not in system_ids:
                    err.add(name, rowno, "system", f"unknown system '{row['system']}' (declare it in [[systems]])")
                    continue
                key = (row["starter_id"], row["system"])
                if key in seen:
                    err.add(name, rowno, None, f"duplicate exchange for starter '{key[0]}' and system '{key[1]}'")
                    continue
                seen.add(key)
                corpus["exchanges"].append(dict(row))
    if us.get("references"):
        _load_references(folder, us["references"], refs, corpus["references"], err)
    ref = us.get("corpus_reference")
    corpora = sorted({s["corpus"] for s in starters.values()})
    if (
        isinstance(ref, str)
        and ref.strip()
        and starters
        and ref.strip().casefold() not in {c.casefold() for c in corpora}
    ):
        err.add(
            "study.toml",
            None,
            "usability.corpus_reference",
            f"'{ref}' is not the corpus of any starter (corpora: {', '.join(corpora)})",
        )
    n = us.get("items_per_sender")
    if isinstance(n, int) and starters and n > len(starters):
        err.add(
            "study.toml",
            None,
            "usability.items_per_sender",
            f"{n} starters per sender but the corpus has only {len(starters)}",
        )


class _StarterRefs:
    """The other files' starter ids checked against the starters file without follow-on errors:
    an id whose own row in the starters file was refused is not reported again, and when the
    starters file could not be read at all (not UTF-8, wrong separator) each file that names
    starters gets one line saying its ids were not checked, instead of one per row."""

    def __init__(self, starters: dict, starters_file: str | None):
        self.starters, self.file = starters, starters_file
        self.named: set[str] = set()  # ids in the starters file, refused rows' too
        self.unread = False
        self.skipped: set[str] = set()  # files whose ids went unchecked

    def unknown(self, err, name: str, rowno: int, sid: str) -> bool:
        if sid in self.starters:
            return False
        if self.unread:
            if name not in self.skipped:
                self.skipped.add(name)
                err.add(name, None, "starter_id", f"not checked: {self.file} could not be read (see above)")
        elif sid not in self.named:
            err.add(name, rowno, "starter_id", f"unknown starter '{sid}'")
        return True


def _load_references(folder, value, refs: "_StarterRefs", out: list[dict], err):
    """Human reference translations of the starters: a corpus for reference-based metrics,
    never shown to participants and never a system. Several per starter are allowed, told
    apart by `translator` (empty for one unnamed reference)."""
    path = files.safe_file(folder, value, "usability.references", err)
    if not path:
        return
    name = path.name
    seen = set()
    for rowno, row in files.read_rows(path, COLUMNS["references"], err):
        if not files.require_text(err, name, rowno, row, "starter_id", "translation"):
            continue
        sid = row["starter_id"]
        if refs.unknown(err, name, rowno, sid):
            continue
        translator = row.get("translator") or ""
        if (sid, translator) in seen:
            err.add(
                name,
                rowno,
                "translator",
                f"duplicate reference for starter '{sid}' by translator '{translator}'"
                if translator
                else f"duplicate reference for starter '{sid}' (give each reference of a starter its own translator)",
            )
            continue
        seen.add((sid, translator))
        out.append({"starter_id": sid, "translator": translator, "translation": row["translation"]})
    if not out and not any(e.file == name for e in err.errors):
        err.add(name, None, None, "has no references (leave usability.references out for none)")


def store(tx: Transaction, study_id: str, corpus: Corpus | None) -> None:
    """Protocol.store_corpus: None clears the study's corpus (its imported exchanges with their
    scores and pool places, references, questions, starters); a corpus is written, each
    imported exchange with its translation and its metrics job."""
    if corpus is None:
        stored.clear(tx.db, study_id)
        return
    stored.insert(tx.db, study_id, corpus["starters"], corpus["questions"], corpus["references"])
    for ex in corpus["exchanges"]:
        eid = stored_exchanges.insert_exchange(
            tx.db,
            study_id,
            ex["starter_id"],
            ex["system"],
            None,
            import_key=f"{study_id}:{ex['starter_id']}:{ex['system']}",
        )
        recordings.insert_translation(tx.db, eid, ex["system"], ex["translation"], meta='{"origin": "imported"}')
        exchange_metrics.enqueue(tx.db, eid)


def count(database, study_id: str) -> dict[str, int]:
    """Protocol.count_corpus: starters, questions, imported exchanges, references."""
    return stored.counts(database, study_id)
