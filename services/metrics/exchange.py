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

The default set (a study without usability.metrics) is paper 000's (section 3 "Quality Metrics",
Table 2, Figure 11: COMET-22, CometKiwi-22, CometKiwi-23-XL, XCOMET-XL, MetricX-24-XL), each one
whose weights are configured; when none is, the offline set. XCOMET and MetricX-24 are hybrid:
without a reference they score reference-free (their QE mode), stored under the name + "-qe"
("xcomet-xl-qe"), a column of its own: the two modes read different inputs and their numbers are
not one scale. COMET-22 has no QE mode: without a reference it is skipped for that exchange.
metrics_report() says, per stored column, its mode, how many exchanges it scored and how many it
skipped, per reason (no reference, not configured, failed, pending): the analysis summary, the
Analysis tab and the export manifest show it, so no metric is ever skipped silently.
"""

from __future__ import annotations

from typing import Any, Mapping

from services.metrics import auto_qa
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.models.cache import CACHE
from storage import jobs, studies
from storage.db import required
from storage.usability import corpus as usability_corpus
from storage.usability import exchange_metrics, exchanges, recordings

# what runs without any weights configured (no network): the fallback when none of the paper's is set
OFFLINE_METRICS = ["e5-cosine", "backtranslation-chrf", "chrf", "bleu"]
DEFAULT_METRICS = OFFLINE_METRICS  # the old name
# paper 000 section 3 "Quality Metrics" (Table 2, Figure 11): COMET, COMET Kiwi Base and XL, XCOMET-XL,
# MetricX 24 XL, under the registry's names for those checkpoints
PAPER_METRICS = ["comet-22", "cometkiwi-22", "cometkiwi-23-xl", "xcomet-xl", "metricx-24-xl"]
QE_SUFFIX = "-qe"  # a hybrid metric's reference-free scores: a column of their own
REF_MODE, QE_MODE = "reference-based", "reference-free QE"


def has_qe_mode(m: metrics.Metric) -> bool:
    """A reference-based metric that scores reference-free when given no references (XCOMET,
    MetricX-24); COMET-22 and MetricX-23 reference models have no such mode."""
    mode = getattr(m, "reference_mode", None)
    return m.kind == metrics.REFERENCE and callable(mode) and not mode(None)


def qe_column(name: str) -> str:
    return name + QE_SUFFIX


def base_name(column: str) -> str:
    """The metric behind a stored column: "xcomet-xl-qe" -> "xcomet-xl" (a registered name stays)."""
    known = metrics.names()
    if column.endswith(QE_SUFFIX) and column not in known and column[: -len(QE_SUFFIX)] in known:
        return column[: -len(QE_SUFFIX)]
    return column


def not_configured(name: str, error: Exception) -> str:
    """The skip reason of a metric get() cannot build: the variable to set for a named checkpoint."""
    spec = metrics.CHECKPOINTS.get(name)
    if spec is not None:
        what = "MODEL" if spec.family == "metricx" else "CHECKPOINT"
        return f"not configured (set {metrics.env_var(name, what)})"
    return f"not configured ({str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__})"


def _unavailable(name: str, study: Mapping[str, Any], cache=CACHE) -> str | None:
    """None when the metric builds now with its packages installed, else the skip reason. Loads no model."""
    try:
        m = _metric(name, study, cache)
    except BackendUnavailable as e:
        return not_configured(name, e)
    missing = [d for d in getattr(m, "requires", ()) if not metrics._package_version(d)]
    return f"not installed ({', '.join(missing)})" if missing else None


def default_metrics(study: Mapping[str, Any] | None = None, cache=CACHE) -> tuple[list[str], list[str]]:
    """(metrics, notes) for a study without usability.metrics: paper 000's metrics whose weights are
    configured, the others named as not configured; none configured: the offline set."""
    study = study or {"config": {}}
    ready, notes = [], []
    for name in PAPER_METRICS:
        why = _unavailable(name, study, cache)
        if why is None:
            ready.append(name)
        else:
            notes.append(f"{name} (paper 000 section 3): {why}")
    if not ready:
        notes.append(
            "none of paper 000's metrics (section 3, Table 2) is configured: the offline set instead ("
            + ", ".join(OFFLINE_METRICS)
            + "), which the paper did not use"
        )
    return (ready or list(OFFLINE_METRICS)), notes


def study_metrics(study: Mapping[str, Any], cache=CACHE) -> list[str]:
    return study["config"].get("usability", {}).get("metrics") or default_metrics(study, cache)[0]


def enqueue(db, exchange_id: int) -> None:
    jobs.enqueue(db, "score_exchange", {"exchange_id": exchange_id}, dedupe_key=f"score_exchange:{exchange_id}")


def _metric(name: str, study: Mapping[str, Any], cache=CACHE) -> metrics.Metric:
    """The metric as the study configures it (the checkpoint now set for its name)."""
    if name == "auto-qa":  # the LLM and its settings come from the study
        return metrics.get(name, cache=cache, study_config=study["config"])
    # the learned checkpoints load into the caller's model cache too (a test's CPU cache)
    uses_cache = name in ("e5-cosine", "backtranslation-chrf") or name in metrics.CHECKPOINTS
    return metrics.get(name, cache=cache) if uses_cache else metrics.get(name)


def mixed_models(database, study_id: str) -> dict[str, list[str]]:
    """{metric: its distinct "version | model"} for each metric whose stored scores in this study
    come from more than one model (a checkpoint changed mid-study): not one column's numbers."""
    seen: dict[str, set[str]] = {}
    for r in exchange_metrics.exchange_metric_rows(database, study_id):
        seen.setdefault(r["metric"], set()).add(f"{r['version']} | {r['model']}")
    return {k: sorted(v) for k, v in seen.items() if len(v) > 1}


def stale_exchanges(database, study_id: str, cache=CACHE, names: list[str] | None = None) -> dict[str, list[int]]:
    """{metric: exchange ids} whose stored score came from another version or model than the one
    configured now (e.g. the checkpoint behind "cometkiwi-23-xl" was replaced)."""
    study = studies.get_study(database, study_id)
    if study is None:
        raise ValueError(f"There is no study '{study_id}'.")
    wanted = set(names or study_metrics(study))
    current: dict[str, tuple[str, str] | None] = {}
    out: dict[str, list[int]] = {}
    for r in exchange_metrics.exchange_metric_rows(database, study_id):
        base = base_name(r["metric"])  # a QE-mode column is its metric's, scored by the same model
        if base not in wanted:
            continue
        if base not in current:
            try:
                m = _metric(base, study, cache)
                current[base] = (m.version, m.model)
            except BackendUnavailable:  # not configured now: nothing to compare with (or re-score by)
                current[base] = None
        if current[base] is not None and (r["version"], r["model"]) != current[base]:
            out.setdefault(base, []).append(int(r["exchange_id"]))
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
    ex = exchanges.exchange(database, int(exchange_id))
    if ex is None:
        raise ValueError(f"exchange {exchange_id} does not exist")
    tr = recordings.translation(database, ex["id"])
    if tr is None:
        raise ValueError(f"exchange {exchange_id} has no translation yet")
    study = required(studies.get_study(database, ex["study_id"]), "study of an exchange")
    starter = required(usability_corpus.starter(database, ex["study_id"], ex["starter_id"]), "starter of an exchange")
    ref = exchange_metrics.reference_translation(database, ex["study_id"], ex["starter_id"], ex["system_id"])
    out, errors = {}, {}
    for name in names or study_metrics(study, cache):
        # one metric's failure does not cost the others their scores; it fails the job below
        try:
            m = _metric(base_name(name), study, cache)
            column, refs = m.name, ([ref] if m.kind == metrics.REFERENCE else None)
            if m.kind == metrics.REFERENCE and ref is None:
                if not has_qe_mode(m):
                    continue  # COMET-22, chrF, BLEU: metrics_report() counts it "no reference"
                column, refs = qe_column(m.name), None  # XCOMET / MetricX-24: their reference-free mode
            # a metric that reads the exchange's questions (auto-qa) gets them as its context
            ctx = (
                [auto_qa.questions_context(usability_corpus.questions(database, ex["study_id"], ex["starter_id"]))]
                if getattr(m, "needs_questions", False)
                else None
            )
            [score] = metrics.score_cached(database, m, [starter["text"]], [tr["text"]], refs, ctx)
        except Exception as e:  # raised again, all together, below
            errors[name] = e
            continue
        with database.write() as db:
            exchange_metrics.put_exchange_metric(db, ex["id"], column, m.version, m.model, score)
        out[column] = score
    if len(errors) == 1:
        raise next(iter(errors.values()))
    if errors:
        text = "; ".join(f"{n}: {type(e).__name__}: {e}" for n, e in errors.items())
        # a missing model or package is permanent (the worker does not retry it); anything else may pass
        if all(isinstance(e, BackendUnavailable) for e in errors.values()):
            raise BackendUnavailable(text)
        raise RuntimeError(text) from next(iter(errors.values()))
    return out


def score_auto_qa(database, study_id: str, cache=CACHE, progress=None) -> dict:
    """auto-qa for every exchange of the study that reached receivers (translated, past QC),
    stored with the other exchange metrics. {"scored", "none", "mean"}; progress(done, total)."""
    if studies.get_study(database, study_id) is None:
        raise ValueError(f"There is no study '{study_id}'.")
    ids = [e["id"] for e in exchanges.translated_exchanges(database, study_id)]
    scores = []
    for done, eid in enumerate(ids):
        if progress:
            progress(done, len(ids))
        scores.append(score_exchange(database, eid, cache, names=[auto_qa.NAME]).get(auto_qa.NAME))
    if progress:
        progress(len(ids), len(ids))
    got = [s for s in scores if s is not None]
    return {
        "exchanges": len(ids),
        "scored": len(got),
        "none": len(ids) - len(got),
        "mean": sum(got) / len(got) if got else None,
    }


# -- which metrics ran, in which mode, and what each skipped ---------------------------------------


def _static_mode(name: str) -> tuple[str, bool]:
    """(kind, has a QE mode) of a metric that cannot be built now (not configured), from its family."""
    spec = metrics.CHECKPOINTS.get(name)
    family = spec.family if spec else name
    version = (spec.options.get("metricx_version") if spec else None) or "24"
    if family in ("comet", "xcomet") or (family == "metricx" and version == "23"):
        return metrics.REFERENCE, family == "xcomet"
    if family == "metricx" and version == "24":
        return metrics.REFERENCE, True
    if name in ("chrf", "bleu"):
        return metrics.REFERENCE, False
    return metrics.QE, False


def _columns(name: str, m: metrics.Metric | None) -> list[tuple[str, str]]:
    """[(stored column, mode)] of a metric: a hybrid one has a column per mode."""
    kind, hybrid = (m.kind, has_qe_mode(m)) if m is not None else _static_mode(name)
    if kind != metrics.REFERENCE:
        return [(name, QE_MODE)]
    return [(name, REF_MODE)] + ([(qe_column(name), QE_MODE)] if hybrid else [])


def _job_reason(job: dict | None) -> str:
    if job is None:
        return "not scored (no scoring job)"
    error = (job.get("last_error") or "").strip().splitlines()
    if job["status"] == "failed":
        return f"failed: {error[0][:200] if error else 'no error recorded'}"
    if error:
        return f"failed, to be retried: {error[0][:200]}"
    return f"not scored yet (job {job['status']})"


def metrics_report(database, study_id: str, cache=CACHE) -> dict:
    """Which automatic metrics a study's exchanges got: {"source", "exchanges", "rows", "notes"}.

    source: where the set comes from ("usability.metrics", "paper 000", or "offline");
    exchanges: the translated exchanges past QC (those receivers see, as the analysis reads them);
    rows: one per stored column {"metric", "base", "mode", "scored", "skipped": {reason: n}}, so a
    hybrid metric has a reference-based and a QE row and scored + skipped sums to exchanges in each;
    the default set's unconfigured paper metrics are rows too (skipped: not configured);
    notes: the default set's choices (which paper metric is not configured, the offline fallback).
    One function for the analysis summary, the Analysis tab and the export manifest."""
    study = studies.get_study(database, study_id)
    if study is None:
        raise ValueError(f"There is no study '{study_id}'.")
    listed = study["config"].get("usability", {}).get("metrics")
    if listed:
        planned, source = list(listed), "usability.metrics"
        notes: list[str] = []
        shown = list(listed)
    else:
        planned, notes = default_metrics(study, cache)
        source = "paper 000" if planned != OFFLINE_METRICS else "offline"
        shown = list(dict.fromkeys(PAPER_METRICS + planned))  # the unconfigured paper metrics too
    ids = [int(e["id"]) for e in exchanges.translated_exchanges(database, study_id)]
    stored: dict[tuple[int, str], float | None] = {}
    for r in exchange_metrics.exchange_metric_rows(database, study_id):
        stored[int(r["exchange_id"]), r["metric"]] = r["score"]
    has_ref = {}
    for eid in ids:
        ex = required(exchanges.exchange(database, eid), "translated exchange")
        has_ref[eid] = (
            exchange_metrics.reference_translation(database, study_id, ex["starter_id"], ex["system_id"]) is not None
        )
    job_of = jobs.by_key_prefix(database, "score_exchange:")
    columns: dict[str, tuple[str, str, str | None, bool]] = {}  # column -> (base, mode, why not, hybrid)
    for name in shown + [base_name(c) for _, c in stored]:
        if any(v[0] == name for v in columns.values()):
            continue
        m, why = None, None
        try:
            m = _metric(name, study, cache)
        except (BackendUnavailable, KeyError) as e:
            why = not_configured(name, e) if isinstance(e, BackendUnavailable) else "no longer a known metric"
        why = why or _unavailable(name, study, cache)
        cols = _columns(name, m)
        for col, mode in cols:
            columns[col] = (name, mode, why, len(cols) > 1)
    rows = []
    for col, (base, mode, why, hybrid) in columns.items():
        scored = 0
        skipped: dict[str, int] = {}  # reason -> exchanges
        for eid in ids:
            if (eid, col) in stored:
                if stored[eid, col] is not None:
                    scored += 1
                    continue
                reason = "no score (blank source or translation)"
            elif why:  # neither mode ran: not configured (or not installed)
                reason = why
            elif mode == REF_MODE and not has_ref[eid]:
                reason = (
                    f"no reference: its reference-free column is {qe_column(base)}"
                    if hybrid
                    else "no reference (a reference-based metric)"
                )
            elif hybrid and mode == QE_MODE and has_ref[eid]:
                reason = f"has a reference: scored reference-based as {base}"
            elif base not in planned:
                reason = "not among the metrics the study computes now"
            else:
                reason = _job_reason(job_of.get(f"score_exchange:{eid}"))
            skipped[reason] = skipped.get(reason, 0) + 1
        rows.append(
            {
                "metric": col,
                "base": base,
                "mode": mode,
                "scored": scored,
                "skipped": dict(sorted(skipped.items(), key=lambda kv: -kv[1])),
            }
        )
    return {"source": source, "exchanges": len(ids), "rows": rows, "notes": notes}


SOURCE_TEXT = {
    "usability.metrics": "the study's usability.metrics",
    "paper 000": "paper 000's metrics (section 3, Table 2) whose weights are configured",
    "offline": "the offline set: none of paper 000's metrics is configured",
}


def report_lines(report: dict) -> list[str]:
    """metrics_report() as lines for a summary: one per column, then the notes."""
    lines = [f"automatic metrics ({SOURCE_TEXT[report['source']]}), {report['exchanges']} exchanges:"]
    for r in report["rows"]:
        text = f"  {r['metric']} ({r['mode']}): scored {r['scored']}"
        if r["skipped"]:
            text += "; skipped " + ", ".join(f"{n} {why}" for why, n in r["skipped"].items())
        lines.append(text)
    lines += [f"  note: {n}" for n in report["notes"]]
    return lines
