"""Issue 20 follow-ups in the exports: the model behind each exchange metric score (a checkpoint
changed mid-study must not silently mix two models' numbers in one column), and the DA
self-replication run of each judgment."""

from __future__ import annotations

import csv
import json

import pytest

from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.study import export
from services.study import export_dictionary as dictionary
from services.usability.export import exchanges_frame
from storage.da import hits
from storage.usability import exchange_metrics
from tests.helpers.da import da_study
from tests.helpers.workflow import rate_imported_exchanges

OLD = "Unbabel/wmt22-cometkiwi-da | sha256:aaaa"
NEW = "Unbabel/wmt22-cometkiwi-da | sha256:bbbb"


def rated_exchanges(db) -> list[int]:
    """The demo's imported exchanges rated by one rater, answered and validated: the frame's rows."""
    receiver = add_participants(db, "demo", "receiver", 1)[0]
    validator = add_participants(db, "demo", "validator", 1)[0]
    rater = add_participants(db, "demo", "rater", 1)[0]
    return rate_imported_exchanges(db, rater, receiver, validator)


def score(db, exchange_ids, metric, model, value=0.5, version="2.2"):
    with db.write() as w:
        for eid in exchange_ids:
            exchange_metrics.put_exchange_metric(w, eid, metric, version, model, value)


def test_the_frame_names_the_model_of_each_score_and_warns_when_one_metric_mixes_two(demo_db):
    db = demo_db
    ids = rated_exchanges(db)
    assert len(ids) >= 2
    score(db, ids, "chrf", "chrF2")
    score(db, ids[:1], "cometkiwi-23-xl", OLD)
    score(db, ids[1:], "cometkiwi-23-xl", NEW)
    with pytest.warns(UserWarning, match="cometkiwi-23-xl"):
        df = exchanges_frame(db, "demo")
    by_id = df.set_index("exchange_id")
    assert by_id.loc[ids[0], "cometkiwi_23_xl_model"] == OLD
    assert set(by_id.loc[ids[1:], "cometkiwi_23_xl_model"]) == {NEW}
    assert set(by_id["chrf_model"]) == {"chrF2"}
    assert by_id["metric_chrf"].tolist() == [0.5] * len(ids)
    (w,) = df.attrs["warnings"]
    assert "'cometkiwi-23-xl'" in w and OLD in w and NEW in w and "chrf" not in w
    # the model columns are not signals: the analysis reads only metric_* columns
    from services.usability import analysis as usability_analysis

    assert usability_analysis.metric_columns(df) == ["metric_chrf", "metric_cometkiwi_23_xl"]
    # and the data dictionary documents both kinds of column
    from services.usability.export_tables import ANALYSIS_PATTERN_COLUMNS as documented

    assert set(documented) == {"metric_<name>", "<name>_model"}


def test_one_model_per_metric_gives_no_warning(demo_db, recwarn):
    db = demo_db
    ids = rated_exchanges(db)
    score(db, ids, "cometkiwi-23-xl", NEW)
    df = exchanges_frame(db, "demo")
    assert df.attrs["warnings"] == [] and set(df["cometkiwi_23_xl_model"]) == {NEW}
    assert not [w for w in recwarn if "mixes" in str(w.message)]


def test_the_export_warns_in_its_readme_and_manifest(demo_db, tmp_path):
    db = demo_db
    ids = rated_exchanges(db)
    score(db, ids[:1], "cometkiwi-23-xl", OLD)
    score(db, ids[1:], "cometkiwi-23-xl", NEW)
    score(db, ids, "chrf", "chrF2")
    res = export.export_study(db, "demo", tmp_path / "out", media_dir=tmp_path / "media")
    readme = (res.folder / "README.md").read_text()
    warnings = readme.split("## Warnings", 1)[1].split("\n## ", 1)[0]
    assert "'cometkiwi-23-xl' mixes scores of 2 models" in warnings and OLD in warnings and NEW in warnings
    assert "'chrf'" not in warnings
    manifest = json.loads((res.folder / "manifest.json").read_text())
    assert len(manifest["warnings"]) == 1 and "cometkiwi-23-xl" in manifest["warnings"][0]
    assert "WARNING: metric 'cometkiwi-23-xl'" in res.summary()
    with open(res.folder / "exchange_metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["model"] for r in rows if r["metric"] == "cometkiwi-23-xl"} == {OLD, NEW}


def test_an_export_with_one_model_per_metric_has_no_warnings(demo_db, tmp_path):
    db = demo_db
    score(db, rated_exchanges(db), "chrf", "chrF2")
    res = export.export_study(db, "demo", tmp_path / "out", media_dir=tmp_path / "media")
    assert "## Warnings" not in (res.folder / "README.md").read_text()
    assert json.loads((res.folder / "manifest.json").read_text())["warnings"] == []


def test_da_judgments_carry_their_run(database, tmp_path):
    db, media = da_study(database, tmp_path, modality='"text"', runs="2")
    n_hits = len(hits.da_hits(db, "demo"))
    raters = add_participants(db, "demo", "da", 2 * n_hits)
    for r in raters:  # the first item of each rater's HIT
        v = get_view(db, r.token, "da", media_dir=media)
        submit(db, r.token, "da", v.item_id, {"score": 60}, media_dir=media)
    run_of = {}
    for r in raters:
        meta = json.loads(db.scalar("SELECT meta FROM assignments WHERE participant_id = ? LIMIT 1", [r.id]))
        run_of[r.id] = meta["run"]
    assert sorted(set(run_of.values())) == [1, 2]
    res = export.export_study(db, "demo", tmp_path / "out", media_dir=media)
    with open(res.folder / "da_judgments.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(raters)
    assert "run" in rows[0] and "run" in dictionary.columns("da_judgments")
    # each judgment's run is its rater's assignment's run (matched on the assignment)
    assign = {
        int(a["id"]): run_of[a["participant_id"]]
        for a in db.query("SELECT id, participant_id FROM assignments WHERE phase = 'da'")
    }
    assert all(int(r["run"]) == assign[int(r["assignment_id"])] for r in rows)
    assert sorted({int(r["run"]) for r in rows}) == [1, 2]
    readme = (res.folder / "README.md").read_text()
    assert "| `run` | integer |" in readme
    assert dictionary.column_type("da_judgments", "run") == "integer"


def test_da_judgments_of_a_one_run_study_are_run_1(database, tmp_path):
    db, media = da_study(database, tmp_path, modality='"text"')
    r = add_participants(db, "demo", "da", 1)[0]
    v = get_view(db, r.token, "da", media_dir=media)
    submit(db, r.token, "da", v.item_id, {"score": 60}, media_dir=media)
    res = export.export_study(db, "demo", tmp_path / "out", media_dir=media, fmt="jsonl")
    rows = [json.loads(line) for line in (res.folder / "da_judgments.jsonl").read_text().splitlines()]
    assert [r["run"] for r in rows] == [1]
