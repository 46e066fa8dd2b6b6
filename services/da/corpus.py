"""Direct assessment's corpus file, read and checked into the StudyBundle at import
(Protocol.load of services/da/protocol.py), with services/study/files.py's shared helpers."""

from __future__ import annotations

from typing import TypedDict

from services.study import files
from storage import studies
from storage.da import hits as stored
from storage.db import Transaction

NAME = "da"


class Corpus(TypedDict):
    """What load (segments) and prepare (hits) put in bundle.corpus["da"]; each is a part of the
    study's corpus hash (services/study/lifecycle.py: `da.segments`, `da.hits`)."""

    segments: list[dict]  # one per segment and system, in file order
    hits: list[list[dict]]  # services/da/hits.py build_hits: items naming segments by their row


# the segments file's (required, optional) columns
COLUMNS = (["segment_id", "doc_id", "position", "source", "reference", "system", "output"], ["domain"])


def load(folder, cfg, systems, bundle, err) -> None:
    """The [da] section's segments file (Protocol.load): one row per segment and system."""
    path = files.safe_file(folder, cfg["da"]["segments"], "da.segments", err)
    if not path:
        return
    name = path.name
    seen = set()
    corpus: Corpus = {"segments": [], "hits": []}
    bundle.corpus[NAME] = corpus
    for rowno, row in files.read_rows(path, COLUMNS, err):
        if not files.require_text(err, name, rowno, row, *COLUMNS[0]):
            continue
        pos = files.whole_number(err, name, rowno, "position", row["position"], 0)
        if pos is None:
            continue
        key = (row["segment_id"], row["system"])
        if key in seen:
            err.add(name, rowno, None, f"duplicate output of system '{key[1]}' for segment '{key[0]}'")
            continue
        seen.add(key)
        corpus["segments"].append({**row, "position": pos})
    if not corpus["segments"] and not any(e.file == name for e in err.errors):
        err.add(name, None, None, "has no segments")


def store(tx: Transaction, study_id: str, corpus: Corpus | None) -> None:
    """Protocol.store_corpus: None clears the study's segments and HITs; a corpus is written."""
    if corpus is None:
        stored.clear_corpus(tx.db, study_id)
    else:
        stored.insert_corpus(tx.db, study_id, corpus["segments"], corpus["hits"])


def count(database, study_id: str) -> dict[str, int]:
    """Protocol.count_corpus: segments and HITs; with a domain sample (paper 001's
    segments_per_domain), also the segments the HITs hold."""
    n = stored.corpus_counts(database, study_id)
    out = {"da_segments": n["segments"], "da_hits": n["hits"]}
    study = studies.get_study(database, study_id)
    if study and study["config"][NAME].get("segments_per_domain"):
        out["da_segments_sampled"] = n["in_hits"]
    return out
