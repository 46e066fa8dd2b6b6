"""ESA's corpus: the [esa] section's segments file read and checked at import (Protocol.load), its
HITs built from it (Protocol.prepare) and both stored in the protocol's own tables
(Protocol.store_corpus) through storage/protocol_rows.py.

A document is one system's translation of one source document: the rows of the file with the
same (doc_id, system), in the file's order. WMT 2024's ESA campaign (Kocmi et al. 2024) showed
annotators whole documents, so a document is never split across HITs: the documents, shuffled by
the study's seed, fill each HIT in turn until it holds at least hit_size segments; a HIT is then
larger than hit_size by at most its last document less one segment (a document longer than
hit_size is a HIT of its own), and the last HIT holds what is left."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.seeded import seeded_rng
from services.study import files
from storage import protocol_rows
from storage.db import Transaction

NAME = "esa"
SEGMENTS, HITS, TAKERS, ANSWERS = (f"{NAME}_segments", f"{NAME}_hits", f"{NAME}_takers", f"{NAME}_answers")
# the segments file's (required, optional) columns
COLUMNS = (["doc_id", "segment_id", "system", "source", "target"], ["source_lang", "target_lang"])


def documents(segments: list[dict]) -> list[list[int]]:
    """The rows of each document ((doc_id, system)), documents in the order of their first row."""
    docs: dict[tuple[str, str], list[int]] = {}
    for i, s in enumerate(segments):
        docs.setdefault((s["doc_id"], s["system"]), []).append(i)
    return list(docs.values())


def build_hits(segments: list[dict], hit_size: int, seed, name: str = NAME) -> list[list[int]]:
    """The HITs as lists of segment rows: whole documents, shuffled by the seed, each HIT filled
    until it holds at least hit_size segments (module docstring)."""
    docs = documents(segments)
    seeded_rng(name, "hits", seed).shuffle(docs)
    hits: list[list[int]] = []
    current: list[int] = []
    for doc in docs:
        current += doc
        if len(current) >= hit_size:
            hits.append(current)
            current = []
    if current:
        hits.append(current)
    return hits


@dataclass(frozen=True)
class Corpus:
    """One protocol's segments file and tables: <name>_segments, _hits, _takers, _answers."""

    name: str

    @property
    def segments(self) -> str:
        return f"{self.name}_segments"

    @property
    def hits(self) -> str:
        return f"{self.name}_hits"

    @property
    def takers(self) -> str:
        return f"{self.name}_takers"

    @property
    def answers(self) -> str:
        return f"{self.name}_answers"

    def load(self, folder, cfg, systems, bundle, err) -> None:
        """The section's segments file: one row per segment and system, kept in the file's order
        (a document's segments in its order)."""
        path = files.safe_file(folder, cfg[self.name]["segments"], f"{self.name}.segments", err)
        if not path:
            return
        name = path.name
        seen: set[tuple[str, str, str]] = set()
        segments = []
        for rowno, row in files.read_rows(path, COLUMNS, err):
            if not files.require_text(err, name, rowno, row, *COLUMNS[0]):
                continue
            key = (row["system"], row["doc_id"], row["segment_id"])
            if key in seen:
                err.add(
                    name, rowno, None, f"duplicate output of system '{key[0]}' for segment '{key[2]}' of '{key[1]}'"
                )
                continue
            seen.add(key)
            # the page's HTML turns CR LF into LF: the offsets are counted on the text as shown
            segments.append(
                {
                    "doc_id": row["doc_id"],
                    "segment_id": row["segment_id"],
                    "system": row["system"],
                    "source": row["source"].replace("\r\n", "\n"),
                    "target": row["target"].replace("\r\n", "\n"),
                    "source_lang": row.get("source_lang", ""),
                    "target_lang": row.get("target_lang", ""),
                }
            )
        if not segments and not any(e.file == name for e in err.errors):
            err.add(name, None, None, "has no segments")
        bundle.corpus[self.name] = {"segments": segments}

    def prepare(self, bundle) -> None:
        """The HITs, built at import from the checked segments (the corpus part `<name> corpus` holds
        them: a changed hit_size is a changed corpus)."""
        corpus = bundle.corpus.get(self.name)
        if corpus is None:
            return
        section = bundle.config[self.name]
        corpus["hits"] = build_hits(
            corpus["segments"], int(section["hit_size"]), bundle.config["study"]["seed"], self.name
        )

    def store(self, tx: Transaction, study_id: str, corpus) -> None:
        """The segments (each with its HIT, its place in it and in its document) and the HITs."""
        if not corpus:
            return
        segments, hits = corpus["segments"], corpus.get("hits") or []
        doc_of: dict[int, tuple[int, int]] = {}  # row -> (document number, place in it)
        for d, rows in enumerate(documents(segments)):
            for k, row in enumerate(rows):
                doc_of[row] = (d, k)
        hit_of = {row: (h, pos) for h, rows in enumerate(hits) for pos, row in enumerate(rows)}
        protocol_rows.insert_many(
            tx.db,
            self.segments,
            [
                {
                    "study_id": study_id,
                    "segment_row": i,
                    "hit": hit_of[i][0],
                    "pos": hit_of[i][1],
                    "doc": doc_of[i][0],
                    "doc_pos": doc_of[i][1],
                    **s,
                }
                for i, s in enumerate(segments)
            ],
        )
        protocol_rows.insert_many(
            tx.db,
            self.hits,
            [
                {
                    "study_id": study_id,
                    "hit": h,
                    "n_segments": len(rows),
                    "n_documents": len({doc_of[r][0] for r in rows}),
                }
                for h, rows in enumerate(hits)
            ],
        )

    def count(self, database, study_id: str) -> dict[str, int]:
        """The import summary's counts: the segments and the HITs."""
        hits = protocol_rows.select(database, self.hits, {"study_id": study_id})
        return {self.segments: sum(h["n_segments"] for h in hits), self.hits: len(hits)}


ESA = Corpus(NAME)
load, prepare, store, count = ESA.load, ESA.prepare, ESA.store, ESA.count
