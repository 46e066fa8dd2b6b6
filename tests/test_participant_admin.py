"""The designer's participant management (services/admin/participants.py) and the paged admin
tables, on the demo study in a temporary database."""

from __future__ import annotations

import csv
import time

import pytest

from services.admin import participants as pa
from services.admin import progress as admin_progress
from services.admin import usability_progress, usability_review
from services.admin.participants import ParticipantAdminError
from services.common import paging
from services.da import campaign as da_campaign
from services.participation.items import AccessError, get_view, participant_for_token
from services.setup.enrolment import ParticipantError, add_participants
from storage import assignments, jobs
from storage import participants as pstore
from storage.da import hits
from storage.usability import exchanges, pool, recordings

ACTOR = "admin@test"


def events(db, action):
    return db.query("SELECT entity_id, detail FROM events WHERE action = ? ORDER BY id", [action])


def open_count(db, pid):
    return db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND status = 'open'", [pid])


def finish_one(db, pid) -> int:
    """Marks the participant's first open item done (what a submission would do to the queue)."""
    a = db.one("SELECT id FROM assignments WHERE participant_id = ? AND status = 'open' ORDER BY id", [pid])
    with db.write() as w:
        assignments.mark_done(w, a["id"], 12.0)
    return a["id"]


def take(db, token, tab="receiver"):
    """What a participant's page does: shows the next item, taking one from the pool."""
    return get_view(db, token, tab)


def work_through(db, p, tab="receiver") -> list[str]:
    """A participant takes and finishes items until none is left for them; their item ids."""
    seen = []
    while (v := take(db, p.token, tab)).status == "item":
        seen.append(v.item_id)
        finish_one(db, p.id)
    return seen


def test_a_deactivated_link_is_refused_with_its_message_and_comes_back(demo_db):
    db = demo_db
    (r,) = add_participants(db, "demo", "receiver", 1)
    assert take(db, r.token).status == "item"
    msg = pa.deactivate(db, "demo", r.id, ACTOR)
    assert "deactivated" in msg
    with pytest.raises(AccessError, match="This link has been deactivated"):
        participant_for_token(db, r.token)
    with pytest.raises(ParticipantAdminError, match="already deactivated"):
        pa.deactivate(db, "demo", r.id, ACTOR)
    assert open_count(db, r.id) == 1  # the queue is kept
    pa.reactivate(db, "demo", str(r.id), ACTOR)  # a form field may send the id as text
    assert participant_for_token(db, r.token)["id"] == r.id
    with pytest.raises(ParticipantAdminError, match="already active"):
        pa.reactivate(db, "demo", r.id, ACTOR)
    assert [e["entity_id"] for e in events(db, "deactivate")] == [str(r.id)]
    assert [e["entity_id"] for e in events(db, "reactivate")] == [str(r.id)]


def test_an_exclusion_is_not_undone_by_reactivating(demo_db):
    (r,) = add_participants(demo_db, "demo", "receiver", 1)
    with demo_db.write() as w:
        pstore.exclude(w, r.id, "more than 3 rejected recordings")
    with pytest.raises(ParticipantAdminError, match="excluded .*not undone"):
        pa.reactivate(demo_db, "demo", r.id, ACTOR)
    assert pstore.get(demo_db, r.id)["active"] == 0


@pytest.mark.parametrize(
    "pid, study, message",
    [
        (None, "demo", "whole number"),
        ("abc", "demo", "whole number"),
        (2.5, "demo", "whole number"),
        (99999, "demo", "no participant 99999"),
        ("OWN", "other", "belongs to study 'demo', not 'other'"),
    ],
)
def test_a_bad_participant_id_is_named(demo_db, pid, study, message):
    (r,) = add_participants(demo_db, "demo", "receiver", 1)
    with pytest.raises(ParticipantAdminError, match=message):
        pa.deactivate(demo_db, study, r.id if pid == "OWN" else pid, ACTOR)
    assert pstore.get(demo_db, r.id)["active"] == 1


def test_a_new_link_replaces_the_old_one_and_keeps_the_progress(demo_db):
    db = demo_db
    (r,) = add_participants(db, "demo", "receiver", 1)
    take(db, r.token)
    finish_one(db, r.id)
    take(db, r.token)
    before = assignments.counts(db, r.id, ("receive",))
    token = pa.regenerate_link(db, "demo", r.id, ACTOR)
    assert token != r.token and len(token) >= 24
    with pytest.raises(AccessError, match="not valid"):
        participant_for_token(db, r.token)
    assert participant_for_token(db, token)["id"] == r.id
    assert assignments.counts(db, r.id, ("receive",)) == before == {"open": 1, "done": 1}
    assert pa.full_link(db, "demo", r.id, "https://x.org/") == f"https://x.org/?t={token}"
    [e] = events(db, "new_link")
    assert e["entity_id"] == str(r.id) and token not in (e["detail"] or "")  # the audit log is exported


def test_reassigning_returns_open_receiver_items_to_the_pool_and_keeps_done_ones(demo_db):
    db = demo_db
    a, b = add_participants(db, "demo", "receiver", 2)  # 12 imported exchanges, 6 places each
    take(db, a.token)
    done_id = finish_one(db, a.id)
    item = take(db, a.token).item_id
    with pytest.raises(ParticipantAdminError, match="active: deactivate them first"):
        pa.reassign_open_items(db, "demo", a.id, ACTOR)
    pa.deactivate(db, "demo", a.id, ACTOR)
    assert pool.entry(db, "demo", "receive", item)["need"] == 0
    out = pa.reassign_open_items(db, "demo", a.id, ACTOR)
    assert out.waiting == [{"phase": "receive", "item": item}] and not out.moved and not out.dropped
    assert "went back to the pool" in out.summary()
    assert pool.entry(db, "demo", "receive", item)["need"] == 1
    assert open_count(db, a.id) == 0
    assert db.one("SELECT status FROM assignments WHERE id = ?", [done_id])["status"] == "done"
    assert assignments.counts(db, a.id, ("receive",)) == {"open": 0, "done": 1}
    assert len(events(db, "reassign")) == 1 and len(events(db, "reassign_open_items")) == 1
    # the other receivers take every place, the returned one included: b 6, a newcomer the last 5
    (c,) = add_participants(db, "demo", "receiver", 1)
    assert len(work_through(db, b)) == 6 and len(work_through(db, c)) == 5
    assert db.scalar("SELECT SUM(need) FROM work_pool WHERE phase = 'receive'") == 0
    assert (
        db.scalar(
            "SELECT COUNT(*) FROM assignments WHERE phase = 'receive' AND item_id = ? AND status = 'done'", [item]
        )
        == 1
    )


def test_a_reactivated_participant_does_not_get_back_what_was_withdrawn(demo_db):
    """Withdrawn rows stay (the assignments' history); handing such an item back to the same
    person would be a no-op insert counted as filled, and the item would never get a holder."""
    db = demo_db
    (a,) = add_participants(db, "demo", "receiver", 1)
    withdrawn = take(db, a.token).item_id
    pa.deactivate(db, "demo", a.id, ACTOR)
    assert len(pa.reassign_open_items(db, "demo", a.id, ACTOR).waiting) == 1
    pa.reactivate(db, "demo", a.id, ACTOR)
    mine = work_through(db, a)
    assert len(mine) == 6 and withdrawn not in mine
    (c,) = add_participants(db, "demo", "receiver", 1)
    assert withdrawn in work_through(db, c)  # the 6 left, the withdrawn one among them


def test_a_senders_recording_items_go_to_a_sender_of_the_same_cell(demo_db):
    db = demo_db
    a, b = add_participants(db, "demo", "sender", 2, "USW", "Woman")
    (other,) = add_participants(db, "demo", "sender", 1, "USB", "Man")
    pa.deactivate(db, "demo", a.id, ACTOR)
    out = pa.reassign_open_items(db, "demo", a.id, ACTOR)
    assert len(out.moved) == 4 and not out.dropped and not out.waiting
    for m in out.moved:
        assert m["to"] == b.id
        new = exchanges.exchange(db, m["new_exchange"])
        old = exchanges.exchange(db, m["exchange"])
        assert new["sender_id"] == b.id
        assert (new["starter_id"], new["system_id"]) == (old["starter_id"], old["system_id"])
    assert assignments.counts(db, other.id, ("record",)) == {"open": 4, "done": 0}  # never another cell
    assert open_count(db, a.id) == 0


def test_recordings_nobody_of_the_cell_can_take_wait_for_its_next_sender(demo_db):
    db = demo_db
    (a,) = add_participants(db, "demo", "sender", 1, "USW", "Woman")
    (other,) = add_participants(db, "demo", "sender", 1, "USB", "Man")
    pa.deactivate(db, "demo", a.id, ACTOR)
    out = pa.reassign_open_items(db, "demo", a.id, ACTOR)
    assert not out.moved and not out.dropped and [w["cell"] for w in out.waiting] == ["USW|Woman"] * 4
    assert "next sender of the same group and gender" in out.summary()
    assert assignments.counts(db, other.id, ("record",)) == {"open": 4, "done": 0}
    (late,) = add_participants(db, "demo", "sender", 1, "USB", "Man")  # another cell: its own 4
    assert assignments.counts(db, late.id, ("record",)) == {"open": 4, "done": 0}
    (newcomer,) = add_participants(db, "demo", "sender", 1, "USW", "Woman")

    def pairs(pid):
        return {
            (e["starter_id"], e["system_id"])
            for e in db.query("SELECT starter_id, system_id FROM exchanges WHERE sender_id = ?", [pid])
        }

    # the newcomer's own design block plus a's four (none of whose starters is in that block)
    assert pairs(a.id) <= pairs(newcomer.id) and len(pairs(newcomer.id)) == 8
    assert assignments.counts(db, newcomer.id, ("record",)) == {"open": 8, "done": 0}
    assert db.scalar("SELECT SUM(need) FROM work_pool WHERE phase = 'record'") == 0


def test_a_da_raters_unfinished_hit_goes_whole_to_the_next_da_rater(demo_db):
    db = demo_db

    def hit_of(pid):
        return db.one(
            "SELECT json_extract(meta, '$.hit_id') AS h, json_extract(meta, '$.modality') AS m "
            "FROM assignments WHERE participant_id = ? AND phase = 'da' LIMIT 1",
            [pid],
        )

    first, audio, second = add_participants(db, "demo", "da", 3)  # text HIT 1, audio HIT 1, text HIT 2
    assert hit_of(first.id)["m"] == hit_of(second.id)["m"] == "text" and hit_of(first.id)["h"] != hit_of(second.id)["h"]
    assert hit_of(audio.id)["m"] == "audio"
    finish_one(db, first.id)
    pa.deactivate(db, "demo", first.id, ACTOR)
    out = pa.reassign_open_items(db, "demo", first.id, ACTOR)
    assert not out.moved and len(out.dropped) == 23 and "DA HIT" in out.summary()
    (newcomer,) = add_participants(db, "demo", "da", 1)
    assert hit_of(newcomer.id) == hit_of(first.id)  # the same HIT, same modality, in full
    assert assignments.counts(db, newcomer.id, ("da",)) == {"open": 24, "done": 0}
    assert assignments.counts(db, first.id, ("da",)) == {"open": 0, "done": 1}


def test_hit_loads_read_one_row_per_rater_and_agree_with_the_whole_phase(demo_db):
    """A new DA rater's HIT is the least-held one: the count reads each rater's first item of
    their HIT (an index lookup) instead of every DA assignment of the study, and gives what
    counting every row gives (the old query, kept here as the independent computation)."""
    db = demo_db
    raters = add_participants(db, "demo", "da", 7)
    finish_one(db, raters[0].id)
    for r in (raters[0], raters[3]):  # one withdrawn part-way, one before any item
        pa.deactivate(db, "demo", r.id, ACTOR)
        pa.reassign_open_items(db, "demo", r.id, ACTOR)
    add_participants(db, "demo", "da", 2)
    whole = (
        "FROM assignments WHERE study_id = ? AND phase = 'da' AND status != 'withdrawn' AND participant_id "
        "NOT IN (SELECT participant_id FROM assignments WHERE study_id = ? AND phase = 'da' "
        "AND status = 'withdrawn')"
    )
    loads = {
        (r["hit"], r["m"], r["run"]): r["n"]
        for r in db.query(
            "SELECT json_extract(meta, '$.hit_id') AS hit, json_extract(meta, '$.modality') AS m, "
            f"COALESCE(json_extract(meta, '$.run'), 1) AS run, COUNT(DISTINCT participant_id) AS n {whole} "
            "GROUP BY hit, m, run",
            ["demo", "demo"],
        )
    }
    modalities = {
        r["m"]: r["n"]
        for r in db.query(
            f"SELECT json_extract(meta, '$.modality') AS m, COUNT(DISTINCT participant_id) AS n {whole} GROUP BY m",
            ["demo", "demo"],
        )
    }
    assert hits.da_hit_loads(db, "demo") == loads and sum(loads.values()) == 7
    assert da_campaign.modality_counts(hits.da_hit_loads(db, "demo")) == modalities
    plan = [
        r[-1]
        for r in db.db.conn.execute(
            f"EXPLAIN QUERY PLAN SELECT COUNT(*) FROM ({hits._DA_HOLDERS})", ["demo"]
        ).fetchall()
    ]
    assert not [p for p in plan if p.startswith("SCAN") or p.endswith("(study_id=? AND phase=?)")], plan
    assert "SEARCH a USING INDEX assignments_item (study_id=? AND phase=? AND item_id=?)" in plan, plan


def test_the_completion_list_has_only_finished_participants(demo_db, tmp_path):
    db = demo_db
    a, b = add_participants(db, "demo", "receiver", 2, external_ids=["PROLIFIC-A", "=HYPERLINK(1)"])
    add_participants(db, "demo", "validator", 1)
    assert pa.completion_page(db, "demo").total == 0
    with db.write() as w:
        assert pstore.mark_completed(w, b.id)
    time.sleep(0.01)  # finish times a millisecond apart at least
    with db.write() as w:
        assert pstore.mark_completed(w, a.id)
        first = pstore.get(db, b.id)["completed_at"]
        assert not pstore.mark_completed(w, b.id)  # the first time stays
    assert pstore.get(db, b.id)["completed_at"] == first
    page = pa.completion_page(db, "demo")
    assert page.total == 2 and list(page.rows["id"]) == [b.id, a.id]
    assert set(page.rows["completion_code"]) == {"DEMO-2026"} and set(page.rows["status"]) == {"completed"}
    with open(pa.completion_csv(db, "demo"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["external_id"] for r in rows] == ["'=HYPERLINK(1)", "PROLIFIC-A"]  # formulas made inert
    assert all(r["completed_at"] and r["completion_code"] == "DEMO-2026" for r in rows)
    assert pa.participants_page(db, "demo", status="completed").total == 2


def test_the_completion_list_without_a_study_says_pick_one(demo_db):
    # the page's API event (or previous / next) before a study is picked: words, not a TypeError
    for study_id in (None, "", "no-such-study"):
        with pytest.raises(pa.ParticipantAdminError, match="Pick a study"):
            pa.completion_page(demo_db, study_id)


def test_pages_have_the_right_slices_and_totals(demo_db):
    db = demo_db
    rec = add_participants(db, "demo", "receiver", 7)
    val = add_participants(db, "demo", "validator", 3)
    pa.deactivate(db, "demo", rec[0].id, ACTOR)
    p1 = pa.participants_page(db, "demo", 1, page_size=4)
    p3 = pa.participants_page(db, "demo", 3, page_size=4)
    assert (p1.total, p1.pages, len(p1.rows)) == (10, 3, 4) and (p3.page, len(p3.rows)) == (3, 2)
    assert p1.label == "Page 1 of 3 · 10 rows"
    assert pa.participants_page(db, "demo", 99, page_size=4).page == 3  # clamped
    assert pa.participants_page(db, "demo", -2, page_size=4).page == 1
    seen = [i for n in (1, 2, 3) for i in pa.participants_page(db, "demo", n, page_size=4).rows["id"]]
    assert seen == [p.id for p in rec] + [p.id for p in val]  # role, then id; no overlap
    only = pa.participants_page(db, "demo", role="validator")
    assert only.total == 3 and set(only.rows["role"]) == {"validator"}
    off = pa.participants_page(db, "demo", status="deactivated")
    assert list(off.rows["id"]) == [rec[0].id] and list(off.rows["status"]) == ["deactivated"]
    assert pa.participants_page(db, "demo", status="active", role="receiver").total == 6
    link = p1.rows["link"][0]
    assert link == rec[0].token[:6] + "…" and "?t=" not in link  # never the whole token
    with pytest.raises(ParticipantAdminError, match="Unknown status 'gone'"):
        pa.participants_page(db, "demo", status="gone")
    ex = usability_progress.exchanges_page(db, "demo", 2, page_size=5)
    every = [
        int(x)
        for n in (1, 2, 3)
        for x in usability_progress.exchanges_page(db, "demo", n, page_size=5).rows["exchange"]
    ]
    assert (ex.total, ex.pages, ex.page) == (12, 3, 2) and every == sorted(set(every)) and len(every) == 12
    assert [int(x) for x in ex.rows["exchange"]] == every[5:10]
    assert paging.page_bounds(0, 5, 10) == (1, 1, 0)


def test_review_and_jobs_pages(demo_db):
    db = demo_db
    (s,) = add_participants(db, "demo", "sender", 1, "USW", "Woman")
    with db.write() as w:
        for a in assignments.open_assignments(db, s.id):
            rid = recordings.insert_recording(w, a["id"], a["exchange_id"], f"sha{a['id']}", "x.wav", "x16.wav", 3.0)
            recordings.set_recording_qc(w, rid, "flagged", "hm", 1.0, ["high_wer"])
        ids = [jobs.enqueue(w, "noop", {"n": n}) for n in range(7)]
        w.execute("UPDATE jobs SET status = 'failed' WHERE id IN (?, ?)", [ids[1], ids[4]])
    rv = usability_review.review_page(db, "demo", 2, page_size=3)
    assert (rv.total, rv.pages, len(rv.rows)) == (4, 2, 1)
    total = jobs.count(db)
    first = admin_progress.jobs_page(db, 1, page_size=3)
    assert first.total == total and list(first.rows["id"])[:2] == [ids[4], ids[1]]  # failed first
    every = [i for n in range(1, first.pages + 1) for i in admin_progress.jobs_page(db, n, page_size=3).rows["id"]]
    assert sorted(every) == sorted(set(every)) and len(every) == total


def test_adding_participants_checks_everything_before_storing(demo_db):
    db = demo_db

    def count():
        return db.scalar("SELECT COUNT(*) FROM participants")

    before = count()
    for args, message in [
        (("", 1, None, None, ""), "Choose a role"),
        (("receiver", 0, None, None, ""), "between 1 and 500"),
        (("receiver", 2.5, None, None, ""), "whole number"),
        (("receiver", 1, None, None, "ok-1\nbad id!"), "External id 'bad id!' is not valid"),
        (("receiver", 1, None, None, "X1, X1"), "listed twice"),
        (("sender", 1, "Martian", "Woman", ""), "unknown group 'Martian'"),
    ]:
        with pytest.raises((ParticipantAdminError, ParticipantError), match=message):
            pa.add(db, "demo", *args, actor=ACTOR)
    assert count() == before
    made = pa.add(db, "demo", "receiver", 1, "", "", "P-1\nP-2,P-3", ACTOR)
    assert [m.external_id for m in made] == ["P-1", "P-2", "P-3"] and count() == before + 3
    with pytest.raises(ParticipantAdminError, match="'P-2' already has a receiver link"):
        pa.add(db, "demo", "receiver", 1, "", "", "P-9\nP-2", ACTOR)
    # nor in another role: one person, one role (issue 51, point 6)
    with pytest.raises(ParticipantAdminError, match="'P-3' already has a receiver link .* one person takes one role"):
        pa.add(db, "demo", "validator", 1, "", "", "P-3", ACTOR)
    assert len(pa.add(db, "demo", "validator", "2", "", "", "", ACTOR)) == 2
    assert count() == before + 5


def test_the_links_csv_has_every_full_link(demo_db):
    made = add_participants(demo_db, "demo", "receiver", 3)
    with open(pa.links_csv(demo_db, "demo", "https://x.org"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["url"] for r in rows] == [f"https://x.org/?t={m.token}" for m in made]
