"""A study's export (`python app.py export`) as the DA analysis's judgments, and several inputs
merged into one campaign (`python app.py analyze da A B ...`).

The export's da_judgments names its columns for readers (rater, hit, active_seconds); they map
onto the analysis's worker_id, hit_id and duration_s, the values the app's own analysis reads
from the database (storage/da/judgments.py: da_judgment_rows). Merged inputs come from different
studies, whose pseudonyms (da-001) and HIT numbers (1, 2, ...) repeat: each input's worker and
HIT ids are prefixed by its study id (an export) or its file name (a judgments file), so a rater
of one study is never pooled with another study's rater of the same label."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from services.da.judgments import DAInputError, normalise
from services.study import export_reader

TABLE = "da_judgments"
# the export's column -> the analysis's
COLUMNS = {
    "rater": "worker_id",
    "hit": "hit_id",
    "modality": "modality",
    "system": "system",
    "segment_id": "segment_id",
    "item_type": "item_type",
    "score": "score",
    "run": "run",
    "active_seconds": "duration_s",
}


def judgments(export: export_reader.Export) -> pd.DataFrame:
    """The export's judgments in the analysis's columns, checked (services/da/judgments.py)."""
    return from_table(export_reader.read_table(export, TABLE), str(export.path(TABLE)))


def is_table(header: list[str]) -> bool:
    """A CSV header that is the export's da_judgments (also copied out of its folder)."""
    return {"rater", "hit", "item_type", "score"} <= set(header)


def read_file(path) -> pd.DataFrame:
    """An export's da_judgments.csv on its own, without its folder's manifest."""
    return from_table(export_reader.read_csv(path, TABLE), str(path))


def from_table(raw: pd.DataFrame, source: str) -> pd.DataFrame:
    missing = [c for c in COLUMNS if c not in raw.columns]
    if missing:
        raise DAInputError(source, 1, missing[0], f"missing column(s) of the export's {TABLE}: {', '.join(missing)}")
    # a judgment saved before DA campaigns (m003) has no HIT: the app's analysis leaves it out too
    raw = raw[raw["hit"] != ""]
    frame = raw[list(COLUMNS)].rename(columns=COLUMNS)
    return normalise(frame, source)


def label(path, export: export_reader.Export | None) -> str:
    """What prefixes an input's ids in a merge: its study id, or its file name."""
    return export.study if export is not None else Path(path).stem


def merge(frames: list[pd.DataFrame], labels: list[str], runs_from_inputs: bool = False) -> pd.DataFrame:
    """One campaign of several inputs' judgments: worker_id and hit_id become LABEL/ID (a label
    given twice gets #2, #3 ...); runs_from_inputs: the i-th input is run i (each input must hold
    one run), to compare two studies as paper 001's two runs."""
    seen: dict[str, int] = {}
    parts = []
    for i, (frame, name) in enumerate(zip(frames, labels)):
        seen[name] = seen.get(name, 0) + 1
        name = name if seen[name] == 1 else f"{name}#{seen[name]}"
        frame = frame.copy()
        for col in ("worker_id", "hit_id"):
            frame[col] = name + "/" + frame[col].astype(str)
        if runs_from_inputs:
            runs = sorted(set(frame["run"]))
            if len(runs) > 1:
                raise ValueError(
                    f"{name} holds runs {', '.join(map(str, runs))}: --runs-from-inputs numbers whole inputs as runs"
                )
            frame["run"] = i + 1
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)
