"""The judgments table of the DA analysis (services.da.analysis): its columns, its checks, the
project's CSV. A leaf of the analysis and of the converters from published formats
(services.da.importer), which both import it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from services.common.analysis_input import InputError, Problems, read_csv_cells
from services.common.analysis_input import cells as _cells

REQUIRED = ["worker_id", "hit_id", "modality", "system", "segment_id", "item_type", "score"]
OPTIONAL = ["run", "duration_s"]
MODALITIES = ("text", "audio")
ITEM_TYPES = ("system", "bad_reference", "ask_again", "reference")
CONTROL_TYPES = ("bad_reference", "ask_again")


class DAInputError(InputError):
    """Bad judgments input (file, row, column named)."""


def normalise(df: pd.DataFrame, source: str = "<DataFrame>") -> pd.DataFrame:
    """Check a judgments table and return it typed: ids as str, score float, run int,
    duration_s float (NaN when absent). Raises DAInputError naming source, row (the first data
    row is row 2, as in a CSV with a header) and column."""
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise DAInputError(
            source, 1, missing[0], f"missing column (required: {', '.join(REQUIRED)}; missing: {', '.join(missing)})"
        )
    df = df.reset_index(drop=True)
    out = pd.DataFrame(index=df.index)
    problems = Problems(df.columns, DAInputError)
    flag = problems.flag

    for col in ("worker_id", "hit_id", "system", "segment_id"):
        out[col] = _cells(df[col])
        flag(col, out[col] == "", lambda pos: "empty value")
    for col, allowed in (("modality", MODALITIES), ("item_type", ITEM_TYPES)):
        raw = _cells(df[col])
        out[col] = raw.str.lower()
        flag(
            col,
            ~out[col].isin(allowed),
            lambda pos, raw=raw, col=col, allowed=allowed: (
                f"unknown {col} {raw.iloc[pos]!r} (expected one of: {', '.join(allowed)})"
            ),
        )
    raw_score = df["score"]
    score = pd.to_numeric(
        _cells(raw_score) if not pd.api.types.is_numeric_dtype(raw_score) else raw_score, errors="coerce"
    ).astype(float)
    not_number = ~np.isfinite(score)
    flag("score", not_number, lambda pos: f"score {str(raw_score.iloc[pos])!r} is not a number")
    flag(
        "score", ~not_number & ((score < 0) | (score > 100)), lambda pos: f"score {score.iloc[pos]:g} is outside 0-100"
    )
    out["score"] = score
    if "run" in df.columns:
        cells = _cells(df["run"])
        run = pd.to_numeric(cells.where(cells != "", "1"), errors="coerce")
        bad = ~np.isfinite(run) | (run < 1) | (run != np.floor(run))
        flag("run", bad, lambda pos: f"run {cells.iloc[pos]!r} is not a positive whole number")
        out["run"] = run.where(~bad, 1).astype(int)
    else:
        out["run"] = 1
    if "duration_s" in df.columns:
        cells = _cells(df["duration_s"])
        dur = pd.to_numeric(cells.where(cells != "", "nan"), errors="coerce").astype(float)
        bad = (cells != "") & (~np.isfinite(dur) | (dur < 0))
        flag("duration_s", bad, lambda pos: f"duration_s {cells.iloc[pos]!r} is not a number >= 0")
        out["duration_s"] = dur
    else:
        out["duration_s"] = np.nan
    problems.raise_first(source)
    return out[REQUIRED + OPTIONAL]


def read_judgments(path) -> pd.DataFrame:
    """Read the project's judgments CSV (REQUIRED columns; optional run, duration_s)."""
    path = Path(path)
    df = read_csv_cells(path, DAInputError)
    return normalise(df, str(path))
