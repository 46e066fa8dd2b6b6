"""Issue 51, point 4 (b): a study can be archived (out of the dropdowns, its links closed, its data
kept, and back again) and deleted (every row of it in every table and its recordings' files, once
confirmed for the number of answers it has), from the CLI and the admin page (headless Chromium at
1280 and 390 px), each with an audit-log row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cli
from harness.demo import DEMO_ASSETS, demo_with_exchanges
from services.admin import progress as admin_progress
from services.participation import items
from services.participation.items import AccessError
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study import lifecycle
from storage import assignments, studies
from storage.usability import recordings
from tests.helpers.browser import ARTIFACTS

SIZES = [pytest.param((1280, 900), id="1280"), pytest.param((390, 844), id="390")]


def copy_as(tmp_path: Path, study_id: str) -> Path:
    folder = demo_with_exchanges(tmp_path / study_id, keep_references=True)
    toml = folder / "study.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('id = "demo"', f'id = "{study_id}"', 1), encoding="utf-8")
    return folder


def piloted(database, tmp_path, study_id: str) -> tuple[object, list[Path]]:
    """A study with a sender, one recording (its two files on disk) and one submitted item."""
    import_study(database, copy_as(tmp_path, study_id))
    (s,) = add_participants(database, study_id, "sender", 1, "USW", "Woman")
    a = assignments.open_assignments(database, s.id)[0]
    files = [tmp_path / f"{study_id}-{n}.wav" for n in ("orig", "16k")]
    for f in files:
        f.write_bytes(b"RIFF")
    with database.write() as w:
        recordings.insert_recording(w, a["id"], a["exchange_id"], f"sha-{study_id}", *map(str, files), 3.0)
        w.execute("UPDATE assignments SET status = 'done' WHERE id = ?", [a["id"]])
    return s, files


def study_rows(database, study_id: str) -> dict[str, int]:
    """Rows that name the study, in every table with a study_id column."""
    out = {}
    for (t,) in database.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        cols = {c[1] for c in database.db.execute(f"PRAGMA table_info({t})")}
        if "study_id" in cols:
            out[t] = database.scalar(f"SELECT COUNT(*) FROM {t} WHERE study_id = ?", [study_id])
    return {t: n for t, n in out.items() if n}


def test_archive_hides_the_study_closes_its_links_and_keeps_its_data(database, tmp_path):
    sender, _ = piloted(database, tmp_path, "pilot")
    kept = study_rows(database, "pilot")
    said = lifecycle.archive(database, "pilot", "admin@test")
    assert "archived" in said
    assert [s["id"] for s in studies.list_studies(database)] == []
    assert admin_progress.study_choices(database) == []
    assert admin_progress.study_choices(database, archived=True)[0][0].endswith("[archived]")
    with pytest.raises(AccessError, match="closed"):
        items.get_view(database, sender.token, "record")
    assert study_rows(database, "pilot") == kept
    lifecycle.unarchive(database, "pilot", "admin@test")
    assert items.get_view(database, sender.token, "record").status == "item"
    actions = [r["action"] for r in database.query("SELECT action FROM events WHERE entity = 'study' ORDER BY id")]
    assert actions[-2:] == ["archive", "unarchive"]


def test_delete_asks_for_the_count_and_leaves_no_row_or_file(database, tmp_path):
    piloted(database, tmp_path, "keep")
    keep_before = study_rows(database, "keep")
    _, files = piloted(database, tmp_path, "pilot")
    question, n = lifecycle.deletion_question(database, "pilot")
    assert n == 1 and "'pilot'" in question and "1 submitted answer from 1 participant" in question
    with pytest.raises(lifecycle.LifecycleError, match="confirm the deletion for 1"):
        lifecycle.delete(database, "pilot", "admin@test", 0)
    assert study_rows(database, "pilot")
    said = lifecycle.delete(database, "pilot", "admin@test", n)
    assert "deleted" in said and "2 recording files" in said
    assert study_rows(database, "pilot") == {} and studies.get_study(database, "pilot") is None
    assert not any(f.exists() for f in files)
    # nothing left pointing at a deleted row, in any table; the other study untouched
    assert database.db.execute("PRAGMA foreign_key_check").fetchall() == []
    for t in ("recordings", "translations", "answers", "validations", "surveys", "da_judgments", "sd_ratings"):
        linked = database.scalar(
            f"SELECT COUNT(*) FROM {t} x JOIN exchanges e ON e.id = x.exchange_id WHERE e.study_id = 'pilot'"
            if t not in ("da_judgments", "sd_ratings")
            else f"SELECT COUNT(*) FROM {t} x JOIN assignments a ON a.id = x.assignment_id WHERE a.study_id = 'pilot'"
        )
        assert linked == 0, t
    assert database.scalar("SELECT COUNT(*) FROM recordings") == 1
    assert study_rows(database, "keep") == keep_before
    event = database.one("SELECT actor, detail FROM events WHERE action = 'delete' AND entity_id = 'pilot'")
    assert event["actor"] == "admin@test" and '"answers": 1' in event["detail"]


def test_the_cli_archives_and_deletes_only_with_yes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRADLAB_DB", str(tmp_path / "cli.db"))
    monkeypatch.setenv("TRADLAB_MEDIA", str(tmp_path / "media"))
    folder = tmp_path / "demo"
    shutil.copytree(DEMO_ASSETS, folder)
    assert cli.main(["import", str(folder)]) == 0
    assert cli.main(["study", "archive", "demo"]) == 0
    assert cli.main(["study", "archive", "demo"]) == 2
    assert cli.main(["study", "unarchive", "demo"]) == 0
    capsys.readouterr()
    assert cli.main(["study", "delete", "demo"]) == 2
    err = capsys.readouterr().err
    assert "Delete study 'demo'" in err and "0 submitted answers" in err and "--yes" in err
    assert cli.main(["study", "delete", "demo", "--yes"]) == 0
    assert "Study 'demo' is deleted" in capsys.readouterr().out
    assert cli.main(["study", "delete", "demo", "--yes"]) == 2


@pytest.mark.parametrize("size", SIZES)
def test_the_admin_deletes_a_study_after_naming_it_and_its_answers(app_server, browser, tmp_path, size):
    w, h = size
    sid = f"scratch{w}"
    assert app_server.setup_cli("import", str(copy_as(tmp_path, sid))).returncode == 0
    ctx = browser.new_context(viewport={"width": w, "height": h}, is_mobile=w < 600, has_touch=w < 600)
    page = ctx.new_page()
    try:
        page.goto(app_server.admin_url)
        picker = page.locator("#admin-bar input").first
        picker.wait_for(timeout=30000)
        picker.click()
        page.get_by_role("option", name=f"({sid})").click()
        page.get_by_text("Archive or delete the study", exact=True).click()
        page.locator("#study-delete").click()
        yes = page.locator("#delete-yes")
        yes.wait_for(state="visible", timeout=15000)
        assert f"Yes, delete study {sid} (0 answers)" in yes.inner_text()
        assert f"Delete study '{sid}'" in page.locator("#delete-question").inner_text()
        assert app_server.rows("SELECT COUNT(*) FROM studies WHERE id = ?", (sid,))[0][0] == 1  # asked, not done
        yes.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"study-delete-confirm-{w}.png"), full_page=False)
        box = yes.bounding_box()
        assert box["x"] + box["width"] <= w
        yes.click()
        page.locator("#lifecycle-msg").get_by_text(f"Study '{sid}' is deleted").wait_for(timeout=15000)
        assert app_server.rows("SELECT COUNT(*) FROM studies WHERE id = ?", (sid,))[0][0] == 0
        assert app_server.rows("SELECT COUNT(*) FROM starters WHERE study_id = ?", (sid,))[0][0] == 0
    finally:
        ctx.close()
