"""Issue 50, point 3: paper 001 (Ethics) rejected HITs "completed in an unrealistically short
time"; judgments without a per-item time (duration_s) cannot be judged so. Before, `analyze da
FILE` on such judgments flagged nothing and said nothing; now the QC table counts them and the
summary (the CLI's, the Analysis tab's and the report's: summary_notes) says which HITs went
unchecked."""

from __future__ import annotations

import numpy as np

from services.da import analysis as da_analysis
from tests.helpers.da import make_judgments


def test_a_file_without_times_says_the_speed_rule_could_not_apply(tmp_path):
    df = make_judgments(seed=5).drop(columns=["duration_s"])
    path = tmp_path / "judgments.csv"
    df.to_csv(path, index=False)
    text = da_analysis.run_cli(path, tmp_path / "out")
    hits = df["hit_id"].nunique()
    assert (
        f"text: {len(df)} of {len(df)} judgments have no per-item time (duration_s), so {hits} HITs "
        "could not be checked for an unrealistically fast pace"
    ) in text, text
    qc = da_analysis.analyze(df).qc_summary.iloc[0]
    assert (qc["judgments_untimed"], qc["hits_untimed"], qc["hits_fast_excluded"]) == (len(df), hits, 0)


def test_only_the_hits_with_no_time_at_all_are_counted():
    """A HIT with some timed judgments is judged on their median; one with none is unchecked.
    Counted independently here with plain Python over the rows."""
    df = make_judgments(seed=6)
    rng = np.random.default_rng(0)
    df.loc[df["worker_id"].isin(["w1", "w4"]), "duration_s"] = np.nan  # two HITs untimed
    partly = df.index[df["worker_id"] == "w5"]
    df.loc[rng.choice(partly, size=len(partly) // 2, replace=False), "duration_s"] = np.nan
    res = da_analysis.analyze(df)
    timed_hits = {h for h, d in zip(df["hit_id"], df["duration_s"]) if d == d}
    untimed_hits = set(df["hit_id"]) - timed_hits
    qc = res.qc_summary.iloc[0]
    assert qc["hits_untimed"] == len(untimed_hits) == 2
    assert qc["judgments_untimed"] == sum(1 for d in df["duration_s"] if d != d)
    notes = da_analysis.summary_notes(res)
    assert any("so 2 HITs could not be checked" in n for n in notes), notes


def test_fully_timed_judgments_add_no_note():
    res = da_analysis.analyze(make_judgments(seed=7))
    assert res.qc_summary.iloc[0]["hits_untimed"] == 0
    assert not any("per-item time" in n for n in da_analysis.summary_notes(res))
