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


def is_p_value(column) -> bool:
    """A column of p-values by its name: p, p_value, p_holm, p_lmm, bartlett_p, phi_p, ..."""
    name = str(column).lower()
    return name == "p" or name.startswith("p_") or (name.endswith("_p") and name != "top_p")


def _shown(v: float, d: int, p_value: bool) -> str:
    if pd.isna(v):
        return ""
    # a p-value that rounds to zero is never "0.000" (no test gives p = 0): "<0.001", as APA writes it
    if p_value and 0 <= v < 0.5 * 10**-d and d > 0:
        return f"<{10**-d:.{d}f}"
    return f"{v:.{d}f}"


def rounded(table: pd.DataFrame, decimals) -> pd.DataFrame:
    """The table with each float column as text to its decimals (int: every float column; dict:
    per column, 2 for the others); empty cells stay empty; a p-value column's values that would
    round to zero read "<0.001" (at 3 decimals)."""
    out = table.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_float_dtype(s):
            continue
        d = decimals.get(col, 2) if isinstance(decimals, dict) else decimals
        p = is_p_value(col)
        out[col] = [_shown(v, d, p) for v in s]
    return out
