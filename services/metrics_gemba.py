"""GEMBA-DA (Kocmi & Federmann 2023): an LLM asked to score a translation 0-100, reference-free.

    GembaDA(backend="transformers", model="/models/Tower-Plus-9B")
    GembaDA(backend="remote", model="gpt-4o", base_url="http://gpu-box:8000/v1",
            api_key_env="OPENAI_API_KEY")

Each (source, hypothesis) pair fills services.metrics.GEMBA_DA_PROMPT (PROTOCOLS.md section 4)
and is sent on its own, greedily (temperature 0):
- "transformers": a local decoder-only LLM, loaded once through the model cache (the same cache
  entry as TransformersCausalMT, so a model used for MT is not loaded twice), the prompt as the
  user turn of the tokenizer's chat template when it has one (the plain prompt otherwise), new
  tokens only;
- "remote": an OpenAI-compatible /chat/completions endpoint (services.backends.remote.RemoteMT).

The answer is parsed by parse_score(): the FIRST number in the answer, which must lie in 0..100.
Nothing is guessed: no number, a number outside 0..100, a range ("80-90") or another scale
("8/10") gives None, and the raw answer with the reason goes to `metric.failures` (reset by each
score() call; "index" is the position in that call's input). GEMBA's own code retries such
answers at a higher temperature; this metric does not sample.

Blank source -> None (nothing to judge); blank hypothesis -> 0.0 ("no meaning preserved"),
without asking the LLM, as the other QE metrics here do.

Configuration for metrics.get("gemba-da") (factory below), when not passed as options:
TRADLAB_GEMBA_BACKEND ("transformers" | "remote"; default "remote" when a base URL is set),
TRADLAB_GEMBA_MODEL, TRADLAB_GEMBA_BASE_URL, TRADLAB_GEMBA_API_KEY_ENV (the NAME of the
variable holding the API key).
"""
from __future__ import annotations

import os
import re

from services import metrics
from services.backends import BackendUnavailable
from services.model_cache import CACHE

BACKENDS = ("transformers", "remote")
ENV_BACKEND = "TRADLAB_GEMBA_BACKEND"
ENV_MODEL = "TRADLAB_GEMBA_MODEL"
ENV_BASE_URL = "TRADLAB_GEMBA_BASE_URL"
ENV_API_KEY_ENV = "TRADLAB_GEMBA_API_KEY_ENV"

# A number: optional sign (only where it cannot be a range dash), digits, optional decimals
# ("85.5", "85,5"). Not part of a word or of a longer number ("x2", "v1.5").
_NUMBER = re.compile(r"(?<![\w.])(?P<sign>[-+−])?(?P<int>\d+)(?:(?P<sep>[.,])(?P<frac>\d+))?(?![\w])")
_RANGE = re.compile(r"\s*(?:-|–|—|to|and|or|a|até|e|ou)\s*\d+(?:[.,]\d+)?", re.IGNORECASE)
_OUT_OF = re.compile(r"\s*(?:/|out of|de)\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def parse_score(text) -> tuple[float | None, str]:
    """(score, "") for an answer whose first number is a score in 0..100, else (None, reason).

    Accepts "85", "Score: 85", "85/100", "85 out of 100", "85.5", "85,5", "85%", "**85**",
    "I would give it 85 points". Refuses an empty answer, one with no number ("eighty"), a first
    number outside 0..100 ("150", "-5"), a range ("80-90", "80 to 90", "80 and 90") and another scale ("8/10", "4 out of 5").
    Only the first number counts: a later one is never used in its place."""
    if text is None or not str(text).strip():
        return None, "empty answer"
    text = str(text)
    m = _NUMBER.search(text)
    if m is None:
        return None, "no number in the answer"
    raw = m.group(0)
    if m.group("sep") == "," and len(m.group("frac")) == 3:      # "1,000": a thousands separator
        value = float(m.group("int") + m.group("frac"))
    else:
        value = float(m.group("int") + ("." + m.group("frac") if m.group("frac") else ""))
    if m.group("sign") in ("-", "−"):
        value = -value + 0.0                                    # "-0" -> 0.0, not -0.0
    rest = text[m.end():]
    rng = _RANGE.match(rest)
    if rng:
        span = text[m.start(): m.end() + rng.end()]
        return None, f"a range ({span.strip()}), not one score"
    out_of = _OUT_OF.match(rest)
    if out_of and float(out_of.group(1)) != 100:
        return None, f"scored on another scale ({raw}{out_of.group(0)}), not 0-100"
    if not 0 <= value <= 100:
        return None, f"{raw} is outside 0-100"
    return value, ""


def _blank(text) -> bool:
    return text is None or not str(text).strip()


class GembaDA(metrics.Metric):
    name = "gemba-da"
    kind = metrics.QE
    scale = "0-100 (LLM direct assessment; None where the answer held no valid score)"
    supports_context = False

    def __init__(self, backend: str, model: str, base_url: str = "", api_key_env: str = "",
                 src_lang: str = "English", tgt_lang: str = "Portuguese", cache=CACHE,
                 max_new_tokens: int = 16, dtype: str = "auto", timeout_s: float = 120):
        backend = (backend or "").strip().lower()
        if backend not in BACKENDS:
            raise BackendUnavailable(f"GEMBA-DA backend {backend!r} is not one of {', '.join(BACKENDS)} "
                                     f"(set {ENV_BACKEND})")
        if not (model or "").strip():
            raise BackendUnavailable(f"GEMBA-DA needs an LLM: set {ENV_MODEL} (a hub id or model folder "
                                     f"for {ENV_BACKEND}=transformers, the served model name for "
                                     f"{ENV_BACKEND}=remote with {ENV_BASE_URL})")
        self.backend = backend
        self.model_id = model.strip()
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self.cache = cache
        self.max_new_tokens = int(max_new_tokens)
        self.dtype = dtype
        self.failures: list[dict] = []
        self.answers: list[str | None] = []       # the raw answers of the last score() call
        if backend == "transformers":
            self.requires = ("transformers", "torch")
            self.version = metrics._package_version("transformers")
            self._runner = None
        else:
            if not (base_url or "").strip():
                raise BackendUnavailable(f"GEMBA-DA with the remote backend needs the server URL: set "
                                         f"{ENV_BASE_URL} (e.g. http://gpu-box:8000/v1)")
            from services.backends.remote import RemoteMT
            self.requires = ("httpx",)
            self.version = "openai-compatible"
            # "{text}" is replaced by the whole filled GEMBA prompt, sent as is.
            self._runner = RemoteMT(base_url, self.model_id, "{text}", api_key_env=api_key_env,
                                    timeout_s=timeout_s, max_tokens=self.max_new_tokens)
        # The languages change the prompt, so they are part of what the scores depend on
        # (score_cached keys on name, version and model).
        self.model = f"{self.model_id} | GEMBA-DA {src_lang}->{tgt_lang}"

    def prompt(self, source: str, hypothesis: str) -> str:
        """The filled GEMBA-DA prompt for one pair (str.replace: segments may hold braces)."""
        out = metrics.GEMBA_DA_PROMPT
        for key, value in (("{src_lang}", self.src_lang), ("{tgt_lang}", self.tgt_lang)):
            out = out.replace(key, value)
        # source/hypothesis last, so a segment containing "{tgt_lang}" is left alone
        head, tail = out.split("{source}")
        tail_a, tail_b = tail.split("{hypothesis}")
        return head + str(source) + tail_a + str(hypothesis) + tail_b

    # -- the LLM calls --------------------------------------------------------------------
    def ask(self, prompts: list[str]) -> list[str]:
        """The LLM's raw answers, one per prompt."""
        if self.backend == "remote":
            return self._runner.translate(prompts)
        return self._generate(prompts)

    def _causal(self):
        from services.backends.hf import TransformersCausalMT
        # Same loader and cache key as the MT backend: one copy of a model used for both.
        return TransformersCausalMT(self.model_id, "{text}", dtype=self.dtype,
                                    max_new_tokens=self.max_new_tokens, cache=self.cache)

    def _generate(self, prompts: list[str]) -> list[str]:
        # greedy, the whole answer (not the MT backend's first-paragraph cut)
        return [h[0].strip() if h else "" for h in self._causal().raw_generate(prompts, {"do_sample": False})]

    def _score(self, sources, hypotheses, references, contexts):
        self.failures = []
        out: list[float | None] = [None if _blank(s) else 0.0 for s in sources]
        self.answers = [None] * len(sources)
        todo = [i for i, (s, h) in enumerate(zip(sources, hypotheses)) if not _blank(s) and not _blank(h)]
        if not todo:
            return out
        answers = self.ask([self.prompt(sources[i], hypotheses[i]) for i in todo])
        for i, answer in zip(todo, answers):
            self.answers[i] = answer
            value, reason = parse_score(answer)
            out[i] = value
            if value is None:
                self.failures.append({"index": i, "answer": answer, "reason": reason,
                                      "source": sources[i], "hypothesis": hypotheses[i]})
        return out

    def info(self) -> dict:
        return {**super().info(), "backend": self.backend}


def factory(**options) -> GembaDA:
    """metrics.register("gemba-da", factory): options override TRADLAB_GEMBA_* variables."""
    model = options.pop("model", None) or os.environ.get(ENV_MODEL, "").strip()
    base_url = options.pop("base_url", None) or os.environ.get(ENV_BASE_URL, "").strip()
    backend = options.pop("backend", None) or os.environ.get(ENV_BACKEND, "").strip() or (
        "remote" if base_url else "transformers")
    api_key_env = options.pop("api_key_env", None) or os.environ.get(ENV_API_KEY_ENV, "").strip()
    if not model:
        raise BackendUnavailable(
            f"metric 'gemba-da' needs an LLM judge: set {ENV_MODEL} (and {ENV_BACKEND}=transformers "
            f"for a local model folder or hub id, or {ENV_BACKEND}=remote with {ENV_BASE_URL} for an "
            f"OpenAI-compatible server; {ENV_API_KEY_ENV} names the API-key variable if it needs one)")
    return GembaDA(backend, model, base_url=base_url, api_key_env=api_key_env, **options)
