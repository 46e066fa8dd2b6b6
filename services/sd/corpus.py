"""The semantic differential's corpus files, read and checked into the StudyBundle at import
(Protocol.load of services/sd/protocol.py), with services/study/files.py's shared helpers."""

from __future__ import annotations

from typing import TypedDict

from services.study import files
from storage.db import Transaction
from storage.sd import corpus as stored

NAME = "sd"


class Corpus(TypedDict):
    """What load puts in bundle.corpus["sd"]; each is a part of the study's corpus hash
    (services/study/lifecycle.py: `sd.sentences`, `sd.pairs`)."""

    sentences: list[dict]  # {id, text, source}
    pairs: list[dict]  # {id, language, positive, negative, note}


# each file's (required, optional) columns
COLUMNS = {
    "sentences": (["sentence_id", "text"], ["source"]),
    "pairs": (["pair_id", "language", "positive", "negative"], ["note"]),
}


def load(folder, cfg, systems, bundle, err) -> None:
    """The [sd] section's sentences and adjective pairs (Protocol.load)."""
    sd = cfg["sd"]
    corpus: Corpus = {"sentences": [], "pairs": []}
    bundle.corpus[NAME] = corpus
    spath = files.safe_file(folder, sd["sentences"], "sd.sentences", err)
    ppath = files.safe_file(folder, sd["pairs"], "sd.pairs", err)
    if spath:
        name, seen = spath.name, set()
        for rowno, row in files.read_rows(spath, COLUMNS["sentences"], err):
            if not files.require_text(err, name, rowno, row, "sentence_id", "text"):
                continue
            if row["sentence_id"] in seen:
                err.add(name, rowno, "sentence_id", f"duplicate sentence id '{row['sentence_id']}'")
                continue
            seen.add(row["sentence_id"])
            corpus["sentences"].append(
                {"id": row["sentence_id"], "text": row["text"], "source": row.get("source") or None}
            )
        k = sd.get("sentences_per_participant")
        if isinstance(k, int) and corpus["sentences"] and k > len(corpus["sentences"]):
            err.add(
                "study.toml",
                None,
                "sd.sentences_per_participant",
                f"{k} sentences per participant but only {len(corpus['sentences'])} sentences",
            )
    if ppath:
        name, seen = ppath.name, set()
        for rowno, row in files.read_rows(ppath, COLUMNS["pairs"], err):
            if not files.require_text(err, name, rowno, row, "pair_id", "language", "positive", "negative"):
                continue
            key = (row["pair_id"], row["language"])
            if key in seen:
                err.add(name, rowno, "pair_id", f"duplicate pair '{key[0]}' for language '{key[1]}'")
                continue
            seen.add(key)
            corpus["pairs"].append(
                {
                    "id": row["pair_id"],
                    "language": row["language"],
                    "positive": row["positive"],
                    "negative": row["negative"],
                    "note": row.get("note") or None,
                }
            )
        if not any(p["language"] == sd.get("language") for p in corpus["pairs"]):
            err.add(name, None, "language", f"no adjective pairs in language '{sd.get('language')}' (sd.language)")


def store(tx: Transaction, study_id: str, corpus: Corpus | None) -> None:
    """Protocol.store_corpus: None clears the study's sentences and pairs; a corpus is written."""
    if corpus is None:
        stored.clear(tx.db, study_id)
    else:
        stored.insert(tx.db, study_id, corpus["sentences"], corpus["pairs"])


def count(database, study_id: str) -> dict[str, int]:
    """Protocol.count_corpus: sentences and adjective pairs (every language's)."""
    n = stored.counts(database, study_id)
    return {"sd_sentences": n["sentences"], "sd_pairs": n["pairs"]}
