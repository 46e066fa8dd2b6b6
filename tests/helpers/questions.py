"""A deterministic LLM that writes and answers comprehension questions (the responder of
tests/openai_server.py), and the demo study with some starters' questions left to it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from harness.demo import DEMO

NEW = ("s01", "s02")  # starters imported without questions

# A small world the fake-free LLM answers from: question -> the answer, which it gives only when
# that answer occurs in the text it reads (English questions from the starter or a back-
# translation, Portuguese ones from the translation).
EN = {
    "What is the name of the daughter?": "Sofia",
    "How old is the daughter?": "seven",
    "How high is the fever?": "39",
    "For how many days has she had a fever?": "three days",
    "Which antibiotic is she allergic to?": "penicillin",
    "How many milligrams of paracetamol does she take?": "250",
    "What is the father's name?": "Peter",  # not in s01: unanswerable there
}

PT = {
    "Como se chama a filha?": "Sofia",
    "Qual é a temperatura da febre?": "39",
    "Quantos miligramas de paracetamol toma?": "250",
    "Como se chama o pai?": "Peter",
}

S01_REPLY = """Sure! Here are the questions about the starter:

1. What is the name of the daughter?
2) How old is the daughter?
3. How old is her daughter?
Q4: What is the daughter's favourite colour?
5. **How high is the fever?**
- For how many days has she had a fever?
7. Which antibiotic is she allergic to?
8. How many milligrams of paracetamol does she take?

I hope these help! Let me know if you need more."""


def _between(text: str, start: str, end: str) -> str:
    m = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)
    return m.group(1) if m else ""


STUDY = "qgen"


GENERATED = [
    "What is the name of the daughter?",
    "How old is the daughter?",
    "How high is the fever?",
    "For how many days has she had a fever?",
    "Which antibiotic is she allergic to?",
    "How many milligrams of paracetamol does she take?",
]


def respond(text: str, body: dict) -> str | None:
    """The question writer and answerer, deterministic, keyed on the default prompts."""
    if "reading-comprehension questions" in text:
        return S01_REPLY if "Sofia" in text else "I am sorry, I cannot help with that."
    if "\nQuestion: " in text:
        q = text.split("\nQuestion: ", 1)[1].split("\n", 1)[0].strip()
        source = _between(text, '"""', '"""')
        answer = EN.get(q)
        return f"Answer: {answer}" if answer and answer.lower() in source.lower() else "NOT STATED"
    if "\nPergunta: " in text:
        q = text.split("\nPergunta: ", 1)[1].split("\n", 1)[0].strip()
        answer = PT.get(q)
        return answer if answer and answer.lower() in _between(text, '"""', '"""').lower() else "NÃO CONSTA"
    if text.startswith("Translate the following English question into Portuguese (Portugal)."):
        return "PT: " + text.split("English: ", 1)[1].split("\n", 1)[0]
    return None


def make_study(folder: Path, extra_toml: str = "[questions]\n", drop=NEW) -> Path:
    """The demo study as STUDY, with `drop` starters' questions left out for the LLM to write."""
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8").replace('id = "demo"', f'id = "{STUDY}"', 1)
    (folder / "study.toml").write_text(toml + "\n" + extra_toml, encoding="utf-8")
    rows = (folder / "questions.csv").read_text(encoding="utf-8").splitlines()
    keep = [r for r in rows if not r.startswith(tuple(f"{s}," for s in drop))]
    (folder / "questions.csv").write_text("\n".join(keep) + "\n", encoding="utf-8")
    return folder
