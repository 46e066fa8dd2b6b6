"""A study's export (`python app.py export`) as the SD analysis's ratings.

The export's sd_ratings name the rater `participant` and carry no duration: the analysis's
participant_id is the pseudonym, and duration_s is the participant's total active time over
their SD pages, summed from the export's assignments table, as the app's own analysis sums it
from the database (storage/sd/ratings.py: sd_rating_rows)."""

from __future__ import annotations

import pandas as pd

from services.study import export_reader

TABLE = "sd_ratings"
RATING_COLUMNS = ("participant", "sentence_id", "pair_id", "value", "is_repeat")
ASSIGNMENT_COLUMNS = ("participant", "phase", "active_seconds")


def ratings(export: export_reader.Export) -> pd.DataFrame:
    """The export's ratings in the analysis's columns, unchecked (services/sd/analysis.py:
    read_ratings checks them, naming the export's file)."""
    raw = export_reader.read_table(export, TABLE, RATING_COLUMNS)
    queue = export_reader.read_table(export, "assignments", ASSIGNMENT_COLUMNS)
    pages = queue[queue["phase"] == "sd"]
    seconds = pd.to_numeric(pages["active_seconds"], errors="coerce").fillna(0.0)
    total = seconds.groupby(pages["participant"]).sum()
    frame = raw[list(RATING_COLUMNS)].rename(columns={"participant": "participant_id"})
    frame["duration_s"] = frame["participant_id"].map(total).fillna(0.0)
    return frame
