"""COMET, CometKiwi and xCOMET (Unbabel's learned metrics) through the unbabel-comet package,
from a checkpoint on local disk.

    metrics.get("comet", checkpoint="/models/wmt22-comet-da")            # reference-based
    metrics.get("cometkiwi", checkpoint="/models/wmt22-cometkiwi-da")    # reference-free QE
    metrics.get("xcomet", checkpoint="/models/XCOMET-XL")                # both (see below)

Several checkpoints of one family run side by side under their own names (services.metrics.registry
CHECKPOINTS: "cometkiwi-22", "cometkiwi-23-xl", "xcomet-xl", ...), each read from its own
variable (TRADLAB_COMETKIWI_23_XL_CHECKPOINT, ...); a named checkpoint whose hparams.yaml names
another known encoder than the paper's model (Kiwi 22 on infoxlm-large, Kiwi 23 XL on
xlm-roberta-xl, ...) is refused, so "cometkiwi-23-xl" cannot silently score with Kiwi 22's
weights. The model string ends with a fingerprint of the weights (services.metrics.registry.
checkpoint_fingerprint): scores cached under one checkpoint are never read back for another.

checkpoint= is the model folder as `hf download Unbabel/wmt22-comet-da --local-dir DIR` writes it
(DIR/checkpoints/model.ckpt + DIR/hparams.yaml) or the .ckpt file itself; without the option the
factories read TRADLAB_COMET_CHECKPOINT, TRADLAB_COMETKIWI_CHECKPOINT, TRADLAB_XCOMET_CHECKPOINT.
comet.load_from_checkpoint() also needs the config and tokenizer (not the weights) of the
encoder named by `pretrained_model` in hparams.yaml (xlm-roberta-large, microsoft/infoxlm-large,
facebook/xlm-roberta-xl), in the Hugging Face cache or at a local path: it is loaded with
local_files_only, nothing is downloaded here. No checkpoint configured, a missing path, a
checkpoint of the wrong family (a QE model as "comet") or unbabel-comet not installed raise
BackendUnavailable, so metrics.available() leaves the metric out.

Scores: one per segment, higher is better, from model.predict(samples, batch_size, gpus=1 on
CUDA else 0). The model is loaded once through the model cache and used one call at a time.
- blank source -> None (nothing to compare against);
- reference-based ("comet", and "xcomet" when references are given): a segment without a
  reference -> None; a reference cell holding several references uses the first non-blank one;
- blank hypothesis -> 0.0, the floor of COMET's nominal 0-1 range, without running the model
  (the convention of services.metrics.registry' other QE metrics);
- "xcomet" with references=None scores reference-free (XCOMET's QE mode) for the whole call;
  it never mixes modes within one call (a missing reference in a call with references is None).
- "cometkiwi" ignores references.

Installation: unbabel-comet 2.2.7 declares transformers<5, numpy<2, huggingface-hub<1,
protobuf<5 and torchmetrics<0.11, which would downgrade this project's stack. It is installed
with `pip install --no-deps unbabel-comet==2.2.7` on top of the light dependencies pinned in
requirements.txt (pytorch-lightning, torchmetrics 1.x, entmax, jsonargparse). Under
transformers 5 two things in comet 2.2.7 break, and _fit_transformers5() patches them on the
loaded model only (nothing global):
1. XLMREncoder.forward (XLM-R, XLM-R XL, MiniLM, RemBERT encoders) unpacks
   `last, _, all_layers = model(..., return_dict=False)`; transformers 5 drops the None pooler
   output from that tuple, so it has 2 items ("not enough values to unpack"). The patched
   forward asks for return_dict=True and returns the same dict.
2. The tokenizers-backed XLMRobertaTokenizer of transformers 5 has no
   build_inputs_with_special_tokens (used by UnifiedMetric / XCOMET to join segments). The
   patched one builds what transformers 4 built: <s> A </s></s> B </s> for XLM-R (size_separator
   2), [CLS] A [SEP] B [SEP] for BERT-style encoders.
Checked by hand on the tiny checkpoints of tests/tiny_metric_models.py: the patched comet under
transformers 5.24 gives bit-identical scores to unpatched comet under transformers 4.57.6, for
all three model classes and xCOMET's QE mode. (torchmetrics 0.10.x, comet's own pin, does not
import here: it needs pkg_resources, which setuptools 81+ no longer ships; comet's inference
path runs on torchmetrics 1.x.)
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
import types
from pathlib import Path

from services.common.settings import current as current_settings
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.models.cache import CACHE

COMET_VERSION = "2.2.7"
INSTALL = (
    f"pip install unbabel-comet=={COMET_VERSION} --no-deps, after the pytorch-lightning, torchmetrics, "
    "entmax and jsonargparse lines of requirements.txt (its own metadata pins transformers<5 and numpy<2)"
)

ENV = {
    "comet": "TRADLAB_COMET_CHECKPOINT",
    "cometkiwi": "TRADLAB_COMETKIWI_CHECKPOINT",
    "xcomet": "TRADLAB_XCOMET_CHECKPOINT",
}
_ENCODER = (
    "; comet also loads the config and tokenizer (not the weights) of the encoder named by "
    "pretrained_model in the checkpoint's hparams.yaml, from the Hugging Face cache under that exact "
    "name: hf download {enc} --include '*.json' '*.model' (or point pretrained_model at a local copy)"
)
DOWNLOAD = {
    "comet": "hf download Unbabel/wmt22-comet-da --local-dir DIR" + _ENCODER.format(enc="xlm-roberta-large"),
    "cometkiwi": "accept the licence of the gated Unbabel/wmt22-cometkiwi-da (or Unbabel/wmt23-cometkiwi-da-xl) "
    "on Hugging Face, set HF_TOKEN, hf download it --local-dir DIR"
    + _ENCODER.format(enc="microsoft/infoxlm-large (facebook/xlm-roberta-xl for the XL model)"),
    "xcomet": "accept the licence of the gated Unbabel/XCOMET-XL (or XCOMET-XXL), set HF_TOKEN, hf download it "
    "--local-dir DIR (a GPU is advisable)" + _ENCODER.format(enc="facebook/xlm-roberta-xl (-xxl)"),
}
# The encoder (hparams.yaml's pretrained_model) of each checkpoint the papers used: a named checkpoint
# whose hparams name another of these encoders is another model (see _encoder_error).
ENCODER = {
    "Unbabel/wmt22-comet-da": "xlm-roberta-large",
    "Unbabel/wmt22-cometkiwi-da": "microsoft/infoxlm-large",
    "Unbabel/wmt23-cometkiwi-da-xl": "facebook/xlm-roberta-xl",
    "Unbabel/wmt23-cometkiwi-da-xxl": "facebook/xlm-roberta-xxl",
    "Unbabel/XCOMET-XL": "facebook/xlm-roberta-xl",
    "Unbabel/XCOMET-XXL": "facebook/xlm-roberta-xxl",
}
KIND = {"comet": metrics.REFERENCE, "cometkiwi": metrics.QE, "xcomet": metrics.REFERENCE}
SCALE = {
    "comet": "about 0-1, higher is better (COMET-DA regression; not a probability); blank hypothesis 0.0",
    "cometkiwi": "about 0-1, higher is better (QE regression); blank hypothesis 0.0",
    "xcomet": "0-1, higher is better (1 = no MQM errors); blank hypothesis 0.0",
}
FLOOR = 0.0  # the score of a blank hypothesis
BATCH = 16


def _package_version() -> str:
    try:
        return importlib.metadata.version("unbabel-comet")
    except importlib.metadata.PackageNotFoundError:
        return ""


def download_hint(family: str, hub: str = "") -> str:
    """How to get a checkpoint: the family's generic hint, or the named checkpoint's own."""
    if not hub:
        return DOWNLOAD[family]
    gated = "" if family == "comet" else "accept the licence of the gated model on Hugging Face, set HF_TOKEN, "
    return f"{gated}hf download {hub} --local-dir DIR" + _ENCODER.format(enc=ENCODER.get(hub, "its encoder"))


def resolve_checkpoint(
    path: str | os.PathLike, name: str = "comet", env: str | None = None, hint: str | None = None
) -> Path:
    """The model.ckpt of a COMET model folder (DIR/checkpoints/model.ckpt) or the file itself;
    BackendUnavailable when it is not there or its hparams.yaml (two levels up) is missing."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "checkpoints" / "model.ckpt"
    if not p.is_file():
        raise BackendUnavailable(
            f"metric {name!r}: COMET checkpoint {path} does not exist (expected a model folder with "
            f"checkpoints/model.ckpt, or the .ckpt file): on a networked host, {hint or DOWNLOAD[name]}; copy it "
            f"here and set {env or ENV[name]}"
        )
    if not (p.parents[1] / "hparams.yaml").is_file():
        raise BackendUnavailable(
            f"metric {name!r}: {p.parents[1] / 'hparams.yaml'} is missing: COMET "
            f"checkpoints come as DIR/hparams.yaml + DIR/checkpoints/model.ckpt"
        )
    return p


def read_hparams(ckpt: Path) -> dict:
    try:
        # lazy import (yaml): read only when a COMET checkpoint loads
        import yaml

        data = yaml.safe_load((ckpt.parents[1] / "hparams.yaml").read_text(encoding="utf-8"))
    except Exception as e:  # yaml missing or unreadable: comet will say more
        raise BackendUnavailable(f"cannot read {ckpt.parents[1] / 'hparams.yaml'}: {e}") from e
    return data if isinstance(data, dict) else {}


def _family_error(name: str, hparams: dict) -> str:
    """Why this checkpoint cannot serve as `name`, or "" when it can."""
    cls = hparams.get("class_identifier", "")
    uses_ref = cls in ("regression_metric", "ranking_metric", "xcomet_metric") or (
        cls == "unified_metric" and "ref" in (hparams.get("input_segments") or ["mt", "src", "ref"])
    )
    if name == "comet" and not uses_ref:
        return f"its class_identifier {cls!r} is a reference-free model: configure it as 'cometkiwi'"
    if name == "cometkiwi" and uses_ref:
        return f"its class_identifier {cls!r} is a reference-based model: configure it as 'comet' or 'xcomet'"
    if name == "xcomet" and cls != "xcomet_metric":
        return f"its class_identifier is {cls!r}, not 'xcomet_metric'"
    return ""


def _encoder_error(hub: str, hparams: dict) -> str:
    """Why this checkpoint is not the named one (`hub`), or "": its encoder is another paper model's.
    An encoder outside ENCODER (a local path, a fine-tune on another base) is not judged."""
    expected = ENCODER.get(hub)
    got = str(hparams.get("pretrained_model", ""))
    if not expected or got == expected or got not in ENCODER.values():
        return ""
    others = [h for h, e in ENCODER.items() if e == got]
    return (
        f"it was trained on the encoder {got!r}, but {hub} uses {expected!r} (is it "
        f"{' or '.join(others)}? configure it under that checkpoint's name)"
    )


# -- transformers 5 fixes for comet 2.2.7 (see the module docstring) ---------------------------


def _xlmr_forward(self, input_ids, attention_mask, **kwargs):
    """XLMREncoder.forward without the positional unpacking of return_dict=False."""
    out = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, return_dict=True)
    return {
        "sentemb": out.last_hidden_state[:, 0, :],
        "wordemb": out.last_hidden_state,
        "all_layers": out.hidden_states,
        "attention_mask": attention_mask,
    }


def _joiner(tokenizer, separators: int):
    def build_inputs_with_special_tokens(token_ids_0, token_ids_1=None):
        out = [tokenizer.cls_token_id] + list(token_ids_0) + [tokenizer.sep_token_id]
        if token_ids_1 is None:
            return out
        return out + [tokenizer.sep_token_id] * (separators - 1) + list(token_ids_1) + [tokenizer.sep_token_id]

    return build_inputs_with_special_tokens


def _fit_transformers5(model) -> list[str]:
    """Patch the loaded COMET model's encoder for transformers 5; returns what was patched."""
    # lazy import (transformers): heavy model library; loaded only when a model runs
    import transformers

    patched = []
    encoder = model.encoder
    tok = getattr(encoder, "tokenizer", None)
    if tok is not None and not hasattr(tok, "build_inputs_with_special_tokens"):
        tok.build_inputs_with_special_tokens = _joiner(tok, int(encoder.size_separator))
        patched.append("tokenizer.build_inputs_with_special_tokens")
    if int(transformers.__version__.split(".")[0]) >= 5:
        # lazy import (comet): heavy model library; loaded only when a COMET model runs
        from comet.encoders.xlmr import XLMREncoder

        if type(encoder).forward is XLMREncoder.forward:
            encoder.forward = types.MethodType(_xlmr_forward, encoder)
            patched.append("encoder.forward")
    return patched


def _import_comet():
    """import comet, without its logging.basicConfig(INFO) taking over the app's root logger,
    and with Lightning's per-call INFO lines ("GPU available: ...") silenced."""
    if not _package_version():
        raise BackendUnavailable(f"unbabel-comet is not installed: {INSTALL}")
    root = logging.getLogger()
    guard = None
    if not root.handlers:  # basicConfig is a no-op when a handler exists
        guard = logging.NullHandler()
        root.addHandler(guard)
    try:
        # lazy import (comet): heavy model library; loaded only when a COMET model runs
        import comet
    except ImportError as e:
        raise BackendUnavailable(f"unbabel-comet is installed but does not import ({e}): {INSTALL}") from e
    finally:
        if guard is not None:
            root.removeHandler(guard)
    for logger in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
        logging.getLogger(logger).setLevel(logging.WARNING)
    return comet


class _Handle:
    """The loaded COMET model and a lock: one predict() (one Lightning Trainer) at a time."""

    def __init__(self, model, patched):
        self.model = model
        self.patched = patched
        self.lock = threading.Lock()


class CometMetric(metrics.Metric):
    requires = ("unbabel-comet", "pytorch-lightning", "torchmetrics", "torch", "transformers")
    higher_is_better = True

    def __init__(
        self,
        family: str,
        checkpoint: str,
        batch_size: int = BATCH,
        cache=CACHE,
        name: str | None = None,
        env: str | None = None,
        hub: str = "",
    ):
        """family: comet | cometkiwi | xcomet; name: the metric name (default the family's, e.g.
        "cometkiwi-23-xl" for a named checkpoint); env: the variable that configures it; hub: the
        checkpoint the name stands for (its encoder is checked)."""
        if family not in ENV:
            raise KeyError(f"not a COMET metric: {family!r} (one of {', '.join(ENV)})")
        self.family = family
        self.name = name or family
        self.env = env or ENV[family]
        self.hub = hub
        self.kind = KIND[family]
        self.scale = SCALE[family]
        if not _package_version():
            raise BackendUnavailable(f"metric {self.name!r} needs unbabel-comet: {INSTALL}")
        self.checkpoint = resolve_checkpoint(checkpoint, self.name, self.env, download_hint(family, hub))
        self.hparams = read_hparams(self.checkpoint)
        why = _family_error(family, self.hparams) or _encoder_error(hub, self.hparams)
        if why:
            raise BackendUnavailable(
                f"metric {self.name!r}: {self.checkpoint} cannot be used: {why} "
                f"(set {self.env} to a {hub or family} checkpoint)"
            )
        self.pretrained_model = str(self.hparams.get("pretrained_model", ""))
        self.batch_size = int(batch_size)
        self.cache = cache
        self.version = _package_version()
        # the weights' fingerprint keeps scores of a checkpoint replaced in place apart
        self.fingerprint = metrics.checkpoint_fingerprint(self.checkpoint, self.checkpoint.parents[1] / "hparams.yaml")
        self.model = f"{self.checkpoint} (pretrained_model={self.pretrained_model or '?'}) weights {self.fingerprint}"

    # -- the model ------------------------------------------------------------------------
    def _load(self) -> _Handle:
        comet = _import_comet()
        try:
            model = comet.load_from_checkpoint(str(self.checkpoint), local_files_only=True)
        except (OSError, ValueError) as e:  # the encoder's tokenizer/config is not on disk
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise BackendUnavailable(
                f"cannot load {self.checkpoint} ({type(e).__name__}: {first}): COMET needs the tokenizer and "
                f"config of its encoder {self.pretrained_model!r} in the Hugging Face cache under that name (or "
                f"at that path): on a networked host, hf download {self.pretrained_model} --include '*.json' "
                f"'*.model', and copy the cache here"
            ) from e
        model.eval()
        return _Handle(model, _fit_transformers5(model))

    def loaded(self) -> _Handle:
        # keyed by the weights too: a checkpoint replaced in place is loaded afresh
        return self.cache.get(
            f"metric/{self.family}/{self.checkpoint}#{self.fingerprint}", self._load, device=self.cache.device
        )

    def predict(self, samples: list[dict]) -> list[float]:
        """comet's model.predict on prepared samples ({"src", "mt"[, "ref"]}): the raw scores."""
        handle = self.loaded()
        gpus = 1 if self.cache.device == "cuda" else 0
        with handle.lock, self.cache.exclusive():
            out = handle.model.predict(
                samples, batch_size=self.batch_size, gpus=gpus, progress_bar=False, num_workers=0
            )
        return [float(s) for s in out.scores]

    def error_spans(self, samples: list[dict]) -> list[list[dict]]:
        """xCOMET's error spans per sample ({"src", "mt"[, "ref"]}; without "ref": its QE mode), as
        comet's predict gives them in metadata.error_spans: {text, start, end (character offsets in
        "mt"), severity (minor, major, critical), confidence} (services/esa/prefill.py uses them)."""
        if self.family != "xcomet":
            raise ValueError(f"metric {self.name!r} gives no error spans: only xCOMET does")
        handle = self.loaded()
        gpus = 1 if self.cache.device == "cuda" else 0
        with handle.lock, self.cache.exclusive():
            out = handle.model.predict(
                samples, batch_size=self.batch_size, gpus=gpus, progress_bar=False, num_workers=0
            )
        return [list(spans) for spans in out.metadata.error_spans]

    # -- scoring --------------------------------------------------------------------------
    def reference_mode(self, references) -> bool:
        """Whether this call scores against references."""
        if self.family == "cometkiwi":
            return False
        if self.family == "xcomet":
            return references is not None
        return True

    def _score(self, sources, hypotheses, references, contexts):
        with_ref = self.reference_mode(references)
        out: list[float | None] = [None] * len(sources)
        todo: list[tuple[int, dict]] = []
        for i, (src, hyp) in enumerate(zip(sources, hypotheses)):
            if metrics._blank(src):
                continue
            sample = {"src": str(src), "mt": "" if hyp is None else str(hyp)}
            if with_ref:
                refs = metrics._refs(references[i]) if references is not None else None
                if refs is None:
                    continue
                sample["ref"] = next(str(r) for r in refs if not metrics._blank(r))
            if metrics._blank(hyp):
                out[i] = FLOOR
                continue
            todo.append((i, sample))
        if todo:
            for (i, _), score in zip(todo, self.predict([s for _, s in todo])):
                out[i] = score
        return out

    def info(self) -> dict:
        return {
            **super().info(),
            "checkpoint": str(self.checkpoint),
            "family": self.family,
            "fingerprint": self.fingerprint,
        }


def factory(name: str, family: str | None = None, hub: str = ""):
    """metrics.register(name, factory(name)): checkpoint= overrides the variable, which is the
    family's TRADLAB_*_CHECKPOINT for a family name ("cometkiwi") and the name's own for a
    named checkpoint (factory("cometkiwi-23-xl", family="cometkiwi", hub=...):
    TRADLAB_COMETKIWI_23_XL_CHECKPOINT)."""
    family = family or name
    env = ENV[family] if name == family else metrics.env_var(name, "CHECKPOINT")

    def make(**options) -> CometMetric:
        checkpoint = options.pop("checkpoint", None) or current_settings().get(env).strip()
        if not checkpoint:
            raise BackendUnavailable(
                f"metric {name!r} needs a local COMET checkpoint: set {env} to the model folder "
                f"(or its checkpoints/model.ckpt). On a networked host: {INSTALL}; then {download_hint(family, hub)}"
            )
        return CometMetric(family, checkpoint, name=name, env=env, hub=hub, **options)

    make.__name__ = f"{name}_factory"
    return make
