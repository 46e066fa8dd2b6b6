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

import json
from dataclasses import dataclass
from pathlib import Path

from services.common import settings
from services.common.seeded import seeded_rng
from services.esa import attention
from services.esa.spans import SpanError, check_words, read_words
from services.study import corpus_audio, files
from services.study.corpus_audio import AudioFile, copy_media
from storage import protocol_rows
from storage.db import Transaction

NAME = "esa"
SEGMENTS, HITS, TAKERS, ANSWERS = (f"{NAME}_segments", f"{NAME}_hits", f"{NAME}_takers", f"{NAME}_answers")
# the segments file's (required, optional) columns; speech (docs/esa.md, "Speech"): a recording of
# the source, the output as audio (a TTS or speech-translation system's), the output transcript's
# word times
AUDIO_COLUMNS = ("source_audio", "target_audio")
COLUMNS = (
    ["doc_id", "segment_id", "system", "source", "target"],
    ["source_lang", "target_lang", *AUDIO_COLUMNS, "target_words"],
)
# a segment's audio, at most (seconds): a sentence or two read aloud; longer files are refused at import
MAX_AUDIO_S = 120.0
# a practice item's columns beside its own (services/esa/attention.py load_tutorial): no audio
PRACTICE_ROW = {
    "doc_id": "tutorial",
    "system": "tutorial",
    "source_audio": "",
    "source_audio_s": 0.0,
    "target_audio": "",
    "target_audio_s": 0.0,
    "target_words": "",
}
# where the imported audio goes in the media folder, named by its content (sha256), as recordings are
MEDIA_FOLDER = "speech"


def read_audio(folder: Path, value: str, err, file: str, row: int, column: str) -> tuple[AudioFile, float] | None:
    """A row's audio file (services/study/corpus_audio.py): at most MAX_AUDIO_S a segment."""
    return corpus_audio.read_audio(
        folder, value, err, file, row, column, media_folder=MEDIA_FOLDER, max_s=MAX_AUDIO_S, what="a segment"
    )


def speech_of(folder: Path, row: dict, err, file: str, rowno: int, media: dict[str, AudioFile]) -> dict:
    """The row's speech columns as the segments table holds them: each audio's media name and
    duration ("" and 0 without one) and the target's word times (JSON, "" without), each checked;
    the audio files to copy are added to media."""
    out: dict = {"source_audio": "", "source_audio_s": 0.0, "target_audio": "", "target_audio_s": 0.0}
    out["target_words"] = ""
    for column in AUDIO_COLUMNS:
        if not row.get(column):
            continue
        found = read_audio(folder, row[column], err, file, rowno, column)
        if found is not None:
            media[found[0].name] = found[0]
            out[column], out[f"{column}_s"] = found[0].name, found[1]
    raw = row.get("target_words") or ""
    if raw:
        if not row.get("target_audio"):
            err.add(file, rowno, "target_words", "word times need the output's audio (target_audio)")
        elif out["target_audio"]:
            try:
                words = check_words(read_words(raw), out["target_audio_s"])
            except SpanError as e:
                err.add(file, rowno, "target_words", "; ".join(e.problems))
            else:
                out["target_words"] = json.dumps(
                    [{"word": w.text, "start": w.start_s, "end": w.end_s} for w in words], ensure_ascii=False
                )
    return out


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

    @property
    def qc(self) -> str:
        return f"{self.name}_qc"

    def load(self, folder, cfg, systems, bundle, err) -> None:
        """The section's segments file: one row per segment and system, kept in the file's order
        (a document's segments in its order)."""
        path = files.safe_file(folder, cfg[self.name]["segments"], f"{self.name}.segments", err)
        if not path:
            return
        name = path.name
        seen: set[tuple[str, str, str]] = set()
        segments = []
        media: dict[str, AudioFile] = {}
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
                    **speech_of(folder, row, err, name, rowno, media),
                }
            )
        if not segments and not any(e.file == name for e in err.errors):
            err.add(name, None, None, "has no segments")
        bundle.corpus[self.name] = {"segments": segments, "media": sorted(media.values(), key=str)}
        practice = attention.load_tutorial(self.name, folder, cfg[self.name], err)
        if practice:  # a part only when there is one: a study without keeps its corpus' hash
            bundle.corpus[self.name]["tutorial"] = practice

    def prepare(self, bundle) -> None:
        """The HITs, built at import from the checked segments (the corpus part `<name> corpus` holds
        them: a changed hit_size is a changed corpus)."""
        corpus = bundle.corpus.get(self.name)
        if corpus is None:
            return
        section = bundle.config[self.name]
        seed = bundle.config["study"]["seed"]
        corpus["hits"] = build_hits(corpus["segments"], int(section["hit_size"]), seed, self.name)
        share = float(section.get("attention_share", attention.DEFAULTS["attention_share"]))
        copies, hits = attention.add_attention(corpus["segments"], corpus["hits"], share, seed, self.name)
        if copies:  # a part only when there is one (as the tutorial)
            corpus["hits"], corpus["attention"] = hits, copies

    def store(self, tx: Transaction, study_id: str, corpus) -> None:
        """The segments (each with its HIT, its place in it and in its document) and the HITs."""
        if not corpus:
            return
        segments, hits = corpus["segments"], corpus.get("hits") or []
        copies, practice = corpus.get("attention") or [], corpus.get("tutorial") or []
        copy_media(corpus.get("media") or [], settings.current().media_dir)
        doc_of: dict[int, tuple[int, int]] = {}  # row -> (document number, place in it)
        docs = documents(segments)
        for d, rows in enumerate(docs):
            for k, row in enumerate(rows):
                doc_of[row] = (d, k)
        for j, c in enumerate(copies):  # an attention copy stands in its original's place
            doc_of[len(segments) + j] = doc_of[c["original_row"]]
        hit_of = {row: (h, pos) for h, rows in enumerate(hits) for pos, row in enumerate(rows)}
        first = len(segments) + len(copies)
        for k in range(len(practice)):  # the practice items: HIT -1, each a document of its own
            hit_of[first + k], doc_of[first + k] = (-1, k), (len(docs) + k, 0)
        named = [
            {**PRACTICE_ROW, "segment_id": str(k + 1), "kind": attention.PRACTICE, **p} for k, p in enumerate(practice)
        ]
        plain = {c.name: c.default for c in attention.SEGMENT_COLUMNS}  # a file row's: kind "", no error
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
                    **plain,
                    **s,
                }
                for i, s in enumerate([*segments, *copies, *named])
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
