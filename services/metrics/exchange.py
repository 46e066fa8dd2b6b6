"""Automatic quality signals per exchange, computed by a job once the translation exists.

Reference-free metrics compare the Portuguese translation with the English starter;
reference-based ones (chrF, BLEU) need a human reference translation of the starter, which a
study provides in its references file (usability.references; several per starter are scored
as a multi-reference cell); a study without one for a starter falls back to an imported
exchange of a `human` system, when the designer lists human translation as a system. Each
stored score names its metric, version and model, so numbers of different metrics are never
mixed. The model of a learned metric names its checkpoint and a fingerprint of its weights, and
two checkpoints of one family are two metric names ("cometkiwi-22", "cometkiwi-23-xl"); when a
name's checkpoint is changed during a study, mixed_models() finds the metrics whose stored scores
now come from more than one model and rescore_stale() re-scores the exchanges scored by another
model than the configured one, so one column never silently holds two models' numbers.
"""
from __future__ import annotations

from services.metrics import auto_qa
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.models.cache import CACHE
from storage import jobs, queue, results, studies

DEFAULT_METRICS = ["e5-cosine", "backtranslation-chrf", "chrf", "bleu"]


def study_metrics(study: dict) -> list[str]:
    return study["config"].get("usability", {}).get("metrics") or DEFAULT_METRICS


def enqueue(db, exchange_id: int) -> None:
    jobs.enqueue(db, "score_exchange", {"exchange_id": exchange_id}, dedupe_key=f"score_exchange:{exchange_id}")


def _metric(name: str, study: dict, cache=CACHE) -> metrics.Metric:
    """The metric as the study configures it (the checkpoint now set for its name)."""
    if name == "auto-qa":              # the LLM and its settings come from the study
        return metrics.get(name, cache=cache, study_config=study["config"])
    return metrics.get(name, cache=cache) if name in ("e5-cosine", "backtranslation-chrf") else metrics.get(name)


def mixed_models(database, study_id: str) -> dict[str, list[str]]:
    """{metric: its distinct "version | model"} for each metric whose stored scores in this study
    come from more than one model (a checkpoint changed mid-study): not one column's numbers."""
    seen: dict[str, set[str]] = {}
    for r in results.exchange_metric_rows(database, study_id):
        seen.setdefault(r["metric"], set()).add(f"{r['version']} | {r['model']}")
    return {k: sorted(v) for k, v in seen.items() if len(v) > 1}


def stale_exchanges(database, study_id: str, cache=CACHE, names: list[str] | None = None) -> dict[str, list[int]]:
    """{metric: exchange ids} whose stored score came from another version or model than the one
    configured now (e.g. the checkpoint behind "cometkiwi-23-xl" was replaced)."""
    study = studies.get_study(database, study_id)
    wanted = set(names or study_metrics(study))
    current: dict[str, tuple[str, str] | None] = {}
    out: dict[str, list[int]] = {}
    for r in results.exchange_metric_rows(database, study_id):
        if r["metric"] not in wanted:
            continue
        if r["metric"] not in current:
            try:
                m = _metric(r["metric"], study, cache)
                current[r["metric"]] = (m.version, m.model)
            except BackendUnavailable:  # not configured now: nothing to compare with (or re-score by)
                current[r["metric"]] = None
        if current[r["metric"]] is not None and (r["version"], r["model"]) != current[r["metric"]]:
            out.setdefault(r["metric"], []).append(int(r["exchange_id"]))
    return {k: sorted(v) for k, v in out.items()}


def rescore_stale(database, study_id: str, cache=CACHE, names: list[str] | None = None) -> dict[str, int]:
    """Re-score what stale_exchanges() finds with the configured model (the stored rows are
    replaced); {metric: exchanges re-scored}."""
    stale = stale_exchanges(database, study_id, cache, names)
    for name, ids in stale.items():
        for eid in ids:
            score_exchange(database, eid, cache, names=[name])
    return {k: len(v) for k, v in stale.items()}


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
        m = _metric(name, study, cache)
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


def score_auto_qa(database, study_id: str, cache=CACHE, progress=None) -> dict:
    """auto-qa for every exchange of the study that reached receivers (translated, past QC),
    stored with the other exchange metrics. {"scored", "none", "mean"}; progress(done, total)."""
    if studies.get_study(database, study_id) is None:
        raise ValueError(f"There is no study '{study_id}'.")
    ids = [e["id"] for e in queue.translated_exchanges(database, study_id)]
    scores = []
    for done, eid in enumerate(ids):
        if progress:
            progress(done, len(ids))
        scores.append(score_exchange(database, eid, cache, names=[auto_qa.NAME]).get(auto_qa.NAME))
    if progress:
        progress(len(ids), len(ids))
    got = [s for s in scores if s is not None]
    return {"exchanges": len(ids), "scored": len(got), "none": len(ids) - len(got),
            "mean": sum(got) / len(got) if got else None}
