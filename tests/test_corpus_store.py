"""Issue 52, point 1: each protocol stores, clears and counts its own corpus (Protocol.store_corpus,
count_corpus); the study files and the shared import name none of it. A study's summary lists
its own protocols' counts only; a re-import that drops a protocol drops its corpus; a study
imported before the corpora moved into bundle.corpus still updates in place (storage/migrations.py
m020 renames its stored corpus parts as services/study/lifecycle.corpus_parts names them)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from harness.demo import demo_with_exchanges
from services.admin.progress import collected_counts
from services.common import protocols
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study, prepared
from services.study import lifecycle
from storage import migrations, open_database

ESA_EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "esa"
SD_TABLES = ("sd_sentences", "sd_pairs")


@pytest.fixture
def database(tmp_path):
    return open_database(tmp_path / "corpus.db", schemas=protocols.schemas())


def edit(folder: Path, old: str, new: str) -> None:
    path = folder / "study.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def rows(database, table: str, sid: str) -> int:
    return database.scalar(f"SELECT COUNT(*) FROM {table} WHERE study_id = ?", [sid])


def test_a_study_counts_only_what_its_protocols_stored(database, tmp_path):
    folder = shutil.copytree(ESA_EXAMPLE, tmp_path / "esa")
    res = import_study(database, folder)
    assert list(res.counts) == ["esa_segments", "esa_hits"]  # no [[systems]]: not said
    assert res.counts["esa_segments"] == rows(database, "esa_segments", "esa-example") > 0
    demo = import_study(database, demo_with_exchanges(tmp_path / "demo"))
    assert set(demo.counts) >= {"starters", "questions", "exchanges", "da_segments", "da_hits", "sd_pairs"}
    assert "esa_segments" not in demo.counts
    assert demo.counts["exchanges"] == 12 and demo.counts["starters"] == rows(database, "starters", "demo")


def test_the_progress_tab_counts_what_the_studys_protocols_collected(database, tmp_path):
    """Protocol.count_collected: an ESA study's answers, and nothing of a protocol it does not list."""
    import_study(database, shutil.copytree(ESA_EXAMPLE, tmp_path / "esa"))
    (p,) = add_participants(database, "esa-example", "esa", 1)
    for _ in range(2):
        v = get_view(database, p.token, "esa")
        submit(database, p.token, "esa", v.item_id, {"spans": "[]", "score": 70})
    got = collected_counts(database, "esa-example")
    assert dict(zip(got["what"], got["rows"])) == {"ESA answers": 2}
    import_study(database, demo_with_exchanges(tmp_path / "demo"))
    demo = dict(zip(*collected_counts(database, "demo").to_dict("list").values()))
    assert {"recordings", "DA judgments", "SD ratings"} <= set(demo) and "ESA answers" not in demo


def test_a_reimport_that_drops_a_protocol_drops_its_corpus(database, tmp_path):
    folder = demo_with_exchanges(tmp_path / "demo")
    first = import_study(database, folder)
    assert first.counts["sd_sentences"] == rows(database, "sd_sentences", "demo") > 0
    text = (folder / "study.toml").read_text(encoding="utf-8")
    head, _, rest = text.partition("\n[sd]\n")
    tail = rest[rest.index("\n[") :] if "\n[" in rest else ""  # the [sd] section cut out
    (folder / "study.toml").write_text(head + tail, encoding="utf-8")
    edit(folder, 'protocols = ["usability", "da", "sd"]', 'protocols = ["usability", "da"]')
    again = import_study(database, folder)
    assert again.status == "updated"
    assert all(rows(database, t, "demo") == 0 for t in SD_TABLES)
    assert "sd_sentences" not in again.counts
    # the protocols it still lists were stored anew, once
    assert again.counts["starters"] == first.counts["starters"] == rows(database, "starters", "demo")
    assert again.counts["exchanges"] == 12 == database.scalar("SELECT COUNT(*) FROM exchanges WHERE study_id = 'demo'")
    assert again.counts["da_hits"] == first.counts["da_hits"] == rows(database, "da_hits", "demo")


LEGACY = {new: old for old, new in migrations._CORPUS_PART_NAMES.items()}
LEGACY_PARTS = (
    "starters",
    "questions",
    "exchanges",
    "references",
    "da_segments",
    "da_hits",
    "sd_sentences",
    "sd_pairs",
)


def legacy_hashes(bundle) -> dict[str, str]:
    """The corpus parts as the code before m020 stored them: every built-in part by its old name,
    an empty one hashed too (sha256 of "[]")."""
    new = lifecycle.corpus_hashes(bundle)
    old = {LEGACY.get(k, k): v for k, v in new.items()}
    empty = hashlib.sha256(b"[]").hexdigest()
    return {**{p: empty for p in LEGACY_PARTS}, **old}


def test_a_study_imported_before_still_changes_settings_in_place(database, tmp_path):
    folder = demo_with_exchanges(tmp_path / "demo")  # no references file: an empty part
    import_study(database, folder)
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    stored = legacy_hashes(prepared(folder))
    assert stored["references"] == hashlib.sha256(b"[]").hexdigest() and "starters" in stored
    with database.write() as db:
        db.execute("UPDATE studies SET corpus_hash = ? WHERE id = 'demo'", [json.dumps(stored)])
        migrations.m020_corpus_parts_by_protocol(db)
    migrated = json.loads(database.scalar("SELECT corpus_hash FROM studies WHERE id = 'demo'"))
    assert "usability.starters" in migrated and "starters" not in migrated
    assert "usability.references" not in migrated  # empty: no part
    edit(folder, 'completion_code = "DEMO-2026"', 'completion_code = "NEW-2026"')
    res = import_study(database, folder)
    assert res.status == "updated in place" and res.settings_changed == ["study.completion_code"]
    # without the migration the same study would be refused: every part looks changed
    with database.write() as db:
        db.execute("UPDATE studies SET corpus_hash = ? WHERE id = 'demo'", [json.dumps(stored)])
    assert lifecycle.changed_parts(json.dumps(stored), prepared(folder))
