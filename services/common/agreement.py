"""Agreement between annotators on scores or labels: Krippendorff's alpha (the `krippendorff`
package), from one row per (unit, annotator, value).

Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": alpha = 1 - D_o / D_e at the
level of measurement that fits the values (interval for 0-100 scores, nominal for categories,
ordinal for ranked labels); a unit with a single value cannot be paired and counts for nothing.
"""

from __future__ import annotations

from typing import Literal, cast

import krippendorff
import numpy as np
import pandas as pd

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _shown(v) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def reliability_matrix(
    ratings: pd.DataFrame, *, unit: str = "unit", annotator: str = "annotator", value: str = "value"
) -> pd.DataFrame:
    """Annotators (rows) by units (columns), NaN where an annotator gave the unit no value; a
    ValueError names missing columns or an annotator who rated a unit twice."""
    missing = [c for c in (unit, annotator, value) if c not in ratings]
    if missing:
        raise ValueError(f"agreement needs the columns {', '.join(missing)}")
    twice = ratings[ratings.duplicated([unit, annotator], keep=False)]
    if len(twice):
        first = twice.iloc[0]
        raise ValueError(
            f"annotator {_shown(first[annotator])} gave unit {_shown(first[unit])} more than one value "
            f"({len(twice)} such rows): keep one value per annotator and unit"
        )
    return ratings.pivot(index=annotator, columns=unit, values=value)


def krippendorff_alpha(
    ratings: pd.DataFrame,
    level: str = "interval",
    *,
    unit: str = "unit",
    annotator: str = "annotator",
    value: str = "value",
) -> float:
    """Krippendorff's alpha of the ratings (one row per unit and annotator) at `level` (nominal,
    ordinal, interval, ratio). Nominal values may be labels (compared for equality only); ordinal
    ones are ranked by their sorted order. A ValueError when fewer than two annotators or no unit
    with two values leaves nothing to compare."""
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r}: one of {', '.join(LEVELS)}")
    matrix = reliability_matrix(ratings, unit=unit, annotator=annotator, value=value)
    if len(matrix) < 2:
        raise ValueError(f"agreement needs at least two annotators, not {len(matrix)}")
    if int((matrix.notna().sum(axis=0) >= 2).sum()) == 0:
        raise ValueError("no unit has values from two annotators: nothing to compare")
    values = matrix.to_numpy(dtype=object)
    present = pd.notna(values)
    if level in ("nominal", "ordinal") and not all(isinstance(v, (int, float, np.number)) for v in values[present]):
        # labels: code them (their sorted order for ordinal data)
        codes = {v: i for i, v in enumerate(sorted(set(values[present])))}
        values = np.where(present, np.vectorize(lambda v: codes.get(v, np.nan), otypes=[float])(values), np.nan)
    data = np.asarray(values, dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=cast(Level, level)))
