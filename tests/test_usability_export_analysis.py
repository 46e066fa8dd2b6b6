"""`python app.py analyze usability` on a study's export (issue 51, point 2): the export's
exchanges carry no ratings, so the analysis joins them from the export's surveys, validations,
participants, starters and exchange_metrics, and the result equals the app's own analysis of the
database (services/usability/export.py: exchanges_frame). Before: the exported exchanges were
refused, lacking satisfaction, translation_score and the rest."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

import cli
from services.usability import analysis as usability_analysis
from services.usability.export import exchanges_frame
from storage import open_database
from storage.usability import exchange_metrics
from tests.helpers.export import cli_export
from tests.helpers.workflow import mixed_study, study_folder

TABLES = (
    "groups.csv",
    "correlations.csv",
    "lmm.csv",
    "marginal_means.csv",
    "score_lmm.csv",
    "contrasts.csv",
    "perspective.csv",
)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The demo's mixed study (first- and third-person surveys, senders who dropped out, imported
    exchanges without a sender), a chrF score on every translated exchange, and the database's
    own analysis of it."""
    from services.setup.importer import import_study

    tmp = tmp_path_factory.mktemp("usability-export")
    db = open_database(tmp / "t.db")
    import_study(db, study_folder(tmp))
    mixed_study(db, tmp)
    with db.write() as w:
        for k, ex in enumerate(r["id"] for r in db.query("SELECT id FROM exchanges ORDER BY id")):
            exchange_metrics.put_exchange_metric(w, ex, "chrf", "1", "sacrebleu", 20.0 + (7 * k) % 60)
    frame = exchanges_frame(db, "demo")
    want = usability_analysis.analyze(frame, source="database")
    return tmp, frame, want


@pytest.mark.parametrize("fmt, given", [("csv", "table"), ("jsonl", "folder"), ("parquet", "table")])
def test_an_export_analyses_as_the_database_does(study, fmt, given, tmp_path, monkeypatch, capsys):
    """Groups, correlations (chrF included), the usability and score models and the perspective
    model of the export equal the database's."""
    tmp, frame, want = study
    folder = cli_export(tmp, tmp / "t.db", tmp / "media", "demo", fmt, monkeypatch)
    arg = folder if given == "folder" else f"{folder}/exchanges.{fmt}"
    out = tmp_path / "out"
    capsys.readouterr()
    assert cli.main(["analyze", "usability", arg, "--out", str(out)]) == 0, capsys.readouterr().err
    assert len(frame) >= 10 and "metric_chrf" in frame.columns
    assert {"first", "third"} <= set(frame["perspective"])
    expected = tmp_path / "expected"
    usability_analysis.write_outputs(want, expected)
    for name in TABLES:
        got, ref = pd.read_csv(out / name), pd.read_csv(expected / name)
        assert len(ref) > 0, name
        pd.testing.assert_frame_equal(got, ref, check_dtype=False, atol=1e-6, obj=name)
    groups = pd.read_csv(out / "groups.csv")
    assert groups.loc[groups["by"] == "all", "n"].item() == len(frame)
    assert "metric_chrf" in set(pd.read_csv(out / "correlations.csv")["signal"])


def test_an_export_without_its_surveys_names_the_missing_table(study, tmp_path, monkeypatch, capsys):
    """The ratings come from the export's surveys: without that table the analysis says so."""
    tmp, _, _ = study
    folder = tmp_path / "copy"
    shutil.copytree(cli_export(tmp, tmp / "t.db", tmp / "media", "demo", "csv", monkeypatch), folder)
    (folder / "surveys.csv").unlink()
    capsys.readouterr()
    assert cli.main(["analyze", "usability", f"{folder}/exchanges.csv", "--out", str(tmp_path / "out")]) == 2
    assert "surveys" in capsys.readouterr().err
