"""Listening tests' statistics: the mean opinion score per condition with its confidence interval
(ACR, DCR and CCR scales, as ITU-T P.808's toolkit reports it), and the continuous 0-100 scale's
per-condition statistics with ITU-R BS.1534-3's post-screening of assessors.

* MOS (P.808 toolkit, src/result_parser.py `transform`): per condition n, mean, sample standard
  deviation (n - 1) and the 95% interval's half-width z * sd / sqrt(n) with z = 1.96, the normal
  approximation; the toolkit leaves sd and CI empty for n < 2, here NaN. ci="t" uses Student's
  t with n - 1 degrees of freedom instead (ITU-T P.800.2's recommendation for small samples, and
  BS.1534-3's clause 9.2). The quantile comes from scipy (1.959964 for the normal at 95%, where
  the toolkit writes 1.96: a difference below 0.002%).
* Scales and their wording are data (assets/listening_scales.toml, with their sources); a rating
  off its scale is refused.
* Post-screening (BS.1534-3, clause 4.1.2): an assessor is excluded who rates the hidden
  reference below 90 on more than 15% of the test items, or the mid-range anchor above 90 on
  more than 15% of them; the shares are over the items the assessor rated that condition on.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

SCALES_FILE = Path(__file__).resolve().parents[2] / "assets" / "listening_scales.toml"
CI_METHODS = ("normal", "t")


@dataclass(frozen=True)
class Scale:
    """A rating scale: its points (value, wording) best first, the name of its mean, its
    source; `bounds` for a continuous scale (any value between them), else only the points."""

    key: str
    name: str
    source: str
    mean_name: str
    points: tuple[tuple[float, str], ...]
    bounds: tuple[float, float] | None = None

    def label(self, value: float) -> str:
        """The wording of a point (a continuous scale: of the interval the value falls in)."""
        for v, words in self.points:
            if value == v or (self.bounds is not None and value >= v):
                return words
        raise ValueError(f"{value!r} is not on the {self.name} scale")

    def check(self, values) -> None:
        """A ValueError naming the first value off the scale."""
        arr = np.asarray(values, dtype=float)
        if self.bounds is not None:
            lo, hi = self.bounds
            off = arr[~((arr >= lo) & (arr <= hi))]
        else:
            off = arr[~np.isin(arr, [v for v, _ in self.points])]
        if len(off):
            allowed = f"{self.bounds[0]:g}-{self.bounds[1]:g}" if self.bounds else [v for v, _ in self.points]
            raise ValueError(f"{off[0]:g} is not on the {self.name} scale ({allowed}): {len(off)} such values")


def load_scales(path: Path = SCALES_FILE) -> dict[str, Scale]:
    """The scales of the data file, by key."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = {}
    for key, s in data.items():
        bounds = (float(s["continuous"][0]), float(s["continuous"][1])) if "continuous" in s else None
        out[key] = Scale(
            key=key,
            name=s["name"],
            source=s["source"],
            mean_name=s["mean_name"],
            points=tuple((p["value"], p["label"]) for p in s["points"]),
            bounds=bounds,
        )
    return out


def half_width(values, *, ci: str = "normal", level: float = 0.95) -> float:
    """The confidence interval's half-width of the mean: q * sd / sqrt(n), sd the sample standard
    deviation, q the normal's or Student's t's (n - 1 df) two-sided quantile; NaN for n < 2."""
    if ci not in CI_METHODS:
        raise ValueError(f"unknown confidence interval {ci!r}: one of {', '.join(CI_METHODS)}")
    arr = np.asarray(values, dtype=float)
    n = len(arr)
    if n < 2:
        return math.nan
    q = stats.norm.ppf((1 + level) / 2) if ci == "normal" else stats.t.ppf((1 + level) / 2, n - 1)
    return float(q * arr.std(ddof=1) / math.sqrt(n))


MOS_COLUMNS = ["condition", "n", "mean", "std", "ci", "low", "high"]


def condition_means(
    ratings: pd.DataFrame,
    scale: Scale | None = None,
    *,
    condition: str = "condition",
    value: str = "value",
    ci: str = "normal",
    level: float = 0.95,
) -> pd.DataFrame:
    """Per condition (in sorted order): n, mean (MOS, DMOS or CMOS), sample sd, the interval's
    half-width `ci` and its bounds. With a scale, every rating must be on it."""
    missing = [c for c in (condition, value) if c not in ratings]
    if missing:
        raise ValueError(f"listening ratings need the columns {', '.join(missing)}")
    if scale is not None:
        scale.check(ratings[value])
    rows = []
    for name, g in ratings.groupby(condition, sort=True):
        v = g[value].to_numpy(dtype=float)
        mean = float(v.mean())
        hw = half_width(v, ci=ci, level=level)
        sd = float(v.std(ddof=1)) if len(v) > 1 else math.nan
        rows.append((name, len(v), mean, sd, hw, mean - hw, mean + hw))
    return pd.DataFrame(rows, columns=MOS_COLUMNS)


CONTINUOUS_COLUMNS = ["condition", "n", "mean", "std", "ci", "low", "high", "median", "q1", "q3"]


def condition_summary(
    ratings: pd.DataFrame,
    *,
    condition: str = "condition",
    value: str = "value",
    level: float = 0.95,
    scale: Scale | None = None,
) -> pd.DataFrame:
    """The continuous scale's per-condition statistics (BS.1534-3, clause 9): n, mean, sample sd,
    Student's t interval at `level`, and median with quartiles (numpy's linear interpolation),
    for the box plots the recommendation also shows."""
    table = condition_means(ratings, scale, condition=condition, value=value, ci="t", level=level)
    quart = ratings.groupby(condition, sort=True)[value].quantile([0.5, 0.25, 0.75]).unstack()
    table["median"] = quart[0.5].to_numpy()
    table["q1"] = quart[0.25].to_numpy()
    table["q3"] = quart[0.75].to_numpy()
    return table[CONTINUOUS_COLUMNS]


SCREENING_COLUMNS = [
    "assessor",
    "reference_items",
    "reference_below",
    "anchor_items",
    "anchor_above",
    "excluded",
    "reason",
]


def post_screening(
    ratings: pd.DataFrame,
    reference: str,
    anchor: str | None = None,
    *,
    threshold: float = 90,
    share: float = 0.15,
    item: str = "item",
    assessor: str = "assessor",
    condition: str = "condition",
    value: str = "value",
) -> pd.DataFrame:
    """BS.1534-3's post-screening, one row per assessor: on how many items they rated the hidden
    `reference` and how often below `threshold`, the same for the mid-range `anchor` above it,
    whether they are excluded (either count over `share` of its items) and why, in words."""
    missing = [c for c in (item, assessor, condition, value) if c not in ratings]
    if missing:
        raise ValueError(f"listening ratings need the columns {', '.join(missing)}")
    if not (ratings[condition] == reference).any():
        raise ValueError(f"no rating of the hidden reference {reference!r}: nothing to screen on")
    if anchor is not None and not (ratings[condition] == anchor).any():
        raise ValueError(f"no rating of the anchor {anchor!r}: nothing to screen on")
    rows = []
    for who, g in ratings.groupby(assessor, sort=True):
        ref = g[g[condition] == reference].groupby(item)[value].mean()
        below = int((ref < threshold).sum())
        reasons = []
        if len(ref) and below / len(ref) > share:
            reasons.append(
                f"rated the hidden reference below {threshold:g} on {below} of {len(ref)} items "
                f"({below / len(ref):.0%} > {share:.0%})"
            )
        anc_items = above = 0
        if anchor is not None:
            anc = g[g[condition] == anchor].groupby(item)[value].mean()
            anc_items, above = len(anc), int((anc > threshold).sum())
            if anc_items and above / anc_items > share:
                reasons.append(
                    f"rated the anchor above {threshold:g} on {above} of {anc_items} items "
                    f"({above / anc_items:.0%} > {share:.0%})"
                )
        rows.append((who, len(ref), below, anc_items, above, bool(reasons), "; ".join(reasons)))
    return pd.DataFrame(rows, columns=SCREENING_COLUMNS)


def screened(ratings: pd.DataFrame, screening: pd.DataFrame, *, assessor: str = "assessor") -> pd.DataFrame:
    """The ratings of the assessors the screening kept."""
    out = set(screening.loc[screening["excluded"], "assessor"])
    return ratings[~ratings[assessor].isin(out)]
