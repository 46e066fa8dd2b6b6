"""A participant's click costs the same whatever the study's size: every statement that a view
or a submit of the four-phase workflow runs is checked with EXPLAIN QUERY PLAN, and none may
SCAN a table that grows with the study (only SEARCH through an index)."""

from __future__ import annotations

import json

from services.common import protocols
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.usability import dropouts, pipeline
from storage import open_database
from tests.helpers.audio import write_wav
from tests.helpers.sql_trace import Trace, scans
from tests.helpers.workflow import stand_in_translation
from tests.plugins import proof


def act(database, token, tab, answer, media=None):
    """One view and one submit, traced; returns the statements and the next view."""
    with Trace(database) as t:
        v = get_view(database, token, tab)
        assert v.status == "item", (tab, v.status, v.message)
        res = submit(database, token, tab, v.item_id, answer(v), media_dir=media)
        assert res.saved
        get_view(database, token, tab)  # the page's repeated view
    return t.sql, res.next


def test_no_participant_action_scans_a_study_sized_table(demo_db, tmp_path):
    db = demo_db
    media = tmp_path / "media"
    senders = add_participants(db, "demo", "sender", 2, "USW", "Woman")
    (receiver,) = add_participants(db, "demo", "receiver", 1)
    (validator,) = add_participants(db, "demo", "validator", 1)
    (rater,) = add_participants(db, "demo", "rater", 1)
    wav = write_wav(tmp_path / "r.wav", seconds=4.0)
    statements = []

    # a sender records; the worker's outcome opens the receive item and the baseline survey
    sql, _ = act(db, senders[0].token, "record", lambda v: {"audio": str(wav)}, media)
    statements += sql
    rec = db.one("SELECT id, exchange_id FROM recordings ORDER BY id DESC LIMIT 1")
    starter = db.one(
        "SELECT s.text FROM exchanges e "
        "JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        "WHERE e.id = ?",
        [rec["exchange_id"]],
    )["text"]
    with Trace(db) as t:
        pipeline.record_outcome(db, rec["id"], stand_in_translation(starter), starter)
    statements += t.sql

    def answers(v):
        return {"answers": [{"idx": q["idx"], "text": "x", "unanswerable": False} for q in v.content["questions"]]}

    for _ in range(2):
        sql, _ = act(db, receiver.token, "receiver", answers)
        statements += sql

    def marks(v):
        return {"score": 70, "marks": {a["idx"]: True for a in v.content["answers"]}}

    sql, _ = act(db, validator.token, "validator", marks)
    statements += sql

    def likert(v):
        return {"satisfaction": 4, "trust": 3, "reliance": 4}

    sql, _ = act(db, senders[0].token, "survey", likert)
    statements += sql
    sql, _ = act(db, rater.token, "survey", likert)
    statements += sql
    # a dropout is a worker's action: the sender's own exchanges, and a replacement sender found
    # among the active senders of the same design cell (each one's load an index lookup)
    with Trace(db) as t:
        dropouts.drop_out(db, senders[1].id, "test", "left")
    statements += t.sql
    assert len(statements) > 50
    assert scans(db, statements) == []


def test_the_check_itself_finds_a_scan(demo_db):
    """The check can fail: a query on an unindexed column is reported, and so is an index search
    that only narrows to the study's phase."""
    assert scans(
        demo_db,
        [
            "SELECT participant_id, COUNT(*) FROM assignments WHERE study_id = 'demo' "
            "AND phase = 'record' GROUP BY participant_id"
        ],
    )
    assert scans(demo_db, ["SELECT * FROM surveys WHERE satisfaction = 3"])
    assert scans(
        demo_db,
        ["SELECT 1 FROM participants p JOIN assignments a ON a.participant_id = p.id WHERE a.active_seconds > 3"],
    )


def test_da_and_sd_raters_scan_nothing_study_sized(demo_db, tmp_path):
    """A DA rater's arrival (the least-held HIT and modality are chosen), a DA item and a page of
    SD scales, each with the page's repeated view, with other raters already at work."""
    db = demo_db
    media = tmp_path / "media"
    add_participants(db, "demo", "da", 4)  # text, audio, text, audio: the next one reads text
    with Trace(db) as t:
        (da,) = add_participants(db, "demo", "da", 1)
    statements = t.sql
    sql, _ = act(db, da.token, "da", lambda v: {"score": 61}, media)
    statements += sql
    (sd,) = add_participants(db, "demo", "sd", 1)
    v = get_view(db, sd.token, "sd", media_dir=media)
    while v.content["kind"] in ("welcome", "example"):  # the pages before the scales
        v = submit(db, sd.token, "sd", v.item_id, {"values": {}}, media_dir=media).next
    sql, _ = act(db, sd.token, "sd", lambda v: {"values": {p["pair_id"]: 5 for p in v.content["pairs"]}}, media)
    statements += sql
    assert len(statements) > 20
    assert scans(db, statements) == []


def test_a_da_raters_last_item_and_the_next_arrival_scan_nothing_study_sized(demo_db, tmp_path):
    """The last item of a HIT runs the rerun decision (the rater's own judgments, the HIT's
    reruns so far) inside its submit; the next rater's arrival reads the reruns per HIT."""
    db = demo_db
    media = tmp_path / "media"
    add_participants(db, "demo", "da", 4)  # the next one reads text
    (da,) = add_participants(db, "demo", "da", 1)
    while True:
        v = get_view(db, da.token, "da", media_dir=media)
        assert v.status == "item"
        with Trace(db) as t:
            res = submit(db, da.token, "da", v.item_id, {"score": 61}, media_dir=media)
        if res.next.status != "item":
            break
    assert db.scalar("SELECT COUNT(*) FROM da_hit_outcomes WHERE participant_id = ?", [da.id]) == 1
    statements = t.sql
    assert any("da_hit_outcomes" in s for s in statements)
    with Trace(db) as t:
        add_participants(db, "demo", "da", 1)
    statements += t.sql
    assert any("da_hit_outcomes" in s for s in t.sql)
    assert scans(db, statements) == []


def test_a_plugins_participant_scans_nothing_of_its_study_sized_tables(tmp_path):
    """The proof plugin (tests/plugins/proof/: its answers, spans and QC tables are study_sized):
    each view and submit, its last answer's QC decided inside the submit (Phase.after_save), reach
    them through their indexes only; a query of them on a column no index has is a scan."""
    protocols.register(proof.PROTOCOL)
    try:
        db = open_database(tmp_path / "p.db", schemas=protocols.schemas())
        import_study(db, proof.STUDY)
        add_participants(db, "proof", proof.NAME, 2)  # another participant's items beside theirs
        (person,) = add_participants(db, "proof", proof.NAME, 1)
        statements, spans = [], json.dumps([{"start": 0, "end": 1, "severity": "major"}])
        for _ in range(2):
            sql, after = act(db, person.token, proof.NAME, lambda v: {"spans": spans, "score": 30})
            statements += sql
        assert after.status == "complete"
        assert db.scalar("SELECT outcome FROM proof_qc WHERE participant_id = ?", [person.id]) == "passed"
        mine = [s for s in statements if any(t in s for t in (proof.ANSWERS, proof.SPANS, proof.QC))]
        assert len(mine) >= 6
        assert scans(db, statements) == []
        plans = {row[-1] for s in mine for row in db.db.conn.execute("EXPLAIN QUERY PLAN " + s)}
        assert "SEARCH proof_answers USING INDEX proof_answers_participant_id (participant_id=?)" in plans
        assert any(p.startswith("SEARCH proof_spans USING INDEX proof_spans_assignment_id_start_char") for p in plans)
        assert scans(db, ["SELECT * FROM proof_spans WHERE severity = 'major'"])
    finally:
        protocols.unregister(proof.NAME)
