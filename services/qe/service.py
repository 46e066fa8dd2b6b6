"""The QE audit and quality-aware reranking as the app and the command line run them: which
metric, which MT for the 'bil' context variant, which sampler for reranking, where scores are
cached. The statistics themselves are in services.qe.audit and services.qe.rerank.

- Metrics come from the registry (services.metrics.registry). A lower-is-better metric (MetricX: 0 best,
  25 worst) is audited as quality = 1 - score / worst, so that ratios, error rates and
  retention read the same way for every metric (the paper rescales MetricX the same way);
  its name says so ("metricx (1 - x/25)").
- bil = QE(c|s, MT(c)|h) needs the context translated into the target language: Bergamot
  (offline, en-pt) for Portuguese, else the transformers seq2seq model in
  TRADLAB_QE_CONTEXT_MT (e.g. a local NLLB folder, with TRADLAB_QE_CONTEXT_MT_LANGS mapping
  "es=spa_Latn,it=ita_Latn"), one language at a time.
- Scores are memoised in the database's metric_scores table when a database is given.
- A metric that names the languages in its prompt (GEMBA-DA, ``for_languages``) stays one through
  the wrappers here (QualityOriented, CachedScorer), so the audit and the reranking ask it about
  each PAIRS / candidate row's ``lang``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from services.common.settings import current as current_settings
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable, hf
from services.models.backends.hf import TransformersSeq2SeqMT
from services.models.backends.offline import BergamotMT
from services.qe import audit as qe_audit
from services.qe import rerank as qe_rerank

ENV_CONTEXT_MT = "TRADLAB_QE_CONTEXT_MT"
ENV_CONTEXT_MT_LANGS = "TRADLAB_QE_CONTEXT_MT_LANGS"


class QualityOriented(metrics.Metric):
    """A lower-is-better metric turned into quality in [0, 1]: 1 - score / worst."""

    def __init__(self, inner: metrics.Metric, worst: float):
        self.inner = inner
        self.worst = float(worst)
        self.name = f"{inner.name} (1 - x/{self.worst:g})"
        self.kind = inner.kind
        self.version = inner.version
        self.model = inner.model
        self.scale = f"1 - {inner.name}/{self.worst:g} (higher is better)"
        self.supports_context = getattr(inner, "supports_context", False)
        self.context_in_prompt = getattr(inner, "context_in_prompt", False)
        if hasattr(inner, "for_languages"):  # a judge that names the languages stays one (per-language)
            self.for_languages = lambda src_lang, tgt_lang: QualityOriented(
                inner.for_languages(src_lang, tgt_lang), self.worst
            )

    @property
    def failures(self):
        return getattr(self.inner, "failures", [])

    def _score(self, sources, hypotheses, references, contexts):
        raw = self.inner.score(sources, hypotheses, references, contexts)
        return [None if v is None else 1.0 - float(v) / self.worst for v in raw]


def audit_metric(name_or_metric) -> metrics.Metric:
    """The metric as the audit uses it: higher is better."""
    m = metrics.get(name_or_metric) if isinstance(name_or_metric, str) else name_or_metric
    if getattr(m, "higher_is_better", True):
        return m
    worst = getattr(m, "worst", None)
    if worst is None:
        raise ValueError(
            f"metric {m.name!r} is lower-is-better with no known worst score: cannot orient it for the audit"
        )
    return QualityOriented(m, worst)


def _lang_codes() -> dict[str, str]:
    out = {}
    for part in current_settings().qe_context_mt_langs.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def context_translator(lang: str) -> Callable[[list[str]], list[str]]:
    """English -> lang translation of contexts, for the 'bil' variant."""
    model = current_settings().qe_context_mt.strip()
    if model:
        code = _lang_codes().get(lang, lang)
        return TransformersSeq2SeqMT(model, tgt_lang=code, src_lang=_lang_codes().get("en")).translate
    if lang == "pt":
        return BergamotMT("en-pt").translate
    raise BackendUnavailable(
        f"the 'bil' context variant needs English->{lang} MT: Bergamot here does en-pt only; "
        f"set {ENV_CONTEXT_MT} to a local seq2seq model folder (e.g. NLLB) and "
        f"{ENV_CONTEXT_MT_LANGS} (e.g. {lang}=...) for its language codes"
    )


def score(
    frame: pd.DataFrame, metric=None, context: str = "none", database=None, progress: Callable | None = None
) -> pd.DataFrame:
    """qe_audit.score_pairs with the metric oriented and, for 'bil', each language's contexts
    translated by its own MT; rows keep their order."""
    d = qe_audit.read_pairs(frame)
    if qe_audit.has_scores(d) or metric is None:
        return qe_audit.score_pairs(d, metric=metric, context=context, database=database, progress=progress)
    m = audit_metric(metric)
    if context != "bil":
        return qe_audit.score_pairs(d, metric=m, context=context, database=database, progress=progress)
    parts, langs = [], list(dict.fromkeys(d["lang"]))
    for k, lang in enumerate(langs):
        sub = d[d["lang"] == lang]

        def sub_progress(f, desc, k=k, lang=lang):
            if progress:
                progress((k + f) / len(langs), f"{lang}: {desc}")

        part = qe_audit.score_pairs(
            sub, metric=m, context="bil", translate=context_translator(lang), database=database, progress=sub_progress
        )
        part.index = sub.index  # score_pairs renumbers its rows
        parts.append(part)
    out = pd.concat(parts).loc[d.index]
    out.attrs["qe_scoring"] = parts[0].attrs.get("qe_scoring", {})
    return out


def run_audit(
    frame_or_path,
    out_dir=None,
    metric=None,
    context: str = "none",
    thresholds=None,
    database=None,
    progress: Callable | None = None,
    n_resamples: int = qe_audit.N_RESAMPLES,
    seed: int = qe_audit.SEED,
    png: bool | None = None,
) -> tuple[qe_audit.AuditResult, list[Path]]:
    """Read PAIRS (a path or a frame), score unless precomputed, audit, write outputs (PNG
    copies of the figures: see services.common.figure_files)."""
    d = qe_audit.read_pairs(frame_or_path)
    scored = score(d, metric, context, database, progress)
    result = qe_audit.audit(scored, thresholds=thresholds, n_resamples=n_resamples, seed=seed)
    files = qe_audit.write_outputs(result, out_dir, png=png) if out_dir is not None else []
    return result, files


def mt_sampler(
    model: str,
    kind: str = "seq2seq",
    prompt: str | None = None,
    epsilon: float = 0.02,
    seed: int = 0,
    tgt_lang: str | None = None,
):
    """(sampler(source, n) -> list[str], greedy(source) -> str) from a local transformers MT
    model: epsilon sampling as the paper's quality-aware decoding (50 samples, eps 0.02)."""

    mt: hf.TransformersCausalMT | hf.TransformersSeq2SeqMT
    if kind == "causal":
        if not prompt:
            raise ValueError("a causal MT model needs a prompt with a {text} placeholder")
        mt = hf.TransformersCausalMT(model, prompt)
    elif kind == "seq2seq":
        mt = hf.TransformersSeq2SeqMT(model, tgt_lang=tgt_lang)
    else:
        raise ValueError(f"unknown MT kind {kind!r} (seq2seq or causal)")
    return (
        lambda source, n: mt.sample([source], n, epsilon=epsilon, seed=seed)[0],
        lambda source: mt.translate([source])[0],
    )


class CachedScorer:
    """A metric as reranking calls it, (sources, hypotheses) -> scores, memoised in the database
    when one is given. A metric that names the languages in its prompt (GEMBA-DA:
    ``for_languages``) keeps that ability, so qe_rerank asks it per candidate language."""

    def __init__(self, metric: metrics.Metric, database=None):
        self.metric = metric
        self.database = database
        self.higher_is_better = bool(getattr(metric, "higher_is_better", True))
        self.name = getattr(metric, "name", type(metric).__name__)
        if hasattr(metric, "for_languages"):
            self.for_languages = lambda src_lang, tgt_lang: CachedScorer(
                metric.for_languages(src_lang, tgt_lang), database
            )

    def score(self, sources, hypotheses):
        if self.database is not None:
            return metrics.score_cached(self.database, self.metric, sources, hypotheses)
        return self.metric.score(sources, hypotheses)


def run_rerank(
    candidates: pd.DataFrame | None,
    metric,
    pairs: pd.DataFrame | None = None,
    out_dir=None,
    context: str = "none",
    sampler=None,
    n: int = 50,
    database=None,
    include_greedy: bool = False,
) -> qe_rerank.RerankResult:
    """Rerank given candidates, or candidates sampled for the PAIRS' sources, by a metric;
    gender accuracy of greedy vs reranked outputs."""
    m = audit_metric(metric)
    if candidates is None:
        if pairs is None or sampler is None:
            raise ValueError("give a candidates file, or pairs and an MT model to sample from")
        sample, greedy = sampler
        candidates = qe_rerank.sample_candidates(qe_audit.read_pairs(pairs), sample, n, greedy=greedy)

    scorer = CachedScorer(m, database)
    translate = None
    if context == "bil":
        langs = set(qe_rerank.read_candidates(candidates)["lang"])
        if len(langs) != 1:
            raise ValueError("'bil' reranking runs one target language at a time")
        translate = context_translator(langs.pop())
    result = qe_rerank.evaluate(
        candidates, scorer, pairs=pairs, context=context, translate=translate, include_greedy=include_greedy
    )
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        result.selected.to_csv(out / "selected.csv", index=False)
        result.table.to_csv(out / "accuracy.csv", index=False)
    return result
