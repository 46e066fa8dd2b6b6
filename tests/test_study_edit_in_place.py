"""Issue 51, point 4 (a): after a pilot, a re-import of the same study id whose only changes are
settings that touch no collected item (services/study/lifecycle.SAFE_SETTINGS) updates the study in
place, keeps every collected answer and writes one audit-log row per setting; a change to what the
items are (corpus, design) is refused naming the setting and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from harness.demo import demo_with_exchanges
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError
from storage import assignments
from storage.usability import recordings

COLLECTED = ("participants", "assignments", "recordings", "exchanges", "translations", "da_hits", "questions")


@pytest.fixture
def study(tmp_path) -> Path:
    return demo_with_exchanges(tmp_path / "study", keep_references=True)


def edit(folder: Path, old: str, new: str) -> None:
    path = folder / "study.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def piloted(database, study) -> dict:
    """The study imported and piloted: a sender with one recording (a collected item)."""
    import_study(database, study)
    (s,) = add_participants(database, "demo", "sender", 1, "USW", "Woman")
    a = assignments.open_assignments(database, s.id)[0]
    with database.write() as w:
        recordings.insert_recording(w, a["id"], a["exchange_id"], "sha", "x.wav", "x16.wav", 3.0)
    return {t: database.query(f"SELECT * FROM {t} ORDER BY rowid") for t in COLLECTED}


def test_safe_settings_change_in_place_with_one_audit_row_each(database, study):
    before = piloted(database, study)
    edit(study, 'redirect_url = ""', 'redirect_url = "https://app.prolific.com/submissions/complete?cc=NEW"')
    edit(study, 'completion_code = "DEMO-2026"', 'completion_code = "NEW-2026"')
    edit(study, "reliability_alpha = 0.2", "reliability_alpha = 0.05")
    res = import_study(database, study, actor="admin@test")
    assert res.status == "updated in place"
    assert res.settings_changed == ["da.reliability_alpha", "study.completion_code", "study.redirect_url"]
    assert res.summary().startswith("study 'demo': updated 3 settings in place: da.reliability_alpha")
    config = json.loads(database.scalar("SELECT config FROM studies WHERE id = 'demo'"))
    assert config["study"]["completion_code"] == "NEW-2026" and config["da"]["reliability_alpha"] == 0.05
    # every collected row as it was (same ids, same content)
    assert {t: database.query(f"SELECT * FROM {t} ORDER BY rowid") for t in COLLECTED} == before
    rows = database.query("SELECT actor, entity_id, detail FROM events WHERE action = 'setting_changed' ORDER BY id")
    details = [json.loads(r["detail"]) for r in rows]
    assert [d["setting"] for d in details] == res.settings_changed
    assert {"setting": "study.completion_code", "old": "DEMO-2026", "new": "NEW-2026"} in details
    assert {r["actor"] for r in rows} == {"admin@test"} and {r["entity_id"] for r in rows} == {"demo"}
    assert import_study(database, study).status == "unchanged"


def test_a_design_setting_is_refused_naming_it(database, study):
    before = piloted(database, study)
    edit(study, "items_per_receiver = 6", "items_per_receiver = 5")
    edit(study, 'completion_code = "DEMO-2026"', 'completion_code = "NEW-2026"')
    with pytest.raises(StudyValidationError) as exc:
        import_study(database, study)
    text = str(exc.value)
    assert "usability.items_per_receiver" in text and "6 -> 5" in text and "new id" in text
    assert "completion_code" not in text  # the safe one is not a reason
    assert {t: database.query(f"SELECT * FROM {t} ORDER BY rowid") for t in COLLECTED} == before
    assert json.loads(database.scalar("SELECT config FROM studies"))["study"]["completion_code"] == "DEMO-2026"
    assert not database.scalar("SELECT COUNT(*) FROM events WHERE action = 'setting_changed'")


def test_a_corpus_change_is_refused_naming_the_part(database, study):
    piloted(database, study)
    path = study / "questions.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("?", " ?", 1), encoding="utf-8")
    with pytest.raises(StudyValidationError, match=r"the corpus changed \(usability.questions\)"):
        import_study(database, study)


def test_the_cli_import_says_which_settings_changed(study, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRADLAB_DB", str(tmp_path / "cli.db"))
    monkeypatch.setenv("TRADLAB_MEDIA", str(tmp_path / "media"))
    assert cli.main(["import", str(study)]) == 0
    assert cli.main(["participants", "add", "--study", "demo", "--role", "receiver"]) == 0
    edit(study, 'completion_code = "DEMO-2026"', 'completion_code = "NEW-2026"')
    capsys.readouterr()
    assert cli.main(["import", str(study)]) == 0
    assert "study 'demo': updated 1 setting in place: study.completion_code" in capsys.readouterr().out
