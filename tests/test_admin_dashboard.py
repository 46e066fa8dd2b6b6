"""Issue 28, point 4: the admin dashboard's data (services/admin/dashboard.py) against counts made
independently from the database, its definition of "stalled", its query plans (every query
through an index: the page re-reads it every few seconds), and its HTML (tabs/admin_dashboard.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from services.admin.dashboard import STALL_MINUTES, dashboard
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from storage import dashboard as store
from storage import jobs
from tabs import admin_dashboard

NOW = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.timezone.utc)


def _iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="milliseconds")


def seeded(db):
    """Three receivers: one answered an item (seen now), one stopped two hours ago with open
    items (stalled), one never opened the link (not started); a failed and a pending job."""
    r_now, r_away, r_never = add_participants(db, "demo", "receiver", 3)
    for p in (r_now, r_away):
        v = get_view(db, p.token, "receiver")
        submit(
            db,
            p.token,
            "receiver",
            v.item_id,
            {"answers": [{"idx": q["idx"], "text": "sim"} for q in v.content["questions"]]},
        )
    with db.write() as w:
        w.execute("UPDATE participants SET last_seen_at = ? WHERE id = ?", [_iso(NOW), r_now.id])
        w.execute(
            "UPDATE participants SET last_seen_at = ? WHERE id = ?", [_iso(NOW - dt.timedelta(hours=2)), r_away.id]
        )
        failed = jobs.enqueue(w, "tts_hit", {"hit": 1}, dedupe_key="t-failed")
        jobs.enqueue(w, "tts_hit", {"hit": 2}, dedupe_key="t-pending")
    jobs.fail(db, failed, "Traceback (most recent call last):\n  File x\nOSError: disk full", None)
    return r_now, r_away, r_never, failed


def test_the_counts_match_the_database(demo_db):
    db = demo_db
    r_now, r_away, r_never, failed = seeded(db)
    rater = add_participants(db, "demo", "da", 1)[0]  # holds a HIT, never opened the link
    d = dashboard(db, "demo", now=NOW)
    # progress per role and phase: the assignments counted by pandas, not by the query under test
    a = pd.DataFrame(
        db.query(
            "SELECT p.role, a.phase, a.status FROM assignments a JOIN participants p "
            "ON p.id = a.participant_id WHERE a.study_id = 'demo'"
        )
    )
    want = a[a.status != "withdrawn"].groupby(["role", "phase", "status"]).size().unstack(fill_value=0)
    got = pd.DataFrame(d.progress).set_index(["role", "phase"])
    held = got[(got.open + got.done) > 0][["open", "done"]]
    pd.testing.assert_frame_equal(
        held.sort_index(), want[["open", "done"]].sort_index(), check_names=False, check_dtype=False
    )
    # and the pool's places no one has taken, per phase (issue 51: part of the phase's total)
    places = {
        r["phase"]: r["n"]
        for r in db.query("SELECT phase, SUM(need) AS n FROM work_pool WHERE need > 0 GROUP BY phase")
    }
    assert places and got.reset_index().groupby("phase")["waiting"].sum().loc[list(places)].to_dict() == places
    # stalled: seen before, not for STALL_MINUTES, open items; never seen is not stalled
    assert d.stall_minutes == STALL_MINUTES and d.stalled_total == 1
    assert [(p["id"], p["role"]) for p in d.stalled] == [(r_away.id, "receiver")]
    open_away = db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND status = 'open'", [r_away.id])
    assert d.stalled[0]["open"] == open_away > 0
    # failing jobs: the failure with its traceback's last line
    assert d.failed_jobs == 1 and d.failing[0]["id"] == failed and d.failing[0]["error"] == "OSError: disk full"
    # waiting on whom: receivers' open items and the people holding them, one not started yet
    owed = db.scalar(
        "SELECT COUNT(*) FROM assignments a JOIN participants p ON p.id = a.participant_id "
        "WHERE p.study_id = 'demo' AND p.role = 'receiver' AND a.status = 'open'"
    )
    assert f"{owed} open items wait on 2 receivers." in d.waiting  # the third holds nothing yet
    rated = db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND status = 'open'", [rater.id])
    assert f"{rated} open items wait on 1 DA rater (1 not started yet)." in d.waiting
    assert "1 background job failed: retry them under Background jobs (their errors are listed there)." in d.waiting


def test_stalled_follows_the_cut_off(demo_db):
    """Stalled after STALL_MINUTES without activity, not before (the rule the page states)."""
    db = demo_db
    _, r_away, _, _ = seeded(db)
    assert (
        dashboard(db, "demo", now=NOW - dt.timedelta(hours=2) + dt.timedelta(minutes=STALL_MINUTES - 1)).stalled_total
        == 0
    )
    assert (
        dashboard(db, "demo", now=NOW - dt.timedelta(hours=2) + dt.timedelta(minutes=STALL_MINUTES + 1)).stalled_total
        == 1
    )
    with db.write() as w:  # a deactivated participant owes nothing
        w.execute("UPDATE participants SET active = 0 WHERE id = ?", [r_away.id])
    assert dashboard(db, "demo", now=NOW).stalled_total == 0


def test_flagged_recordings_wait_on_the_team(demo_db):
    db = demo_db
    sender = add_participants(db, "demo", "sender", 1, "USW", "Woman")[0]
    a = db.one(
        "SELECT id, exchange_id FROM assignments WHERE participant_id = ? AND phase = 'record' LIMIT 1", [sender.id]
    )
    with db.write() as w:
        w.execute(
            "INSERT INTO recordings (assignment_id, exchange_id, sha256, path_original, path_16k, duration_s, "
            "created_at, qc_status) VALUES (?, ?, 'x', 'a.wav', 'b.wav', 3.0, ?, 'flagged')",
            [a["id"], a["exchange_id"], _iso(NOW)],
        )
    d = dashboard(db, "demo", now=NOW)
    assert d.cards == [("recordings to review", 1, "flagged by QC", True)]
    assert d.waiting[0].startswith("1 recording flagged by QC waits on the study team")
    assert "recordings to review" in admin_dashboard.render(d)


def test_a_study_of_another_protocol_shows_no_recordings_card(tmp_path):
    """Before: every study's dashboard had the usability study's "recordings to review" card."""
    from services.common import protocols
    from services.setup.importer import import_study
    from storage import open_database

    db = open_database(tmp_path / "a.db", schemas=protocols.schemas())
    import_study(db, Path(__file__).resolve().parents[1] / "docs" / "examples" / "sxs")
    add_participants(db, "sxs-example", "sxs", 1)
    d = dashboard(db, "sxs-example", now=NOW)
    page = admin_dashboard.render(d)
    assert d.cards == [] and "recordings to review" not in page
    # the progress table in the team's words (the labels), not the ids (before: "sxs", "sxs")
    assert '<td title="sxs">side-by-side annotator</td><td title="sxs">side-by-side item</td>' in page


def test_the_usability_recordings_query_uses_an_index(demo_db):
    from storage.usability.recordings import RECORDINGS_WAITING

    plan = [r["detail"] for r in demo_db.query("EXPLAIN QUERY PLAN " + RECORDINGS_WAITING, [None])]
    assert all("USING" in line and "INDEX" in line for line in plan if line.startswith("SCAN ")), plan


def test_every_dashboard_query_uses_an_index(demo_db):
    """The page re-reads the dashboard every EVERY_S seconds: no query scans a whole table of the
    study's size (assignments, participants, recordings, work_pool, jobs) without an index."""
    plans = store.query_plans(demo_db)
    assert set(plans) == set(store.QUERIES)
    for name, lines in plans.items():
        for line in lines:
            if line.startswith("SCAN "):
                assert "USING" in line and "INDEX" in line, (name, line)


def test_the_html_names_times_in_utc_and_escapes(demo_db):
    db = demo_db
    seeded(db)
    with db.write() as w:
        jobs.fail(db, jobs.enqueue(w, "x", {}, dedupe_key="t-html"), "ValueError: <script>alert(1)</script>", None)
    page = admin_dashboard.render(dashboard(db, "demo", now=NOW))
    assert "<script>" not in page and "&lt;script&gt;" in page
    # until the browser's script puts it in its own zone, a time reads "YYYY-MM-DD HH:MM UTC"
    assert (
        '<time datetime="2026-03-02T12:00:00+00:00" title="2026-03-02T12:00:00+00:00">2026-03-02 12:00 UTC</time>'
        in page
    )
    assert admin_dashboard.utc_label("2026-03-02T09:30:15.123-03:00") == "2026-03-02 12:30 UTC"
    assert admin_dashboard.utc_label(None) == ""
