"""The semantic-differential form's defaults are paper 002's (issue 20, point 5).

Paper 002, Table 3 (the survey's instructions, English translation): "You will be shown 3
sentences altogether, distributed over 4 pages each. ... The adjective list contains 22 polar
adjective pairs ... On the next page, you will first see an example before the survey starts."
Section 3.1: the preliminary study "reduced the number of adjective pairs to 20"; section 3.2:
"we incorporated a test condition ... based on calculating an Inconsistency Score (IS)
(Naderi, 2018) on repeated adjective pairs". 22 = the 20 pairs + 2 repeats.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from services.participation.items import get_view
from services.participation.submissions import submit
from services.sd import analysis as sd_analysis
from services.sd import form as sd_form
from services.sd.form import REPEAT_SUFFIX
from services.setup.enrolment import add_participants
from storage.sd import ratings as sd_ratings
from tests.helpers.sd import answer_page, sd_study

# Table 3, verbatim from the paper (English translation, then the German original)
PAPER_EN = (
    "Welcome to the survey In this survey, you are supposed to evaluate the language of different sentences "
    "with the help of an adjective list. You will be shown 3 sentences altogether, distributed over 4 pages "
    "each. Die sentences might, but don't have to, contain errors. Please evaluate each of the 3 sentences with "
    "regard to the language used (including punctuation) with the help of the adjective list. The adjective list "
    "contains 22 polar adjective pairs which are located on both ends of a scale from -3 to +3. Please move the "
    "slider for each adjective pair to the point on the scale where the value describes the language of the "
    "respective sentence best in your opinion. Try to not let the content of the sentences influence your "
    "evaluation. All your answers in the following survey will be handled anonymously and exclusively serve the "
    "aim of this scientific work. Note: The result of this survey is very important for us and other scientists "
    "working in this area. We are equipped with methods to check your answers for consistency. We will use these "
    "methods to evaluate the quality of the completed task. Crowdworkers that provide high-quality answers will "
    "be invited to further surveys to which they will receive exclusive access. On the next page, you will first "
    "see an example before the survey starts."
)
PAPER_DE = (
    "Willkommen zur Umfrage In dieser Umfrage sollst du die Sprache von verschiedenen Sätzen anhand einer "
    "Adjektivliste bewerten. Hierzu werden dir insgesamt 3 Sätze auf je 4 Seiten gezeigt. Die Sätze können "
    "fehlerhaft sein, müssen aber nicht. Bitte bewerte jeden dieser 3 Sätze in Hinblick auf die verwendete "
    "Sprache (inklusive Satzzeichen) mit Hilfe der Adjektivliste. Die Adjektivliste enthält 22 gegesätzliche "
    "Adjektivpaare, die an den beiden Enden einer Skala von -3 bis +3 stehen. Bitte schiebe für jedes "
    "Adjektivpaar den Slider auf der Skala dorthin, wo der Wert deiner Meinung nach die Sprache des jeweiligen "
    "Satzes am besten beschreibt. Versuche, den Inhalt der Sätze nicht in deine Bewertung miteinfließen zu "
    "lassen. Alle deine Antworten aus dem folgenden Fragebogen werden anonym behandelt und dienen ausschließlich "
    "dem Zweck dieser wissenschaftlichen Arbeit. Achtung: Das Ergebnis dieser Umfrage ist sehr wichtig für uns "
    "und andere Wissenschaftler, die in diesem Bereich arbeiten. Wir verfügen über Methoden um die Einheitlichkeit "
    "deiner Antworten zu überprüfen. Wir werden diese Methoden nutzen, um die Qualität der abgeschickten Aufgaben "
    "zu bewerten. Crowdworker, die qualitativ hochwertige Antworten geben, werden zu weiteren Untersuchungen "
    "eingeladen, zu denen sie exklusiven Zugang erhalten. Auf der nächsten Seite wirst du zunächst ein Beispiel "
    "sehen, bevor es losgeht."
)
# the two typos of the paper's table, corrected in the shipped text
TYPOS = {"Die sentences might": "The sentences might", "gegesätzliche": "gegensätzliche"}


def plain(markdown: str) -> str:
    return re.sub(r"\s+", " ", markdown.replace("**", "")).strip()


def fixed(text: str) -> str:
    for a, b in TYPOS.items():
        text = text.replace(a, b)
    return text


def test_page_sizes():
    assert sd_form.page_sizes(22, 0, 4) == [6, 6, 5, 5]
    assert sd_form.page_sizes(22, 8, 4) == [8, 8, 6]  # pairs_per_page, when set, wins
    assert sd_form.page_sizes(20, 0, 1) == [20]
    assert sd_form.page_sizes(3, 0, 4) == [1, 1, 1]  # never an empty page


def test_default_sentence_has_22_scales_over_4_pages_two_of_them_repeats(database, tmp_path):
    db = sd_study(database, tmp_path)  # the demo study sets none of these keys
    p = add_participants(db, "demo", "sd", 1)[0]
    rows = db.query("SELECT item_id, meta FROM assignments WHERE participant_id = ? ORDER BY position", [p.id])
    metas = [json.loads(r["meta"]) for r in rows]
    assert [m["kind"] for m in metas[:2]] == ["welcome", "example"]
    ratings = [m for m in metas if m["kind"] == "ratings"]
    by_sentence: dict[str, list] = {}
    for m in ratings:
        by_sentence.setdefault(m["sentence_id"], []).append(m)
    assert len(by_sentence) == 3  # "3 sentences altogether"
    for pages in by_sentence.values():
        assert [m["page"] for m in pages] == [1, 2, 3, 4] and {m["pages"] for m in pages} == {4}  # "over 4 pages each"
        slots = [e["slot"] for m in pages for e in m["pairs"]]
        assert len(slots) == 22 and len(set(slots)) == 22  # "22 polar adjective pairs"
        repeats = [s for s in slots if s.endswith(REPEAT_SUFFIX)]
        assert len(repeats) == 2 and len({s for s in slots if not s.endswith(REPEAT_SUFFIX)}) == 20
        # a repeat is never on the page of its first rating
        page_of = {e["slot"]: m["page"] for m in pages for e in m["pairs"]}
        assert all(page_of[r] > page_of[r[: -len(REPEAT_SUFFIX)]] for r in repeats)
    assert get_view(db, p.token, "sd").total == 3 * 4  # the welcome and example are not progress


def test_welcome_page_is_the_papers_instructions_in_english_and_the_german_original(database, tmp_path):
    db = sd_study(database, tmp_path)
    p = add_participants(db, "demo", "sd", 1)[0]
    v = get_view(db, p.token, "sd")
    assert v.content["kind"] == "welcome" and v.content["pairs"] == [] and v.content["language"] == "en"
    assert plain(v.content["instruction"]) == fixed(PAPER_EN)


def test_german_instructions_by_setting(database, tmp_path):
    db = sd_study(database, tmp_path, instructions_language="de")
    p = add_participants(db, "demo", "sd", 1)[0]
    v = get_view(db, p.token, "sd")
    assert plain(v.content["instruction"]) == fixed(PAPER_DE)
    submit(db, p.token, "sd", v.item_id, {"values": {}})
    v = get_view(db, p.token, "sd")
    assert v.content["kind"] == "example" and v.content["example"].startswith("**Beispiel.**")
    submit(db, p.token, "sd", v.item_id, {"values": {}})
    v = get_view(db, p.token, "sd")
    assert v.content["kind"] == "ratings" and v.content["instruction"].startswith("Bewerte die Sprache")
    # the pairs stay in sd.language (en here): the two settings are independent
    assert {x["left"] for x in v.content["pairs"]} & {
        "direct",
        "ponderous",
        "unambiguous",
        "ambiguous",
        "simple",
        "complicated",
        "neat",
        "confusing",
        "clear",
        "chaotic",
        "fluent",
        "non-fluent",
        "human",
        "technical",
    }


def test_german_pairs_bring_the_german_instructions_by_default(database, tmp_path):
    db = sd_study(database, tmp_path, language="de")
    p = add_participants(db, "demo", "sd", 1)[0]
    assert plain(get_view(db, p.token, "sd").content["instruction"]) == fixed(PAPER_DE)


def test_numbers_in_the_instructions_follow_the_study(database, tmp_path):
    db = sd_study(database, tmp_path, sentences_per_participant=2, pages_per_sentence=2, repeats_per_sentence=4)
    p = add_participants(db, "demo", "sd", 1)[0]
    text = plain(get_view(db, p.token, "sd").content["instruction"])
    assert "shown 2 sentences altogether, distributed over 2 pages each" in text
    assert "contains 24 polar adjective pairs" in text


def test_example_has_its_own_page_between_the_welcome_and_the_first_sentence(database, tmp_path):
    db = sd_study(database, tmp_path)
    p = add_participants(db, "demo", "sd", 1)[0]
    kinds = []
    for _ in range(3):
        v = get_view(db, p.token, "sd")
        kinds.append((v.content["kind"], bool(v.content.get("example")), len(v.content["pairs"])))
        answer_page(db, p.token, v, lambda x: 4)
    assert kinds == [("welcome", False, 0), ("example", True, 0), ("ratings", False, 6)]
    assert db.scalar("SELECT COUNT(*) FROM sd_ratings") == 6  # the first two pages store nothing


def test_inconsistency_score_is_computed_by_default(database, tmp_path):
    """With the default form every participant has repeated pairs, so the analysis computes an
    IS for each (section 4.1: "Lastly, we calculated the IS (Naderi, 2018)")."""
    db = sd_study(database, tmp_path)
    rng = np.random.default_rng(5)
    for p in add_participants(db, "demo", "sd", 3):
        while (v := get_view(db, p.token, "sd")).status == "item":
            answer_page(db, p.token, v, lambda x: int(rng.integers(1, 8)))
    frame = pd.DataFrame(sd_ratings.sd_rating_rows(db, "demo"))
    assert len(frame) == 3 * 3 * 22 and int(frame["is_repeat"].sum()) == 3 * 3 * 2
    cl = sd_analysis.cleanse(frame)
    assert cl["inconsistency"].notna().all()


def test_instructions_language_is_checked(database, tmp_path):
    with pytest.raises(Exception, match="instructions_language") as e:
        sd_study(database, tmp_path, instructions_language="fr")
    assert "the paper's English translation" in str(e.value)
