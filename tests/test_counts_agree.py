"""Issue 51, point 8: counts that agree. The admin dashboard, the participants table and the
participant's own page count an item as done, open or waiting by one definition
(services/participation/progress.py): the SD page's instruction pages are not progress anywhere,
a place in the work pool that no one has taken yet is part of its phase's total, a dropped-out
sender is "dropped out" (not "excluded"), and the comprehension questions a study folder brings
are accepted drafts, in the export, from the import on."""

from __future__ import annotations

from services.admin.dashboard import dashboard
from services.admin.participant_view import participant_view
from services.admin.participants import participants_page
from services.admin.usability_progress import exchanges_table
from services.participation.items import get_view
from services.participation.submissions import submit
from services.questions.review import starter_table
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import build_tables
from services.usability import dropouts
from storage import participants as participant_store
from storage.usability import corpus as usability_corpus
from tabs.admin_dashboard import render
from tests.helpers.sql_trace import Trace, scans
from tests.helpers.workflow import DEMO, wav


def _row(d, role: str, phase: str) -> dict:
    (row,) = [r for r in d.progress if (r["role"], r["phase"]) == (role, phase)]
    return row


def _answer_sd(db, token):
    v = get_view(db, token, "sd")
    while v.status == "item":
        pairs = v.content.get("pairs") or []
        v = submit(db, token, "sd", v.item_id, {"values": {p["slot"]: 4 for p in pairs}} if pairs else {}).next
    return v


def test_the_sd_page_the_dashboard_and_the_participants_table_count_the_same_items(database):
    db = database
    import_study(db, DEMO)
    (p,) = add_participants(db, "demo", "sd", 1)
    first = get_view(db, p.token, "sd")
    row = _row(dashboard(db, "demo"), "sd", "sd")
    # before any answer: the page's "0 / 12" is the dashboard's (the welcome and example pages are
    # instructions, not items)
    assert (row["done"], row["done"] + row["open"] + row.get("waiting", 0)) == (first.done, first.total) == (0, 12)
    with Trace(db) as t:  # the participant's answers read nothing study-sized
        last = _answer_sd(db, p.token)
    assert last.status == "complete" and last.progress == "12 / 12"
    assert not scans(db, t.sql)
    d = dashboard(db, "demo")
    row = _row(d, "sd", "sd")
    assert (row["done"], row["open"], row.get("waiting", 0)) == (12, 0, 0)
    assert '<td class="num">12 / 12</td>' in render(d)
    # the participants table's done column is the page's done
    people = participants_page(db, "demo", role="sd").rows
    assert people["done"].tolist() == [12] and people["open"].tolist() == [0]


def _sender_who_drops_out(db, tmp_path, recorded: int = 2):
    """A USW woman records `recorded` of her 4 starters, then drops out: the rest go to the pool."""
    import_study(db, DEMO)
    (s,) = add_participants(db, "demo", "sender", 1, "USW", "Woman")
    audio = wav(tmp_path)
    for _ in range(recorded):
        v = get_view(db, s.token, "record")
        submit(db, s.token, "record", v.item_id, {"audio": str(audio)}, media_dir=tmp_path / "media")
    dropouts.drop_out(db, s.id, "admin", "did not come back")
    return s


def test_record_progress_counts_the_places_waiting_for_a_new_sender(database, tmp_path):
    db = database
    _sender_who_drops_out(db, tmp_path)
    d = dashboard(db, "demo")
    row = _row(d, "sender", "record")
    # 2 recorded, 2 withdrawn into the pool for a new sender: 2 of 4, not "2 / 2 100%"
    assert (row["done"], row["open"], row.get("waiting", 0)) == (2, 0, 2)
    assert any(w.startswith("2 record places (2 items) wait") for w in d.waiting)
    html = render(d)
    assert '<td class="num">2 / 4</td>' in html and "<b>50%</b>" in html and "100%" not in html
    # the page says what "total" holds
    assert "2 not taken yet" in html


def test_a_dropped_out_sender_is_dropped_out_not_excluded(database, tmp_path):
    db = database
    s = _sender_who_drops_out(db, tmp_path)
    (other,) = add_participants(db, "demo", "sender", 1, "USB", "Man")
    with db.write() as w:  # excluded by the team (e.g. too many rejected recordings)
        participant_store.exclude(w, other.id, "too many rejected recordings")
    people = participants_page(db, "demo", role="sender").rows.set_index("id")["status"]
    assert people.to_dict() == {s.id: "dropped out", other.id: "excluded"}
    assert participants_page(db, "demo", status="dropped out").rows["id"].tolist() == [s.id]
    assert participants_page(db, "demo", status="excluded").rows["id"].tolist() == [other.id]
    assert participants_page(db, "demo", status="deactivated").total == 0
    phases = set(exchanges_table(db, "demo")["phase"])
    assert "withdrawn (sender dropped out)" in phases
    assert not any("excluded" in ph for ph in phases)
    assert participant_view(db, "demo", str(s.id)).status == "dropped out"
    exported = [r["status"] for r in build_tables(db, "demo", tmp_path / "media")[0]["participants"]]
    assert sorted(exported) == ["dropped_out", "excluded"]


def test_imported_questions_are_accepted_and_exported_from_the_import(database, tmp_path):
    db = database
    import_study(db, DEMO)
    in_folder = sum(len(usability_corpus.questions(db, "demo", s["id"])) for s in usability_corpus.starters(db, "demo"))
    assert in_folder > 0
    # no starter opened in the Questions tab: the table already counts them as accepted
    table = starter_table(db, "demo", page_size=1000)
    assert (table["accepted"] == table["in use"]).all() and table["accepted"].sum() == in_folder
    drafts = build_tables(db, "demo", tmp_path / "media")[0]["question_drafts"]
    assert len(drafts) == in_folder
    assert {(r["status"], r["origin"]) for r in drafts} == {("accepted", "imported")}
