"""MetricX-23 and MetricX-24 (Juraska et al., WMT 2023 / 2024; google-research/metricx), through
transformers.

    metrics.get("metricx", model="/models/metricx-24-hybrid-large-v2p6", tokenizer="/models/mt5-large")
    metrics.get("metricx-23-qe-l", model="/models/metricx-23-qe-large-v2p0", tokenizer="/models/mt5-large")

Versions and their inputs (VARIANTS; the strings of metricx23/predict.py and metricx24/predict.py):
- "24" (metricx-24-hybrid-*): "source: {src} candidate: {hyp} reference: {ref}", QE without the
  " reference: ..." part; trained with 1536 input tokens;
- "23-qe" (metricx-23-qe-*, paper 003 section 3.1 / A.1): "candidate: {hyp} source: {src}", QE only;
- "23" (metricx-23-*, reference-based): "candidate: {hyp} reference: {ref}" (no source); no QE.
MetricX-23 models were trained with 1024 input tokens. The version is named in the metric's
configuration (metricx_version= option, TRADLAB_METRICX_VERSION, or fixed by a named checkpoint
such as "metricx-23-qe-l") and/or detected from the checkpoint (its config.json's
"metricx_version" or "_name_or_path", else the folder's name, or the repository name of a
hub-cache snapshot); a named version the checkpoint contradicts is a VersionMismatch (the scores
would be wrong without any other error). Neither named nor detectable: MetricX-24, the
default before MetricX-23 was supported, said so in the model string.

The hybrid MetricX-24 models (google/metricx-24-hybrid-{large,xl,xxl}-v2p6) are mT5 encoder-decoders
fine-tuned as regressors; their tokenizer is mT5's (google/mt5-large / -xl / -xxl, matching the model
size), which the model repositories do not ship. Both are read from local paths (or the Hugging
Face cache) with local_files_only: options model= / tokenizer=, else TRADLAB_METRICX_MODEL /
TRADLAB_METRICX_TOKENIZER (the tokenizer defaults to the model folder when that holds one).
TRADLAB_METRICX_MAX_INPUT_LENGTH overrides the input limit the version was trained with (1536 / 1024).

What it computes, as metricx2{3,4}/predict.py and MetricX's MT5ForRegression do:
- the input text of the version (metricx_input() below);
- it is tokenized with truncation to max_input_length tokens, then the final </s> is removed;
- the decoder gets one step whose input is the decoder start token (mT5: <pad>, id 0), and the
  prediction is the logit of one vocabulary entry at that step, id 250089 = "<extra_id_10>" of the
  mT5 vocabulary (score_token_id=), clipped to [0, 25]. The logit is computed as MetricX's head
  does (decoder output, scaled by d_model**-0.5 only if lm_head is tied to the embeddings, which
  it is not in MetricX's checkpoints; dot the lm_head row), in float32 from the decoder's output.

LOWER IS BETTER: 0 = no errors, 25 = worst (an MQM-like error score); higher_is_better = False.
Per segment:
- blank source -> None (the codebase's rule for every metric here, although MetricX accepts an
  empty source);
- references given: a segment without a reference -> None (one call never mixes modes); a cell
  with several references uses the first non-blank one. references=None: the whole call is QE
  (MetricX-24); a MetricX-23 QE model ignores references, a MetricX-23 reference model gives None;
- blank hypothesis -> 25.0, the worst score (the floor of quality, as E5Cosine's 0.0 is),
  without running the model.

The model is loaded once through the model cache, in bfloat16 on CUDA (float32 on CPU; dtype=
changes it), and runs in batches (length-sorted, order restored) under torch.inference_mode() and
cache.exclusive(). Without a model configured, or with paths that do not exist, get("metricx")
raises BackendUnavailable naming the variables, so metrics.available() leaves it out. The model
string ends with a fingerprint of the weights and tokenizer (services.metrics.registry.checkpoint_fingerprint),
which also keys the loaded model: a checkpoint replaced in place is neither reused from the score
cache nor from memory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from services.common.settings import current as current_settings
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable, hf
from services.models.cache import CACHE

ENV_MODEL = "TRADLAB_METRICX_MODEL"
ENV_TOKENIZER = "TRADLAB_METRICX_TOKENIZER"
ENV_MAX_INPUT_LENGTH = "TRADLAB_METRICX_MAX_INPUT_LENGTH"
ENV_VERSION = "TRADLAB_METRICX_VERSION"
SCORE_TOKEN_ID = 250089  # "<extra_id_10>" in the mT5 vocabulary
MAX_INPUT_LENGTH = 1536
MIN_SCORE, MAX_SCORE = 0.0, 25.0
WORST = MAX_SCORE  # the score of a blank hypothesis
BATCH = 8
DOWNLOAD = (
    "on a networked host: hf download google/metricx-24-hybrid-large-v2p6 --local-dir MODEL_DIR (or the "
    "-xl / -xxl model) and hf download google/mt5-large --local-dir TOKENIZER_DIR (the mT5 of the same "
    "size: mt5-xl, mt5-xxl), copy both here"
)
_TOKENIZER_FILES = ("tokenizer.json", "spiece.model", "tokenizer_config.json")


@dataclass(frozen=True)
class Variant:
    """One MetricX version: what it reads and how long its inputs were in training."""

    key: str
    label: str
    kind: str  # metrics.QE or metrics.REFERENCE
    max_input_length: int
    layout: str  # the input layout, for the model string


VARIANTS = {
    "24": Variant("24", "MetricX-24 (hybrid)", metrics.REFERENCE, 1536, "'source: .. candidate: .. [reference: ..]'"),
    "23-qe": Variant("23-qe", "MetricX-23 QE", metrics.QE, 1024, "'candidate: .. source: ..'"),
    "23": Variant("23", "MetricX-23 (reference-based)", metrics.REFERENCE, 1024, "'candidate: .. reference: ..'"),
}
DEFAULT_VERSION = "24"  # neither named nor detectable: what "metricx" always meant


class VersionMismatch(BackendUnavailable):
    """The configured MetricX version contradicts the checkpoint's: its scores would be wrong."""


def metricx24_input(source: str, hypothesis: str, reference: str | None = None) -> str:
    """MetricX-24's input text; reference=None gives the QE input."""
    text = "source: " + str(source) + " candidate: " + str(hypothesis)
    if reference is not None:
        text += " reference: " + str(reference)
    return text


def metricx23_input(source: str, hypothesis: str, reference: str | None = None) -> str:
    """MetricX-23's input text: a QE model (reference=None) reads the candidate then the source;
    a reference-based model reads the candidate then the reference, and no source."""
    if reference is None:
        return "candidate: " + str(hypothesis) + " source: " + str(source)
    return "candidate: " + str(hypothesis) + " reference: " + str(reference)


def metricx_input(source: str, hypothesis: str, reference: str | None = None, version: str = DEFAULT_VERSION) -> str:
    """The input text of a MetricX version ("24", "23-qe", "23"); a QE model ignores the reference,
    a MetricX-23 reference-based model needs one."""
    if version == "23-qe":
        return metricx23_input(source, hypothesis, None)
    if version == "23":
        if reference is None:
            raise ValueError("MetricX-23 reference-based models need a reference (metricx-23-qe-* score without)")
        return metricx23_input(source, hypothesis, reference)
    if version != "24":
        raise ValueError(f"unknown MetricX version {version!r} (one of {', '.join(VARIANTS)})")
    return metricx24_input(source, hypothesis, reference)


# -- which version a checkpoint is --------------------------------------------------------------

_NAME = re.compile(r"metricx[-_ ]?(23|24)(?:[-_ ](qe)(?![a-z]))?", re.IGNORECASE)


def normalise_version(value) -> str:
    """ "23-qe" / "23qe" / "metricx-23-qe", "23", "24" / "24-hybrid" -> a VARIANTS key; ValueError else."""
    text = re.sub(r"[\s_]+", "-", str(value).strip().lower())
    text = re.sub(r"^metricx-?", "", text).replace("hybrid", "").strip("-")
    text = {"23qe": "23-qe", "24-qe": "24"}.get(text.replace("--", "-"), text.replace("--", "-"))
    if text not in VARIANTS:
        raise ValueError(f"unknown MetricX version {value!r}: one of {', '.join(VARIANTS)}")
    return text


def version_from_name(text: str) -> str | None:
    """The version a model name says (metricx-23-qe-large-v2p0 -> "23-qe"), or None."""
    m = _NAME.search(str(text or ""))
    if not m:
        return None
    return "23-qe" if m.group(1) == "23" and m.group(2) else m.group(1)


def _model_names(model: str) -> list[str]:
    """The names a checkpoint goes by: the id as configured, its folder's name and, for a hub-cache
    snapshot (models--org--name/snapshots/HASH), the repository's. Ancestors are not read (a
    temporary folder's name says nothing about the weights)."""
    folder = metrics.local_folder(model)
    names = [str(model)] if not Path(str(model)).expanduser().exists() else []
    if folder is not None:
        names.append(folder.name)
        if folder.parent.name == "snapshots":
            names.append(folder.parent.parent.name)
    return names


def detect_version(model: str) -> tuple[str | None, str]:
    """(version, evidence) read from the checkpoint: config.json's "metricx_version", else its
    "_name_or_path", else the folder / repository name; (None, "") when nothing says."""
    folder = metrics.local_folder(model)
    config = {}
    if folder is not None and (folder / "config.json").is_file():
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except ValueError:
            config = {}
    if config.get("metricx_version"):
        version = config["metricx_version"]
        return normalise_version(version), f"config.json metricx_version={version!r}"
    found = version_from_name(config.get("_name_or_path", ""))
    if found:
        return found, f"config.json _name_or_path={config['_name_or_path']!r}"
    for name in _model_names(model):
        found = version_from_name(name)
        if found:
            return found, f"its name {name!r}"
    return None, ""


def resolve_version(named, model: str, metric: str = "metricx", env: str = ENV_MODEL) -> tuple[str, str]:
    """(version, how it was decided). A named version that the checkpoint contradicts raises
    VersionMismatch: MetricX-23 and -24 read different inputs, so nothing else would fail."""
    named = normalise_version(named) if named else None
    detected, evidence = detect_version(model)
    if named and detected and named != detected:
        raise VersionMismatch(
            f"metric {metric!r} is configured as {VARIANTS[named].label}, but {model} is a "
            f"{VARIANTS[detected].label} checkpoint ({evidence}): the two read different inputs "
            f"({VARIANTS[named].layout} vs {VARIANTS[detected].layout}), so its scores would be wrong. Set "
            f"{env} to a {VARIANTS[named].label} model, or configure this one under a {VARIANTS[detected].label} "
            f"name (e.g. metricx_version={detected!r})"
        )
    if named:
        return named, "named" + (f", checkpoint agrees: {evidence}" if detected else "")
    if detected:
        return detected, f"detected from {evidence}"
    return DEFAULT_VERSION, "assumed: not named, not detectable"


def encode(tokenizer, texts: list[str], max_input_length: int = MAX_INPUT_LENGTH) -> list[list[int]]:
    """Token ids per text as MetricX feeds them: truncated to max_input_length, final </s> removed."""
    ids = tokenizer(list(texts), max_length=int(max_input_length), truncation=True, padding=False).input_ids
    eos = tokenizer.eos_token_id
    return [list(row[:-1]) if row and row[-1] == eos else list(row) for row in ids]


class MetricX(metrics.Metric):
    name = "metricx"
    kind = metrics.REFERENCE  # per version: 24 hybrid (QE when references is None), 23-qe QE, 23 reference
    higher_is_better = False
    worst = 25.0  # the clip bound: the audit reads 1 - score/25 as quality
    requires = ("transformers", "torch", "sentencepiece")
    scale = "0-25 MQM-like error score, LOWER IS BETTER (0 = perfect, 25 = worst; clipped); blank hypothesis 25"

    def __init__(
        self,
        model: str,
        tokenizer: str | None = None,
        max_input_length: int | None = None,
        score_token_id: int = SCORE_TOKEN_ID,
        batch_size: int = BATCH,
        dtype: str = "bfloat16",
        cache=CACHE,
        metricx_version: str | None = None,
        name: str = "metricx",
        env_model: str = ENV_MODEL,
        env_tokenizer: str = ENV_TOKENIZER,
    ):
        """metricx_version: "24", "23-qe" or "23", checked against the checkpoint (None: detected);
        max_input_length None: the version's training length (1536 / 1024)."""
        self.name = name
        model = (model or "").strip()
        if not model:
            raise BackendUnavailable(_not_configured())
        _check(model, env_model, name)
        tokenizer = (tokenizer or "").strip()
        if not tokenizer:
            if Path(model).expanduser().is_dir() and any(
                (Path(model).expanduser() / f).is_file() for f in _TOKENIZER_FILES
            ):
                tokenizer = model
            else:
                raise BackendUnavailable(
                    f"metric {name!r}: {model} holds no tokenizer (MetricX models ship without one): set "
                    f"{env_tokenizer} to the mT5 tokenizer of the same size (google/mt5-large for "
                    f"metricx-24-hybrid-large, mt5-xl, mt5-xxl); {DOWNLOAD}"
                )
        _check(tokenizer, env_tokenizer, name)
        self.metricx_version, self.version_source = resolve_version(metricx_version, model, name, env_model)
        variant = VARIANTS[self.metricx_version]
        self.kind = variant.kind
        if max_input_length is None:
            max_input_length = variant.max_input_length
        if int(max_input_length) < 2:
            raise ValueError(f"max_input_length must be at least 2, not {max_input_length}")
        self.model_path = model
        self.tokenizer_path = tokenizer
        self.max_input_length = int(max_input_length)
        self.score_token_id = int(score_token_id)
        self.batch_size = max(1, int(batch_size))
        self.dtype = dtype
        self.cache = cache
        self.version = metrics._package_version("transformers")
        torch_dtype = str(cache.dtype(dtype)).replace("torch.", "")
        # the weights' fingerprint keeps scores of a checkpoint replaced in place apart
        self.fingerprint = metrics.checkpoint_fingerprint(model, tokenizer)
        self.model = (
            f"{model} | tokenizer {tokenizer} | {variant.label} input {variant.layout} "
            f"({self.version_source}), max {self.max_input_length} tokens, "
            f"score id {self.score_token_id}, {torch_dtype} | weights {self.fingerprint}"
        )

    # -- the model ------------------------------------------------------------------------
    def _load(self) -> hf._Loaded:
        tf = hf._tf()
        tok = hf._pretrained(self.tokenizer_path, tf.AutoTokenizer.from_pretrained)
        model = hf._pretrained(
            self.model_path, tf.AutoModelForSeq2SeqLM.from_pretrained, **hf._weights(self.cache, self.dtype)
        )
        model = hf._ready(model, self.cache)
        vocab = model.get_output_embeddings().weight.shape[0]
        if not 0 <= self.score_token_id < vocab:
            raise BackendUnavailable(
                f"metric {self.name!r}: score_token_id {self.score_token_id} is outside the "
                f"vocabulary of {self.model_path} ({vocab} entries): is it a MetricX model?"
            )
        return hf._Loaded(model=model, tokenizer=tok)

    def loaded(self) -> hf._Loaded:
        # keyed by the weights too: a checkpoint replaced in place is loaded afresh
        key = f"metric/metricx/{self.model_path}|{self.tokenizer_path}@{self.dtype}#{self.fingerprint}"
        return self.cache.get(key, self._load, device=self.cache.device)

    def raw_scores(self, texts: list[str]) -> list[float]:
        """The unclipped regression outputs for MetricX input texts (metricx_input() of this version)."""
        # lazy import (torch): heavy model library; loaded only when a model runs
        import torch

        b = self.loaded()
        model, tok = b.model, b.tokenizer
        ids = encode(tok, texts, self.max_input_length)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        cfg = model.config
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else pad
        weight = model.get_output_embeddings().weight
        # MetricX scales by d_model**-0.5 when the config ties the embeddings. transformers 5's
        # MT5Config reports tie_word_embeddings=True for every model, and keeps a checkpoint's own
        # lm_head untied: so look at whether lm_head really is the embedding matrix (never for
        # MetricX's checkpoints, whose config says false).
        tied = weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
        out = [0.0] * len(ids)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for k in range(0, len(order), self.batch_size):
            rows = order[k : k + self.batch_size]
            width = max(1, max(len(ids[i]) for i in rows))
            input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, i in enumerate(rows):
                input_ids[r, : len(ids[i])] = torch.tensor(ids[i], dtype=torch.long)
                mask[r, : len(ids[i])] = 1
            input_ids, mask = input_ids.to(model.device), mask.to(model.device)
            with self.cache.exclusive(), torch.inference_mode():
                enc = model.get_encoder()(input_ids=input_ids, attention_mask=mask).last_hidden_state
                dec_in = torch.full((len(rows), 1), start, dtype=torch.long, device=model.device)
                hidden = (
                    model.get_decoder()(
                        input_ids=dec_in, encoder_hidden_states=enc, encoder_attention_mask=mask, use_cache=False
                    )
                    .last_hidden_state[:, 0]
                    .float()
                )
                if tied:
                    hidden = hidden * (cfg.d_model**-0.5)
                logit = hidden @ weight[self.score_token_id].float().to(hidden.device)
            for r, i in enumerate(rows):
                out[i] = float(logit[r])
        return out

    # -- scoring --------------------------------------------------------------------------
    def reference_mode(self, references) -> bool:
        """Whether this call reads references: 24 when given, 23 always, 23-qe never."""
        return {"24": references is not None, "23": True, "23-qe": False}[self.metricx_version]

    def _score(self, sources, hypotheses, references, contexts):
        with_ref = self.reference_mode(references)
        out: list[float | None] = [None] * len(sources)
        todo: list[tuple[int, str]] = []
        for i, (src, hyp) in enumerate(zip(sources, hypotheses)):
            if metrics._blank(src):
                continue
            ref = None
            if with_ref:
                refs = metrics._refs(references[i]) if references is not None else None
                if refs is None:
                    continue
                ref = next(str(r) for r in refs if not metrics._blank(r))
            if metrics._blank(hyp):
                out[i] = WORST
                continue
            todo.append((i, metricx_input(src, hyp, ref, self.metricx_version)))
        if todo:
            raw = self.raw_scores([t for _, t in todo])
            for (i, _), value in zip(todo, raw):
                out[i] = min(MAX_SCORE, max(MIN_SCORE, value))
        return out

    def info(self) -> dict:
        return {
            **super().info(),
            "tokenizer": self.tokenizer_path,
            "max_input_length": self.max_input_length,
            "metricx_version": self.metricx_version,
            "fingerprint": self.fingerprint,
        }


def _check(path: str, env: str, name: str = "metricx") -> None:
    try:
        hf._check_path(path)
    except BackendUnavailable as e:
        raise BackendUnavailable(f"metric {name!r} ({env}): {e}") from e


def _not_configured() -> str:
    return (
        f"metric 'metricx' needs a local MetricX-24 model: set {ENV_MODEL} to the model folder and "
        f"{ENV_TOKENIZER} to its mT5 tokenizer folder; {DOWNLOAD}"
    )


def factory(**options) -> MetricX:
    """metrics.register("metricx", factory): options override the TRADLAB_METRICX_* variables
    (TRADLAB_METRICX_VERSION names the version; else the checkpoint's is used)."""
    env = current_settings()
    model = options.pop("model", None) or env.metricx_model.strip()
    if not model:
        raise BackendUnavailable(_not_configured())
    tokenizer = options.pop("tokenizer", None) or env.metricx_tokenizer.strip() or None
    if "max_input_length" not in options and env.metricx_max_input_length.strip():
        options["max_input_length"] = int(env.metricx_max_input_length)
    if not options.get("metricx_version") and env.metricx_version.strip():
        options["metricx_version"] = env.metricx_version.strip()
    return MetricX(model, tokenizer, **options)


def _mt5_for(hub: str) -> str:
    """The mT5 tokenizer of a MetricX model's size (MetricX repositories ship none)."""
    size = next((s for s in ("xxl", "xl", "large") if re.search(rf"-{s}(-|$)", hub)), "large")
    return f"google/mt5-{size}"


def named_factory(name: str, hub: str = "", metricx_version: str | None = None):
    """The factory of a named MetricX checkpoint (services.metrics.registry CHECKPOINTS, e.g.
    "metricx-23-qe-l"): its own variables (TRADLAB_METRICX_23_QE_L_MODEL / _TOKENIZER /
    _MAX_INPUT_LENGTH) and its version fixed by the name, checked against the checkpoint."""
    env_model, env_tokenizer = metrics.env_var(name, "MODEL"), metrics.env_var(name, "TOKENIZER")
    env_length = metrics.env_var(name, "MAX_INPUT_LENGTH")
    fixed = normalise_version(metricx_version) if metricx_version else None

    def make(**options) -> MetricX:
        asked = options.pop("metricx_version", None)
        if fixed and asked and normalise_version(asked) != fixed:
            raise ValueError(
                f"metric {name!r} is {VARIANTS[fixed].label} by name; metricx_version={asked!r} "
                f"contradicts it (use another metric name)"
            )
        env = current_settings()
        model = options.pop("model", None) or env.get(env_model).strip()
        if not model:
            raise BackendUnavailable(
                f"metric {name!r} needs a local {VARIANTS[fixed or DEFAULT_VERSION].label} model ({hub or 'MetricX'}): "
                f"set {env_model} to the model folder and {env_tokenizer} to its mT5 tokenizer folder; on a "
                f"networked host: hf download {hub or 'MODEL'} --local-dir MODEL_DIR and hf download "
                f"{_mt5_for(hub)} --local-dir TOKENIZER_DIR, copy both here"
            )
        tokenizer = options.pop("tokenizer", None) or env.get(env_tokenizer).strip() or None
        if "max_input_length" not in options and env.get(env_length).strip():
            options["max_input_length"] = int(env.get(env_length))
        return MetricX(
            model,
            tokenizer,
            metricx_version=fixed or asked,
            name=name,
            env_model=env_model,
            env_tokenizer=env_tokenizer,
            **options,
        )

    make.__name__ = f"{name}_factory"
    return make
