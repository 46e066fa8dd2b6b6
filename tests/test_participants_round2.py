"""Issue 29 points 4 and 6, on the server side: a refused form names every wrong field at once
(the item form marks each: tests/test_participants_round2_browser.py), the validator's page says
what to do, the semantic differential's instruction pages are not progress, and every role's
page says how long it takes."""

from __future__ import annotations

import pytest

from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from storage import studies
from storage.usability import corpus as usability_corpus
from storage.usability import question_drafts


@pytest.fixture
def people(demo_db):
    return {r: add_participants(demo_db, "demo", r, 1)[0] for r in ("receiver", "validator", "rater", "sd")}


def refusal(db, tok, tab, item_id, payload) -> SubmissionError:
    with pytest.raises(SubmissionError) as e:
        submit(db, tok, tab, item_id, payload)
    return e.value


def test_an_empty_receiver_form_names_every_question_at_once_in_portuguese(demo_db, people):
    tok = people["receiver"].token
    v = get_view(demo_db, tok, "receiver")
    idxs = [q["idx"] for q in v.content["questions"]]
    e = refusal(demo_db, tok, "receiver", v.item_id, {"answers": []})
    assert set(e.fields) == {f"answer-{i}" for i in idxs}
    assert f"em falta: {', '.join(map(str, idxs))}" in str(e)
    assert all(w.startswith("Responda a esta pergunta") for w in e.fields.values())
    # a too long answer and a missing one come together, each on its field
    answers = [{"idx": i, "text": "sim", "unanswerable": False} for i in idxs]
    answers[0]["text"] = "x" * 2001
    answers[-1]["text"] = ""
    e = refusal(demo_db, tok, "receiver", v.item_id, {"answers": answers})
    assert set(e.fields) == {f"answer-{idxs[0]}", f"answer-{idxs[-1]}"}
    assert "demasiado longa" in str(e) and f"em falta: {idxs[-1]}" in str(e)
    assert demo_db.scalar("SELECT COUNT(*) FROM answers") == 0


def test_validator_gets_the_slider_and_every_unmarked_answer_in_one_refusal(demo_db, people):
    r = people["receiver"].token
    v = get_view(demo_db, r, "receiver")
    submit(
        demo_db,
        r,
        "receiver",
        v.item_id,
        {"answers": [{"idx": q["idx"], "text": "sim", "unanswerable": False} for q in v.content["questions"]]},
    )
    tok = people["validator"].token
    val = get_view(demo_db, tok, "validator")
    idxs = [a["idx"] for a in val.content["answers"]]
    e = refusal(demo_db, tok, "validator", val.item_id, {"score": None, "marks": {str(idxs[0]): "correct"}})
    assert set(e.fields) == {"score"} | {f"mark-{i}" for i in idxs[1:]}
    assert "move the slider" in str(e) and f"missing: {', '.join(map(str, idxs[1:]))}" in str(e)
    assert demo_db.scalar("SELECT COUNT(*) FROM validations") == 0


def test_survey_and_sd_name_every_missing_choice(demo_db, people):
    tok = people["rater"].token
    v = get_view(demo_db, tok, "survey")
    e = refusal(demo_db, tok, "survey", v.item_id, {"satisfaction": None, "trust": "", "reliance": 9})
    assert set(e.fields) == {"satisfaction", "trust", "reliance"}
    assert "missing: satisfaction, trust" in str(e) and "between 1 and 5" in str(e)
    sd = people["sd"].token
    s = get_view(demo_db, sd, "sd")
    while s.content["kind"] in ("welcome", "example"):
        s = submit(demo_db, sd, "sd", s.item_id, {"values": {}}).next
    slots = [p["slot"] for p in s.content["pairs"]]
    e = refusal(demo_db, sd, "sd", s.item_id, {"values": {slots[0]: "9"}})
    assert set(e.fields) == {f"pair:{x}" for x in slots}
    assert "from 1 to 7" in str(e) and "answer every scale" in str(e)


def test_sd_welcome_and_example_are_not_progress_and_say_no_saved(demo_db, people):
    tok = people["sd"].token
    v = get_view(demo_db, tok, "sd")
    assert v.content["kind"] == "welcome" and v.done == 0
    total = v.total
    assert total == demo_db.scalar(
        "SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND item_id NOT IN ('welcome', 'example')",
        [people["sd"].id],
    )
    res = submit(demo_db, tok, "sd", v.item_id, {"values": {}})
    assert res.message == "" and res.next.content["kind"] == "example" and res.next.progress == f"0 / {total}"
    res = submit(demo_db, tok, "sd", res.next.item_id, {"values": {}})
    assert res.message == "" and res.next.content["kind"] == "ratings" and res.next.done == 0
    s = res.next
    res = submit(demo_db, tok, "sd", s.item_id, {"values": {p["slot"]: "4" for p in s.content["pairs"]}})
    assert res.message == "Saved." and res.next.progress == f"1 / {total}"


def test_validator_page_says_what_correct_means_and_shows_the_expected_answer(demo_db, people):
    r = people["receiver"].token
    v = get_view(demo_db, r, "receiver")
    ex = demo_db.one(
        "SELECT e.starter_id FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
        "WHERE a.participant_id = ? AND a.phase = 'receive'",
        [people["receiver"].id],
    )
    qs = usability_corpus.questions(demo_db, "demo", ex["starter_id"])
    # the starter's questions are accepted drafts from the import (issue 51): the second gets an answer
    drafts = {(d["en"], d["pt"]): d for d in question_drafts.for_starter(demo_db, "demo", ex["starter_id"])}
    with demo_db.write() as db:
        second = drafts[next((q["en"], q["pt"]) for q in qs if q["idx"] == 2)]
        assert second["status"] == "accepted"
        question_drafts.update(db, second["id"], answer_en="Maria")
    submit(
        demo_db,
        r,
        "receiver",
        v.item_id,
        {"answers": [{"idx": q["idx"], "text": "sim", "unanswerable": False} for q in v.content["questions"]]},
    )
    c = get_view(demo_db, people["validator"].token, "validator").content
    assert "English source" in c["instruction"] and "not the translation" in c["instruction"]
    assert "does not answer the question either" in c["instruction"]  # paper 000's flagged rule
    assert [q["expected"] for q in c["questions"]][:3] == ["", "Maria", ""]
    from tabs.validator import body_html

    page = body_html(c)
    assert "Expected answer (from the English source): Maria" in page and page.count('class="expected"') == 1
    assert "<strong>Mark each answer.</strong>" in page


def test_every_role_has_a_welcome_with_its_expected_time(demo_db, people, tmp_path):
    from services.participation.welcome import expected_minutes, page_welcome, welcome

    study = studies.get_study(demo_db, "demo")
    cfg = study["config"]
    assert expected_minutes(study, "receiver") == -(-cfg["usability"]["items_per_receiver"] * 150 // 60)
    assert expected_minutes(study, "sd") == 10  # paper 002: about 10 minutes
    for role in ("sender", "receiver", "validator", "rater", "da", "sd"):
        words = welcome(study, role, "en")
        assert f"about {expected_minutes(study, role)} minutes" in words, role
    assert "Demora cerca de" in welcome(study, "receiver", "pt-PT")
    study["config"]["study"]["expected_minutes"] = {"receiver": 25}
    assert expected_minutes(study, "receiver") == 25
    # shown until the first answer
    p = demo_db.one("SELECT * FROM participants WHERE id = ?", [people["sd"].id])
    assert "about 10 minutes" in page_welcome(demo_db, p, "en")
    v = get_view(demo_db, people["sd"].token, "sd")
    submit(demo_db, people["sd"].token, "sd", v.item_id, {"values": {}})
    assert page_welcome(demo_db, p, "en") == ""


def test_a_study_sets_expected_minutes_per_role_and_a_bad_table_is_named(tmp_path):
    import shutil

    from harness.demo import DEMO
    from services.study.files import StudyValidationError, load_study

    folder = tmp_path / "s"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    (folder / "study.toml").write_text(toml.replace("[study]\n", "[study]\nexpected_minutes = {receiver = 20}\n", 1))
    assert load_study(folder).config["study"]["expected_minutes"] == {"receiver": 20}
    (folder / "study.toml").write_text(toml.replace("[study]\n", "[study]\nexpected_minutes = {reader = 20}\n", 1))
    with pytest.raises(StudyValidationError, match="study.expected_minutes"):
        load_study(folder)
