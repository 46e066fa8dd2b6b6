"""Automatic quality signals per exchange, computed by a job once the translation exists.

Reference-free metrics compare the Portuguese translation with the English starter;
reference-based ones (chrF, BLEU) need a human reference translation of the starter, which a
study provides in its references file (usability.references; several per starter are scored
as a multi-reference cell); a study without one for a starter falls back to an imported
exchange of a `human` system, when the designer lists human translation as a system. Each
stored score names its metric, version and model, so numbers of different metrics are never
mixed.
"""
from __future__ import annotations

from services import auto_qa, metrics
from services.model_cache import CACHE
from storage import jobs, queue, results, studies

DEFAULT_METRICS = ["e5-cosine", "backtranslation-chrf", "chrf", "bleu"]


def study_metrics(study: dict) -> list[str]:
    return study["config"].get("usability", {}).get("metrics") or DEFAULT_METRICS


def enqueue(db, exchange_id: int) -> None:
    jobs.enqueue(db, "score_exchange", {"exchange_id": exchange_id}, dedupe_key=f"score_exchange:{exchange_id}")


def score_exchange(database, exchange_id: int, cache=CACHE, names: list[str] | None = None) -> dict:
    """The study's metrics (or `names`) for one exchange, each stored as it comes."""
    ex = queue.exchange(database, int(exchange_id))
    tr = results.translation(database, ex["id"])
    if tr is None:
        raise ValueError(f"exchange {exchange_id} has no translation yet")
    study = studies.get_study(database, ex["study_id"])
    starter = studies.starter(database, ex["study_id"], ex["starter_id"])
    ref = results.reference_translation(database, ex["study_id"], ex["starter_id"], ex["system_id"])
    out = {}
    for name in names or study_metrics(study):
        if name == "auto-qa":          # the LLM and its settings come from the study
            m = metrics.get(name, cache=cache, study_config=study["config"])
        else:
            m = metrics.get(name, cache=cache) if name in ("e5-cosine", "backtranslation-chrf") else metrics.get(name)
        if m.kind == metrics.REFERENCE and ref is None:
            continue
        # a metric that reads the exchange's questions (auto-qa) gets them as its context
        ctx = ([auto_qa.questions_context(studies.questions(database, ex["study_id"], ex["starter_id"]))]
               if getattr(m, "needs_questions", False) else None)
        [score] = metrics.score_cached(database, m, [starter["text"]], [tr["text"]],
                                       [ref] if m.kind == metrics.REFERENCE else None, ctx)
        with database.write() as db:
            results.put_exchange_metric(db, ex["id"], m.name, m.version, m.model, score)
        out[m.name] = score
    return out
