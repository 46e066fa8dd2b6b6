"""Compiling conversation starters (paper 000, section 2.2 and appendix B.1) as drafts for a
person to review: entries sampled at random from a source corpus and rephrased by an LLM into
first-person starters ("natural" source), or starters written by an LLM for a scenario
("synthetic"). Each draft keeps what it came from (the corpus entry, the model and its settings)
and the checks the study's import will make (40-60 words, at least one key span), so the
reviewer fixes or drops what fails before saving the file as the study's starters.csv (its
columns: id, domain, source, corpus, text, key_spans; the draft's other columns are ignored at
import). The paper's review was a person too (appendix B.2).

Prompts: assets/prompts/starter_rephrase.txt and starter_generate.txt, this project's wording
(the paper's own prompts, its Figure 9, are for Gemini 2.5 Pro on MED-MT and BConTrasT). The LLM
marks key information with **double asterisks**; the marks become key_spans and leave the text.
Sampling as appendix B.1: temperature 0.9, and its system prompt sent before each prompt (the
app's LLM interface takes temperature and seed; top_p 0.95 and top_k 20 are the serving side's
to set, see docs/usability-study.md).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from services.common.seeded import seeded_rng
from services.comprehension.settings import PROMPTS_DIR, fill

TEMPERATURE = 0.9  # appendix B.1
SYSTEM = "You are a language model specialized in generating high-quality synthetic data."  # appendix B.1
WORDS = (40, 60)  # section 2.1: starters of 40-60 words ([usability] starter_words)
LISTENER = {"health": "a pharmacist or a doctor", "everyday": "a customer service agent"}
DOMAIN_WORDS = {"health": "their health: symptoms, how long, medicines, allergies", "everyday": "an everyday request"}
COLUMNS = ["id", "domain", "source", "corpus", "text", "key_spans", "words", "problems", "original", "model"]
_MARK = re.compile(r"\*\*(.+?)\*\*")


class StarterDraftError(ValueError):
    """Bad input for the drafts (file, row or setting named)."""


@dataclass
class Draft:
    id: str
    domain: str
    source: str  # natural | synthetic (the study's starter sources)
    corpus: str
    text: str
    key_spans: list[str] = field(default_factory=list)
    original: str = ""  # the corpus entry it was rephrased from ("" for synthetic)
    model: str = ""

    @property
    def words(self) -> int:
        return len(self.text.split())

    def problems(self, words: tuple[int, int] = WORDS) -> list[str]:
        out = []
        if not words[0] <= self.words <= words[1]:
            out.append(f"{self.words} words ({words[0]}-{words[1]} wanted)")
        if not self.key_spans:
            out.append("no key information marked")
        return out


def read_corpus(path) -> list[dict]:
    """A source corpus: CSV with a `text` column (and optionally `id`), or JSONL objects with
    `text`; refused with the file and row named."""
    p = Path(path)
    if not p.is_file():
        raise StarterDraftError(f"{p}: no such file")
    rows: list[dict] = []
    try:
        raw = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise StarterDraftError(f"{p.name}: not UTF-8 text (byte {e.start}); save it as CSV UTF-8") from None
    if p.suffix.lower() in (".jsonl", ".ndjson"):
        for n, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise StarterDraftError(f"{p.name}, line {n}: not JSON ({e.msg})") from None
                rows.append(obj if isinstance(obj, dict) else {})
    else:
        reader = csv.DictReader(raw.splitlines())
        if "text" not in (reader.fieldnames or []):
            raise StarterDraftError(f"{p.name}: no `text` column (columns: {', '.join(reader.fieldnames or [])})")
        rows = list(reader)
    out = []
    for n, r in enumerate(rows, start=1):
        text = str(r.get("text") or "").strip()
        if not text:
            raise StarterDraftError(f"{p.name}, row {n}: empty or missing `text`")
        out.append({"id": str(r.get("id") or n), "text": text})
    return out


def sample(rows: list[dict], n: int, seed) -> list[dict]:
    """n entries drawn at random without replacement (seeded), in their corpus order."""
    if n < 1:
        raise StarterDraftError(f"--n must be at least 1, got {n}")
    if n > len(rows):
        raise StarterDraftError(f"asked for {n} entries but the corpus has {len(rows)}")
    picked = set(seeded_rng("starter-sample", seed).sample(range(len(rows)), n))
    return [r for i, r in enumerate(rows) if i in picked]


def marked(text: str) -> tuple[str, list[str]]:
    """The LLM's answer without its **marks**, and the marked spans (each once, in order)."""
    line = " ".join(text.strip().strip('"').split())
    spans = list(dict.fromkeys(m.strip() for m in _MARK.findall(line) if m.strip()))
    return _MARK.sub(lambda m: m.group(1), line), spans


def load_prompt(name: str) -> str:
    return (PROMPTS_DIR / f"{name}.txt").read_text(encoding="utf-8")


def _ask(llm, prompts: list[str]) -> list[str]:
    return llm.complete([f"{SYSTEM}\n\n{p}" for p in prompts])


def rephrased(llm, entries: list[dict], domain: str, corpus: str, what: str, prefix: str) -> list[Draft]:
    """Natural starters: each sampled entry rephrased by the LLM."""
    prompt = load_prompt("starter_rephrase")
    prompts = [
        fill(
            prompt,
            corpus=corpus,
            what=what,
            listener=LISTENER.get(domain, "another person"),
            text=e["text"],
            min_words=WORDS[0],
            max_words=WORDS[1],
        )
        for e in entries
    ]
    out = []
    for e, answer in zip(entries, _ask(llm, prompts)):
        text, spans = marked(answer)
        out.append(Draft(f"{prefix}{e['id']}", domain, "natural", corpus, text, spans, e["text"], llm.name))
    return out


def generated(llm, n: int, domain: str, corpus: str, scenarios: list[str], prefix: str) -> list[Draft]:
    """Synthetic starters: n written by the LLM, the scenarios taken in turn."""
    if not scenarios:
        raise StarterDraftError("give at least one scenario (e.g. 'booking a taxi to the airport')")
    prompt = load_prompt("starter_generate")
    prompts = [
        fill(
            prompt,
            scenario=scenarios[k % len(scenarios)],
            listener=LISTENER.get(domain, "another person"),
            domain_words=DOMAIN_WORDS.get(domain, domain),
            min_words=WORDS[0],
            max_words=WORDS[1],
            k=k // len(scenarios) + 1,
        )
        for k in range(n)
    ]
    return [
        Draft(f"{prefix}{k + 1}", domain, "synthetic", corpus, *marked(answer), "", llm.name)
        for k, answer in enumerate(_ask(llm, prompts))
    ]


def write(drafts: list[Draft], out) -> Path:
    """The drafts as CSV for review: the study's starter columns first, then words, problems,
    original and model (ignored by the import)."""
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for d in drafts:
            w.writerow(
                {
                    "id": d.id,
                    "domain": d.domain,
                    "source": d.source,
                    "corpus": d.corpus,
                    "text": d.text,
                    "key_spans": "|".join(d.key_spans),
                    "words": d.words,
                    "problems": "; ".join(d.problems()),
                    "original": d.original,
                    "model": d.model,
                }
            )
    return p
