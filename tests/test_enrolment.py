"""Prolific self-enrolment cannot be steered (issue 17): signed URLs, STUDY_ID binding, one role
per Prolific id, self-enrolment slots apart from private-link slots, a per-study rate limit, and
every refusal counted (per study, role, reason and minute) with nothing else stored."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import pytest

from harness.demo import DEMO
from services.setup.enrolment import (
    ParticipantError,
    add_participants,
    enrol_from_link,
    prolific_link,
    prolific_links,
    refusal_counts,
)
from services.setup.importer import import_study
from services.study.files import StudyValidationError
from tests.helpers.app import AppClient, run_cli
from tests.helpers.studies import study_with_keys

URL = "https://lab.example.org"


def _query(url: str, pid: str, study: str = "PSTUDY", session: str = "SESS") -> dict:
    """What Prolific sends: the URL with its placeholders filled in."""
    url = url.replace("{{%PROLIFIC_PID%}}", pid).replace("{{%STUDY_ID%}}", study).replace("{{%SESSION_ID%}}", session)
    return dict(parse_qsl(urlsplit(url).query))


def _link(db, role, group=None, gender=None, pid="5f3a9c0e1b2d4a0012345678", **kw) -> dict:
    return _query(prolific_link(db, URL, "demo", role, group, gender), pid, **kw)


def _state(db) -> list:
    """Everything enrolment may change: the participants and the audit log."""
    return (db.query("SELECT * FROM participants ORDER BY id"), db.query("SELECT * FROM events ORDER BY id"))


def _refusals(db) -> dict[str, int]:
    """Refused enrolments counted so far, by reason (services.setup.enrolment.refusal_counts)."""
    out: dict[str, int] = {}
    for r in refusal_counts(db):
        out[r["reason"]] = out.get(r["reason"], 0) + r["count"]
    return out


def _refused(db, query: dict, message: str, reason: str) -> None:
    before, counted = _state(db), _refusals(db)
    with pytest.raises(ParticipantError, match=message):
        enrol_from_link(db, query)
    assert _state(db) == before, "a refused enrolment stored something"
    now = _refusals(db)
    assert {k: n - counted.get(k, 0) for k, n in now.items() if n != counted.get(k, 0)} == {reason: 1}


# -- signed URLs -------------------------------------------------------------------------------


def test_a_signed_url_enrols(demo_db):
    (slot,) = add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    p = enrol_from_link(demo_db, _link(demo_db, "receiver"))
    assert p["id"] == slot.id and p["prolific_pid"] == "5f3a9c0e1b2d4a0012345678"
    assert p["prolific_study_id"] == "PSTUDY" and p["prolific_session_id"] == "SESS"
    assert _refusals(demo_db) == {}


@pytest.mark.parametrize(
    "change",
    [
        {"role": "sender", "group": "USW", "gender": "Woman"},  # a receiver turns into a sender
        {"role": "rater"},
        {"role": "validator"},
        {"study": "other"},
    ],
)
def test_a_changed_receiver_url_is_refused(demo_db, change):
    for role in ("sender", "rater", "validator", "receiver"):
        add_participants(
            demo_db,
            "demo",
            role,
            1,
            "USW" if role == "sender" else None,
            "Woman" if role == "sender" else None,
            self_enrol=True,
        )
    q = {**_link(demo_db, "receiver"), **change}
    _refused(demo_db, q, "changed", "bad_signature")


@pytest.mark.parametrize("change", [{"group": "Hindi"}, {"gender": "Man"}, {"group": ""}])
def test_a_changed_sender_cell_is_refused(demo_db, change):
    add_participants(demo_db, "demo", "sender", 1, "Hindi", "Woman", self_enrol=True)
    add_participants(demo_db, "demo", "sender", 1, "USW", "Man", self_enrol=True)
    add_participants(demo_db, "demo", "sender", 1, "USW", "Woman", self_enrol=True)
    q = {**_link(demo_db, "sender", "USW", "Woman"), **change}
    _refused(demo_db, q, "changed", "bad_signature")


def test_an_unsigned_url_is_refused(demo_db):
    add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    q = _link(demo_db, "receiver")
    del q["sig"]
    _refused(demo_db, q, "changed", "unsigned")
    _refused(demo_db, {**q, "sig": ""}, "changed", "unsigned")


def test_prolific_placeholders_are_outside_the_signature(demo_db):
    add_participants(demo_db, "demo", "receiver", 2, self_enrol=True)
    url = prolific_link(demo_db, URL, "demo", "receiver")
    a = enrol_from_link(demo_db, _query(url, "pidone0001", "S1", "X1"))
    b = enrol_from_link(demo_db, _query(url, "pidtwo0002", "S2", "X2"))
    assert a["id"] != b["id"]


def test_the_secret_can_come_from_the_environment(demo_db, monkeypatch):
    add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    from_db = _link(demo_db, "receiver")
    monkeypatch.setenv("TRADLAB_LINK_SECRET", "a long secret shared by every process")
    _refused(demo_db, from_db, "changed", "bad_signature")  # signed with another key
    assert enrol_from_link(demo_db, _link(demo_db, "receiver"))["prolific_pid"]


def test_the_database_secret_is_made_once(demo_db):
    from storage import participants as pstore

    secret = pstore.get_secret(demo_db, "link_secret")
    assert secret and len(secret) == 64
    assert prolific_link(demo_db, URL, "demo", "da") == prolific_link(demo_db, URL, "demo", "da")
    assert pstore.get_secret(demo_db, "link_secret") == secret


# -- Prolific STUDY_ID binding ------------------------------------------------------------------


def test_a_role_bound_to_its_prolific_study_refuses_another(database, tmp_path):
    import_study(
        database, study_with_keys(tmp_path, 'prolific_study_ids = {receiver = "PRCV", sender = ["PSND1", "PSND2"]}')
    )
    add_participants(database, "demo", "receiver", 2, self_enrol=True)
    add_participants(database, "demo", "sender", 1, "USW", "Woman", self_enrol=True)
    add_participants(database, "demo", "rater", 1, self_enrol=True)
    _refused(database, _link(database, "receiver", study="PSND1"), "another Prolific study", "study_id_mismatch")
    _refused(database, _link(database, "receiver", study=""), "another Prolific study", "study_id_mismatch")
    assert enrol_from_link(database, _link(database, "receiver", study="PRCV"))["prolific_study_id"] == "PRCV"
    assert (
        enrol_from_link(database, _link(database, "sender", "USW", "Woman", pid="pidsender02", study="PSND2"))["role"]
        == "sender"
    )
    # a role not bound takes any STUDY_ID
    assert enrol_from_link(database, _link(database, "rater", pid="pidrater03", study="ANY"))["role"] == "rater"


@pytest.mark.parametrize(
    "extra, key",
    [
        ('prolific_study_ids = "PRCV"', "study.prolific_study_ids"),
        ('prolific_study_ids = {boss = "X"}', "study.prolific_study_ids"),
        ('prolific_study_ids = {receiver = ""}', "study.prolific_study_ids.receiver"),
        ("enrol_per_minute = -1", "study.enrol_per_minute"),
        ('enrol_per_minute = "5"', "study.enrol_per_minute"),
    ],
)
def test_bad_enrolment_settings_are_refused_at_import(database, tmp_path, extra, key):
    with pytest.raises(StudyValidationError) as e:
        import_study(database, study_with_keys(tmp_path, extra))
    assert any(key in str(err) for err in e.value.errors), e.value.errors


# -- one role per Prolific id -------------------------------------------------------------------


@pytest.mark.parametrize(
    "first, second",
    [
        (("receiver", None, None), ("sender", "USW", "Woman")),
        (("sender", "USW", "Woman"), ("receiver", None, None)),
        (("receiver", None, None), ("validator", None, None)),
        (("rater", None, None), ("da", None, None)),
    ],
)
def test_one_prolific_id_holds_one_role(demo_db, first, second):
    for role, g, gen in (first, second):
        add_participants(demo_db, "demo", role, 1, g, gen, self_enrol=True)
    p = enrol_from_link(demo_db, _link(demo_db, *first))
    assert p["role"] == first[0]
    _refused(demo_db, _link(demo_db, *second), f"already takes part in this study as a {first[0]}", "second_role")
    # someone else still takes the second role's slot
    assert enrol_from_link(demo_db, _link(demo_db, *second, pid="someoneelse01"))["role"] == second[0]


def test_a_prolific_id_known_from_a_private_link_cannot_self_enrol(demo_db):
    add_participants(demo_db, "demo", "sender", 1, "USW", "Woman", external_ids=["KNOWNPID001"])
    add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    _refused(demo_db, _link(demo_db, "receiver", pid="KNOWNPID001"), "as a sender", "second_role")


# -- private-link slots stay private --------------------------------------------------------------


def test_private_link_slots_are_never_taken(demo_db):
    private = add_participants(demo_db, "demo", "receiver", 3)  # never opened, no external id
    _refused(demo_db, _link(demo_db, "receiver"), "no open place", "no_slot")
    (own,) = add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    p = enrol_from_link(demo_db, _link(demo_db, "receiver"))
    assert p["id"] == own.id and p["id"] not in {s.id for s in private}
    assert all(
        demo_db.one("SELECT prolific_pid FROM participants WHERE id = ?", [s.id])["prolific_pid"] is None
        for s in private
    )


def test_self_enrolment_slots_only_for_self_enrolling_roles(database, tmp_path):
    dest = study_with_keys(tmp_path, "")
    toml = dest / "study.toml"
    toml.write_text(
        toml.read_text().replace(
            'self_enrol = ["sender", "receiver", "validator", "rater", "da", "sd"]', 'self_enrol = ["receiver"]'
        )
    )
    import_study(database, dest)
    with pytest.raises(ParticipantError, match="does not take rater"):
        add_participants(database, "demo", "rater", 1, self_enrol=True)
    with pytest.raises(ParticipantError, match="no external ids"):
        add_participants(database, "demo", "receiver", external_ids=["X1"], self_enrol=True)


def test_links_count_the_open_self_enrolment_slots(demo_db):
    add_participants(demo_db, "demo", "receiver", 2, self_enrol=True)
    add_participants(demo_db, "demo", "receiver", 5)
    rows = {(r["role"], r["group"], r["gender"]): r for r in prolific_links(demo_db, "demo", URL)}
    assert rows[("receiver", None, None)]["open"] == 2
    assert rows[("sender", "USW", "Woman")]["open"] == 0
    assert "&sig=" in rows[("receiver", None, None)]["url"]


# -- rate limit -----------------------------------------------------------------------------------


def test_enrolments_per_minute_are_capped_and_refusals_logged(database, tmp_path):
    import_study(database, study_with_keys(tmp_path, "enrol_per_minute = 2"))
    add_participants(database, "demo", "receiver", 5, self_enrol=True)
    a = enrol_from_link(database, _link(database, "receiver", pid="pid00001"))
    enrol_from_link(database, _link(database, "receiver", pid="pid00002"))
    _refused(database, _link(database, "receiver", pid="pid00003"), "in a minute", "rate_limited")
    # a returning participant is not a new enrolment: they get their own slot back
    assert enrol_from_link(database, _link(database, "receiver", pid="pid00001"))["id"] == a["id"]
    # a minute later there is room again (the count is kept in the database: a restart forgets nothing)
    with database.write() as db:
        db.execute("UPDATE participants SET claimed_at = '2000-01-01T00:00:00.000+00:00' WHERE claimed_at IS NOT NULL")
    assert enrol_from_link(database, _link(database, "receiver", pid="pid00003"))["prolific_pid"] == "pid00003"


# -- returning participants -----------------------------------------------------------------------


def test_a_returning_participant_gets_their_own_slot_back(demo_db):
    (slot,) = add_participants(demo_db, "demo", "sender", 1, "USW", "Woman", self_enrol=True)
    first = enrol_from_link(demo_db, _link(demo_db, "sender", "USW", "Woman", session="S1"))
    assert first["id"] == slot.id
    # no slot left for anyone new, yet the same person (same Prolific session) comes back to it
    again = enrol_from_link(demo_db, _link(demo_db, "sender", "USW", "Woman", session="S1"))
    assert again["id"] == slot.id and again["prolific_session_id"] == "S1" and again["token"] == first["token"]
    _refused(demo_db, _link(demo_db, "sender", "USW", "Woman", pid="newcomer0009"), "no open place", "no_slot")


def test_refusal_events_keep_prolific_ids_out_of_exports(demo_db):
    from services.common import protocols
    from storage.exports import event_rows

    add_participants(demo_db, "demo", "receiver", 1, self_enrol=True)
    q = {**_link(demo_db, "receiver", pid="SECRETPID0001", study="SECRETSTUDY"), "role": "sender"}
    _refused(demo_db, q, "changed", "bad_signature")
    assert [(r["study_id"], r["role"]) for r in refusal_counts(demo_db)] == [("", "")]  # untrusted: not kept
    text = json.dumps(event_rows(demo_db, "demo", protocols.phases())) + json.dumps(refusal_counts(demo_db))
    assert "SECRETPID0001" not in text and "SECRETSTUDY" not in text


# -- command line ---------------------------------------------------------------------------------


def test_cli_makes_self_enrolment_slots_and_prints_signed_urls(tmp_path):
    import os

    env = {
        **os.environ,
        "TRADLAB_DB": str(tmp_path / "app.db"),
        "TRADLAB_MEDIA": str(tmp_path / "media"),
        "TRADLAB_PUBLIC_URL": URL,
    }
    env.pop("TRADLAB_LINK_SECRET", None)

    def run(*a):
        return run_cli(*a, env=env)

    assert run("import", str(DEMO)).returncode == 0
    res = run("participants", "add", "--study", "demo", "--role", "receiver", "--count", "2", "--self-enrol")
    assert res.returncode == 0, res.stderr
    res = run("links", "--study", "demo")
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("receiver (2 open)"))
    url = line.split("\t")[3]
    from storage import open_database

    database = open_database(tmp_path / "app.db")
    assert enrol_from_link(database, _query(url, "clipid0001"))["role"] == "receiver"


# -- the admin tab's add form -----------------------------------------------------------------------


def test_admin_add_makes_self_enrolment_slots_only_without_external_ids(demo_db):
    from services.admin import participants as participant_admin

    made = participant_admin.add(demo_db, "demo", "receiver", 2, "", "", "", "admin@test", self_enrol=True)
    assert [demo_db.one("SELECT self_enrol FROM participants WHERE id = ?", [m.id])["self_enrol"] for m in made] == [
        1,
        1,
    ]
    plain = participant_admin.add(demo_db, "demo", "receiver", 1, "", "", "", "admin@test")
    assert demo_db.one("SELECT self_enrol FROM participants WHERE id = ?", [plain[0].id])["self_enrol"] == 0
    with pytest.raises(ValueError, match="no external ids"):
        participant_admin.add(demo_db, "demo", "receiver", 1, "", "", "PID1", "admin@test", self_enrol=True)


def test_admin_add_self_enrolment_event_in_the_running_app(app_server):

    from tests.helpers.app import admin_session

    client = AppClient(app_server.url)
    session = admin_session(client)  # the login fills the study dropdown's choices
    args = ["demo", "rater", 2, "", "", "", "all", "all", 1]
    refused = client.predict("not-a-session", *args, api_name="/admin_participants_add_self_enrol")
    assert "log in" in json.dumps(refused).lower() or "password" in json.dumps(refused).lower()
    before = app_server.rows("SELECT COUNT(*) FROM participants WHERE self_enrol = 1")[0][0]
    out = client.predict(session, *args, api_name="/admin_participants_add_self_enrol")
    assert "self-enrolment slot" in json.dumps(out)
    assert app_server.rows("SELECT COUNT(*) FROM participants WHERE self_enrol = 1")[0][0] == before + 2
