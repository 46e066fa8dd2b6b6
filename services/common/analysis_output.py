"""Files the analyses write, besides figures (services.common.figure_files): CSV tables and JSON
made of plain numbers (NaN and infinity become null, numpy scalars Python ones)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd


def json_safe(v):
    """v with numpy/pandas scalars turned into Python ones and NaN/inf into None, recursively."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    v = float(v)
    return v if math.isfinite(v) else None


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(json_safe(data), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_tables(out: Path, tables: dict) -> list[Path]:
    """name.csv for each frame (None skipped), without the index; the paths written."""
    paths = []
    for name, frame in tables.items():
        if frame is None:
            continue
        p = out / name
        frame.to_csv(p, index=False)
        paths.append(p)
    return paths


def rounded(table: pd.DataFrame, decimals) -> pd.DataFrame:
    """The table with each float column as text to its decimals (int: every float column; dict:
    per column, 2 for the others); empty cells stay empty."""
    out = table.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_float_dtype(s):
            continue
        d = decimals.get(col, 2) if isinstance(decimals, dict) else decimals
        out[col] = [("" if pd.isna(v) else f"{v:.{d}f}") for v in s]
    return out
