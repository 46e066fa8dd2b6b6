"""Reading questions and answers out of messy LLM output (services/comprehension/parse.py)."""

from __future__ import annotations

import pytest

from services.comprehension.parse import (
    clean_answer,
    drop_near_duplicates,
    is_unanswerable,
    near_duplicate,
    normalise,
    parse_questions,
)

THREE = ["What is the daughter's name?", "How old is she?", "How many days has she had a fever?"]

# (model output, the questions it holds)
CORPUS = [
    ("1. What is the daughter's name?\n2. How old is she?\n3. How many days has she had a fever?", THREE),
    ("1) What is the daughter's name?\n2) How old is she?\n3) How many days has she had a fever?", THREE),
    ("(1) What is the daughter's name?\n(2) How old is she?\n(3) How many days has she had a fever?", THREE),
    ("Q1: What is the daughter's name?\nQ2: How old is she?\nQ3: How many days has she had a fever?", THREE),
    (
        "Question 1 - What is the daughter's name?\nQuestion 2 - How old is she?\n"
        "Question 3 - How many days has she had a fever?",
        THREE,
    ),
    (
        "**Q1.** What is the daughter's name?\n**Q2.** How old is she?\n**Q3.** How many days has she had a fever?",
        THREE,
    ),
    ('1. **What is the daughter\'s name?**\n2. *How old is she?*\n3. "How many days has she had a fever?"', THREE),
    ("- What is the daughter's name?\n* How old is she?\n• How many days has she had a fever?", THREE),
    (
        "Sure! Here are 3 questions about the starter:\n\n1. What is the daughter's name?\n2. How old is she?\n"
        "3. How many days has she had a fever?\n\nLet me know if you would like more questions!",
        THREE,
    ),
    (
        "Here you go:\n1. What is the daughter's name?\n2. How old is she?\n3. How many days has she had a fever?\n"
        "Would you like me to translate them?",
        THREE,
    ),  # an epilogue question is not an item
    ('```json\n["What is the daughter\'s name?", "How old is she?", "How many days has she had a fever?"]\n```', THREE),
    (
        '{"questions": ["What is the daughter\'s name?", "How old is she?", "How many days has she had a fever?"]}',
        THREE,
    ),
    (
        'The questions: [{"question": "What is the daughter\'s name?", "answer": "Sofia"}, '
        '{"question": "How old is she?"}, {"question": "How many days has she had a fever?"}]',
        THREE,
    ),
    ("```\n1. What is the daughter's name?\n2. How old is she?\n3. How many days has she had a fever?\n```", THREE),
    ("What is the daughter's name?\nHow old is she?\nHow many days has she had a fever?", THREE),
    ("1. What is the daughter's name\n2. How old is she\n3. How many days has she had a fever", THREE),  # no "?"
    (
        "1. What is the daughter's name?\n2. How old is she?\n2. How old is she?\n"
        "3. How many days has she had a fever?",
        THREE,
    ),  # an exact repeat once
    (
        "Questions:\n1. What is the daughter's name?\n\n2. How old is she?\n   \n3. How many days has she had a fever?",
        THREE,
    ),
    ("1. 39 degrees\n2. What is the daughter's name?", ["What is the daughter's name?"]),  # not a question
    ("", []),
    ("   \n", []),
    (None, []),
    ("I cannot help with that.", []),
    ("asdf qwer zxcv\n1. 2. 3.", []),
    ("?????", []),
    ('{"questions": []}', []),
    ("[1, 2, 3]", []),
]


@pytest.mark.parametrize("text, expected", CORPUS, ids=[f"c{i}" for i in range(len(CORPUS))])
def test_questions_are_read_from_messy_output(text, expected):
    assert parse_questions(text) == expected


def test_overlong_and_one_word_lines_are_not_questions():
    assert parse_questions("1. " + "What " * 100 + "?\n2. Why?\n3. Where does she live?") == ["Where does she live?"]


def test_a_json_array_of_non_questions_falls_back_to_nothing_invented():
    assert parse_questions('["Sofia", "seven"]') == []


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("How old is the daughter?", "how old is the daughter", True),
        ("How old is the daughter?", "How old is the daughter ?!", True),
        ("Qual é a idade da filha?", "Qual e a idade da filha", True),  # accents
        ("How old is the daughter?", "How old is her daughter?", True),  # one word apart: near-duplicate
        ("How old is the daughter?", "What is the daughter's name?", False),
        ("How many days has she had a fever?", "How high is her fever?", False),
    ],
)
def test_near_duplicates(a, b, same):
    assert near_duplicate(a, b) is same


def test_drop_near_duplicates_keeps_the_first_and_respects_existing_questions():
    kept, dropped = drop_near_duplicates(
        ["How old is the daughter?", "How old is her daughter?", "What is her name?", "Which drug does she take?"],
        existing=["What is her name"],
    )
    assert kept == ["How old is the daughter?", "Which drug does she take?"]
    assert dropped == ["How old is her daughter?", "What is her name?"]


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "  ",
        None,
        "NOT STATED",
        "Not stated.",
        "not mentioned in the text",
        "Unknown",
        "The text does not say.",
        "N/A",
        "It cannot be answered.",
        "NÃO CONSTA",
        "Não consta.",
        "Não é mencionado",
        "Não sei",
        "Desconhecido",
        "**NOT STATED**",
        "...",
        "O texto não diz.",
    ],
)
def test_unanswerable_answers(answer):
    assert is_unanswerable(answer)


@pytest.mark.parametrize(
    "answer",
    ["Sofia", "seven", "39 degrees", "Three days.", "Não", "No", "paracetamol", "Sete anos", "250 mg every six hours"],
)
def test_real_answers_are_answers(answer):
    assert not is_unanswerable(answer)


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("Sofia", "Sofia"),
        ("Answer: Sofia", "Sofia"),
        ("**Sofia**\n\nShe is the daughter.", "Sofia"),
        ('"Sofia"', "Sofia"),
        ("Resposta: Sete anos.", "Sete anos."),
        ("\n\n  seven  \n", "seven"),
        ("```\nSofia\n```", "Sofia"),
        ("", ""),
        (None, ""),
    ],
)
def test_clean_answer(raw, clean):
    assert clean_answer(raw) == clean


def test_normalise():
    assert normalise("  Qual É a  idade, da Filha?! ") == "qual e a idade da filha"
