"""One text LLM behind one interface, for the comprehension questions (generation, answering).

    llm = get(study_config)              # the study's [llm] section, else TRADLAB_LLM_* variables
    llm.complete(["prompt 1", "prompt 2"])  -> ["answer 1", "answer 2"]

Backends:
- "transformers": a local decoder-only LM (a folder or a hub id already on disk), loaded through
  the model cache with the same loader and cache entry as services.models.backends.hf.TransformersCausalMT
  (a model used for MT or GEMBA-DA is not loaded twice); each prompt is the user turn of the
  tokenizer's chat template when it has one, else given as is; new tokens only.
- "remote": an OpenAI-compatible /chat/completions endpoint (services.models.backends.remote: the same
  HTTP helpers and error messages as the remote MT and speech backends), the API key read from
  the variable whose NAME is configured.

Settings: temperature (0 = greedy), max_tokens (new tokens per answer), seed (sampling at
temperature > 0 is repeatable; sent to the server as OpenAI's `seed`).

Configuration: the study's [llm] section (backend, model, base_url, api_key_env, temperature,
max_tokens, seed, dtype) where given, TRADLAB_LLM_BACKEND / TRADLAB_LLM_MODEL /
TRADLAB_LLM_BASE_URL / TRADLAB_LLM_API_KEY_ENV otherwise. Without a model, LLMNotConfigured
says which variables to set; nothing else in the app needs an LLM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.common.settings import Settings
from services.common.settings import current as current_settings
from services.models.backends import BackendUnavailable
from services.models.backends.hf import TransformersCausalMT
from services.models.backends.remote import _RemoteBase, endpoint_problems
from services.models.cache import CACHE

BACKENDS = ("transformers", "remote")
ENV_BACKEND = "TRADLAB_LLM_BACKEND"
ENV_MODEL = "TRADLAB_LLM_MODEL"
ENV_BASE_URL = "TRADLAB_LLM_BASE_URL"
ENV_API_KEY_ENV = "TRADLAB_LLM_API_KEY_ENV"
# The [llm] section of study.toml: every key optional (services/study/files.py merges these).
DEFAULTS = {
    "backend": "",
    "model": "",
    "base_url": "",
    "api_key_env": "",
    "temperature": 0.0,
    "max_tokens": 512,
    "seed": 0,
    "dtype": "auto",
}


class LLMNotConfigured(BackendUnavailable):
    """No LLM is configured: the message names the variables (and the study section) to set."""


HOW_TO_CONFIGURE = (
    f"set `{ENV_MODEL}` (a local model folder or hub id with `{ENV_BACKEND}=transformers`, or "
    f"a served model name with `{ENV_BASE_URL}=http://host:port/v1` for an OpenAI-compatible "
    f"server; `{ENV_API_KEY_ENV}` names the variable holding its API key), or give the study "
    f"an `[llm]` section with `model = ...`."
)


@dataclass(frozen=True)
class LLMConfig:
    backend: str
    model: str
    base_url: str = ""
    api_key_env: str = ""
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int = 0
    dtype: str = "auto"
    timeout_s: float = 120.0

    @property
    def label(self) -> str:
        """What wrote a text, for provenance: backend, model and the sampling settings."""
        where = f" @ {self.base_url}" if self.backend == "remote" else ""
        return f"{self.backend}:{self.model}{where} (temperature {self.temperature:g}, seed {self.seed})"


def problems(section: dict) -> list[tuple[str, str]]:
    """(key, message) for every mistake in an [llm] section (already merged with DEFAULTS)."""
    out = []
    for key in ("backend", "model", "base_url", "api_key_env", "dtype"):
        if not isinstance(section.get(key), str):
            out.append((key, "must be a string"))
    backend = section.get("backend")
    if isinstance(backend, str) and backend and backend not in BACKENDS:
        out.append(("backend", f"'{backend}' is not one of {', '.join(BACKENDS)}"))
    url = section.get("base_url")
    if isinstance(url, str) and url and not url.startswith(("http://", "https://")):
        out.append(("base_url", "must start with http:// or https:// and end with the API version, e.g. /v1"))
    t = section.get("temperature")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 2:
        out.append(("temperature", "must be a number from 0 (greedy) to 2"))
    for key, lo in (("max_tokens", 1), ("seed", 0)):
        v = section.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            out.append((key, f"must be an integer >= {lo}"))
    return out


def study_problems(section: dict, environ=None) -> list[tuple[str, str]]:
    """(key, message) for what a study file may not set in its [llm] section, checked at import:
    a base_url whose host the server does not allow (loopback and TRADLAB_REMOTE_HOSTS are),
    an api_key_env without the server's TRADLAB_KEY_PREFIX. Requests are checked again before
    they are sent (services.models.backends.remote)."""

    url, key = section.get("base_url"), section.get("api_key_env")
    return endpoint_problems(
        {"base_url": url} if isinstance(url, str) else {}, key if isinstance(key, str) else None, environ
    )


def config(study_config: dict | None = None, environ=None, **overrides) -> LLMConfig:
    """The LLM settings: overrides, then the study's [llm] keys, then TRADLAB_LLM_* variables.
    Raises LLMNotConfigured without a model, BackendUnavailable for a bad setting."""
    env = current_settings() if environ is None else Settings.from_env(environ)
    section = {**DEFAULTS, **((study_config or {}).get("llm") or {}), **overrides}

    def pick(key: str, var: str) -> str:
        return str(section.get(key) or "").strip() or env.get(var).strip()

    model, base_url = pick("model", ENV_MODEL), pick("base_url", ENV_BASE_URL)
    backend = pick("backend", ENV_BACKEND).lower() or ("remote" if base_url else "transformers")
    api_key_env = pick("api_key_env", ENV_API_KEY_ENV)
    if not model:
        raise LLMNotConfigured(f"No LLM is configured for comprehension questions: {HOW_TO_CONFIGURE}")
    resolved = {**section, "backend": backend, "model": model, "base_url": base_url, "api_key_env": api_key_env}
    bad = problems(resolved)
    if backend == "remote" and not base_url:  # the URL may come from the environment: checked here
        bad.append(("base_url", "is required for the remote backend"))
    if bad:
        raise BackendUnavailable(
            "LLM settings: "
            + "; ".join(f"{k} {m}" for k, m in bad)
            + f" ({ENV_BACKEND}, {ENV_BASE_URL} or the study's [llm] section)"
        )
    return LLMConfig(
        backend,
        model,
        base_url,
        api_key_env,
        float(section["temperature"]),
        int(section["max_tokens"]),
        int(section["seed"]),
        str(section.get("dtype") or "auto"),
    )


def configured(study_config: dict | None = None) -> bool:
    try:
        config(study_config)
    except BackendUnavailable:
        return False
    return True


class _RemoteLLM:
    """Chat completions with the sampling settings (remote.py's client, errors and key handling)."""

    def __init__(self, cfg: LLMConfig):

        self.cfg = cfg
        self.base = _RemoteBase(cfg.base_url, cfg.model, api_key_env=cfg.api_key_env, timeout_s=cfg.timeout_s)

    def complete(self, prompts: list[str]) -> list[str]:
        params = {"temperature": self.cfg.temperature, "seed": self.cfg.seed}
        out = []
        with self.base._client() as client:  # one connection kept alive across the prompts
            for p in prompts:
                out.append(self.base._chat(client, p, self.cfg.max_tokens, **params) if p.strip() else "")
        return out


class _LocalLLM:
    def __init__(self, cfg: LLMConfig, cache):

        self.cfg = cfg
        # "{text}" is the whole prompt: the MT backend's loader, chat template and cache entry
        self.causal = TransformersCausalMT(
            cfg.model, "{text}", dtype=cfg.dtype, max_new_tokens=cfg.max_tokens, cache=cache
        )

    def complete(self, prompts: list[str]) -> list[str]:
        gen: dict[str, Any] = {"do_sample": False}
        if self.cfg.temperature > 0:
            gen = {"do_sample": True, "temperature": self.cfg.temperature, "seed": self.cfg.seed}
        return [h[0].strip() if h else "" for h in self.causal.raw_generate(list(prompts), gen)]


class LLM:
    def __init__(self, cfg: LLMConfig, cache=CACHE):
        self.cfg = cfg
        self.name = cfg.label
        self._impl = _RemoteLLM(cfg) if cfg.backend == "remote" else _LocalLLM(cfg, cache)

    def complete(self, prompts: list[str]) -> list[str]:
        """One answer per prompt (each sent as a single user turn); "" for a blank prompt."""
        return self._impl.complete(list(prompts))

    def __repr__(self) -> str:
        return f"<LLM {self.name}>"


def get(study_config: dict | None = None, cache=CACHE, **overrides) -> LLM:
    return LLM(config(study_config, **overrides), cache=cache)
