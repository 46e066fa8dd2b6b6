"""Comprehension questions written by an LLM for starters that have none (paper 000, section 2.3).

For one starter: the LLM is asked for up to n questions in English grounded in the starter's
key information (prompt "generate"); the answer is parsed (services/comprehension/parse.py);
near-duplicates of each other or of the starter's existing questions and drafts are dropped;
each question is answered by the LLM from the starter alone (prompt "answer") and dropped when
the answer is empty or "not stated" (the kept answer is stored as the reference answer); the
rest are translated to Portuguese (by the LLM into the study's target variant, or by Bergamot
en->pt, which writes Brazilian Portuguese: [questions] translate, services/comprehension/settings.py)
and stored as drafts, their model naming the variant. Nothing reaches the study's questions
before a person accepts it (services/questions/review.py).

A model that writes junk (no question parsed, nothing answerable) is reported per starter and
stores nothing. An unreachable server or a missing model stops the run (every starter would
fail the same way); an HTTP error or malformed reply for one starter is reported and the run
goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from services.common import variants
from services.comprehension import parse as question_parse
from services.comprehension import settings as question_settings
from services.models import llm as llm_service
from services.models import systems
from services.models.backends import BackendUnavailable
from services.models.cache import CACHE
from services.questions import review as question_review
from storage import studies
from storage.db import required
from storage.rows import StudyRow
from storage.usability import corpus as usability_corpus
from storage.usability import question_drafts

SNIPPET = 200  # how much of an unusable LLM answer a report quotes


@dataclass
class Candidate:
    en: str
    answer_en: str
    pt: str = ""


@dataclass
class StarterReport:
    starter_id: str
    parsed: int = 0  # questions read out of the LLM's answer
    duplicates: list[str] = field(default_factory=list)
    unanswerable: list[str] = field(default_factory=list)
    stored: list[int] = field(default_factory=list)  # draft ids
    problem: str = ""  # why nothing (or less) was stored

    def summary(self) -> str:
        s = (
            f"{self.starter_id}: {len(self.stored)} stored ({self.parsed} parsed, {len(self.duplicates)} "
            f"near-duplicates, {len(self.unanswerable)} not answerable from the starter)"
        )
        return s + (f": {self.problem}" if self.problem else "")


@dataclass
class GenerationReport:
    study_id: str
    model: str
    starters: list[StarterReport] = field(default_factory=list)

    @property
    def stored(self) -> int:
        return sum(len(s.stored) for s in self.starters)

    def summary(self) -> str:
        if not self.starters:
            return "Every starter already has questions or drafts: nothing to generate."
        return (
            f"{self.stored} draft question(s) for {len(self.starters)} starter(s), written by {self.model}. "
            "Review and accept them before they are used."
        )


class Generator:
    """The LLM, the translator and the prompts of one study."""

    def __init__(self, study: StudyRow, llm=None, translator=None, cache=CACHE):
        self.study = study
        cfg = study["config"]
        self.settings = question_settings.section(cfg)
        self.llm = llm if llm is not None else llm_service.get(cfg, cache=cache)
        self.prompts = {name: question_settings.prompt(cfg, name) for name in question_settings.PROMPTS}
        if translator is None and question_settings.translator(cfg) == "mt":
            translator = systems.build_mt({"mt": "bergamot"}, cache)
        self.translator = translator  # None: the LLM translates
        mt = getattr(translator, "name", "the LLM") if translator is not None else "the LLM"
        # the Portuguese variant of the questions: the MT's own (Bergamot: pt-BR), or the one the
        # LLM's prompt asks for
        self.variant = variants.of_study(cfg) if translator is None else getattr(translator, "variant", "")
        self.model = f"{self.llm.name}; pt by {mt}" + (f" ({self.variant})" if self.variant else "")

    # -- the steps ---------------------------------------------------------------------------
    def ask_questions(self, starter: dict, n: int, avoid: list[str]) -> tuple[list[str], str]:
        """(parsed questions, raw answer)."""
        prompt = question_settings.fill(
            self.prompts["generate"],
            starter=starter["text"],
            n=n,
            key_information="; ".join(starter.get("key_spans") or []) or "(not marked)",
            avoid="\n".join(f"- {q}" for q in avoid) or "(none)",
        )
        raw = self.llm.complete([prompt])[0]
        return question_parse.parse_questions(raw), raw

    def answer(self, text: str, questions: list[str]) -> list[str]:
        """The LLM's answer to each question from `text` alone, cleaned ("" when it said nothing)."""
        prompts = [question_settings.fill(self.prompts["answer"], text=text, question=q) for q in questions]
        return [question_parse.clean_answer(a) for a in self.llm.complete(prompts)] if prompts else []

    def translate(self, questions: list[str]) -> list[str]:
        if not questions:
            return []
        if self.translator is not None:
            out = self.translator.translate(questions)
        else:
            prompts = [question_settings.fill(self.prompts["translate"], text=q) for q in questions]
            out = [question_parse.clean_answer(a) for a in self.llm.complete(prompts)]
        return [(t or "").strip() for t in out]

    def candidates(
        self, starter: dict, n: int, existing: list[str], report: StarterReport, ask: int | None = None
    ) -> list[Candidate]:
        """Up to n new, distinct, answerable questions with their reference answers and Portuguese
        (the LLM is asked for `ask` questions, default n)."""
        questions, raw = self.ask_questions(starter, ask or n, existing)
        report.parsed = len(questions)
        if not questions:
            report.problem = f"the LLM's answer held no questions: {raw.strip()[:SNIPPET]!r}"
            return []
        kept, report.duplicates = question_parse.drop_near_duplicates(questions, existing)
        answers = self.answer(starter["text"], kept)
        out: list[Candidate] = []
        for q, a in zip(kept, answers):
            if question_parse.is_unanswerable(a):
                report.unanswerable.append(q)
            elif len(out) < n:
                out.append(Candidate(q, a))
        if not out:
            report.problem = "no question was new and answerable from the starter"
        for c, pt in zip(out, self.translate([c.en for c in out])):
            c.pt = pt
        return out


def _existing(database, study_id: str, starter_id: str) -> list[str]:
    """English questions the starter has (in use, or drafts, rejected ones too: a rejected
    question is not proposed again): new ones must differ."""
    qs = [q["en"] for q in usability_corpus.questions(database, study_id, starter_id)]
    return qs + [d["en"] for d in question_drafts.for_starter(database, study_id, starter_id) if d["en"] not in qs]


def starters_to_do(database, study_id: str) -> list[str]:
    """Starters with no questions in use and no draft waiting for review."""
    in_use = question_drafts.question_counts(database, study_id)
    drafts = question_drafts.counts(database, study_id)
    return [
        s["id"]
        for s in usability_corpus.starters(database, study_id)
        if not in_use.get(s["id"])
        and not drafts.get(s["id"], {}).get("draft")
        and not drafts.get(s["id"], {}).get("accepted")
    ]


def _study(database, study_id: str) -> StudyRow:
    study = studies.get_study(database, study_id)
    if study is None:
        raise ValueError(f"There is no study '{study_id}'.")
    if "usability" not in study["config"]:
        raise ValueError(f"Study '{study_id}' has no usability protocol, so no starters to write questions for.")
    return study


def _n(study: StudyRow, n: int | None) -> int:
    n = question_settings.section(study["config"])["n"] if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= question_settings.MAX_QUESTIONS:
        raise ValueError(
            f"n must be a whole number from 1 to {question_settings.MAX_QUESTIONS} "
            f"(questions are numbered 1-10), not {n!r}"
        )
    return n


def generate(
    database,
    study_id: str,
    n: int | None = None,
    starter_id: str | None = None,
    generator: Generator | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    actor: str = "cli",
) -> GenerationReport:
    """Drafts for every starter without questions or drafts (or for `starter_id` alone, whatever
    it has: new questions then differ from its existing ones). progress(done, total, starter_id)."""
    study = _study(database, study_id)
    n = _n(study, n)
    if starter_id is not None:
        if usability_corpus.starter(database, study_id, starter_id) is None:
            raise ValueError(f"Study '{study_id}' has no starter '{starter_id}'.")
        todo = [starter_id]
    else:
        todo = starters_to_do(database, study_id)
    if not todo:
        return GenerationReport(study_id, "")
    gen = generator or Generator(study)
    report = GenerationReport(study_id, gen.model)
    for done, sid in enumerate(todo):
        if progress:
            progress(done, len(todo), sid)
        report.starters.append(_one(database, gen, study_id, sid, n, actor))
    if progress:
        progress(len(todo), len(todo), "")
    return report


def _one(database, gen: Generator, study_id: str, starter_id: str, n: int, actor: str) -> StarterReport:
    rep = StarterReport(starter_id)
    starter = required(usability_corpus.starter(database, study_id, starter_id), "starter to write questions for")
    # the starter's questions from the study folder join the review first, so accepting a new
    # draft adds to them instead of replacing them
    question_review.adopt(database, study_id, starter_id)
    try:
        found = gen.candidates(starter, n, _existing(database, study_id, starter_id), rep)
    except BackendUnavailable:
        raise  # nothing will work: say so once
    except RuntimeError as e:  # this starter's request failed (HTTP error, bad reply)
        rep.problem = str(e)
        return rep
    with database.write() as db:
        for c in found:
            rep.stored.append(
                question_drafts.insert(db, study_id, starter_id, c.en, c.pt, c.answer_en, "generated", gen.model)
            )
        if found:
            database.log(
                actor,
                "generate_questions",
                "starter",
                f"{study_id}/{starter_id}",
                {"drafts": rep.stored, "model": gen.model},
            )
    return rep


def regenerate(database, draft_id: int, generator: Generator | None = None, actor: str = "cli") -> StarterReport:
    """A new question in place of draft `draft_id` (which becomes a draft again, with the new text).
    The starter's questions are rebuilt when it was accepted (refused when receivers have them)."""
    d = question_review.draft_or_error(database, draft_id)
    if d["status"] == "accepted":  # refused before the LLM is asked, not after
        question_review.check_unlocked(database, d["study_id"], d["starter_id"])
    study = _study(database, d["study_id"])
    gen = generator or Generator(study)
    rep = StarterReport(d["starter_id"])
    starter = usability_corpus.starter(database, d["study_id"], d["starter_id"])
    if starter is None:
        raise ValueError(f"Starter '{d['starter_id']}' is no longer in study '{d['study_id']}'.")
    # a few asked for, the first new and answerable one kept (the draft's own text counts as existing)
    found = gen.candidates(starter, 1, _existing(database, d["study_id"], d["starter_id"]), rep, ask=3)
    if not found:
        return rep
    c = found[0]
    question_review.replace_text(database, draft_id, c.en, c.pt, c.answer_en, "generated", gen.model, actor)
    rep.stored.append(draft_id)
    return rep
