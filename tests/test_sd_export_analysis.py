"""`python app.py analyze sd` on a study's export (issue 51, point 2): the export's sd_ratings,
in each format, analyse to the app's own analysis of the database, the participants' time summed
from the export's assignments. Before: the export was refused (the analyser wanted
participant_id and duration_s; the export names the rater `participant` and has no duration)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

import cli
from services.participation.items import get_view
from services.sd import analysis as sd_analysis
from services.setup.enrolment import add_participants
from storage import open_database
from storage.sd import ratings
from tests.helpers.export import cli_export
from tests.helpers.sd import answer_page, sd_study

CLEANSING = ["duration_s", "too_fast", "straight_liner", "inconsistency", "outlier", "kept"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The demo study's SD part answered by 16 participants with a latent quality per sentence (the
    pairs correlate: the factor analysis has something to find); participant k spent 90 + 45 k
    seconds in all, so the four quickest are too fast for the expected 600 s (40%: 240 s)."""
    tmp = tmp_path_factory.mktemp("sd-export")
    db = sd_study(open_database(tmp / "t.db"), tmp)
    rng = np.random.default_rng(7)
    base: dict = {}
    for k, p in enumerate(add_participants(db, "demo", "sd", 16)):
        while (v := get_view(db, p.token, "sd")).status == "item":
            answer_page(
                db,
                p.token,
                v,
                lambda x: int(
                    np.clip(round(base.setdefault(v.item_id, rng.normal(4, 1.5)) + rng.normal(0, 0.7)), 1, 7)
                ),
            )
        with db.write() as w:  # the time a person would have spent: 90 + 45 k s over the first page and 0 s the rest
            w.execute("UPDATE assignments SET active_seconds = 0 WHERE participant_id = ?", [p.id])
            w.execute(
                "UPDATE assignments SET active_seconds = ? WHERE id = (SELECT MIN(id) FROM assignments "
                "WHERE participant_id = ?)",
                [90.0 + 45 * k, p.id],
            )
    return tmp, db


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("given", ["folder", "table"])
def test_an_export_analyses_as_the_database_does(study, fmt, given, tmp_path, monkeypatch, capsys):
    """Cleansing (times, flags, inconsistency) and the factor analysis (loadings, variance) of
    the export equal those of the database's ratings (storage/sd/ratings.py: sd_rating_rows, the
    Analysis tab's input)."""
    tmp, db = study
    folder = cli_export(tmp, tmp / "t.db", tmp / "media", "demo", fmt, monkeypatch)
    arg = folder if given == "folder" else f"{folder}/sd_ratings.{fmt}"
    out = tmp_path / "out"
    capsys.readouterr()
    assert cli.main(["analyze", "sd", arg, "--out", str(out), "--factors", "1"]) == 0, capsys.readouterr().err
    want = sd_analysis.analyze(pd.DataFrame(ratings.sd_rating_rows(db, "demo")), expected_seconds=600, n_factors=1)
    got = pd.read_csv(out / "cleansing.csv")
    assert sorted(got["participant_id"]) == [f"sd-{i:03d}" for i in range(1, 17)]  # the export's pseudonyms
    key = ["duration_s", "inconsistency"]
    left = got[CLEANSING].sort_values(key).reset_index(drop=True)
    right = want.cleansing[CLEANSING].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right, check_dtype=False, atol=1e-9)
    assert int(left["too_fast"].sum()) == 4 and int(left["kept"].sum()) > 0
    assert want.efa is not None
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "loadings.csv"), sd_analysis.loadings_table(want), check_dtype=False, atol=1e-9
    )
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "variance.csv"), sd_analysis.variance_table(want), check_dtype=False, atol=1e-9
    )


def test_an_export_without_its_assignments_names_the_missing_table(study, tmp_path, monkeypatch, capsys):
    """duration_s comes from the export's assignments: without that table the analysis says so."""
    tmp, _ = study
    folder = tmp_path / "copy"
    shutil.copytree(cli_export(tmp, tmp / "t.db", tmp / "media", "demo", "csv", monkeypatch), folder)
    (folder / "assignments.csv").unlink()
    capsys.readouterr()
    assert cli.main(["analyze", "sd", str(folder), "--out", str(tmp_path / "out")]) == 2
    assert "assignments" in capsys.readouterr().err
