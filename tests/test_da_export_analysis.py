"""`python app.py analyze da` on a study's export (issue 51, point 2): the export's own files, in
each of its formats, analyse to the app's own analysis of the database; two studies' exports
merge into one campaign whose raters and HITs stay apart. Before: the export's `rater` and `hit`
columns were refused (the analyser wanted worker_id, hit_id) and only one file was taken."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest

import cli
from harness.demo import DEMO
from services.da import analysis as da_analysis
from services.da import campaign as da_campaign
from services.setup.importer import import_study
from storage import open_database
from tests.helpers.da import careful_raters
from tests.helpers.export import cli_export

STUDIES = ("study-a", "study-b")
SYSTEM_COLS = ["modality", "run", "system", "n_judgments", "raw_mean", "z_mean", "rank", "cluster", "n_segments"]
WORKER_COLS = ["n_judgments", "n_bad_pairs", "n_repeat_pairs", "p_value", "reliable", "mean", "sd", "kept"]


def _study(tmp, study_id):
    """The demo study as `study_id`, a text-only campaign whose careful raters pass (10 controls)."""
    folder = tmp / study_id
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    toml = re.sub(r'^id = "demo"$', f'id = "{study_id}"', toml, count=1, flags=re.M)
    head, _, rest = toml.partition("[da]\n")
    section, sep, tail = rest.partition("\n[")
    for key, value in (("modality", '"text"'), ("controls", "10"), ("min_gap", "2")):
        section = re.sub(rf"^{key} = .*$", f"{key} = {value}", section, flags=re.M)
    (folder / "study.toml").write_text(head + "[da]\nkeep_fast = true\n" + section + sep + tail)
    return folder


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    """One database with two DA studies, each rated by careful raters (who answer at once: the
    analyses keep their fast HITs)."""
    tmp = tmp_path_factory.mktemp("da-export")
    db = open_database(tmp / "t.db")
    media = tmp / "media"
    for sid in STUDIES:
        import_study(db, _study(tmp, sid))
        careful_raters(db, sid, 3, media)
    return tmp, db, media


def _analyse(args, out, monkeypatch, capsys) -> tuple[pd.DataFrame, pd.DataFrame]:
    capsys.readouterr()
    done = cli.main(["analyze", "da", *args, "--out", str(out), "--alpha", "0.05", "--keep-fast"])
    assert done == 0, capsys.readouterr().err
    return pd.read_csv(out / "systems.csv"), pd.read_csv(out / "workers.csv")


def _same_systems(got: pd.DataFrame, want: pd.DataFrame) -> None:
    got = got[SYSTEM_COLS].sort_values(["modality", "run", "system"]).reset_index(drop=True)
    want = want[SYSTEM_COLS].sort_values(["modality", "run", "system"]).reset_index(drop=True)
    assert len(want) >= 2
    pd.testing.assert_frame_equal(got, want, check_dtype=False, atol=1e-9)


def _same_workers(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """The same workers' tests, whatever the ids (pseudonyms in an export, database ids here)."""
    key = ["n_judgments", "mean", "sd"]
    got = got[WORKER_COLS].sort_values(key).reset_index(drop=True)
    want = want[WORKER_COLS].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False, atol=1e-9)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("given", ["folder", "table"])
def test_an_export_analyses_as_the_database_does(campaigns, fmt, given, tmp_path, monkeypatch, capsys):
    """The export's folder, or its da_judgments file, analyses to the scores and worker tests of
    the database's own judgments (da_campaign.judgments_frame, the Analysis tab's input)."""
    tmp, db, media = campaigns
    folder = cli_export(tmp, tmp / "t.db", media, "study-a", fmt, monkeypatch)
    arg = folder if given == "folder" else f"{folder}/da_judgments.{fmt}"
    systems, workers = _analyse([arg], tmp_path / "out", monkeypatch, capsys)
    want = da_analysis.analyze(da_campaign.judgments_frame(db, "study-a"), alpha=0.05, keep_fast=True)
    _same_systems(systems, want.systems)
    _same_workers(workers, want.workers)
    assert set(workers["worker_id"]) == {"da-001", "da-002", "da-003"}  # the export's pseudonyms


def test_two_studies_exports_merge_into_one_campaign(campaigns, tmp_path, monkeypatch, capsys):
    """Two exports given together are one campaign: their raters (both studies number theirs
    da-001...) and HITs (both count from 1) stay apart, prefixed by study id; the scores are the
    analysis of both databases' judgments pooled, ids made apart by hand here."""
    tmp, db, media = campaigns
    folders = [cli_export(tmp, tmp / "t.db", media, sid, "csv", monkeypatch) for sid in STUDIES]
    systems, workers = _analyse(folders, tmp_path / "out", monkeypatch, capsys)
    pooled = []
    for sid in STUDIES:
        j = da_campaign.judgments_frame(db, sid)
        j["worker_id"] = sid + ":" + j["worker_id"].astype(str)
        j["hit_id"] = sid + ":" + j["hit_id"].astype(str)
        pooled.append(j)
    want = da_analysis.analyze(pd.concat(pooled, ignore_index=True), alpha=0.05, keep_fast=True)
    _same_systems(systems, want.systems)
    _same_workers(workers, want.workers)
    assert len(workers) == 6
    assert sorted(workers["worker_id"]) == [f"{s}/da-00{i}" for s in STUDIES for i in (1, 2, 3)]
    # one judgments file per study (the export's own da_judgments.csv) merges the same way
    files = [f"{f}/da_judgments.csv" for f in folders]
    systems2, _ = _analyse(files, tmp_path / "out2", monkeypatch, capsys)
    _same_systems(systems2, want.systems)


def test_two_studies_compared_as_two_runs(campaigns, tmp_path, monkeypatch, capsys):
    """--runs-from-inputs: the first study is run 1, the second run 2 (paper 001's
    self-replication across two studies); the replication table correlates them."""
    tmp, db, media = campaigns
    folders = [cli_export(tmp, tmp / "t.db", media, sid, "csv", monkeypatch) for sid in STUDIES]
    systems, _ = _analyse([*folders, "--runs-from-inputs"], tmp_path / "out", monkeypatch, capsys)
    assert sorted(set(systems["run"])) == [1, 2]
    rep = pd.read_csv(tmp_path / "out" / "replication.csv")
    assert "run 1" in " ".join(rep["comparison"]) and np.isfinite(rep["r"]).all()


def test_an_export_without_da_judgments_names_what_is_missing(campaigns, tmp_path, monkeypatch, capsys):
    """A da_judgments table lacking a column the analysis needs is refused, the column named."""
    tmp, db, media = campaigns
    folder = tmp_path / "copy"
    shutil.copytree(cli_export(tmp, tmp / "t.db", media, "study-a", "csv", monkeypatch), folder)
    table = pd.read_csv(folder / "da_judgments.csv").drop(columns=["hit"])
    table.to_csv(folder / "da_judgments.csv", index=False)
    capsys.readouterr()
    assert cli.main(["analyze", "da", str(folder), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "da_judgments.csv" in err and "hit" in err


def test_a_judgments_file_copied_out_of_its_export(campaigns, tmp_path, monkeypatch, capsys):
    """The export's da_judgments.csv on its own (no manifest beside it) is recognised by its
    columns (rater, hit, ...) and analyses the same."""
    tmp, db, media = campaigns
    loose = tmp_path / "judgments.csv"
    shutil.copyfile(f"{cli_export(tmp, tmp / 't.db', media, 'study-a', 'csv', monkeypatch)}/da_judgments.csv", loose)
    systems, workers = _analyse([str(loose)], tmp_path / "out", monkeypatch, capsys)
    want = da_analysis.analyze(da_campaign.judgments_frame(db, "study-a"), alpha=0.05, keep_fast=True)
    _same_systems(systems, want.systems)
    _same_workers(workers, want.workers)
