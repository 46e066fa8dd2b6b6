"""Issue 50, point 6 (paper 002's part): Table 2's third group, the adjective pairs removed after
the preliminary study (section 3.1: suitability mean under 3.2 or sd over 1.2). Before, the
report's Table 2 had groups 1 and 2 only and said nothing of the preliminary study; now a study
with suitability ratings lists what they removed, and one without says it has none."""

from __future__ import annotations

import statistics

import pandas as pd

from services.report import sd as sd_report
from services.sd import analysis as sd_analysis
from tests.helpers.team_page import rate_da_and_sd


def test_group_3_lists_the_pairs_the_suitability_filter_removed():
    ratings = {"klar": [5, 4, 5, 4], "gut": [2, 3, 3, 2], "warm": [5, 1, 5, 1], "fluessig": [4, 4, 3, 4]}
    rows = [
        {"participant_id": f"p{i}", "pair_id": pair, "suitability": v}
        for pair, values in ratings.items()
        for i, v in enumerate(values)
    ]
    table = sd_report.table2(None, sd_analysis.suitability_filter(pd.DataFrame(rows)))
    removed = {
        pair
        for pair, v in ratings.items()
        if statistics.mean(v) < sd_analysis.SUITABILITY_MIN_MEAN or statistics.stdev(v) > sd_analysis.SUITABILITY_MAX_SD
    }
    assert removed == {"gut", "warm"}
    assert set(table["pair_id"]) == removed
    assert set(table["group"]) == {"3: removed after the preliminary study"}
    gut = table.set_index("pair_id").loc["gut", "reason"]
    assert gut.startswith(
        f"suitability mean {statistics.mean(ratings['gut']):.2f}, sd {statistics.stdev(ratings['gut']):.2f}"
    )


def test_a_study_without_suitability_ratings_says_its_table_2_has_no_group_3(demo_db, tmp_path):
    rate_da_and_sd(demo_db, tmp_path / "media")
    part = sd_report.build(demo_db, "demo", tmp_path)
    assert sd_report.NO_PRELIMINARY in part.notes
    assert "18 of its 38 pairs" in sd_report.NO_PRELIMINARY
