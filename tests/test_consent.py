"""Consent page and demographics form: configuration, the gate before the first item, saving,
and what the export keeps."""

from __future__ import annotations

import hashlib

import pytest

from tests.helpers.studies import CONSENT_MD, study_with_consent


@pytest.fixture
def consent_db(database, tmp_path):
    from services.setup.enrolment import add_participants
    from services.setup.importer import import_study

    import_study(database, study_with_consent(tmp_path))
    people = {
        "receiver": add_participants(database, "demo", "receiver", 2),
        "sender": add_participants(database, "demo", "sender", 1, "USW", "Woman"),
        "da": add_participants(database, "demo", "da", 1),
    }
    return database, {k: [p.token for p in v] for k, v in people.items()}


def participant(database, token):
    from storage import participants

    return participants.by_token(database, token)


def counts(database):
    return {
        t: database.one(f"SELECT COUNT(*) AS n FROM {t}")["n"]
        for t in ("consents", "demographics", "answers", "assignments")
    }


def test_config_problems_are_all_named_and_nothing_imported(database, tmp_path):
    from services.setup.importer import import_study
    from services.study.files import StudyValidationError

    bad = """
[consent]
roles = ["nobody"]

[demographics]
[[demographics.fields]]
id = "age"
label = ""
kind = "slider"
[[demographics.fields]]
id = "age"
label = "Language"
kind = "choice"
choices = ["only one"]
colour = "red"
"""
    with pytest.raises(StudyValidationError) as e:
        import_study(database, study_with_consent(tmp_path, bad, consent_md=None))
    text = str(e.value)
    for needle in (
        "consent.text",
        "consent.roles",
        "demographics.fields[1].label",
        "demographics.fields[1].kind",
        "demographics.fields[2].id",
        "'age' is used twice",
        "demographics.fields[2].choices",
        "demographics.fields[2].colour",
    ):
        assert needle in text, needle
    assert database.query("SELECT * FROM studies") == []


def test_consent_file_outside_the_folder_is_refused(database, tmp_path):
    from services.setup.importer import import_study
    from services.study.files import StudyValidationError

    with pytest.raises(StudyValidationError, match="outside the study folder"):
        import_study(database, study_with_consent(tmp_path, '\n[consent]\nfile = "../../etc/passwd"\n'))


def test_no_item_and_no_answer_before_consent(consent_db):
    from services.participation.items import AccessError, get_view
    from services.participation.submissions import submit

    database, tokens = consent_db
    tok = tokens["receiver"][0]
    view = get_view(database, tok, "receiver")
    assert view.status == "consent" and view.item_id is None
    assert view.content["text"] == CONSENT_MD and view.content["agree"] == "Concordo / I agree"
    # nothing of any item: no translation, no questions
    assert set(view.content) == {"stage", "text", "agree", "decline"}
    # no item is taken from the pool before consent, and a waiting item's id cannot be answered
    assert (
        database.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ?", [participant(database, tok)["id"]])
        == 0
    )
    a = database.one("SELECT item_id FROM work_pool WHERE phase = 'receive' AND need > 0 LIMIT 1")
    before = counts(database)
    with pytest.raises(AccessError, match="consent"):
        submit(database, tok, "receiver", a["item_id"], {"answers": [{"idx": 1, "text": "x"}]})
    assert counts(database) == before


def test_decline_then_agree_and_agreement_is_final(consent_db):
    from services.participation.items import get_view
    from services.study.consent import ConsentError, pending_stage, record_consent, text_hash

    database, tokens = consent_db
    p = participant(database, tokens["receiver"][0])
    assert record_consent(database, p, False) == "declined"
    assert get_view(database, p["token"], "receiver").status == "declined"
    assert record_consent(database, p, True) == "demographics"
    assert record_consent(database, p, True) == "demographics"  # a double click: nothing new
    with pytest.raises(ConsentError, match="already agreed"):
        record_consent(database, p, False)
    with pytest.raises(ConsentError, match="true .agree. or false"):
        record_consent(database, p, "yes")
    row = database.one("SELECT * FROM consents WHERE participant_id = ?", [p["id"]])
    assert row["agreed"] == 1 and row["text_hash"] == hashlib.sha256(CONSENT_MD.encode()).hexdigest()
    assert row["text_hash"] == text_hash(CONSENT_MD)
    actions = [
        e["action"]
        for e in database.query(
            "SELECT action FROM events WHERE entity = 'consent' AND entity_id = ? ORDER BY id", [str(p["id"])]
        )
    ]
    assert actions == ["decline", "agree"]
    assert pending_stage(database, p) == "demographics"


@pytest.mark.parametrize(
    "answers, message",
    [
        ({"first_language": "English"}, "Please answer “Age in years”"),
        ({"age": 17, "first_language": "English"}, "between 18 and 99"),
        ({"age": "NaN", "first_language": "English"}, "must be a number"),
        ({"age": "forty", "first_language": "English"}, "must be a number"),
        ({"age": 30, "first_language": "Klingon"}, "must be one of: English, Portuguese, Other"),
        ({"age": 30, "first_language": "English", "comments": "x" * 21}, "too long"),
        ({"age": 30, "first_language": "English", "shoe_size": 44}, "no question “shoe_size”"),
        ("age=30", "form of field names"),
    ],
)
def test_bad_demographics_are_refused_and_nothing_stored(consent_db, answers, message):
    from services.study.consent import ConsentError, record_consent, submit_demographics

    database, tokens = consent_db
    p = participant(database, tokens["receiver"][0])
    record_consent(database, p, True)
    before = counts(database)
    with pytest.raises(ConsentError, match=message):
        submit_demographics(database, p, answers)
    assert counts(database) == before


def test_every_bad_demographics_field_is_named_at_once_in_the_pages_language(consent_db):
    from services.study.consent import ConsentError, record_consent, submit_demographics
    from services.study.texts import Voice, reword

    database, tokens = consent_db
    p = participant(database, tokens["receiver"][0])
    record_consent(database, p, True)
    before = counts(database)
    with pytest.raises(ConsentError) as e:
        submit_demographics(database, p, {"age": 12, "first_language": None, "comments": "x" * 21})
    said = str(e.value)
    assert "between 18 and 99" in said and "Please answer “First language”" in said and "too long" in said
    assert set(e.value.fields) == {"age", "first_language", "comments"}
    assert counts(database) == before
    pt = reword(e.value, Voice("pt-PT"))
    assert "tem de estar entre 18 e 99" in str(pt) and "Responda a “First language”" in str(pt)
    assert pt.fields["first_language"] == "Responda a “First language”."


def test_demographics_per_role_then_items(consent_db):
    from services.participation.items import get_view
    from services.study.consent import ConsentError, page, pending_stage, record_consent, submit_demographics
    from storage import consent as store
    from storage import studies

    database, tokens = consent_db
    study = studies.get_study(database, "demo")
    assert [f["id"] for f in page(study, "receiver", "demographics")["fields"]] == ["age", "first_language", "comments"]
    assert [f["id"] for f in page(study, "sender", "demographics")["fields"]] == ["age", "first_language"]
    p = participant(database, tokens["receiver"][0])
    with pytest.raises(ConsentError, match="consent"):  # the form comes after consent
        submit_demographics(database, p, {"age": 30, "first_language": "English"})
    record_consent(database, p, True)
    assert submit_demographics(database, p, {"age": "30", "first_language": "English", "comments": " "}) is None
    # a second submission keeps the first answers
    submit_demographics(database, p, {"age": 55, "first_language": "Other"})
    assert store.demographics(database, p["id"])["answers"] == {
        "age": 30,
        "first_language": "English",
        "comments": None,
    }
    view = get_view(database, p["token"], "receiver")
    assert view.status == "item" and view.content["translation"]
    # consent is asked of senders and receivers only: a DA rater answers the (all-role) form only
    rater = participant(database, tokens["da"][0])
    assert pending_stage(database, rater) == "demographics"
    with pytest.raises(ConsentError, match="no consent from your role"):
        record_consent(database, rater, True)


def test_export_keeps_only_participants_who_agreed(consent_db):
    from services.study.consent import record_consent, submit_demographics
    from services.study.export import build_tables, exportable_participants

    database, tokens = consent_db
    yes, no = (participant(database, t) for t in tokens["receiver"])
    record_consent(database, yes, True)
    submit_demographics(database, yes, {"age": 41, "first_language": "Portuguese"})
    record_consent(database, no, False)
    allowed = exportable_participants(database, "demo")
    assert yes["id"] in allowed and no["id"] not in allowed
    sender = participant(database, tokens["sender"][0])
    assert sender["id"] not in allowed  # asked, never answered
    assert participant(database, tokens["da"][0])["id"] in allowed  # no consent asked of DA raters
    tables, _, _ = build_tables(database, "demo")
    roles = [r["participant"] for r in tables["participants"]]
    assert "receiver-001" in roles and "receiver-002" not in roles and not any(r.startswith("sender") for r in roles)
    assert [(r["participant"], r["agreed"]) for r in tables["consents"]] == [("receiver-001", 1)]
    assert [(r["participant"], r["field"], r["value"]) for r in tables["demographics"]] == [
        ("receiver-001", "age", "41"),
        ("receiver-001", "first_language", "Portuguese"),
        ("receiver-001", "comments", None),
    ]
