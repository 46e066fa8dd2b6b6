"""Generated study material for the study simulation (benchmarks/usability/study_sim.py).

Starters of 40-60 words in the paper's cells (domain health | everyday x source natural |
synthetic, with a corpus name per cell as in paper 000: MED-MT and BConTrasT for natural
requests, Gemini and Qwen 3 for synthetic ones), each with its key information marked and
5-10 comprehension questions in English and Portuguese (one per key fact), and the study
folder (study.toml + starters.csv + questions.csv) that services/setup/importer.py imports.
Seeded: the same seed writes the same files.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

CORPUS = {
    ("health", "natural"): ["MED-MT"],
    ("everyday", "natural"): ["BConTrasT"],
    ("health", "synthetic"): ["Gemini", "Qwen 3"],
    ("everyday", "synthetic"): ["Gemini", "Qwen 3"],
}
CELLS = list(CORPUS)
WORDS = (40, 60)
MIN_Q, MAX_Q = 5, 10

NAMES = [
    "Sofia",
    "Daniel",
    "Priya",
    "Marcus",
    "Aisha",
    "Tomasz",
    "Leila",
    "Hiroshi",
    "Grace",
    "Mateo",
    "Nadia",
    "Oliver",
    "Ines",
    "Rahul",
    "Chloe",
    "Kwame",
    "Elena",
    "Samuel",
    "Yara",
    "Victor",
]
SURNAMES = ["Walsh", "Hughes", "Okafor", "Lindqvist", "Moreau", "Patel", "Costa", "Nakamura", "Brennan", "Duarte"]
CITIES = ["Manchester", "Leeds", "Boston", "Delhi", "Toronto", "Glasgow", "Denver", "Pune", "Dublin", "Austin"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "March", "April", "June", "July", "September", "October", "November"]
SYMPTOMS = [
    "a sharp pain in my lower back",
    "a dry cough",
    "a rash on both arms",
    "a bad headache",
    "a swollen left ankle",
    "an earache",
    "stomach cramps",
    "a sore throat",
]
DRUGS = ["paracetamol", "ibuprofen", "amoxicillin", "lisinopril", "metformin", "cetirizine", "omeprazole", "salbutamol"]
ALLERGENS = ["penicillin", "peanuts", "latex", "aspirin", "shellfish", "codeine"]
ITEMS = ["a black backpack", "a red suitcase", "a silver laptop", "a brown wallet", "a blue umbrella", "a green jacket"]
PLACES = ["the train station", "the old market", "the harbour", "the main square", "the museum", "the bus terminal"]

FILLERS_NATURAL = [
    "Um, sorry, I hope this makes sense.",
    "So, yeah, that is basically it.",
    "Thanks a lot, really.",
    "Sorry, my Portuguese is not good at all.",
    "Okay, I think that is everything for now.",
]
FILLERS_SYNTHETIC = [
    "Thank you for your help.",
    "Please let me know what to do.",
    "I appreciate your assistance.",
    "I look forward to your reply.",
]
OPENINGS = {
    "health": {
        "natural": ["Hi, um, good morning.", "Hello, sorry to bother you.", "Excuse me, hi there."],
        "synthetic": [
            "Good morning, I need medical advice.",
            "Hello, I would like some help.",
            "Good afternoon, I am a visitor here.",
        ],
    },
    "everyday": {
        "natural": ["Hi, so, quick question.", "Hey there, um, hello.", "Hello, sorry, hi."],
        "synthetic": [
            "Good morning, I need some assistance.",
            "Hello, I have a request.",
            "Good evening, I am staying nearby.",
        ],
    },
}


def _health_facts(r: random.Random) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(sentence, [(key span, question en, question pt)]) candidates for a health request."""
    name, sur, city = r.choice(NAMES), r.choice(SURNAMES), r.choice(CITIES)
    age, days, dose = r.randint(3, 88), r.randint(2, 12), r.choice([5, 10, 20, 250, 400, 500])
    temp = r.choice(["38.5", "39", "39.5", "40"])
    drug, allergen, symptom = r.choice(DRUGS), r.choice(ALLERGENS), r.choice(SYMPTOMS)
    day, hour = r.choice(DAYS), r.randint(8, 18)
    phone = f"9{r.randint(10, 99)} {r.randint(100, 999)} {r.randint(100, 999)}"
    return [
        (f"My name is {name} {sur}.", [(f"{name} {sur}", "What is the person's name?", "Como se chama a pessoa?")]),
        (f"I am {age} years old.", [(f"{age} years old", "How old is the person?", "Que idade tem a pessoa?")]),
        (
            f"I have had {symptom} for {days} days.",
            [
                (symptom, "What is the main symptom?", "Qual é o sintoma principal?"),
                (f"{days} days", "For how many days has it lasted?", "Há quantos dias dura?"),
            ],
        ),
        (
            f"I take {dose} milligrams of {drug} every morning.",
            [
                (drug, "Which medicine does the person take?", "Que medicamento toma a pessoa?"),
                (f"{dose} milligrams", "What is the dose?", "Qual é a dose?"),
            ],
        ),
        (
            f"I am allergic to {allergen}.",
            [(f"allergic to {allergen}", "What is the person allergic to?", "A que é que a pessoa é alérgica?")],
        ),
        (
            f"This morning my temperature was {temp} degrees.",
            [(f"{temp} degrees", "What was the temperature this morning?", "Qual era a temperatura esta manhã?")],
        ),
        (
            f"Could I see someone on {day} at {hour} o'clock?",
            [
                (day, "On which day would the person like to be seen?", "Em que dia quer a pessoa ser atendida?"),
                (f"{hour} o'clock", "At what time?", "A que horas?"),
            ],
        ),
        (
            f"My family doctor is Dr. {r.choice(SURNAMES)} in {city}.",
            [(city, "In which city is the family doctor?", "Em que cidade está o médico de família?")],
        ),
        (f"You can call me on {phone}.", [(phone, "What is the phone number?", "Qual é o número de telefone?")]),
    ]


def _everyday_facts(r: random.Random) -> list[tuple[str, list[tuple[str, str, str]]]]:
    name, sur = r.choice(NAMES), r.choice(SURNAMES)
    people, nights, price = r.randint(2, 9), r.randint(1, 14), r.choice([12, 25, 40, 65, 80, 120])
    day, month, hour = r.randint(1, 28), r.choice(MONTHS), r.randint(7, 22)
    item, place = r.choice(ITEMS), r.choice(PLACES)
    room, flight = r.randint(101, 499), f"TP {r.randint(1000, 9999)}"
    return [
        (
            f"The booking is under the name {name} {sur}.",
            [(f"{name} {sur}", "Under which name is the booking?", "Em nome de quem está a reserva?")],
        ),
        (
            f"We are a group of {people} people.",
            [(f"{people} people", "How many people are in the group?", "Quantas pessoas tem o grupo?")],
        ),
        (
            f"We arrive on the {day} of {month} for {nights} nights.",
            [
                (f"{day} of {month}", "On what date do they arrive?", "Em que data chegam?"),
                (f"{nights} nights", "For how many nights?", "Por quantas noites?"),
            ],
        ),
        (
            f"I lost {item} near {place} yesterday.",
            [
                (item, "What did the person lose?", "O que perdeu a pessoa?"),
                (place, "Where was it lost?", "Onde foi perdido?"),
            ],
        ),
        (f"We are in room {room}.", [(f"room {room}", "What is the room number?", "Qual é o número do quarto?")]),
        (
            f"The ticket cost {price} euros.",
            [(f"{price} euros", "How much did the ticket cost?", "Quanto custou o bilhete?")],
        ),
        (
            f"Our flight {flight} leaves at {hour} o'clock.",
            [
                (flight, "What is the flight number?", "Qual é o número do voo?"),
                (f"{hour} o'clock", "At what time does the flight leave?", "A que horas parte o voo?"),
            ],
        ),
    ]


def _natural(sentence: str, r: random.Random) -> str:
    """A spoken-style variant: a hesitation or a discourse marker in front, now and then."""
    if r.random() < 0.4:
        keep = sentence.startswith(("I ", "I'm "))
        return r.choice(["Um, ", "So, ", "And, uh, ", "Oh, and "]) + (
            sentence if keep else sentence[0].lower() + sentence[1:]
        )
    return sentence


def starter(sid: str, domain: str, source: str, r: random.Random) -> tuple[dict, list[dict]]:
    """One starter row and its question rows; retried until it meets the corpus rules."""
    for _ in range(200):
        facts = (_health_facts if domain == "health" else _everyday_facts)(r)
        r.shuffle(facts)
        parts = [r.choice(OPENINGS[domain][source])]
        spans: list[tuple[str, str, str]] = []
        for sentence, keys in facts:
            s = _natural(sentence, r) if source == "natural" else sentence
            words = len(" ".join(parts + [s]).split())
            if words > WORDS[1] or len(spans) + len(keys) > MAX_Q:
                continue
            parts.append(s)
            spans += keys
            if words >= WORDS[0] + r.randint(0, 12) and len(spans) >= MIN_Q:
                break
        fillers = FILLERS_NATURAL if source == "natural" else FILLERS_SYNTHETIC
        for f in r.sample(fillers, len(fillers)):
            if len(" ".join(parts).split()) >= WORDS[0]:
                break
            if len(" ".join(parts + [f]).split()) <= WORDS[1]:
                parts.append(f)
        text = " ".join(parts)
        n = len(text.split())
        key_texts = [k for k, _, _ in spans]
        if (
            WORDS[0] <= n <= WORDS[1]
            and MIN_Q <= len(spans) <= MAX_Q
            and len(set(key_texts)) == len(key_texts)
            and all(k in text for k in key_texts)
        ):
            corpus = r.choice(CORPUS[(domain, source)])
            row = {
                "id": sid,
                "domain": domain,
                "source": source,
                "corpus": corpus,
                "text": text,
                "key_spans": " | ".join(key_texts),
            }
            qs = [{"starter_id": sid, "index": i, "en": en, "pt": pt} for i, (_, en, pt) in enumerate(spans, start=1)]
            return row, qs
    raise RuntimeError(f"could not write starter {sid} ({domain}, {source})")


def starters(n: int, seed: int) -> tuple[list[dict], list[dict]]:
    """n starters spread evenly over the four domain x source cells, and their questions."""
    r = random.Random(seed)
    rows, questions = [], []
    for i in range(n):
        domain, source = CELLS[i % len(CELLS)]
        row, qs = starter(f"st{i + 1:04d}", domain, source, r)
        rows.append(row)
        questions += qs
    return rows, questions


def translation(starter_row: dict, system: str, exchange_id: int) -> str:
    """A stand-in for a system's Portuguese output (no model runs in the simulation)."""
    spans = starter_row["key_spans"]  # a list in storage, "a | b" in the CSV row
    keys = spans if isinstance(spans, list) else [k.strip() for k in spans.split("|")]
    said = f"Olá, preciso de ajuda ({system}, troca {exchange_id}). " + "; ".join(keys) + ". Obrigado."
    # as many words as the reading, as a real translation has: QC flags one far shorter than its
    # transcript (services/usability/recording_qc.translation_short)
    short = len(str(starter_row.get("text", "")).split()) - len(said.split())
    return said + "".join(" e mais" for _ in range(max(0, short) // 2 + 1))


STUDY_TOML = """# Written by benchmarks/usability/sim_corpus.py: the study simulation's generated study.
[study]
id = "{study_id}"
name = "Simulated usability study (paper 000 design)"
protocols = ["usability"]
seed = {seed}
completion_code = "SIM-{seed}"
groups = ["USW", "USB", "Hindi"]
genders = ["Man", "Woman"]

[usability]
starters = "starters.csv"
questions = "questions.csv"
items_per_sender = {items_per_sender}
items_per_receiver = {items_per_receiver}
items_per_validator = {items_per_validator}
redundancy = 1
max_recording_seconds = 30
starter_words = [40, 60]
"""

SYSTEM_TOML = """
[[systems]]
id = "{id}"
label = "{id} (simulated: no model runs)"
kind = "human"
assign = true
"""


def write_study(
    folder: Path,
    study_id: str,
    seed: int,
    n_starters: int,
    systems: list[str],
    items_per_sender: int = 10,
    items_per_receiver: int = 30,
    items_per_validator: int = 30,
) -> dict:
    """The study folder; returns {starter id: starter row}."""
    folder.mkdir(parents=True, exist_ok=True)
    rows, questions = starters(n_starters, seed)
    toml = STUDY_TOML.format(
        study_id=study_id,
        seed=seed,
        items_per_sender=items_per_sender,
        items_per_receiver=items_per_receiver,
        items_per_validator=items_per_validator,
    )
    toml += "".join(SYSTEM_TOML.format(id=s) for s in systems)
    (folder / "study.toml").write_text(toml, encoding="utf-8")
    for name, data, cols in (
        ("starters.csv", rows, ["id", "domain", "source", "corpus", "text", "key_spans"]),
        ("questions.csv", questions, ["starter_id", "index", "en", "pt"]),
    ):
        with open(folder / name, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(data)
    return {r["id"]: r for r in rows}
