"""MetricX-24 (Juraska et al., WMT 2024; google-research/metricx), through transformers.

    metrics.get("metricx", model="/models/metricx-24-hybrid-large-v2p6", tokenizer="/models/mt5-large")

The hybrid MetricX-24 models (google/metricx-24-hybrid-{large,xl,xxl}-v2p6) are mT5 encoder-decoders
fine-tuned as regressors; their tokenizer is mT5's (google/mt5-large / -xl / -xxl, matching the model
size), which the model repositories do not ship. Both are read from local paths (or the Hugging
Face cache) with local_files_only: options model= / tokenizer=, else TRADLAB_METRICX_MODEL /
TRADLAB_METRICX_TOKENIZER (the tokenizer defaults to the model folder when that holds one).
TRADLAB_METRICX_MAX_INPUT_LENGTH overrides the 1536-token input limit the models were trained with.

What it computes, as metricx24/predict.py and MetricX's MT5ForRegression do:
- the input text is "source: {src} candidate: {hyp} reference: {ref}", and without the
  " reference: ..." part in QE mode (metricx_input() below);
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
  with several references uses the first non-blank one. references=None: the whole call is QE;
- blank hypothesis -> 25.0, the worst score (the floor of quality, as E5Cosine's 0.0 is),
  without running the model.

The model is loaded once through the model cache, in bfloat16 on CUDA (float32 on CPU; dtype=
changes it), and runs in batches (length-sorted, order restored) under torch.inference_mode() and
cache.exclusive(). Without a model configured, or with paths that do not exist, get("metricx")
raises BackendUnavailable naming the variables, so metrics.available() leaves it out.
"""
from __future__ import annotations

import os
from pathlib import Path

from services import metrics
from services.backends import BackendUnavailable
from services.backends import hf
from services.model_cache import CACHE

ENV_MODEL = "TRADLAB_METRICX_MODEL"
ENV_TOKENIZER = "TRADLAB_METRICX_TOKENIZER"
ENV_MAX_INPUT_LENGTH = "TRADLAB_METRICX_MAX_INPUT_LENGTH"
SCORE_TOKEN_ID = 250089          # "<extra_id_10>" in the mT5 vocabulary
MAX_INPUT_LENGTH = 1536
MIN_SCORE, MAX_SCORE = 0.0, 25.0
WORST = MAX_SCORE                # the score of a blank hypothesis
BATCH = 8
DOWNLOAD = ("on a networked host: hf download google/metricx-24-hybrid-large-v2p6 --local-dir MODEL_DIR (or the "
            "-xl / -xxl model) and hf download google/mt5-large --local-dir TOKENIZER_DIR (the mT5 of the same "
            "size: mt5-xl, mt5-xxl), copy both here")
_TOKENIZER_FILES = ("tokenizer.json", "spiece.model", "tokenizer_config.json")


def metricx_input(source: str, hypothesis: str, reference: str | None = None) -> str:
    """MetricX-24's input text; reference=None gives the QE input."""
    text = "source: " + str(source) + " candidate: " + str(hypothesis)
    if reference is not None:
        text += " reference: " + str(reference)
    return text


def encode(tokenizer, texts: list[str], max_input_length: int = MAX_INPUT_LENGTH) -> list[list[int]]:
    """Token ids per text as MetricX feeds them: truncated to max_input_length, final </s> removed."""
    ids = tokenizer(list(texts), max_length=int(max_input_length), truncation=True, padding=False).input_ids
    eos = tokenizer.eos_token_id
    return [list(row[:-1]) if row and row[-1] == eos else list(row) for row in ids]


class MetricX(metrics.Metric):
    name = "metricx"
    kind = metrics.REFERENCE         # hybrid: reference-based, QE when references is None
    higher_is_better = False
    worst = 25.0                      # the clip bound: the audit reads 1 - score/25 as quality
    requires = ("transformers", "torch", "sentencepiece")
    scale = ("0-25 MQM-like error score, LOWER IS BETTER (0 = perfect, 25 = worst; clipped); "
             "blank hypothesis 25")

    def __init__(self, model: str, tokenizer: str | None = None, max_input_length: int = MAX_INPUT_LENGTH,
                 score_token_id: int = SCORE_TOKEN_ID, batch_size: int = BATCH, dtype: str = "bfloat16",
                 cache=CACHE):
        model = (model or "").strip()
        if not model:
            raise BackendUnavailable(_not_configured())
        _check(model, ENV_MODEL)
        tokenizer = (tokenizer or "").strip()
        if not tokenizer:
            if Path(model).expanduser().is_dir() and any((Path(model).expanduser() / f).is_file()
                                                         for f in _TOKENIZER_FILES):
                tokenizer = model
            else:
                raise BackendUnavailable(
                    f"metric 'metricx': {model} holds no tokenizer (MetricX models ship without one): set "
                    f"{ENV_TOKENIZER} to the mT5 tokenizer of the same size (google/mt5-large for "
                    f"metricx-24-hybrid-large, mt5-xl, mt5-xxl); {DOWNLOAD}")
        _check(tokenizer, ENV_TOKENIZER)
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
        self.model = (f"{model} | tokenizer {tokenizer} | MetricX-24 input, max {self.max_input_length} tokens, "
                      f"score id {self.score_token_id}, {torch_dtype}")

    # -- the model ------------------------------------------------------------------------
    def _load(self) -> hf._Loaded:
        tf = hf._tf()
        tok = hf._pretrained(self.tokenizer_path, tf.AutoTokenizer.from_pretrained)
        model = hf._pretrained(self.model_path, tf.AutoModelForSeq2SeqLM.from_pretrained,
                               **hf._weights(self.cache, self.dtype))
        model = hf._ready(model, self.cache)
        vocab = model.get_output_embeddings().weight.shape[0]
        if not 0 <= self.score_token_id < vocab:
            raise BackendUnavailable(f"metric 'metricx': score_token_id {self.score_token_id} is outside the "
                                     f"vocabulary of {self.model_path} ({vocab} entries): is it a MetricX model?")
        return hf._Loaded(model=model, tokenizer=tok)

    def loaded(self) -> hf._Loaded:
        key = f"metric/metricx/{self.model_path}|{self.tokenizer_path}@{self.dtype}"
        return self.cache.get(key, self._load, device=self.cache.device)

    def raw_scores(self, texts: list[str]) -> list[float]:
        """The unclipped regression outputs for MetricX input texts (metricx_input())."""
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
            rows = order[k:k + self.batch_size]
            width = max(1, max(len(ids[i]) for i in rows))
            input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, i in enumerate(rows):
                input_ids[r, :len(ids[i])] = torch.tensor(ids[i], dtype=torch.long)
                mask[r, :len(ids[i])] = 1
            input_ids, mask = input_ids.to(model.device), mask.to(model.device)
            with self.cache.exclusive(), torch.inference_mode():
                enc = model.get_encoder()(input_ids=input_ids, attention_mask=mask).last_hidden_state
                dec_in = torch.full((len(rows), 1), start, dtype=torch.long, device=model.device)
                hidden = model.get_decoder()(input_ids=dec_in, encoder_hidden_states=enc,
                                             encoder_attention_mask=mask, use_cache=False).last_hidden_state[:, 0].float()
                if tied:
                    hidden = hidden * (cfg.d_model ** -0.5)
                logit = hidden @ weight[self.score_token_id].float().to(hidden.device)
            for r, i in enumerate(rows):
                out[i] = float(logit[r])
        return out

    # -- scoring --------------------------------------------------------------------------
    def _score(self, sources, hypotheses, references, contexts):
        out: list[float | None] = [None] * len(sources)
        todo: list[tuple[int, str]] = []
        for i, (src, hyp) in enumerate(zip(sources, hypotheses)):
            if metrics._blank(src):
                continue
            ref = None
            if references is not None:
                refs = metrics._refs(references[i])
                if refs is None:
                    continue
                ref = next(str(r) for r in refs if not metrics._blank(r))
            if metrics._blank(hyp):
                out[i] = WORST
                continue
            todo.append((i, metricx_input(src, hyp, ref)))
        if todo:
            raw = self.raw_scores([t for _, t in todo])
            for (i, _), value in zip(todo, raw):
                out[i] = min(MAX_SCORE, max(MIN_SCORE, value))
        return out

    def info(self) -> dict:
        return {**super().info(), "tokenizer": self.tokenizer_path, "max_input_length": self.max_input_length}


def _check(path: str, env: str) -> None:
    try:
        hf._check_path(path)
    except BackendUnavailable as e:
        raise BackendUnavailable(f"metric 'metricx' ({env}): {e}") from e


def _not_configured() -> str:
    return (f"metric 'metricx' needs a local MetricX-24 model: set {ENV_MODEL} to the model folder and "
            f"{ENV_TOKENIZER} to its mT5 tokenizer folder; {DOWNLOAD}")


def factory(**options) -> MetricX:
    """metrics.register("metricx", factory): options override the TRADLAB_METRICX_* variables."""
    model = options.pop("model", None) or os.environ.get(ENV_MODEL, "").strip()
    if not model:
        raise BackendUnavailable(_not_configured())
    tokenizer = options.pop("tokenizer", None) or os.environ.get(ENV_TOKENIZER, "").strip() or None
    if "max_input_length" not in options and os.environ.get(ENV_MAX_INPUT_LENGTH, "").strip():
        options["max_input_length"] = int(os.environ[ENV_MAX_INPUT_LENGTH])
    return MetricX(model, tokenizer, **options)
