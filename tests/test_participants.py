"""Participants: slots with queues, private links, CSV import, Prolific self-enrolment."""

from __future__ import annotations

import pytest

from services.setup.enrolment import ParticipantError, add_from_csv, add_participants, enrol, links, prolific_link
from storage import assignments
from storage import participants as pstore


def test_sender_gets_stratified_exchanges_and_record_queue(demo_db):
    (p,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")
    rows = demo_db.query(
        "SELECT e.starter_id, e.system_id, s.domain, s.source FROM exchanges e "
        "JOIN starters s ON s.id = e.starter_id AND s.study_id = e.study_id WHERE sender_id = ?",
        [p.id],
    )
    assert len(rows) == 4
    assert sorted(r["domain"] for r in rows) == ["everyday", "everyday", "health", "health"]
    assert sorted(r["source"] for r in rows) == ["natural", "natural", "synthetic", "synthetic"]
    assert sorted(r["system_id"] for r in rows) == ["cascade-beam", "cascade-beam", "cascade-greedy", "cascade-greedy"]
    assert assignments.counts(demo_db, p.id, ("record",)) == {"open": 4, "done": 0}


def test_same_design_block_across_groups(demo_db):
    (a,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman")
    (b,) = add_participants(demo_db, "demo", "sender", 1, "Hindi", "Man")

    def get(pid):
        return sorted(
            (r["starter_id"], r["system_id"])
            for r in demo_db.query("SELECT starter_id, system_id FROM exchanges WHERE sender_id = ?", [pid])
        )

    assert get(a.id) == get(b.id)


def test_tokens_are_unique_and_long(demo_db):
    made = add_participants(demo_db, "demo", "receiver", 30)
    tokens = {p.token for p in made}
    assert len(tokens) == 30 and all(len(t) >= 24 for t in tokens)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"role": "boss"}, "unknown role"),
        ({"role": "sender"}, "senders need a group"),
        ({"role": "sender", "group": "USW"}, "senders need a gender"),
        ({"role": "sender", "group": "Martian", "gender": "Woman"}, "unknown group"),
        ({"role": "receiver", "count": 0}, "count must be at least 1"),
    ],
)
def test_bad_requests_add_nothing(demo_db, kwargs, message):
    with pytest.raises(ParticipantError, match=message):
        add_participants(demo_db, "demo", **kwargs)
    assert pstore.list_for_study(demo_db, "demo") == []


def test_unknown_study(database):
    with pytest.raises(ParticipantError, match="unknown study"):
        add_participants(database, "nope", "receiver")


def test_csv_is_validated_whole_before_insert(demo_db, tmp_path):
    bad = tmp_path / "people.csv"
    bad.write_text("role,group,gender,external_id\nreceiver,,,r1\nsender,USW,Alien,s1\n")
    with pytest.raises(ParticipantError, match="people.csv, row 3"):
        add_from_csv(demo_db, "demo", bad)
    assert pstore.list_for_study(demo_db, "demo") == []
    good = tmp_path / "ok.csv"
    good.write_text("role,group,gender,external_id\nreceiver,,,r1\nsender,USW,Woman,s1\n")
    made = add_from_csv(demo_db, "demo", good)
    assert [(p.role, p.external_id) for p in made] == [("receiver", "r1"), ("sender", "s1")]


def test_links_carry_the_token(demo_db):
    (p,) = add_participants(demo_db, "demo", "validator", 1)
    (row,) = links(demo_db, "demo", "https://lab.example.org")
    assert row["url"] == f"https://lab.example.org/?t={p.token}"


def test_prolific_enrolment_takes_an_open_slot_and_resumes(demo_db):
    add_participants(demo_db, "demo", "receiver", 1)  # a private-link slot: never handed out
    slots = add_participants(demo_db, "demo", "receiver", 2, self_enrol=True)
    p = enrol(demo_db, "demo", "receiver", "5f3a9c0e1b2d4a0012345678", "STUDY1", "SESS1")
    assert p["id"] == slots[0].id and p["prolific_pid"] == "5f3a9c0e1b2d4a0012345678"
    assert p["prolific_study_id"] == "STUDY1" and p["prolific_session_id"] == "SESS1"
    # a return resumes with the slot's own SESSION_ID; another session is not the same person's
    # key (issue 30.4: a Prolific id alone is no password)
    again = enrol(demo_db, "demo", "receiver", "5f3a9c0e1b2d4a0012345678", "STUDY1", "SESS1")
    assert again["id"] == p["id"] and again["prolific_session_id"] == "SESS1"
    with pytest.raises(ParticipantError, match="another Prolific session"):
        enrol(demo_db, "demo", "receiver", "5f3a9c0e1b2d4a0012345678", "STUDY1", "SESS2")
    other = enrol(demo_db, "demo", "receiver", "otherpid0001", "STUDY1", "S3")
    assert other["id"] == slots[1].id
    with pytest.raises(ParticipantError, match="no open place"):
        enrol(demo_db, "demo", "receiver", "thirdpid0001", "STUDY1", "S4")


def test_prolific_enrolment_matches_group_and_gender(demo_db):
    add_participants(demo_db, "demo", "sender", 1, "USW", "Man", self_enrol=True)
    (w,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman", self_enrol=True)
    p = enrol(demo_db, "demo", "sender", "pidwoman0001", "S", "X", group="USW", gender="Woman")
    assert p["id"] == w.id


def test_opened_links_are_not_handed_to_newcomers(demo_db):
    (p,) = add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    with demo_db.write() as db:
        pstore.touch(db, p.id)
    with pytest.raises(ParticipantError, match="no open place"):
        enrol(demo_db, "demo", "receiver", "newcomer0001", "STUDY1", "SESS9")


def test_bad_prolific_pid_refused(demo_db):
    add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    with pytest.raises(ParticipantError, match="not valid"):
        enrol(demo_db, "demo", "receiver", "<script>")


def test_prolific_link_is_signed_and_has_placeholders(demo_db):
    url = prolific_link(demo_db, "https://x.org", "demo", "sender", "USW", "Woman")
    assert url.startswith("https://x.org/?study=demo&role=sender&group=USW&gender=Woman&sig=")
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in url and "SESSION_ID={{%SESSION_ID%}}" in url
