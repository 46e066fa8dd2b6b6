"""Speech-translation systems: a config (a preset from assets/systems.toml and/or a study's
[[systems]] params) becomes an object with translate_audio(wav16k_path) -> STResult.

Kinds:
- cascade: an ASR backend, then an MT backend (the transcript is kept);
- direct: one speech LLM through transformers (Phi-4-multimodal, Voxtral, DeSTA2);
- remote: a speech LLM behind an OpenAI-compatible endpoint (e.g. vLLM);
- human: translations that exist already (imported); nothing to run.

Portuguese variant (services/common/variants.py): a system is built for the study's target variant
(pt-PT by default). Its `prompt` / `mt_prompt` may hold {target_language} ("Portuguese
(Portugal)" / "Portuguese (Brazil)"), filled here; `variant` (the system's attribute and
produced_variant()) is what it produces: the study's variant when the prompt or language code
asks for it, the one variant a fixed model makes (Bergamot en-pt: pt-BR), the one a fixed
prompt names, or "" when nothing names one (the paper's "Translate the audio to Portuguese.",
NLLB's por_Latn): the model then picks.
"""

from __future__ import annotations

import time
import tomllib
from functools import lru_cache
from pathlib import Path

from services.common import variants
from services.models.backends import BackendUnavailable, STResult
from services.models.backends.hf import (
    TransformersCausalMT,
    TransformersSeq2SeqMT,
    TransformersSpeechLLM,
    TransformersWhisperASR,
)
from services.models.backends.offline import BERGAMOT_EN_PT_VARIANT, BergamotMT, FasterWhisperASR
from services.models.backends.remote import RemoteASR, RemoteMT, RemoteSpeechLLM
from services.models.cache import CACHE

PRESETS_FILE = Path(__file__).resolve().parents[2] / "assets" / "systems.toml"
BERGAMOT_VARIANT = BERGAMOT_EN_PT_VARIANT  # the only variant Bergamot en-pt writes
DEFAULT_SYSTEM = "offline-cascade"
ASR_BACKENDS = ("faster-whisper", "transformers-whisper", "remote")
MT_BACKENDS = ("bergamot", "transformers-seq2seq", "transformers-causal", "remote")
INFO_KEYS = {"label", "kind", "gpu_memory_gb"}
KEYS = {
    "cascade": {
        "asr",
        "asr_model",
        "asr_beam_size",
        "asr_dtype",
        "asr_base_url",
        "mt",
        "mt_model",
        "mt_dtype",
        "mt_prompt",
        "mt_base_url",
        "mt_src_lang",
        "mt_tgt_lang",
        "api_key_env",
        "language",
    },
    "direct": {"model", "dtype", "prompt", "trust_remote_code", "max_new_tokens"},
    "remote": {"base_url", "model", "prompt", "api_key_env", "timeout_s"},
    "human": set(),
}


@lru_cache(maxsize=1)
def presets() -> dict[str, dict]:
    with open(PRESETS_FILE, "rb") as f:
        return tomllib.load(f)


def resolve(kind: str | None = None, params: dict | None = None, preset: str | None = None) -> dict:
    """One flat config: the preset's fields, then the given params over them."""
    cfg: dict = {}
    if preset:
        if preset not in presets():
            raise ValueError(f"unknown system preset '{preset}' (known: {', '.join(presets())})")
        cfg.update(presets()[preset])
    if kind:
        cfg["kind"] = kind
    cfg.update(params or {})
    return cfg


def problems(cfg: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in a system config; checked at study import."""
    kind = cfg.get("kind")
    if kind not in KEYS:
        return [("kind", f"must be one of {', '.join(KEYS)}")]
    out = [
        (k, f"unknown field for a {kind} system (expected {', '.join(sorted(KEYS[kind]))})")
        for k in cfg
        if k not in KEYS[kind] | INFO_KEYS
    ]
    if kind == "cascade":
        if cfg.get("asr", "faster-whisper") not in ASR_BACKENDS:
            out.append(("asr", f"must be one of {', '.join(ASR_BACKENDS)}"))
        if cfg.get("mt", "bergamot") not in MT_BACKENDS:
            out.append(("mt", f"must be one of {', '.join(MT_BACKENDS)}"))
        for stage, needs_model in (
            ("asr", ("transformers-whisper", "remote")),
            ("mt", ("transformers-seq2seq", "transformers-causal", "remote")),
        ):
            if cfg.get(stage) in needs_model and not cfg.get(f"{stage}_model"):
                out.append((f"{stage}_model", f"is required when {stage} = '{cfg.get(stage)}'"))
            if cfg.get(stage) == "remote" and not cfg.get(f"{stage}_base_url"):
                out.append((f"{stage}_base_url", f"is required when {stage} = 'remote'"))
        if cfg.get("mt") in ("transformers-causal", "remote") and "{text}" not in str(cfg.get("mt_prompt", "{text}")):
            out.append(("mt_prompt", "must contain {text}"))
        for k in ("mt_src_lang", "mt_tgt_lang"):
            if k in cfg and (not isinstance(cfg[k], str) or not cfg[k].strip()):
                out.append((k, "must be a language code of the MT model (e.g. NLLB's eng_Latn, por_Latn)"))
    elif kind in ("direct", "remote"):
        for k in ("model", "prompt") + (("base_url",) if kind == "remote" else ()):
            if not str(cfg.get(k) or "").strip():
                out.append((k, f"is required for a {kind} system"))
    if "asr_beam_size" in cfg and (not isinstance(cfg["asr_beam_size"], int) or not 1 <= cfg["asr_beam_size"] <= 20):
        out.append(("asr_beam_size", "must be a whole number from 1 to 20"))
    return out


def build_asr(cfg: dict, cache=CACHE):
    name = cfg.get("asr", "faster-whisper")
    if name == "faster-whisper":
        return FasterWhisperASR(
            cfg.get("asr_model", ""),
            beam_size=cfg.get("asr_beam_size", 5),
            language=cfg.get("language", "en"),
            cache=cache,
        )
    if name == "transformers-whisper":
        return TransformersWhisperASR(
            cfg["asr_model"], dtype=cfg.get("asr_dtype", "auto"), language=cfg.get("language", "en"), cache=cache
        )
    if name == "remote":
        return RemoteASR(
            cfg["asr_base_url"],
            cfg["asr_model"],
            api_key_env=cfg.get("api_key_env", ""),
            language=cfg.get("language", "en"),
        )
    raise BackendUnavailable(f"unknown ASR backend '{name}' (one of {', '.join(ASR_BACKENDS)})")


def build_mt(cfg: dict, cache=CACHE, target_variant: str | None = None):
    """The cascade's MT; its prompt's variant placeholders filled for target_variant (default pt-PT)."""
    name = cfg.get("mt", "bergamot")
    variant = target_variant or variants.DEFAULT
    if name == "bergamot":
        return BergamotMT("en-pt", cache=cache)
    if name == "transformers-seq2seq":
        return TransformersSeq2SeqMT(
            cfg["mt_model"],
            dtype=cfg.get("mt_dtype", "auto"),
            src_lang=cfg.get("mt_src_lang"),
            tgt_lang=cfg.get("mt_tgt_lang"),
            cache=cache,
        )
    if name == "transformers-causal":
        prompt = cfg.get("mt_prompt") or presets()["paper-cascade"]["mt_prompt"]
        return TransformersCausalMT(
            cfg["mt_model"], variants.fill(prompt, variant), dtype=cfg.get("mt_dtype", "auto"), cache=cache
        )
    if name == "remote":
        return RemoteMT(
            cfg["mt_base_url"],
            cfg["mt_model"],
            variants.fill(cfg.get("mt_prompt") or "{text}", variant),
            api_key_env=cfg.get("api_key_env", ""),
        )
    raise BackendUnavailable(f"unknown MT backend '{name}' (one of {', '.join(MT_BACKENDS)})")


def produced_variant(cfg: dict, target_variant: str | None = None) -> str:
    """The Portuguese variant a system config produces when the study targets target_variant:
    pt-PT, pt-BR, or "" when neither its model nor its prompt or language code names one."""
    variant = target_variant or variants.DEFAULT
    kind = cfg.get("kind")
    if kind == "cascade":
        mt = cfg.get("mt", "bergamot")
        if mt == "bergamot":
            return BERGAMOT_VARIANT
        if mt == "transformers-seq2seq":  # a language code: NLLB's por_Latn names no variant
            return variants.named_in(cfg.get("mt_tgt_lang"))
        prompt = cfg.get("mt_prompt") or (
            presets()["paper-cascade"]["mt_prompt"] if mt == "transformers-causal" else "{text}"
        )
    elif kind in ("direct", "remote"):
        prompt = cfg.get("prompt")
    else:  # human: translations made elsewhere
        return ""
    return variant if variants.asks_for_variant(prompt) else variants.named_in(prompt)


def precision_of(component) -> str:
    """The precision a model component ran in ("" where it cannot say: a model served elsewhere)."""
    precision = getattr(component, "precision", None)
    return precision() if callable(precision) else ""


class Cascade:
    def __init__(self, system_id: str, cfg: dict, cache=CACHE, target_variant: str | None = None):
        self.id, self.cfg = system_id, cfg
        self.variant = produced_variant(cfg, target_variant)
        self.asr, self.mt = build_asr(cfg, cache), build_mt(cfg, cache, target_variant)

    def translate_audio(self, wav16k_path: str) -> STResult:
        t0 = time.perf_counter()
        transcript = self.asr.transcribe(wav16k_path)
        t1 = time.perf_counter()
        translation, cut = "", ""
        if transcript.strip():
            with_cuts = getattr(self.mt, "translate_with_cuts", None)  # an LLM's run-on guard
            translation, cut = with_cuts([transcript])[0] if with_cuts else (self.mt.translate([transcript])[0], "")
        t2 = time.perf_counter()
        return STResult(
            translation,
            transcript,
            {"asr": round(t1 - t0, 3), "mt": round(t2 - t1, 3)},
            self.id,
            {"asr": self.asr.name, "mt": self.mt.name},
            self.variant,
            cut,
            {"asr": precision_of(self.asr), "mt": precision_of(self.mt) if transcript.strip() else ""},
        )


class Direct:
    def __init__(self, system_id: str, cfg: dict, cache=CACHE, remote: bool = False, target_variant: str | None = None):
        self.id, self.cfg = system_id, cfg
        self.variant = produced_variant(cfg, target_variant)
        prompt = variants.fill(cfg["prompt"], target_variant or variants.DEFAULT)
        self.model: RemoteSpeechLLM | TransformersSpeechLLM
        if remote:
            self.model = RemoteSpeechLLM(
                cfg["base_url"],
                cfg["model"],
                prompt,
                api_key_env=cfg.get("api_key_env", ""),
                timeout_s=float(cfg.get("timeout_s", 120)),
            )
        else:
            self.model = TransformersSpeechLLM(
                cfg["model"],
                prompt,
                dtype=cfg.get("dtype", "auto"),
                max_new_tokens=int(cfg.get("max_new_tokens", 256)),
                trust_remote_code=bool(cfg.get("trust_remote_code", False)),
                cache=cache,
            )

    def translate_audio(self, wav16k_path: str) -> STResult:
        t0 = time.perf_counter()
        text = self.model.translate_audio(wav16k_path)
        return STResult(
            text.strip(),
            None,
            {"st": round(time.perf_counter() - t0, 3)},
            self.id,
            {"st": self.model.name},
            self.variant,
            precision={"st": precision_of(self.model)},
        )


def build(system_id: str, cfg: dict, cache=CACHE, target_variant: str | None = None):
    """A runnable system for a study targeting target_variant (pt-PT or pt-BR; default pt-PT)."""
    errs = problems(cfg)
    if errs:
        raise ValueError(f"system '{system_id}': " + "; ".join(f"{k} {m}" for k, m in errs))
    if target_variant is not None and variants.check(target_variant):
        raise ValueError(f"target variant {target_variant!r} {variants.check(target_variant)}")
    kind = cfg["kind"]
    if kind == "cascade":
        return Cascade(system_id, cfg, cache, target_variant)
    if kind in ("direct", "remote"):
        return Direct(system_id, cfg, cache, remote=kind == "remote", target_variant=target_variant)
    raise ValueError(f"system '{system_id}' is a {kind} system: it has no model to run")


def study_system_config(system: dict) -> dict:
    """A study's [[systems]] row (kind, params with an optional preset) as one flat config."""
    params = dict(system.get("params") or {})
    preset = params.pop("preset", None)
    return resolve(system["kind"], params, preset)


def from_study_system(system: dict, cache=CACHE, target_variant: str | None = None):
    """A study's [[systems]] row as a runnable system, for the study's target variant (given, or
    the one study import stored in the row: services/study/files.py)."""
    return build(
        system["id"],
        study_system_config(system),
        cache,
        target_variant or system.get("target_variant") or variants.DEFAULT,
    )


def from_preset(name: str, cache=CACHE, target_variant: str | None = None):
    return build(name, resolve(preset=name), cache, target_variant)
