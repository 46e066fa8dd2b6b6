"""GEMBA-DA (Kocmi & Federmann 2023): an LLM asked to score a translation 0-100, reference-free,
run as paper 003 ran it (its appendix A.1 "Computing DA Scores" and Table 3).

    GembaDA(backend="transformers", model="/models/Tower-Plus-9B")
    GembaDA(backend="remote", model="gpt-4o", base_url="http://gpu-box:8000/v1",
            api_key_env="OPENAI_API_KEY")

Defaults, each from paper 003:
- prompt (``prompt_variant``, Table 3): "gemba" (the GEMBA-DA prompt,
  services.metrics.registry.GEMBA_DA_PROMPT), "context" (the same asked "given the preceding context", the
  English context given as a first "{src_lang} source" line) or "paraphrased" (the instruction
  followed by "You can use the preceding context to evaluate the translation of the source.").
  The two context variants are the paper's section 4.2 GEMBA variants: they need a context per
  segment (``score(..., contexts=...)``; the audit passes its PAIRS ``context`` column). The
  paraphrased template is kept exactly as Table 3 prints it: the context fills the line labelled
  "{src_lang} source" and the sentence the line labelled "{src_lang} preceding context";
- language names (A.1/Table 3 "{src_lang}", "{tgt_lang}"): English names of the pair's languages;
  codes are mapped by LANGUAGE_NAMES ("pt" -> "Portuguese"); :meth:`GembaDA.for_languages` gives
  the same judge for another pair, which the audit uses per PAIRS ``lang``;
- decoding (A.1): greedy, up to 256 new tokens (``max_new_tokens``); the model's chat template;
- parsing (A.1, ``parser="paper"``): the score the answer recommends ("i would score this
  translation N", any case), else the first integer in the answer; no number, or a number below
  10 (a numbered list's "1.") or above 100, is a failure; the score is rescaled to 0-1
  (``scale="0-1"``: score / 100). ``parser="strict"`` is this project's stricter rule
  (:func:`parse_score`: the first number, which must be a 0-100 score, no ranges or other scales)
  and ``scale="0-100"`` keeps the raw number.

Each (source, hypothesis) pair fills the prompt and is sent on its own, greedily (temperature 0):
- "transformers": a local decoder-only LLM, loaded once through the model cache (the same cache
  entry as TransformersCausalMT, so a model used for MT is not loaded twice), the prompt as the
  user turn of the tokenizer's chat template when it has one (the plain prompt otherwise), new
  tokens only;
- "remote": an OpenAI-compatible /chat/completions endpoint (services.models.backends.remote.RemoteMT).

An unparseable answer gives None, and the raw answer with the reason goes to `metric.failures`
(reset by each score() call; "index" is the position in that call's input). Nothing is guessed
and nothing is sampled again (GEMBA's own code retries at a higher temperature).

Blank source -> None (nothing to judge); blank hypothesis -> 0.0 ("no meaning preserved"),
without asking the LLM, as the other QE metrics here do.

Configuration for metrics.get("gemba-da") (factory below), when not passed as options:
TRADLAB_GEMBA_BACKEND ("transformers" | "remote"; default "remote" when a base URL is set),
TRADLAB_GEMBA_MODEL, TRADLAB_GEMBA_BASE_URL, TRADLAB_GEMBA_API_KEY_ENV (the NAME of the
variable holding the API key), TRADLAB_GEMBA_PROMPT (gemba | context | paraphrased),
TRADLAB_GEMBA_PARSER (paper | strict), TRADLAB_GEMBA_SCALE (0-1 | 0-100),
TRADLAB_GEMBA_MAX_NEW_TOKENS (256).
"""

from __future__ import annotations

import copy
import re

from services.common.settings import current as current_settings
from services.metrics import registry as metrics
from services.models.backends import BackendUnavailable
from services.models.backends.hf import TransformersCausalMT
from services.models.backends.remote import RemoteMT
from services.models.cache import CACHE

BACKENDS = ("transformers", "remote")
ENV_BACKEND = "TRADLAB_GEMBA_BACKEND"
ENV_MODEL = "TRADLAB_GEMBA_MODEL"
ENV_BASE_URL = "TRADLAB_GEMBA_BASE_URL"
ENV_API_KEY_ENV = "TRADLAB_GEMBA_API_KEY_ENV"
ENV_PROMPT = "TRADLAB_GEMBA_PROMPT"
ENV_PARSER = "TRADLAB_GEMBA_PARSER"
ENV_SCALE = "TRADLAB_GEMBA_SCALE"
ENV_MAX_NEW_TOKENS = "TRADLAB_GEMBA_MAX_NEW_TOKENS"

MAX_NEW_TOKENS = 256  # paper 003, appendix A.1
PARSERS = ("paper", "strict")
SCALES = ("0-1", "0-100")
PAPER_MIN_SCORE = 10  # A.1: rows scored below ten (numbered lists, "1. ...") are dropped

# Paper 003, Table 3 (its layout flattened in print; line breaks as in the GEMBA-DA prompt).
_INSTRUCTION = (
    "Score the following translation from {src_lang} to {tgt_lang} on a continuous scale from 0 "
    'to 100{given}, where score of zero means "no meaning preserved" and score of one hundred means '
    '"perfect meaning and grammar".'
)
PROMPTS = {
    "gemba": metrics.GEMBA_DA_PROMPT,
    "context": _INSTRUCTION.replace("{given}", " given the preceding context")
    + '\n\n{src_lang} source: "{context}"\n{src_lang} source: "{source}"\n{tgt_lang} translation: '
    '"{hypothesis}"\nScore: ',
    "paraphrased": _INSTRUCTION.replace("{given}", "")
    + " You can use the preceding context to evaluate the translation of the source."
    '\n\n{src_lang} source: "{context}"\n{src_lang} preceding context: "{source}"\n{tgt_lang} translation: '
    '"{hypothesis}"\nScore: ',
}
CONTEXT_PROMPTS = ("context", "paraphrased")

# English names of language codes (the prompt names languages, paper 003 Table 3): the languages
# of MT-GenEval, GATE and GeNTE and a few more. A code not here must be given as a name.
LANGUAGE_NAMES = {
    "ar": "Arabic",
    "bg": "Bulgarian",
    "ca": "Catalan",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "hu": "Hungarian",
    "id": "Indonesian",
    "is": "Icelandic",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sv": "Swedish",
    "sw": "Swahili",
    "th": "Thai",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "zh": "Chinese",
}
_CODE = re.compile(r"^([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]+)*$")


def language_name(lang: str) -> str:
    """The English name of a language code ("pt", "pt-BR", "pt_PT" -> "Portuguese"); a name
    ("Portuguese", "Brazilian Portuguese") is returned as given. An unknown code is an error."""
    text = str(lang or "").strip()
    if not text:
        raise ValueError("a language is needed (a code such as 'pt' or an English name)")
    m = _CODE.match(text)
    if m and text[0].islower():
        code = m.group(1).lower()
        if code not in LANGUAGE_NAMES:
            raise ValueError(
                f"unknown language code {text!r}: give its English name instead (the GEMBA "
                f"prompt names the languages), or one of: {', '.join(sorted(LANGUAGE_NAMES))}"
            )
        return LANGUAGE_NAMES[code]
    return text


# A number: optional sign (only where it cannot be a range dash), digits, optional decimals
# ("85.5", "85,5"). Not part of a word or of a longer number ("x2", "v1.5").
_NUMBER = re.compile(r"(?<![\w.])(?P<sign>[-+−])?(?P<int>\d+)(?:(?P<sep>[.,])(?P<frac>\d+))?(?![\w])")
_RANGE = re.compile(r"\s*(?:-|–|—|to|and|or|a|até|e|ou)\s*\d+(?:[.,]\d+)?", re.IGNORECASE)
_OUT_OF = re.compile(r"\s*(?:/|out of|de)\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def parse_score(text) -> tuple[float | None, str]:
    """(score, "") for an answer whose first number is a score in 0..100, else (None, reason).

    Accepts "85", "Score: 85", "85/100", "85 out of 100", "85.5", "85,5", "85%", "**85**",
    "I would give it 85 points". Refuses an empty answer, one with no number ("eighty"), a first
    number outside 0..100 ("150", "-5"), a range ("80-90", "80 to 90", "80 and 90") and another
    scale ("8/10", "4 out of 5").
    Only the first number counts: a later one is never used in its place."""
    if text is None or not str(text).strip():
        return None, "empty answer"
    text = str(text)
    m = _NUMBER.search(text)
    if m is None:
        return None, "no number in the answer"
    raw = m.group(0)
    if m.group("sep") == "," and len(m.group("frac")) == 3:  # "1,000": a thousands separator
        value = float(m.group("int") + m.group("frac"))
    else:
        value = float(m.group("int") + ("." + m.group("frac") if m.group("frac") else ""))
    if m.group("sign") in ("-", "−"):
        value = -value + 0.0  # "-0" -> 0.0, not -0.0
    rest = text[m.end() :]
    rng = _RANGE.match(rest)
    if rng:
        span = text[m.start() : m.end() + rng.end()]
        return None, f"a range ({span.strip()}), not one score"
    out_of = _OUT_OF.match(rest)
    if out_of and float(out_of.group(1)) != 100:
        return None, f"scored on another scale ({raw}{out_of.group(0)}), not 0-100"
    if not 0 <= value <= 100:
        return None, f"{raw} is outside 0-100"
    return value, ""


# Paper 003, appendix A.1: "regexes to capture the recommended score, e.g. 'i would score this
# translation (\d+(\.\d+)?)'" (the paper names only this one; its repository's full list is not
# part of the paper), else "the first integer number in the response".
PAPER_PATTERNS = (re.compile(r"i would score this translation (\d+(\.\d+)?)", re.IGNORECASE),)
_FIRST_INTEGER = re.compile(r"\d+")


def parse_score_paper(text) -> tuple[float | None, str]:
    """Paper 003's rule (appendix A.1): the recommended score (PAPER_PATTERNS), else the first
    integer in the answer; (None, reason) when there is none, when it is below 10 (the paper drops
    such rows: numbered lists, "1. ...") or above 100 (outside the asked scale). The value is
    on 0-100; GembaDA rescales it."""
    if text is None or not str(text).strip():
        return None, "empty answer"
    text = str(text)
    for pattern in PAPER_PATTERNS:
        m = pattern.search(text)
        if m:
            value = float(m.group(1))
            break
    else:
        m = _FIRST_INTEGER.search(text)
        if m is None:
            return None, "no number in the answer"
        value = float(m.group(0))
    if value < PAPER_MIN_SCORE:
        return None, (
            f"{value:g} is below {PAPER_MIN_SCORE}: dropped, as paper 003 (appendix A.1) drops "
            "numbered lists and scoreless rows"
        )
    if value > 100:
        return None, f"{value:g} is outside 0-100"
    return value, ""


def _blank(text) -> bool:
    return text is None or not str(text).strip()


class GembaDA(metrics.Metric):
    name = "gemba-da"
    kind = metrics.QE
    supports_context = False

    def __init__(
        self,
        backend: str,
        model: str,
        base_url: str = "",
        api_key_env: str = "",
        src_lang: str = "English",
        tgt_lang: str = "Portuguese",
        cache=CACHE,
        max_new_tokens: int = MAX_NEW_TOKENS,
        dtype: str = "auto",
        timeout_s: float = 120,
        prompt_variant: str = "gemba",
        parser: str = "paper",
        scale: str = "0-1",
    ):
        backend = (backend or "").strip().lower()
        if backend not in BACKENDS:
            raise BackendUnavailable(
                f"GEMBA-DA backend {backend!r} is not one of {', '.join(BACKENDS)} (set {ENV_BACKEND})"
            )
        if not (model or "").strip():
            raise BackendUnavailable(
                f"GEMBA-DA needs an LLM: set {ENV_MODEL} (a hub id or model folder "
                f"for {ENV_BACKEND}=transformers, the served model name for "
                f"{ENV_BACKEND}=remote with {ENV_BASE_URL})"
            )
        if prompt_variant not in PROMPTS:
            raise ValueError(
                f"unknown GEMBA prompt variant {prompt_variant!r} (one of: {', '.join(PROMPTS)}; {ENV_PROMPT})"
            )
        if parser not in PARSERS:
            raise ValueError(f"unknown GEMBA parser {parser!r} (one of: {', '.join(PARSERS)}; {ENV_PARSER})")
        if scale not in SCALES:
            raise ValueError(f"unknown GEMBA scale {scale!r} (one of: {', '.join(SCALES)}; {ENV_SCALE})")
        self.backend = backend
        self.model_id = model.strip()
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.prompt_variant, self.parser, self.scale_name = prompt_variant, parser, scale
        self.supports_context = prompt_variant in CONTEXT_PROMPTS
        self.context_in_prompt = self.supports_context  # the audit passes its context column as is
        self.cache = cache
        self.max_new_tokens = int(max_new_tokens)
        self.dtype = dtype
        self.failures: list[dict] = []
        self.answers: list[str | None] = []  # the raw answers of the last score() call
        if backend == "transformers":
            self.requires = ("transformers", "torch")
            self.version = metrics._package_version("transformers")
            self._runner = None
        else:
            if not (base_url or "").strip():
                raise BackendUnavailable(
                    f"GEMBA-DA with the remote backend needs the server URL: set "
                    f"{ENV_BASE_URL} (e.g. http://gpu-box:8000/v1)"
                )
            self.requires = ("httpx",)
            self.version = "openai-compatible"
            # "{text}" is replaced by the whole filled GEMBA prompt, sent as is.
            self._runner = RemoteMT(
                base_url,
                self.model_id,
                "{text}",
                api_key_env=api_key_env,
                timeout_s=timeout_s,
                max_tokens=self.max_new_tokens,
            )
        self._set_languages(src_lang, tgt_lang)

    def _set_languages(self, src_lang: str, tgt_lang: str) -> None:
        self.src_lang, self.tgt_lang = language_name(src_lang), language_name(tgt_lang)
        self.scale = (
            "0-1 (LLM direct assessment 0-100 / 100" if self.scale_name == "0-1" else "0-100 (LLM direct assessment"
        ) + "; None where the answer held no valid score)"
        # The languages, prompt, parser and scale change the scores, so they are part of the
        # model string (score_cached keys on name, version and model).
        self.model = (
            f"{self.model_id} | GEMBA-DA {self.src_lang}->{self.tgt_lang} | prompt {self.prompt_variant}"
            f" | parser {self.parser} | scale {self.scale_name} | max_new_tokens {self.max_new_tokens}"
        )

    def for_languages(self, src_lang: str, tgt_lang: str) -> "GembaDA":
        """The same judge (same backend, model cache and settings) asked about another language
        pair; codes or English names. Its failures are its own."""
        other = copy.copy(self)
        other.failures, other.answers = [], []
        other._set_languages(src_lang, tgt_lang)
        return other

    def prompt(self, source: str, hypothesis: str, context: str | None = None) -> str:
        """The filled prompt for one pair (str.replace: segments may hold braces)."""
        out = PROMPTS[self.prompt_variant]
        for key, value in (("{src_lang}", self.src_lang), ("{tgt_lang}", self.tgt_lang)):
            out = out.replace(key, value)
        # the segments last, so a segment containing "{tgt_lang}" is left alone
        segments = [("{source}", source), ("{hypothesis}", hypothesis)]
        if "{context}" in out:
            if context is None:
                raise ValueError(f"the GEMBA prompt variant {self.prompt_variant!r} needs the preceding context")
            segments.insert(0, ("{context}", context))
        pieces, rest = [], out
        for key, value in segments:
            head, rest = rest.split(key, 1)
            pieces += [head, str(value)]
        return "".join(pieces) + rest

    def parse(self, answer) -> tuple[float | None, str]:
        """(score on this metric's scale, "") or (None, reason)."""
        value, reason = (parse_score_paper if self.parser == "paper" else parse_score)(answer)
        if value is not None and self.scale_name == "0-1":
            value = value / 100.0
        return value, reason

    # -- the LLM calls --------------------------------------------------------------------
    def ask(self, prompts: list[str]) -> list[str]:
        """The LLM's raw answers, one per prompt."""
        if self._runner is not None:  # the remote backend (the only one with a runner)
            return self._runner.translate(prompts)
        return self._generate(prompts)

    def _causal(self):
        # Same loader and cache key as the MT backend: one copy of a model used for both.
        return TransformersCausalMT(
            self.model_id, "{text}", dtype=self.dtype, max_new_tokens=self.max_new_tokens, cache=self.cache
        )

    def _generate(self, prompts: list[str]) -> list[str]:
        # greedy, the whole answer (not the MT backend's first-paragraph cut)
        return [h[0].strip() if h else "" for h in self._causal().raw_generate(prompts, {"do_sample": False})]

    def _score(self, sources, hypotheses, references, contexts):
        self.failures = []
        if self.supports_context and contexts is None:
            raise ValueError(
                f"the GEMBA prompt variant {self.prompt_variant!r} (paper 003 Table 3) needs a context "
                "per segment (contexts=...)"
            )
        ctx = list(contexts) if contexts is not None else [None] * len(sources)
        out: list[float | None] = [None if _blank(s) else 0.0 for s in sources]
        self.answers = [None] * len(sources)
        todo = [i for i, (s, h) in enumerate(zip(sources, hypotheses)) if not _blank(s) and not _blank(h)]
        if not todo:
            return out
        prompts = [
            self.prompt(sources[i], hypotheses[i], "" if self.supports_context and ctx[i] is None else ctx[i])
            for i in todo
        ]
        answers = self.ask(prompts)
        for i, answer in zip(todo, answers):
            self.answers[i] = answer
            value, reason = self.parse(answer)
            out[i] = value
            if value is None:
                self.failures.append(
                    {"index": i, "answer": answer, "reason": reason, "source": sources[i], "hypothesis": hypotheses[i]}
                )
        return out

    def info(self) -> dict:
        return {
            **super().info(),
            "backend": self.backend,
            "prompt_variant": self.prompt_variant,
            "parser": self.parser,
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "max_new_tokens": self.max_new_tokens,
        }


def factory(**options) -> GembaDA:
    """metrics.register("gemba-da", factory): options override TRADLAB_GEMBA_* variables."""
    env = current_settings()
    model = options.pop("model", None) or env.gemba_model.strip()
    base_url = options.pop("base_url", None) or env.gemba_base_url.strip()
    backend = options.pop("backend", None) or env.gemba_backend.strip() or ("remote" if base_url else "transformers")
    api_key_env = options.pop("api_key_env", None) or env.gemba_api_key_env.strip()
    for key, var, raw in (
        ("prompt_variant", ENV_PROMPT, env.gemba_prompt),
        ("parser", ENV_PARSER, env.gemba_parser),
        ("scale", ENV_SCALE, env.gemba_scale),
        ("max_new_tokens", ENV_MAX_NEW_TOKENS, env.gemba_max_new_tokens),
    ):
        if key not in options and raw.strip():
            value = raw.strip()
            if key == "max_new_tokens":
                try:
                    options[key] = int(value)
                except ValueError:
                    raise ValueError(f"{var} must be a whole number, not {value!r}") from None
            else:
                options[key] = value
    if not model:
        raise BackendUnavailable(
            f"metric 'gemba-da' needs an LLM judge: set {ENV_MODEL} (and {ENV_BACKEND}=transformers "
            f"for a local model folder or hub id, or {ENV_BACKEND}=remote with {ENV_BASE_URL} for an "
            f"OpenAI-compatible server; {ENV_API_KEY_ENV} names the API-key variable if it needs one)"
        )
    return GembaDA(backend, model, base_url=base_url, api_key_env=api_key_env, **options)
