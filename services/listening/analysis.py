"""The listening test's analysis: the mean opinion score per condition with its 95% confidence
interval as ITU-T P.808's toolkit reports it (services/common/listening.py: MOS, DMOS or CMOS by
the study's method), from the rated clips only (not the gold or trapping clips nor the checks'
answers), the listeners who failed a check left out by default and counted (docs/listening.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from services.common.listening import (
    CONTINUOUS_COLUMNS,
    MOS_COLUMNS,
    SCREENING_COLUMNS,
    condition_means,
    condition_summary,
    load_scales,
    post_screening,
)

HIDDEN = "hidden_reference"  # services/listening/stimuli.py's name of MUSHRA's hidden reference

EXCLUDED_COLUMNS = ["participant", "failed"]


@dataclass
class Results:
    method: str
    mos: pd.DataFrame
    excluded: pd.DataFrame
    kept: bool  # the failed listeners' ratings kept (exclude_failed false, or --keep-failed)
    n_listeners: int
    n_ratings: int
    notes: list[str] = field(default_factory=list)
    screening: pd.DataFrame | None = None  # MUSHRA: BS.1534-3's post-screening, one row per listener

    def tables(self) -> dict[str, pd.DataFrame]:
        if self.method == "mushra":
            return {
                "listening_mushra.csv": self.mos,
                "listening_screening.csv": self.screening,
                "listening_excluded.csv": self.excluded,
            }
        return {"listening_mos.csv": self.mos, "listening_excluded.csv": self.excluded}

    def lines(self) -> list[str]:
        scale = load_scales()[self.method]
        n_out = len(self.excluded)
        said = "kept" if self.kept else "left out"
        head = (
            f"Listening test ({self.method.upper()}): {scale.mean_name} of {len(self.mos)} condition(s) from "
            f"{self.n_ratings} rating(s) of {self.n_listeners} listener(s); {n_out} listener(s) failed a check ({said})"
        )
        if self.method == "mushra":
            screened = 0 if self.screening is None else int(self.screening["excluded"].sum())
            head = (
                f"Listening test (MUSHRA): {len(self.mos)} condition(s) from {self.n_ratings} score(s) of "
                f"{self.n_listeners} listener(s); {screened} listener(s) excluded by BS.1534-3's post-screening, "
                f"{n_out} failed a check ({said})"
            )
        rows = [
            f"  {r.condition}: {scale.mean_name} {r.mean:.2f} ± {r.ci:.2f} (n={r.n})"
            if pd.notna(r.ci)
            else f"  {r.condition}: {scale.mean_name} {r.mean:.2f} (n={r.n}; no interval below 2 ratings)"
            for r in self.mos.itertuples()
        ]
        return [head, *rows, *self.notes]


def failed_listeners(outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per listener with a failed check: the checks failed, in words."""
    if outcomes.empty:
        return pd.DataFrame(columns=EXCLUDED_COLUMNS)
    bad = outcomes[outcomes["passed"].astype(int) == 0]
    rows = [
        (who, ", ".join(f"{r.check} ({r.right}/{r.total})" for r in g.itertuples()))
        for who, g in bad.groupby("participant", sort=True)
    ]
    return pd.DataFrame(rows, columns=EXCLUDED_COLUMNS)


def results(answers: pd.DataFrame, outcomes: pd.DataFrame, method: str, *, keep_failed: bool = False) -> Results:
    """The MOS table of the rated clips (kind rating), the failed listeners' ratings left out
    unless keep_failed."""
    scale = load_scales()[method]
    excluded = failed_listeners(outcomes)
    rated = answers[answers["kind"] == "rating"] if not answers.empty else answers
    if not keep_failed and len(rated):
        rated = rated[~rated["participant"].isin(set(excluded["participant"]))]
    if rated.empty:
        mos = pd.DataFrame(columns=MOS_COLUMNS)
    else:
        frame = pd.DataFrame({"condition": rated["condition"], "value": pd.to_numeric(rated["score"])})
        mos = condition_means(frame, scale)
    notes = []
    if method == "ccr":
        notes.append("  CMOS: the clip against its reference, a rating with the clip played first turned in sign")
    return Results(
        method,
        mos,
        excluded,
        keep_failed,
        int(rated["participant"].nunique()) if len(rated) else 0,
        len(rated),
        notes,
    )


def mushra_results(
    scores: pd.DataFrame, outcomes: pd.DataFrame, anchor: str = "", *, keep_failed: bool = False
) -> Results:
    """MUSHRA's per-condition statistics (BS.1534-3 clause 9: mean with Student's t 95% interval,
    median, quartiles) after its post-screening (clause 4.1.2: the hidden reference below 90, or the
    anchor above 90, on more than 15% of the items), the listeners who failed a listening check
    left out too unless keep_failed. anchor: the condition screened as the anchor ("" : the first
    anchor condition, by name)."""
    excluded = failed_listeners(outcomes)
    if scores.empty:
        return Results("mushra", pd.DataFrame(columns=CONTINUOUS_COLUMNS), excluded, keep_failed, 0, 0, [],
                       pd.DataFrame(columns=SCREENING_COLUMNS))  # fmt: skip
    frame = pd.DataFrame(
        {
            "assessor": scores["participant"],
            "item": scores["item_id"],
            "condition": scores["condition"],
            "value": pd.to_numeric(scores["score"]),
        }
    )
    if not keep_failed:
        frame = frame[~frame["assessor"].isin(set(excluded["participant"]))]
    anchors = sorted(set(scores.loc[pd.to_numeric(scores["anchor"]) == 1, "condition"]))
    anchor = anchor or (anchors[0] if anchors else "")
    notes = [f"  post-screening on the hidden reference and the anchor {anchor!r}" if anchor else ""]
    if frame.empty:
        return Results("mushra", pd.DataFrame(columns=CONTINUOUS_COLUMNS), excluded, keep_failed, 0, 0, notes,
                       pd.DataFrame(columns=SCREENING_COLUMNS))  # fmt: skip
    screening = post_screening(frame, HIDDEN, anchor or None)
    kept = frame[~frame["assessor"].isin(set(screening.loc[screening["excluded"], "assessor"]))]
    summary = (
        condition_summary(kept, scale=load_scales()["mushra"])
        if len(kept)
        else pd.DataFrame(columns=CONTINUOUS_COLUMNS)
    )
    return Results(
        "mushra", summary, excluded, keep_failed, int(kept["assessor"].nunique()), len(kept), notes, screening
    )
