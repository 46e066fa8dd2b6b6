"""Participant wording: the defaults in assets/scales.toml, replaced per study by its own scales.toml."""
from __future__ import annotations

import shutil

import pytest

from conftest import DEMO
from services.items import get_view
from services.participants import add_participants
from services.study_files import StudyValidationError, load_study
from services.study_import import import_study
from services.texts import defaults, sqm_label, texts


def study_with(tmp_path, scales: str):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    (folder / "scales.toml").write_text(scales, encoding="utf-8")
    return folder


def test_a_study_rewords_the_survey(database, tmp_path):
    folder = study_with(tmp_path, '[survey]\ntrust = "Confio que a tradução transmite o meu pedido."\n'
                                  'trust_third = "Confio que, se fosse meu, a tradução transmitiria o pedido."\n')
    import_study(database, folder)
    rater = add_participants(database, "demo", "rater", 1)[0]
    v = get_view(database, rater.token, "survey")
    # a rater rates someone else's message: the third-person wording, which the study keeps
    assert v.content["perspective"] == "third"
    assert v.content["statements"]["trust"] == "Confio que, se fosse meu, a tradução transmitiria o pedido."
    # everything not overridden keeps the default wording
    assert v.content["statements"]["satisfaction"] == defaults()["survey"]["satisfaction_third"]
    assert v.content["heading"] == defaults()["survey"]["heading_third"] == "The message and its translation"
    assert v.content["instruction"] == defaults()["survey"]["instruction_third"]
    assert v.content["likert"] == defaults()["survey"]["likert"]


def test_sqm_labels_follow_the_study():
    study = {"config": {"texts": {"sqm": [
        {"tick": 6, "value": 100, "label": "Perfeito", "description": "d"},
        {"tick": 4, "value": 66.7, "label": "Quase", "description": "d"},
        {"tick": 2, "value": 33.3, "label": "Algum", "description": "d"},
        {"tick": 0, "value": 0, "label": "Nada", "description": "d"}]}}}
    assert sqm_label(70, study) == "Quase" and sqm_label(20, study) == "Nada"
    assert sqm_label(70) == "Most meaning preserved and few grammar mistakes"
    assert texts(study)["survey"] == defaults()["survey"]


@pytest.mark.parametrize("scales,field", [
    ('[survey]\ntrst = "x"\n', "survey.trst"),
    ('[surveys]\ntrust = "x"\n', "surveys"),
    ('[survey]\nlikert = ["a", "b"]\n', "survey.likert"),
    ('[survey]\ntrust = 3\n', "survey.trust"),
    ('[[sqm]]\ntick = 6\nvalue = 100\nlabel = "x"\ndescription = "y"\n', "sqm"),
    ('[survey\n', None),
])
def test_mistakes_in_scales_toml_are_named(tmp_path, scales, field):
    with pytest.raises(StudyValidationError) as e:
        load_study(study_with(tmp_path, scales))
    [err] = e.value.errors
    assert err.file == "scales.toml" and err.field == field
