"""Direct assessment's export tables (registered in protocol.py's export_tables): their storage
queries, data dictionary entries and row extras."""

from __future__ import annotations

import json

from services.common.protocols import ExportTable
from services.study.export import ExportContext
from services.study.export_dictionary import PARTICIPANT
from storage.da import exports


def assignment_runs(rows: list[dict]) -> dict[int, int]:
    """assignment id -> the DA run stored in its meta (services/da/campaign.py: assign_hit);
    1 for an assignment from before runs existed (one run), as the DA analysis reads it."""
    out = {}
    for r in rows:
        meta = r.get("meta")
        try:
            meta = json.loads(meta) if isinstance(meta, str) else (meta or {})
        except ValueError:
            meta = {}
        run = meta.get("run") if isinstance(meta, dict) else None
        out[r["assignment_id"]] = int(run) if run is not None else 1
    return out


def judgment_extras(rows: list[dict], ctx: ExportContext) -> None:
    """Each judgment's run, from its assignment (the common assignments table, built before)."""
    runs = assignment_runs(ctx.rows.get("assignments", []))
    for r in rows:
        r["run"] = runs.get(r["assignment_id"], 1)


TABLES: dict[str, ExportTable] = {
    "da_judgments": ExportTable(
        exports.da_judgment_rows,
        "One row per direct-assessment judgment (text or audio modality).",
        {
            "judgment_id": ("integer", "the judgment"),
            "assignment_id": ("integer", "the rater's assignment"),
            "rater": ("string", "pseudonym of the DA rater"),
            "hit": ("integer", "the HIT (1-based index within the study)"),
            "run": (
                "integer",
                "the run of the campaign the rater's HIT belongs to (1, 2, ...: the study's [da] runs; "
                "a rater of run 2 rates a HIT another rater rated in run 1, paper 001's "
                "self-replication); 1 for a study with one run",
            ),
            "pos": ("integer", "position of the item within the HIT"),
            "item_type": ("string", "system, bad_reference, ask_again (repeat) or reference (quality controls)"),
            "of_pos": ("integer", "for a control item: the position of the item it controls"),
            "modality": ("string", "text or audio"),
            "segment_id": ("string", "the segment (see da_segments)"),
            "system": ("string", "the MT system of the segment"),
            "doc_id": ("string", "the document of the segment"),
            "score": ("number", "the slider value, 0-100"),
            "first_shown_at": ("timestamp", "when the item was first shown"),
            "submitted_at": ("timestamp", "when the judgment was saved"),
            "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
            "created_at": ("timestamp", "when the judgment was stored"),
            "tts_engine": (
                "string",
                "audio modality: the TTS engine that spoke the candidate (google, piper, "
                "espeak-ng; paper 001 used Google); empty for text items or audio not yet "
                "rendered",
            ),
            "tts_voice": ("string", "audio modality: that engine's voice (default: the engine's default voice)"),
        },
        extras=judgment_extras,
    ),
    "da_feedback": ExportTable(
        exports.da_feedback_rows,
        "Free-text feedback of DA raters at the end of their HIT.",
        {
            "participant": ("string", PARTICIPANT),
            "text": ("string", "the feedback"),
            "updated_at": ("timestamp", "when it was last saved"),
        },
    ),
    "da_segments": ExportTable(
        exports.da_segment_rows,
        "The DA corpus: one row per segment and system.",
        {
            "segment_id": ("string", "the segment"),
            "system": ("string", "the MT system"),
            "doc_id": ("string", "the document"),
            "position": ("integer", "position of the segment in the document"),
            "source": ("string", "the source text"),
            "reference": ("string", "the reference translation"),
            "output": ("string", "the system's output"),
            "domain": ("string", "the segment's domain (paper 001, Table 1); empty when the corpus names none"),
        },
        content=True,
    ),
    "da_hit_items": ExportTable(
        exports.da_hit_item_rows,
        "The DA HITs as built at import: one row per item.",
        {
            "hit": ("integer", "the HIT (1-based)"),
            "pos": ("integer", "position within the HIT"),
            "item_type": ("string", "system, bad_reference, ask_again or reference"),
            "of_pos": ("integer", "for a control item: the position it controls"),
            "segment_id": ("string", "the segment"),
            "system": ("string", "the MT system"),
            "candidate": ("string", "the text shown (or synthesised) as the candidate"),
        },
        content=True,
    ),
}
