"""Participant wording: the defaults in assets/scales.toml, replaced per study by its own scales.toml."""

from __future__ import annotations

import pytest

from services.participation.items import get_view
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError, load_study
from services.study.texts import defaults, sqm_label, texts
from tests.helpers.studies import study_with_scales


def test_a_study_rewords_the_survey(database, tmp_path):
    folder = study_with_scales(
        tmp_path,
        '[survey]\ntrust = "Confio que a tradução transmite o meu pedido."\n'
        'trust_third = "Confio que, se fosse meu, a tradução transmitiria o pedido."\n',
    )
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
    study = {
        "config": {
            "texts": {
                "sqm": [
                    {"tick": 6, "value": 100, "label": "Perfeito", "description": "d"},
                    {"tick": 4, "value": 66.7, "label": "Quase", "description": "d"},
                    {"tick": 2, "value": 33.3, "label": "Algum", "description": "d"},
                    {"tick": 0, "value": 0, "label": "Nada", "description": "d"},
                ]
            }
        }
    }
    assert sqm_label(70, study) == "Quase" and sqm_label(10, study) == "Nada"
    assert sqm_label(70) == "Most meaning preserved and few grammar mistakes"
    assert texts(study)["survey"] == defaults()["survey"]


@pytest.mark.parametrize(
    "scales,field",
    [
        ('[survey]\ntrst = "x"\n', "survey.trst"),
        ('[surveys]\ntrust = "x"\n', "surveys"),
        ('[survey]\nlikert = ["a", "b"]\n', "survey.likert"),
        ("[survey]\ntrust = 3\n", "survey.trust"),
        ('[[sqm]]\ntick = 6\nvalue = 100\nlabel = "x"\ndescription = "y"\n', "sqm"),
        # a table without its tick (or with a word for one) is named, not a TypeError from sorting
        (
            '[[sqm]]\ntick = 0\nvalue = 0\nlabel = "x"\ndescription = "y"\n'
            '[[sqm]]\nvalue = 100\nlabel = "x"\ndescription = "y"\n',
            "sqm",
        ),
        (
            '[[sqm]]\ntick = 0\nvalue = 0\nlabel = "x"\ndescription = "y"\n'
            '[[sqm]]\ntick = "six"\nvalue = 100\nlabel = "x"\ndescription = "y"\n',
            "sqm",
        ),
        ("[survey\n", None),
    ],
)
def test_mistakes_in_scales_toml_are_named(tmp_path, scales, field):
    with pytest.raises(StudyValidationError) as e:
        load_study(study_with_scales(tmp_path, scales))
    [err] = e.value.errors
    assert err.file == "scales.toml" and err.field == field


def test_the_disclosed_label_is_the_nearest_one():
    """99 is 'Perfect', not the label below it; 32 is 'Some meaning', not 'Nonsense'; halfway
    between two labels, the lower one."""
    assert sqm_label(99) == "Perfect meaning and grammar"
    assert sqm_label(32) == "Some meaning preserved"
    assert sqm_label(20) == "Some meaning preserved" and sqm_label(16) == "Nonsense / no meaning preserved"
    assert sqm_label(50) == "Some meaning preserved"
    assert sqm_label(51) == "Most meaning preserved and few grammar mistakes"
    assert sqm_label(0) == "Nonsense / no meaning preserved" and sqm_label(100) == "Perfect meaning and grammar"


def test_the_sqm_descriptions_are_the_papers_word_for_word():
    """Paper 000, appendix B.3."""
    paper = {
        6: "The meaning of the translation is completely consistent with the source and the surrounding context "
        "(if applicable). The grammar is also correct.",
        4: "The translation retains most of the meaning of the source. It may have some grammar mistakes or minor "
        "contextual inconsistencies.",
        2: "The translation preserves some of the meaning of the source but misses significant parts. The narrative "
        "is hard to follow due to fundamental errors. Grammar may be poor.",
        0: "Nearly all information is lost between the translation and source. Grammar is irrelevant.",
    }
    assert {s["tick"]: s["description"] for s in defaults()["sqm"]} == paper


def test_a_flagged_answer_is_disclosed_as_flagged_not_as_correct():
    from tabs.survey import _outcomes_html

    outcome = {
        "qa_score": 0.5,
        "translation_score": 99,
        "label": sqm_label(99),
        "answers": [
            {"en": "How old is Sofia?", "answer": "", "unanswerable": True, "correct": True},
            {"en": "What is she allergic to?", "answer": "", "unanswerable": True, "correct": False},
            {"en": "Since when?", "answer": "três dias", "unanswerable": False, "correct": True},
        ],
    }
    page = _outcomes_html([outcome])
    assert page.count("marked as not answerable from the translation") == 2
    assert "the validator accepted this as correct" in page and "the validator counted this as incorrect" in page
    assert page.count('class="outcome outcome-correct"') == 1  # only the answer that was written
    assert page.count('class="outcome outcome-accepted"') == 1 and page.count('class="outcome outcome-incorrect"') == 1
    assert "Perfect meaning and grammar" in page


def test_the_validator_is_told_how_to_judge_a_flagged_answer():
    assert "English source does not answer it" in defaults()["validator"]["flagged"]
