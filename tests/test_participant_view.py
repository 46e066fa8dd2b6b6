"""The team's page of one participant (services/admin/participant_view.py, issue 28 point 5): found
by id, link token, pasted link or Prolific id within the study; their status and every item with
its timing and their answer in words, checked against the rows the participant's submits stored
(read here with plain SQL, not through the module's queries)."""

from __future__ import annotations

import re

import pytest

from services.admin import participant_view as pv
from services.admin import participants as pa
from services.admin.participants import ParticipantAdminError
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants, link
from services.setup.importer import import_study
from storage import consent as consent_store
from storage import participants as pstore
from tests.helpers.workflow import rate_imported_exchanges, record_all, study_folder, wav

ACTOR = "admin@test"


@pytest.fixture
def lab(demo_db, tmp_path):
    """The demo study with a sender who recorded everything, and a rater, receiver and validator
    who went through the imported exchanges; a DA rater and an SD participant who did part."""
    db, media = demo_db, tmp_path / "media"
    (sender,) = add_participants(db, "demo", "sender", 1, "USW", "Woman")
    record_all(db, sender, media, wav(tmp_path))
    (rater,) = add_participants(db, "demo", "rater", 1, external_ids=["PROLIFIC-R1"])
    (receiver,) = add_participants(db, "demo", "receiver", 1)
    (validator,) = add_participants(db, "demo", "validator", 1)
    informed = rate_imported_exchanges(
        db, rater, receiver, validator, mark=lambda idx: "correct" if idx % 2 else "incorrect"
    )
    assert informed
    (da,) = add_participants(db, "demo", "da", 1)
    for score in (10, 35.5, 90):
        v = get_view(db, da.token, "da", media_dir=media)
        submit(db, da.token, "da", v.item_id, {"score": score}, media_dir=media)
    (sd,) = add_participants(db, "demo", "sd", 1)
    while (v := get_view(db, sd.token, "sd")).content.get("kind") in ("welcome", "example"):
        submit(db, sd.token, "sd", v.item_id, {"values": {}})
    submit(db, sd.token, "sd", v.item_id, {"values": {p["slot"]: 6 for p in v.content["pairs"]}})
    return {
        "db": db,
        "sender": sender,
        "rater": rater,
        "receiver": receiver,
        "validator": validator,
        "da": da,
        "sd": sd,
    }


def stored(db, pid):
    """The participant's assignments as stored, by id."""
    return {r["id"]: r for r in db.query("SELECT * FROM assignments WHERE participant_id = ?", [pid])}


def check_timings(db, view):
    """Every item of the view is one of the participant's assignments with its own timings
    (to the second) and active seconds (to a tenth)."""
    rows = stored(db, view.id)
    assert sorted(it["assignment_id"] for it in view.items) == sorted(rows)
    for it in view.items:
        a = rows[it["assignment_id"]]
        assert it["status"] == a["status"] and it["item_id"] == a["item_id"]
        assert it["submitted"] == (a["submitted_at"] or "")[:19].replace("T", " ")
        assert it["first_shown"] == (a["first_shown_at"] or "")[:19].replace("T", " ")
        assert it["active_seconds"] == (None if a["active_seconds"] is None else round(a["active_seconds"], 1))
    done = [it["submitted"] for it in view.items if it["status"] == "done"]
    assert done == sorted(done) and all(it["status"] != "done" for it in view.items[len(done) :])


def test_a_senders_page_lists_each_recording_with_its_qc_and_timing(lab):
    db, s = lab["db"], lab["sender"]
    view = pv.participant_view(db, "demo", s.id)
    assert (view.role, view.group, view.gender, view.found_by) == ("sender", "USW", "Woman", "id")
    check_timings(db, view)
    recs = {
        r["assignment_id"]: r
        for r in db.query(
            "SELECT r.* FROM recordings r JOIN assignments a ON a.id = r.assignment_id WHERE a.participant_id = ?",
            [s.id],
        )
    }
    records = [it for it in view.items if it["phase"] == "record"]
    assert records and len(records) == len(recs)
    for it in records:
        r = recs[it["assignment_id"]]
        assert it["answer"].startswith(f"recording {r['duration_s']:.1f} s, QC passed (WER {r['wer']:.2f})")
        ex = db.one("SELECT * FROM exchanges WHERE id = ?", [int(it["item_id"])])
        assert it["what"] == f"exchange {ex['id']}: starter {ex['starter_id']}, system {ex['system_id']}"
    table = view.items_table()
    assert list(table.columns) == pv.ITEM_COLUMNS and len(table) == len(view.items)
    assert view.link == s.token[:6] + "…" and s.token not in table.to_csv()  # never the whole token


def test_a_receivers_page_shows_every_answer_question_by_question(lab):
    db, r = lab["db"], lab["receiver"]
    view = pv.participant_view(db, "demo", r.id)
    check_timings(db, view)
    received = [it for it in view.items if it["phase"] == "receive" and it["status"] == "done"]
    assert received
    for it in received:
        answers = db.query(
            "SELECT question_idx, text FROM answers WHERE assignment_id = ? ORDER BY question_idx",
            [it["assignment_id"]],
        )
        assert it["answer"] == "; ".join(f"Q{a['question_idx']}: {a['text']}" for a in answers)
        assert len(answers) >= 1


def test_a_validators_page_shows_the_score_qa_and_each_mark(lab):
    db, v = lab["db"], lab["validator"]
    view = pv.participant_view(db, "demo", v.id)
    check_timings(db, view)
    validated = [it for it in view.items if it["phase"] == "validate" and it["status"] == "done"]
    assert validated
    for it in validated:
        row = db.one("SELECT * FROM validations WHERE assignment_id = ?", [it["assignment_id"]])
        marks = db.query(
            "SELECT question_idx, correct FROM validation_marks WHERE validation_id = ? ORDER BY question_idx",
            [row["id"]],
        )
        # the marks given: odd questions correct, even ones not (the fixture's validator)
        assert [m["correct"] for m in marks] == [m["question_idx"] % 2 for m in marks]
        words = ", ".join(f"Q{m['question_idx']} {'correct' if m['correct'] else 'wrong'}" for m in marks)
        assert it["answer"] == f"translation 55/100; QA {row['qa_score']:.2f}; {words}"
        assert it["what"].startswith(
            f"answers of receiver item {row['receive_assignment_id']} on exchange {row['exchange_id']}"
        )


def test_a_raters_page_shows_both_surveys_in_the_third_person(lab):
    db, r = lab["db"], lab["rater"]
    view = pv.participant_view(db, "demo", "PROLIFIC-R1")  # their external id
    assert view.id == r.id and view.found_by == "external id"
    check_timings(db, view)
    by_phase = {}
    for it in view.items:
        by_phase.setdefault(it["phase"], set()).add(it["answer"])
    assert by_phase["survey_baseline"] == {"satisfaction 4, trust 4, reliance 5 (third person)"}
    assert by_phase["survey_informed"] == {"satisfaction 2, trust 3, reliance 2 (third person)"}


def test_da_and_sd_pages_show_scores_ratings_and_what_each_item_was(lab):
    db = lab["db"]
    view = pv.participant_view(db, "demo", lab["da"].id)
    check_timings(db, view)
    done = [it for it in view.items if it["status"] == "done"]
    assert [it["answer"] for it in done] == ["score 10", "score 35.5", "score 90"]
    for it in done:
        i = db.one(
            "SELECT i.type, i.pos, s.segment_id, s.system FROM da_hit_items i JOIN da_segments s "
            "ON s.id = i.segment_row WHERE i.id = ?",
            [int(it["item_id"])],
        )
        assert f"item {i['pos']} " in it["what"] and it["what"].endswith(
            f"{i['type']} item, segment {i['segment_id']}, system {i['system']}"
        )
    assert len(view.items) == db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ?", [lab["da"].id])
    sd = pv.participant_view(db, "demo", lab["sd"].id)
    check_timings(db, sd)
    (page,) = [it for it in sd.items if it["status"] == "done" and it["what"].startswith("sentence")]
    ratings = db.query(
        "SELECT pair_id, is_repeat, value FROM sd_ratings WHERE assignment_id = ? ORDER BY pair_id, is_repeat",
        [page["assignment_id"]],
    )
    assert ratings and page["answer"] == "; ".join(
        f"{r['pair_id']}{' (repeat)' if r['is_repeat'] else ''} {r['value']:+d}" for r in ratings
    )


def test_search_by_token_link_and_prolific_id_and_the_status_and_completion_code(lab):
    db, s = lab["db"], lab["sender"]
    for query, how in (
        (s.token, "token"),
        (link("https://lab.example", s.token), "link"),
        (f"https://lab.example/record/?t={s.token}&x=1", "link"),
        (f"  {s.id} ", "id"),
    ):
        view = pv.participant_view(db, "demo", query)
        assert (view.id, view.found_by) == (s.id, how)
    with db.write() as w:
        pstore.claim(w, lab["receiver"].id, "5f0c0ffee0000000000000aa", "PSTUDY", "SESSION")
    pid = "5f0c0ffee0000000000000aa"
    view = pv.participant_view(db, "demo", pid)
    assert (view.id, view.found_by, view.prolific_pid) == (lab["receiver"].id, "Prolific id", pid)
    # the receiver finished every part of the role: their page showed the completion code
    r = pv.participant_view(db, "demo", lab["receiver"].id)
    completed = db.scalar("SELECT completed_at FROM participants WHERE id = ?", [lab["receiver"].id])
    assert completed and r.status == "finished" and r.completion_shown_at == completed[:19].replace("T", " ")
    assert r.completion_code == "DEMO-2026" and r.consent == r.demographics == "not asked in this study"
    da = pv.participant_view(db, "demo", lab["da"].id)
    assert (da.status, da.completion_shown, da.counts()["done"]) == ("active", False, 3)
    pa.deactivate(db, "demo", lab["da"].id, ACTOR)
    assert pv.participant_view(db, "demo", lab["da"].id).status == "deactivated"
    with db.write() as w:
        consent_store.record(w, lab["da"].id, "demo", True, "hash")
    assert pv.participant_view(db, "demo", lab["da"].id).consent.startswith("agreed 20")
    (fresh,) = add_participants(db, "demo", "receiver", 1)
    assert pv.participant_view(db, "demo", fresh.id).status == "not started"


def test_not_found_other_study_and_ambiguous_are_refused_with_the_reason(lab, tmp_path):
    db = lab["db"]
    with pytest.raises(ParticipantAdminError, match="Pick a study"):
        pv.participant_view(db, "", 1)
    with pytest.raises(ParticipantAdminError, match="Type a participant id"):
        pv.participant_view(db, "demo", "  ")
    with pytest.raises(ParticipantAdminError, match="No participant of study 'demo' has the .* 'nobody'"):
        pv.participant_view(db, "demo", "nobody")
    with pytest.raises(ParticipantAdminError, match="No participant of study 'demo' has the link"):
        pv.participant_view(db, "demo", "https://lab.example/?t=not-a-token")
    with pytest.raises(ParticipantAdminError, match="No participant"):
        pv.participant_view(db, "demo", 99999)
    # another study's participant, by id and by token: named, not shown
    folder = study_folder(tmp_path, seed=3)
    toml = (folder / "study.toml").read_text()
    (folder / "study.toml").write_text(re.sub(r'^id = "demo"', 'id = "other"', toml, count=1, flags=re.M))
    import_study(db, folder)
    (stranger,) = add_participants(db, "other", "receiver", 1)
    for query in (stranger.id, stranger.token, link("https://lab.example", stranger.token)):
        with pytest.raises(ParticipantAdminError, match="is a participant of study 'other', not of 'demo'"):
            pv.participant_view(db, "demo", query)
    # one Prolific id holding two roles of the study: ambiguous, both named
    (da2,) = add_participants(db, "demo", "da", 1, external_ids=["PROLIFIC-R1"])
    with pytest.raises(
        ParticipantAdminError,
        match=rf"matches 2 participants.*participant {lab['rater'].id} "
        rf"\(rater.*participant {da2.id} \(da",
    ):
        pv.participant_view(db, "demo", "PROLIFIC-R1")


def test_every_query_of_the_page_is_index_backed(demo_db):
    """One query per kind, each reaching its rows through indexes from the participant's id: the
    plan SQLite makes has no SCAN of a table (a study-sized read on every search)."""
    import inspect

    from storage import participant_view as store
    from storage.da import participant_view as da_view
    from storage.sd import participant_view as sd_view
    from storage.usability import participant_view as usability_view

    class Spy:
        def query(self, sql, params=()):
            self.sql, self.params = sql, params
            return []

    # the shared module's assignments, and each protocol's answers
    kinds = [
        fn
        for module in (store, usability_view, da_view, sd_view)
        for _, fn in inspect.getmembers(module, inspect.isfunction)
        if fn.__module__ == module.__name__
    ]
    assert len(kinds) == 7
    for fn in kinds:
        spy = Spy()
        fn(spy, 1)
        plan = [r["detail"] for r in demo_db.query("EXPLAIN QUERY PLAN " + spy.sql, spy.params)]
        assert not [d for d in plan if d.startswith("SCAN")], (fn.__name__, plan)
