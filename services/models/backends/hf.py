"""Transformers backends for the paper's large models (none of them is available offline here).

- TransformersWhisperASR:  openai/whisper-large-v3 (bf16 on CUDA in the paper), any Whisper folder.
- TransformersSeq2SeqMT:   Marian / OPUS-MT, NLLB, M2M100, mBART-style encoder-decoders.
- TransformersCausalMT:    Unbabel/Tower-Plus-9B and other decoder-only LLMs, prompted per sentence.
- TransformersSpeechLLM:   direct speech translation with microsoft/Phi-4-multimodal-instruct,
                           mistralai/Voxtral-Small-24B-2507, Qwen2-Audio and DeSTA2 (remote code).

`model` is a hub id or a local folder. Every model is loaded through the model cache (once per
process, on cache.device, in cache.dtype(dtype), eval mode) and runs under
torch.inference_mode() and cache.exclusive(). Nothing is imported or downloaded at import
time; a model that is not on disk (a folder, or already in the hub cache) raises
BackendUnavailable saying how to get it. The tests exercise every path on tiny models that
they build themselves (tests/tiny_models.py).
"""

from __future__ import annotations

import importlib.util
import re
from math import gcd
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from services.common.settings import current as current_settings
from services.models.backends import BackendUnavailable, require
from services.models.cache import CACHE

TEXT_BATCH = 16  # sentences per generate() call for the text MT models
SR = 16000


class _Loaded:
    """What the cache holds for one model: the torch module(s) plus their pre/post-processing.
    Plain attributes, so the cache can size the modules (model_cache._module_bytes)."""

    def __init__(self, **parts):
        self.__dict__.update(parts)

    if TYPE_CHECKING:  # the parts differ by model (model, processor, tokenizer, family...)

        def __getattr__(self, name: str) -> Any: ...


def _tf():
    require("torch", "torch==2.13.0")
    return require("transformers", "transformers")


def _check_path(model: str) -> None:
    """A model written as a filesystem path must exist; "org/name" is left to the hub cache."""
    if not model:
        raise BackendUnavailable("no model configured: set a hub id or a local model folder")
    p = Path(model).expanduser()
    if p.is_dir():
        return
    if model.startswith(("/", ".", "~")) or model.count("/") > 1 or "\\" in model:
        raise BackendUnavailable(
            f"model folder {model} does not exist: download the model on a machine with hub access "
            f"(hf download ORG/NAME --local-dir {model}), copy it here and set that path"
        )


def _pretrained(model: str, loader, **kwargs):
    """loader(model, **kwargs), with a missing model or package turned into BackendUnavailable.

    Only files already on disk are used (a folder, or the hub cache): the app never downloads
    a model while it serves a study; TRADLAB_ALLOW_DOWNLOADS=1 lifts that for a setup run."""
    if not current_settings().allow_downloads:
        kwargs.setdefault("local_files_only", True)
    return _load_or_explain(model, loader, **kwargs)


def _load_or_explain(model: str, loader, **kwargs):
    """loader(model, **kwargs), with a missing model or package turned into BackendUnavailable."""
    try:
        return loader(model, **kwargs)
    except ImportError as e:
        raise BackendUnavailable(f"{model} needs a package that is not installed: {e}") from e
    except (OSError, ValueError) as e:  # not on disk / not in the hub cache / offline / unknown architecture
        text = str(e).strip()
        first = text.splitlines()[0] if text else type(e).__name__
        if "trust_remote_code" in text:
            advice = (
                "the model ships its own code: set trust_remote_code for it if you trust it, or use "
                "a transformers-native version of the model"
            )
        elif isinstance(e, ValueError) and re.search(r"[Uu]nrecognized|does not recognize|not supported", text):
            advice = (
                "this transformers does not know the architecture: pip install -U transformers "
                "(or set trust_remote_code for a remote-code model)"
            )
        else:
            advice = (
                f"if it is a hub id, download it on a machine with hub access (hf download {model}; "
                f"gated models need their licence accepted and HF_TOKEN) and set the model to the "
                f"downloaded folder; if it is a folder, check the path"
            )
        raise BackendUnavailable(f"cannot load {model} ({type(e).__name__}: {first}): {advice}") from e


def _weights(cache, dtype: str) -> dict:
    """from_pretrained kwargs: the cache's dtype, and on CUDA straight onto the GPU (a 24B model
    need not pass through host RAM; one device needs no accelerate)."""
    kw = {"dtype": cache.dtype(dtype)}
    if cache.device != "cpu":
        kw["device_map"] = cache.device
    return kw


def _ready(model, cache):
    model.to(cache.device)
    model.eval()
    return model


def _read_wav16k(path, rate: int = SR) -> "np.ndarray":
    """Mono float32 at `rate` (16 kHz); other file rates are resampled (the intake delivers 16 kHz)."""
    sf = require("soundfile", "soundfile")
    x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if sr != rate:
        signal = require("scipy.signal", "scipy")
        g = gcd(rate, sr)
        x = signal.resample_poly(x, rate // g, sr // g).astype(np.float32)
    return np.ascontiguousarray(x, dtype=np.float32)


def _key(kind: str, model: str, dtype: str) -> str:
    return f"{kind}/{model}" + ("" if dtype in (None, "", "auto") else f"@{dtype}")


class _Weights:
    """A transformers backend's loaded bundle (KIND: its cache key's prefix) and the precision
    its weights are in, as loaded: what ran, for the stored output and the report."""

    KIND = ""
    model: str
    dtype: str
    cache: Any

    def _bundle(self):
        return self.cache.get(_key(self.KIND, self.model, self.dtype), self._load)  # type: ignore[attr-defined]

    def precision(self) -> str:
        """The loaded weights' dtype ("bfloat16"); "not loaded" when the cache holds none (asking
        does not load a model)."""
        if _key(self.KIND, self.model, self.dtype) not in self.cache:
            return "not loaded"
        dtype = getattr(self._bundle().model, "dtype", None)
        return str(dtype).removeprefix("torch.") if dtype is not None else "unknown"


def _new_tokens(out, input_ids):
    """generate() output without the prompt (decoder-only models echo it; some return only new tokens)."""
    # lazy import (torch): heavy model library; loaded only when a model runs
    import torch

    n = input_ids.shape[1]
    if out.shape[1] >= n and torch.equal(out[:, :n].to(input_ids.device), input_ids):
        return out[:, n:]
    return out


# -- ASR ------------------------------------------------------------------------------------
class TransformersWhisperASR(_Weights):
    KIND = "asr/transformers"

    def __init__(
        self, model: str, dtype: str = "auto", language: str | None = "en", max_new_tokens: int = 225, cache=CACHE
    ):
        self.model = model
        self.dtype = dtype
        self.language = language
        self.max_new_tokens = int(max_new_tokens)
        self.cache = cache
        self.name = f"transformers-whisper:{model}"

    def _load(self):
        tf = _tf()
        _check_path(self.model)
        processor = _pretrained(self.model, tf.AutoProcessor.from_pretrained)
        model = _pretrained(
            self.model, tf.AutoModelForSpeechSeq2Seq.from_pretrained, **_weights(self.cache, self.dtype)
        )
        return _Loaded(model=_ready(model, self.cache), processor=processor)

    def transcribe(self, wav16k_path: str) -> str:
        # lazy import (torch): heavy model library; loaded only when a model runs
        import torch

        b = self._bundle()
        model, proc = b.model, b.processor
        audio = _read_wav16k(wav16k_path)
        if audio.size == 0:
            return ""
        # An array, not a path: decoding a path needs the ffmpeg binary.
        feats = proc(
            audio,
            sampling_rate=SR,
            return_tensors="pt",
            truncation=False,
            padding="longest",
            return_attention_mask=True,
        )
        long_form = feats.input_features.shape[-1] > proc.feature_extractor.nb_max_frames
        if not long_form:  # short-form Whisper expects exactly one padded 30 s window
            feats = proc(audio, sampling_rate=SR, return_tensors="pt", return_attention_mask=True)
        kwargs: dict[str, Any] = {}
        gc = model.generation_config
        # English-only checkpoints (*.en) have no lang_to_id and refuse a language argument.
        if self.language and getattr(gc, "lang_to_id", None):
            kwargs["language"] = self.language
            if getattr(gc, "task_to_id", None):
                kwargs["task"] = "transcribe"
        if long_form:
            kwargs["return_timestamps"] = True  # sequential long-form decoding needs them
        # Whisper refuses prompt + max_new_tokens beyond max_target_positions (448; prompt <= 4).
        max_new = min(self.max_new_tokens, model.config.max_target_positions - 4)
        with self.cache.exclusive(), torch.inference_mode():
            out = model.generate(
                input_features=feats.input_features.to(model.device, dtype=model.dtype),
                attention_mask=feats.attention_mask.to(model.device),
                max_new_tokens=max_new,
                **kwargs,
            )
        return proc.batch_decode(out, skip_special_tokens=True)[0].strip()


# -- text MT --------------------------------------------------------------------------------
def _chunks(items, n):
    for i in range(0, len(items), n):
        yield items[i : i + n]


class TransformersSeq2SeqMT(_Weights):
    """Encoder-decoder MT. transformers 5 has no translation pipeline: tokenize, generate, decode.

    Target language, when given: OPUS-MT multi-target models take a ">>pt<<" source prefix;
    M2M100 and NLLB/mBART force the target code as first token (forced_bos_token_id)."""

    KIND = "mt/transformers"

    def __init__(
        self,
        model: str,
        dtype: str = "auto",
        max_new_tokens: int = 256,
        num_beams: int = 1,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        cache=CACHE,
    ):
        self.model = model
        self.dtype = dtype
        self.max_new_tokens = int(max_new_tokens)
        self.num_beams = int(num_beams)
        self.src_lang = src_lang
        self.tgt_lang = tgt_lang
        self.cache = cache
        self.name = f"transformers-seq2seq:{model}" + (f" ({src_lang}->{tgt_lang})" if tgt_lang else "")

    def _load(self):
        tf = _tf()
        _check_path(self.model)
        tok = _pretrained(self.model, tf.AutoTokenizer.from_pretrained)
        model = _pretrained(self.model, tf.AutoModelForSeq2SeqLM.from_pretrained, **_weights(self.cache, self.dtype))
        return _Loaded(model=_ready(model, self.cache), tokenizer=tok)

    def _target(self, tok) -> tuple[str, int | None]:
        """(source prefix, forced BOS id) selecting the target language for this tokenizer family."""
        if not self.tgt_lang:
            return "", None
        vocab = tok.get_vocab()
        marian = f">>{self.tgt_lang}<<"
        if marian in vocab:
            return marian + " ", None
        if hasattr(tok, "get_lang_id"):  # M2M100: "pt" -> "__pt__"
            return "", tok.get_lang_id(self.tgt_lang)
        if self.tgt_lang in vocab:  # NLLB "por_Latn", mBART "pt_XX"
            return "", vocab[self.tgt_lang]
        raise BackendUnavailable(
            f"{self.model} has no target-language token for {self.tgt_lang!r} "
            f"(tried {marian} and {self.tgt_lang}): check tgt_lang for this model"
        )

    def translate(self, texts: list[str]) -> list[str]:
        gen = {"num_beams": self.num_beams, "do_sample": False}
        return [h[0] if h else "" for h in self._generate(texts, gen, 1)]

    def sample(self, texts: list[str], n: int, epsilon: float = 0.02, seed: int = 0) -> list[list[str]]:
        """n sampled translations per text (epsilon sampling: tokens below probability epsilon
        are cut, no top-k/top-p), as quality-aware decoding draws its candidates (paper 003
        section 5: 50 samples, epsilon 0.02). Seeded, so a run can be repeated."""
        return self._generate(texts, _sampling(n, epsilon, seed), n)

    def _generate(self, texts: list[str], gen: dict, n: int) -> list[list[str]]:
        # lazy import (torch): heavy model library; loaded only when a model runs
        import torch

        b = self._bundle()
        model, tok = b.model, b.tokenizer
        prefix, forced_bos = self._target(tok)
        out: list[list[str]] = [[] for _ in texts]
        todo = [(i, t.strip()) for i, t in enumerate(texts) if t and t.strip()]
        gen = {"max_new_tokens": self.max_new_tokens, **gen}
        if forced_bos is not None:
            gen["forced_bos_token_id"] = forced_bos
        for chunk in _chunks(todo, max(1, TEXT_BATCH // n)):
            if self.src_lang and hasattr(tok, "src_lang"):
                tok.src_lang = self.src_lang  # NLLB/M2M/mBART prefix the source code
            enc = tok([prefix + t for _, t in chunk], return_tensors="pt", padding=True, truncation=True).to(
                model.device
            )
            with self.cache.exclusive(), torch.inference_mode():
                _seed(gen)
                ids = model.generate(**enc, **{k: v for k, v in gen.items() if k != "seed"})
            decoded = [s.strip() for s in tok.batch_decode(ids, skip_special_tokens=True)]
            for k, (i, _) in enumerate(chunk):
                out[i] = decoded[k * n : (k + 1) * n]
        return out


def _sampling(n: int, epsilon: float, seed: int) -> dict:
    if int(n) < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if not 0 < float(epsilon) < 1:
        raise ValueError(f"epsilon must lie strictly between 0 and 1, not {epsilon}")
    # top_k=0 and top_p=1 switch off the defaults a generation config may carry
    return {
        "do_sample": True,
        "epsilon_cutoff": float(epsilon),
        "top_k": 0,
        "top_p": 1.0,
        "temperature": 1.0,
        "num_beams": 1,
        "num_return_sequences": int(n),
        "seed": int(seed),
    }


def _seed(gen: dict) -> None:
    if "seed" in gen:
        # lazy import (transformers): heavy model library; loaded only when a model runs
        import transformers

        transformers.set_seed(gen["seed"])


def source_label(prompt: str) -> str:
    """The label before {text} on its line of a plain prompt ("English:" in the paper's Tower+
    prompt), "" when {text} starts its line: what a model that runs on writes to start a turn."""
    line = prompt.split("{text}", 1)[0].rsplit("\n", 1)[-1]
    return line.strip()


def run_on(output: str, source: str, label: str) -> tuple[str, str]:
    """(translation, cut): the whole output, stripped, unless a model ran on into a new prompt
    turn, a line after the first that starts with the prompt's source label ("English:"): that
    line and what follows are cut and returned. A translation of this source cannot start such a
    line unless the source has one, and then nothing is cut (nor without a label)."""
    text = output.strip()
    if not label or any(line.strip().startswith(label) for line in source.splitlines()):
        return text, ""
    lines = text.split("\n")
    for i, line in enumerate(lines[1:], start=1):
        if line.strip().startswith(label):
            return "\n".join(lines[:i]).strip(), "\n".join(lines[i:]).strip()
    return text, ""


class TransformersCausalMT(_Weights):
    """Decoder-only MT: `prompt` (with a {text} placeholder) as the user message of the model's chat
    template when it has one (plain prompt otherwise), greedy, left-padded batches, new tokens only.
    Tower-Plus prompt in the paper:
    "Translate the following English source text to Portuguese (Portugal):\\nEnglish: {text}\\nPortuguese (Portugal): "
    """

    KIND = "mt/transformers-causal"

    def __init__(
        self,
        model: str,
        prompt: str,
        dtype: str = "auto",
        max_new_tokens: int = 256,
        use_chat_template: bool = True,
        cache=CACHE,
    ):
        if "{text}" not in prompt:
            raise ValueError("the causal MT prompt needs a {text} placeholder")
        self.model = model
        self.prompt = prompt
        self.dtype = dtype
        self.max_new_tokens = int(max_new_tokens)
        self.use_chat_template = bool(use_chat_template)
        self.cache = cache
        self.name = f"transformers-llm:{model}"

    def _load(self):
        tf = _tf()
        _check_path(self.model)
        tok = _pretrained(self.model, tf.AutoTokenizer.from_pretrained, padding_side="left")
        tok.padding_side = "left"  # generation continues from the right end
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        model = _pretrained(self.model, tf.AutoModelForCausalLM.from_pretrained, **_weights(self.cache, self.dtype))
        return _Loaded(model=_ready(model, self.cache), tokenizer=tok)

    def _chat(self, tok) -> bool:
        return self.use_chat_template and bool(getattr(tok, "chat_template", None))

    def render(self, tok, text: str) -> str:
        """The exact string the model is given for one source sentence."""
        user = self.prompt.replace("{text}", text)  # not str.format: prompts may hold braces
        if self._chat(tok):
            return tok.apply_chat_template(
                [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
            )
        return user

    def translate(self, texts: list[str]) -> list[str]:
        return [text for text, _ in self.translate_with_cuts(texts)]

    def translate_with_cuts(self, texts: list[str]) -> list[tuple[str, str]]:
        """(translation, cut) per text, greedy: the whole output as generated, less a run-on into a
        new prompt turn (run_on), which is returned as cut ("" for none) to be stored and counted."""
        return [hs[0] if hs else ("", "") for hs in self._generate(texts, {"do_sample": False}, 1)]

    def sample(self, texts: list[str], n: int, epsilon: float = 0.02, seed: int = 0) -> list[list[str]]:
        """n epsilon-sampled translations per text (see TransformersSeq2SeqMT.sample)."""
        return [[text for text, _ in hs] for hs in self._generate(texts, _sampling(n, epsilon, seed), n)]

    def _generate(self, texts: list[str], gen: dict, n: int) -> list[list[tuple[str, str]]]:
        texts = [t.strip() if t else "" for t in texts]
        raw = self.raw_generate(texts, gen, n)
        label = source_label(self.prompt)
        return [[run_on(s, src, label) for s in hs] for hs, src in zip(raw, texts)]

    def raw_generate(self, texts: list[str], gen: dict, n: int = 1) -> list[list[str]]:
        """n whole continuations per text (new tokens only, decoded, no run-on cut),
        [] for a blank text: what LLM callers (GEMBA-DA, services/models/llm.py) read."""
        # lazy import (torch): heavy model library; loaded only when a model runs
        import torch

        b = self._bundle()
        model, tok = b.model, b.tokenizer
        out: list[list[str]] = [[] for _ in texts]
        todo = [(i, t) for i, t in enumerate(texts) if t and t.strip()]
        for chunk in _chunks(todo, max(1, TEXT_BATCH // n)):
            prompts = [self.render(tok, t) for _, t in chunk]
            # A rendered chat template already starts with BOS; a plain prompt gets the tokenizer's.
            enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=not self._chat(tok)).to(
                model.device
            )
            with self.cache.exclusive(), torch.inference_mode():
                _seed(gen)
                ids = model.generate(
                    **enc,
                    max_new_tokens=self.max_new_tokens,
                    pad_token_id=tok.pad_token_id,
                    **{k: v for k, v in gen.items() if k != "seed"},
                )
            new = ids[:, enc["input_ids"].shape[1] :]
            decoded = tok.batch_decode(new, skip_special_tokens=True)
            for k, (i, _) in enumerate(chunk):
                out[i] = decoded[k * n : (k + 1) * n]
        return out


# -- direct speech translation ----------------------------------------------------------------
def _speech_family(config) -> str:
    """Family-specific input handling (see translate_audio):
    voxtral: the processor's Mistral tokenizer reads the audio itself, from a path (needs mistral-common);
    phi4:    the transformers-native Phi-4-multimodal needs its speech LoRA adapter (needs peft);
    desta:   DeSTA2 remote code has no processor; it takes messages with an "audio" role via model.chat();
    generic: processor chat template with an audio array part (Qwen2-Audio and other audio LMs)."""
    model_type = str(getattr(config, "model_type", "")).lower()
    auto_map = getattr(config, "auto_map", None) or {}
    if "desta" in model_type or any("desta" in str(v).lower() for v in auto_map.values()):
        return "desta"
    if model_type.startswith("voxtral"):
        return "voxtral"
    if model_type == "phi4_multimodal":
        return "phi4"
    return "generic"


def _peft_too_old() -> str | None:
    """The peft version this transformers' adapter methods require, when the installed peft is
    older (set_adapter refuses it, after the weights are read); None when it is recent enough."""
    from importlib.metadata import version

    # lazy import (transformers and its packaging): loaded only when a model runs
    from packaging.version import Version
    from transformers.integrations import peft as tf_peft

    wanted = getattr(tf_peft, "MIN_PEFT_VERSION", None)
    return wanted if wanted and Version(version("peft")) < Version(wanted) else None


class TransformersSpeechLLM(_Weights):
    """An audio LLM asked to translate a clip (batch size 1, the model's default decoding).

    Paper models: microsoft/Phi-4-multimodal-instruct (the transformers-native weights; the hub's
    original remote code "phi4mm" is not supported here; pip install torchvision peft),
    mistralai/Voxtral-Small-24B-2507 (mistral-common, installed by make setup), DeSTA-ntu/DeSTA2-8B-beta
    (trust_remote_code=True; its remote code targets transformers 4.x: tools/desta2_server.py).
    Prompt in the paper: "Translate the audio to Portuguese."
    """

    KIND = "st/transformers"

    def __init__(
        self,
        model: str,
        prompt: str,
        dtype: str = "auto",
        max_new_tokens: int = 256,
        trust_remote_code: bool = False,
        cache=CACHE,
    ):
        self.model = model
        self.prompt = prompt
        self.dtype = dtype
        self.max_new_tokens = int(max_new_tokens)
        self.trust_remote_code = bool(trust_remote_code)
        self.cache = cache
        self.name = f"transformers-speechllm:{model}"

    def _auto_class(self, tf, config):
        # lazy import (transformers): heavy model library; loaded only when a model runs
        from transformers.models.auto.modeling_auto import MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES

        auto_map = getattr(config, "auto_map", None) or {}
        if self.trust_remote_code and auto_map:
            for name in ("AutoModelForCausalLM", "AutoModel"):
                if name in auto_map:
                    return getattr(tf, name)
        if config.model_type in MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES:
            return tf.AutoModelForMultimodalLM
        return tf.AutoModelForCausalLM

    def _load(self):
        tf = _tf()
        _check_path(self.model)
        trc = {"trust_remote_code": self.trust_remote_code}
        config = _pretrained(self.model, tf.AutoConfig.from_pretrained, **trc)
        family = _speech_family(config)
        if family == "voxtral":
            # --no-deps: mistral-common caps numpy below the 2.4 the app runs on; its real
            # dependencies are in requirements.txt
            require("mistral_common", "--no-deps mistral-common==1.13.1 (make setup does)")
        if family == "phi4":
            self._phi4_packages()
        model = _pretrained(
            self.model, self._auto_class(tf, config).from_pretrained, **_weights(self.cache, self.dtype), **trc
        )
        if family == "phi4":
            self._phi4_speech_adapter(model)
        if family == "desta":
            if not hasattr(model, "chat"):
                raise BackendUnavailable(
                    f"{self.model} looks like DeSTA but its code has no chat(): "
                    f"use the DeSTA2 remote code with trust_remote_code=True"
                )
            processor = None
        else:
            processor = _pretrained(self.model, tf.AutoProcessor.from_pretrained, **trc)
            tok_template = getattr(getattr(processor, "tokenizer", None), "chat_template", None)
            if getattr(processor, "chat_template", None) is None and tok_template:
                # transformers 5 drops the saved chat_template of a processor whose __init__ does not
                # name it (Phi4MultimodalProcessor); its tokenizer read the same chat_template.jinja.
                processor.chat_template = tok_template
        return _Loaded(model=_ready(model, self.cache), processor=processor, family=family)

    def _has_speech_lora(self) -> bool:
        """A hub id or a folder with speech-lora/; a folder without it has the adapter merged."""
        local = Path(self.model).expanduser()
        return not local.is_dir() or (local / "speech-lora").is_dir()

    def _phi4_packages(self) -> None:
        """Checked before the weights are read (11 GB): transformers builds Phi-4's processor,
        image processor included, only with torchvision; its speech LoRA adapter needs peft."""
        needed = ["torchvision"] + (["peft"] if self._has_speech_lora() else [])
        missing = [m for m in needed if importlib.util.find_spec(m) is None]
        if missing:
            raise BackendUnavailable(
                f"Phi-4-multimodal ({self.model}) needs {' and '.join(missing)}: "
                f"pip install {' '.join(missing)} (torchvision: the build matching torch)"
            )
        wanted = _peft_too_old() if "peft" in needed else None
        if wanted:
            raise BackendUnavailable(
                f"Phi-4-multimodal ({self.model}): this transformers sets its adapter only "
                f"with peft>={wanted}: pip install -U 'peft>={wanted}' (or a transformers "
                f"release that accepts the installed peft)"
            )

    def _phi4_speech_adapter(self, model) -> None:
        """Phi-4-multimodal routes audio through a LoRA adapter shipped in speech-lora/ (as the
        transformers docs load it); a folder without it is taken to have the adapter merged."""
        if not self._has_speech_lora():
            return
        require("peft", "peft")
        adapter_kwargs: dict[str, Any] = {"subfolder": "speech-lora"}
        if not current_settings().allow_downloads:
            # Among the adapter's download arguments: transformers 5's own local_files_only
            # argument of load_adapter fails (LoadStateDictConfig has no such field).
            adapter_kwargs["local_files_only"] = True
        _load_or_explain(self.model, model.load_adapter, adapter_name="speech", adapter_kwargs=adapter_kwargs)
        model.set_adapter("speech")

    def translate_audio(self, wav16k_path: str) -> str:
        # lazy import (torch): heavy model library; loaded only when a model runs
        import torch

        b = self._bundle()
        model, proc = b.model, b.processor
        if b.family == "desta":
            messages = [
                {"role": "system", "content": "You are a helpful voice assistant."},
                {"role": "audio", "content": str(wav16k_path)},
                {"role": "user", "content": self.prompt},
            ]
            with self.cache.exclusive(), torch.inference_mode():
                ids = model.chat(messages, max_new_tokens=self.max_new_tokens)  # returns new tokens only
            return model.tokenizer.batch_decode(ids, skip_special_tokens=True)[0].strip()

        audio_part: dict[str, Any]
        if b.family == "voxtral":
            audio_part = {"type": "audio", "path": str(wav16k_path)}
        else:
            # An array (no audio decoder backend needed), at the rate the processor expects.
            # Phi-4: audio_processor
            fe = getattr(proc, "feature_extractor", None) or getattr(proc, "audio_processor", None)
            rate = getattr(fe, "sampling_rate", None) or SR
            audio_part = {"type": "audio", "audio": _read_wav16k(wav16k_path, rate)}
        conversation = [{"role": "user", "content": [audio_part, {"type": "text", "text": self.prompt}]}]
        if b.family == "voxtral":
            # VoxtralProcessor always tokenizes and returns tensors; Mistral's template ends with [/INST].
            inputs = proc.apply_chat_template(conversation)
        else:
            inputs = proc.apply_chat_template(
                conversation, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
            )
        inputs = inputs.to(model.device, dtype=model.dtype)  # casts only the float tensors
        with self.cache.exclusive(), torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=self.max_new_tokens)
        new = _new_tokens(out, inputs["input_ids"])
        return proc.batch_decode(new, skip_special_tokens=True)[0].strip()
