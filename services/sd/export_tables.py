"""The semantic differential's export tables (registered in protocol.py's export_tables): their
storage queries and data dictionary entries."""

from __future__ import annotations

from services.common.protocols import ExportTable
from services.study.export_dictionary import PARTICIPANT
from storage.sd import exports

TABLES: dict[str, ExportTable] = {
    "sd_ratings": ExportTable(
        exports.sd_rating_rows,
        "One row per semantic-differential rating (one adjective pair on one sentence).",
        {
            "assignment_id": ("integer", "the page's assignment"),
            "participant": ("string", PARTICIPANT),
            "sentence_id": ("string", "the sentence rated (see sd_sentences)"),
            "page": ("integer", "the page of the sentence's pairs"),
            "pair_id": ("string", "the adjective pair (see sd_pairs)"),
            "is_repeat": ("boolean", "1: a repeated pair of the test condition"),
            "value": ("integer", "-3..3, canonical: +3 = the positive adjective, whichever side it was shown on"),
            "positive_left": ("boolean", "1: the positive adjective was shown on the left"),
            "created_at": ("timestamp", "when the page was saved"),
        },
    ),
    "sd_suitability": ExportTable(
        exports.sd_suitability_rows,
        "Preliminary SD mode: how suitable each adjective pair is (1-5).",
        {
            "assignment_id": ("integer", "the page's assignment"),
            "participant": ("string", PARTICIPANT),
            "pair_id": ("string", "the adjective pair"),
            "suitability": ("integer", "1-5"),
            "created_at": ("timestamp", "when it was saved"),
        },
    ),
    "sd_suggestions": ExportTable(
        exports.sd_suggestion_rows,
        "Preliminary SD mode: adjective pairs participants suggested.",
        {
            "assignment_id": ("integer", "the page's assignment"),
            "participant": ("string", PARTICIPANT),
            "text": ("string", "the suggestion"),
            "created_at": ("timestamp", "when it was saved"),
        },
    ),
    "sd_sentences": ExportTable(
        exports.sd_sentence_rows,
        "The sentences of the semantic-differential study.",
        {
            "sentence_id": ("string", "the sentence"),
            "text": ("string", "the text"),
            "source": ("string", "where it comes from"),
        },
        content=True,
    ),
    "sd_pairs": ExportTable(
        exports.sd_pair_rows,
        "The adjective pairs, per language.",
        {
            "pair_id": ("string", "the pair"),
            "language": ("string", "language of the adjectives"),
            "positive": ("string", "the positive adjective"),
            "negative": ("string", "the negative adjective"),
            "note": ("string", "a note on the pair"),
        },
        content=True,
    ),
}
