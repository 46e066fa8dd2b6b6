"""The workflow's repair (services/usability/workflow.refresh), run by the worker and from the admin tab:
it puts back what an event missed and changes nothing when nothing is missing."""

from __future__ import annotations

from services.admin import progress as admin_progress
from services.participation import maintenance
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.usability import workflow
from storage import jobs, open_database
from storage.usability import pool
from tests.helpers.workflow import (
    answer_receiver,
    answer_survey,
    answer_validator,
    record_all,
    study_folder,
    until_none,
    wav,
)


def test_the_repair_puts_back_what_a_lost_event_would_have_opened(tmp_path):
    db = open_database(tmp_path / "r.db")
    import_study(db, study_folder(tmp_path, 9))
    (s,) = add_participants(db, "demo", "sender", 1, "USW", "Man")
    exchanges = record_all(db, s, tmp_path / "media", wav(tmp_path))
    r, v = add_participants(db, "demo", "receiver", 1)[0], add_participants(db, "demo", "validator", 1)[0]
    until_none(answer_receiver, db, r.token)
    assert workflow.refresh(db, "demo") == 0
    # as if the process died between two writes: a pool entry and an open baseline lost
    with db.write() as w:
        w.execute(
            "DELETE FROM work_pool WHERE phase = 'validate' AND item_id = (SELECT MIN(item_id) FROM work_pool "
            "WHERE phase = 'validate')"
        )
        w.execute(
            "DELETE FROM assignments WHERE id = (SELECT MIN(id) FROM assignments WHERE phase = 'survey_baseline' "
            "AND status = 'open')"
        )
        w.execute("UPDATE work_pool SET need = 5 WHERE phase = 'validate'")
    assert workflow.refresh(db, "demo") >= 3
    assert workflow.refresh(db, "demo") == 0
    assert db.scalar("SELECT MAX(need) FROM work_pool WHERE phase = 'validate'") == 1
    # everything completes after the repair
    until_none(answer_validator, db, v.token)
    until_none(answer_survey, db, s.token)
    assert db.scalar("SELECT COUNT(*) FROM surveys WHERE perspective = 'first'") == 2 * len(exchanges)


def test_the_upkeep_job_schedules_itself_once_per_study(demo_db):
    assert maintenance.schedule_all(demo_db) == 1
    assert maintenance.schedule_all(demo_db) == 0  # one waits already
    out = maintenance.run(demo_db, "demo")
    assert out == {"dropped_out": [], "repaired": 0}
    assert jobs.pending_with_key_prefix(demo_db, "study_maintenance:demo:") == 2  # the next run, later


def test_the_admin_repair_says_what_it_did(demo_db):
    assert admin_progress.repair_workflow(demo_db, None) == "Pick a study first."
    assert admin_progress.repair_workflow(demo_db, "demo") == "Repair done: nothing was missing."
    with demo_db.write() as w:
        w.execute("DELETE FROM work_pool WHERE phase = 'receive' AND item_id = (SELECT MIN(item_id) FROM work_pool)")
    assert admin_progress.repair_workflow(demo_db, "demo").startswith("Repair done: 1 missing")
    assert pool.any_open(demo_db, "demo", "receive")


def test_the_admin_repair_of_a_study_without_a_workflow_says_so(tmp_path):
    """A study that lists no protocol with a repair (here DA and SD only) is told which have one."""
    import shutil

    from harness.demo import DEMO_ASSETS

    folder = tmp_path / "study"
    shutil.copytree(DEMO_ASSETS, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    head, _, rest = toml.partition("\n[usability]\n")
    toml = head + "\n[" + rest.partition("\n[")[2]  # the [usability] section cut
    (folder / "study.toml").write_text(toml.replace('["usability", "da", "sd"]', '["da", "sd"]'), encoding="utf-8")
    db = open_database(tmp_path / "x.db")
    import_study(db, folder)
    assert admin_progress.repair_workflow(db, "demo") == (
        "Study 'demo' lists no protocol with a workflow to repair (protocols with one: usability)."
    )
