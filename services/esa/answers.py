"""The rows of ESA and MQM as the export and the analysis read them: the segments and the saved
answers, each answer with its segment (document, segment, system) and its spans counted."""

from __future__ import annotations

import json

from services.esa import attention
from services.esa.corpus import ESA, Corpus
from services.esa.spans import ESA_SEVERITIES
from storage import protocol_rows, studies


def segment_rows(database, study_id: str, corpus: Corpus = ESA) -> list[dict]:
    return protocol_rows.select(database, corpus.segments, {"study_id": study_id}, order_by=("segment_row",))


def answer_rows(
    database, study_id: str, corpus: Corpus = ESA, severities: tuple[str, ...] = ESA_SEVERITIES
) -> list[dict]:
    """Each saved answer with its segment (document, segment, system) and its spans counted per
    severity (the omission apart), its segment's kind and its HIT's attention verdict
    (attention.ANSWER_DICTIONARY)."""
    segs = {s["segment_row"]: s for s in segment_rows(database, study_id, corpus)}
    study = studies.get_study(database, study_id)
    keep = bool(study is not None and (study["config"].get(corpus.name) or {}).get("keep_failed", False))
    verdicts = attention.hit_qc_of(database, corpus.qc, study_id, keep)
    out = []
    for r in protocol_rows.answer_rows(database, corpus.answers, study_id):
        s = segs.get(r["segment_row"], {})
        spans = json.loads(r["spans"])
        out.append(
            {
                **r,
                "hit": s.get("hit"),
                "doc_id": s.get("doc_id"),
                "segment_id": s.get("segment_id"),
                "system": s.get("system"),
                **{f"n_{sev}": sum(x["severity"] == sev and not x["missing"] for x in spans) for sev in severities},
                "omission": next((x["severity"] for x in spans if x["missing"]), ""),
                "item_kind": s.get("kind", ""),
                "hit_qc": verdicts.get(int(r["participant__pid"]), ""),
            }
        )
    return out
