"""Issue 51, point 5: where payments are decided. The admin's Finished list and its CSV say each
participant's QC outcome in words a payer acts on, read from what the protocols' QC decided;
`[da] keep_every_worker = true` (a pilot) keeps every worker in the app's analysis as
`analyze da --wmt` does, re-runs no HIT, and the list then says "kept (pilot)"."""

from __future__ import annotations

import csv
import shutil

import pytest

from harness.demo import DEMO
from services.admin import participants as participant_admin
from services.da import analysis as da_analysis
from services.da import study_analysis as da_study
from services.setup.enrolment import add_participants
from services.study.files import StudyValidationError, load_study
from storage import participants
from tests.helpers.da_reruns import campaign_with_one_careless_rater

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


def finished(db) -> dict[int, dict]:
    page = participant_admin.completion_page(db, "demo")
    return {int(r["id"]): r for r in page.rows.to_dict("records")}


def p_words(p: float) -> str:
    return f"p = {p:.2g}"


def test_the_finished_list_and_its_csv_say_each_raters_qc_outcome(database, tmp_path):
    db, _, raters = campaign_with_one_careless_rater(database, tmp_path)
    failed = raters[-1]
    outcome = db.one("SELECT * FROM da_hit_outcomes WHERE participant_id = ?", [failed.id])
    rows = finished(db)
    assert set(rows) == {r.id for r in raters}
    assert rows[failed.id]["qc"] == f"failed reliability test ({p_words(outcome['p_value'])}); HIT re-run"
    for r in raters[:-1]:
        p = db.scalar("SELECT p_value FROM da_hit_outcomes WHERE participant_id = ?", [r.id])
        # the demo's raters answer at once, and this campaign keeps fast HITs (keep_fast)
        assert rows[r.id]["qc"].startswith(f"passed ({p_words(p)}); too fast (median ")
        assert rows[r.id]["qc"].endswith(" but kept (keep_fast)")
    with open(participant_admin.completion_csv(db, "demo"), encoding="utf-8") as f:
        listed = {int(r["id"]): r["qc"] for r in csv.DictReader(f)}
    assert listed == {pid: r["qc"] for pid, r in rows.items()}


def test_a_pilot_keeps_every_worker_as_the_wmt_method_does(database, tmp_path):
    db, _, raters = campaign_with_one_careless_rater(database, tmp_path, keep_every_worker="true")
    failed = raters[-1]
    outcome = db.one("SELECT * FROM da_hit_outcomes WHERE participant_id = ?", [failed.id])
    # judged as before, but the HIT is not handed to a fresh rater: its judgments count
    assert outcome["reliable"] == 0 and outcome["rerun"] == 0
    assert finished(db)[failed.id]["qc"] == (f"failed reliability test ({p_words(outcome['p_value'])}); kept (pilot)")
    done = da_study.analyse(db, "demo")
    assert not isinstance(done, str)
    assert done.result.wmt and bool(done.result.workers["kept"].all())
    assert done.notes[0] == da_study.PILOT_NOTE
    wmt = da_analysis.analyze(done.judgments, alpha=done.result.alpha, wmt=True)
    assert done.result.systems.equals(wmt.systems)


def test_fast_and_unjudged_hits_and_other_roles_in_words():
    da = {"keep_fast": False}
    fast = {"reliable": 1, "fast": 1, "p_value": 0.0004, "median_item_s": 1.23, "rerun": 1}
    assert da_study.qc_outcome(fast, da) == "too fast (median 1.2 s per item); HIT re-run"
    assert da_study.qc_outcome(fast, {"keep_fast": True}) == (
        "passed (p < 0.001); too fast (median 1.2 s per item) but kept (keep_fast)"
    )
    spent = {"reliable": 0, "fast": 0, "p_value": None, "median_item_s": None, "rerun": 0}
    assert da_study.qc_outcome(spent, da) == "failed reliability test (no control pairs); HIT not re-run (reruns spent)"
    assert da_study.qc_outcome(None, da).startswith("not judged")


def test_a_senders_rejections_and_exclusion_reach_the_list(demo_db):
    study = {"id": "demo", "config": {"da": {}}}
    sender = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")[0].id
    with demo_db.write() as w:
        participants.exclude(w, sender, "more than 3 rejected recordings")
    rows = [
        {**participants.get(demo_db, sender), "role": "sender"},
        {"id": -1, "role": "receiver", "excluded_at": None},
    ]
    out = participant_admin.qc_outcomes(demo_db, study, rows)
    assert out == {sender: "excluded: more than 3 rejected recordings", -1: participant_admin.NO_QC}


def test_the_setting_is_checked(tmp_path):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    (folder / "study.toml").write_text(toml.replace("[da]\n", "[da]\nkeep_every_worker = 1\n", 1))
    with pytest.raises(StudyValidationError, match="da.keep_every_worker"):
        load_study(folder)
    (folder / "study.toml").write_text(toml)
    assert load_study(folder).config["da"]["keep_every_worker"] is False
