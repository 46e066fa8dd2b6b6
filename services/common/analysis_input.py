"""Input checking shared by the analyses (DA, SD, usability): one error type that names the
file, the row (a CSV header is row 1) and the column, and a collector that reports the
earliest bad cell."""

from __future__ import annotations

import numpy as np
import pandas as pd


class InputError(ValueError):
    """Bad analysis input; the message names the file, the row (CSV header = row 1) and the column."""

    def __init__(self, path, row: int | None, column: str | None, problem: str):
        self.path, self.row, self.column, self.problem = str(path), row, column, problem
        where = [str(path)]
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column '{column}'")
        super().__init__(", ".join(where) + ": " + problem)


def read_csv_cells(path, error=InputError, skipinitialspace: bool = True) -> pd.DataFrame:
    """A CSV as strings ('' for empty cells), header names stripped of spaces and a BOM; a
    missing, empty or unreadable file raises `error` (an InputError subclass) saying which."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=skipinitialspace)
    except FileNotFoundError:
        raise error(path, None, None, "file not found") from None
    except pd.errors.EmptyDataError:
        raise error(path, 1, None, "empty file (expected a header row)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as e:
        raise error(path, None, None, f"not a readable CSV ({e})") from None
    df.columns = [str(c).strip().lstrip("\ufeff") for c in df.columns]
    return df


def cells(s: pd.Series) -> pd.Series:
    """Column as stripped strings, missing values as '' (whole floats such as 12.0 as '12')."""
    if pd.api.types.is_float_dtype(s):
        s = s.map(lambda v: "" if pd.isna(v) else str(int(v)) if float(v).is_integer() else repr(float(v)))
    return s.astype(object).where(s.notna(), "").astype(str).str.strip()


def numbers(s: pd.Series) -> pd.Series:
    """Column as floats, NaN where a cell is not a number."""
    if pd.api.types.is_bool_dtype(s):
        s = s.astype(int)
    c = s if pd.api.types.is_numeric_dtype(s) else cells(s)
    return pd.to_numeric(c, errors="coerce").astype(float)


class Problems:
    """Collects the first bad row of each check; the earliest (row, column order) is raised
    as `error` (an InputError subclass)."""

    def __init__(self, columns, error: type[InputError] = InputError):
        self.order = {c: i for i, c in enumerate(columns)}
        self.found: list[tuple[int, int, str, str]] = []
        self.error = error

    def flag(self, col: str, mask, describe) -> None:
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            pos = int(np.flatnonzero(mask)[0])
            self.found.append((pos, self.order.get(col, len(self.order)), col, describe(pos)))

    def raise_first(self, source: str) -> None:
        if self.found:
            pos, _, col, problem = min(self.found)
            raise self.error(source, pos + 2, col, problem)  # data row 0 is CSV row 2
