"""`[study] contact` (issue 51: pages told participants to "contact the study team" and gave no
way to): where a study gives one, every such message says it, in the page's language; a
contact with markup is refused at import, and it is a setting a pilot may change in place."""

from __future__ import annotations

import pytest

from services.admin.participants import deactivate
from services.participation.items import AccessError, get_view
from services.setup.importer import import_study
from services.study.files import StudyValidationError
from storage import open_database, participants
from tests.helpers.studies import study_with_keys


def deactivated_message(tmp_path, extra: str, lang: str) -> str:
    db = open_database(tmp_path / "a.db")
    import_study(db, study_with_keys(tmp_path, extra))
    from services.setup.enrolment import add_participants

    token = add_participants(db, "demo", "da", 1)[0].token
    deactivate(db, "demo", participants.by_token(db, token)["id"], "test")
    with pytest.raises(AccessError) as e:
        get_view(db, token, "da", lang=lang)
    return str(e.value)


def test_a_deactivated_link_names_the_contact_in_the_pages_language(tmp_path):
    said = deactivated_message(tmp_path / "en", 'contact = "evalteam@lab.example.org"', "en")
    assert said == "This link has been deactivated. Please contact the study team (evalteam@lab.example.org)."
    said = deactivated_message(tmp_path / "pt", 'contact = "evalteam@lab.example.org"', "pt-PT")
    assert said == "Esta ligação foi desativada. Contacte a equipa do estudo (evalteam@lab.example.org)."


def test_without_a_contact_the_sentence_is_as_before(tmp_path):
    said = deactivated_message(tmp_path, "", "en")
    assert said == "This link has been deactivated. Please contact the study team."


@pytest.mark.parametrize("bad", ['"<a href=x>me</a>"', '"[me](http://x)"', "42"])
def test_a_contact_with_markup_or_not_text_is_refused(tmp_path, bad):
    with pytest.raises(StudyValidationError) as e:
        import_study(open_database(tmp_path / "a.db"), study_with_keys(tmp_path, f"contact = {bad}"))
    assert any("study.contact" in str(err) for err in e.value.errors)


def test_the_contact_is_a_safe_setting():
    from services.study.lifecycle import SAFE_SETTINGS

    assert "study.contact" in SAFE_SETTINGS
