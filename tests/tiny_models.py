"""Tiny transformers models built from nothing, for the backend tests (no hub, no download).

Each builder writes a folder that `from_pretrained` / `AutoProcessor.from_pretrained` load
back, and trains the model just long enough (a few seconds on 2 CPU cores) to overfit a
handful of examples, so the tests can assert real outputs instead of "it ran":

- build_whisper:    hears two espeak-ng clips and writes their transcripts, both with the
                    multilingual prompt (<|en|><|transcribe|>) and the English-only one.
- build_marian:     translates a few English sentences to Portuguese.
- build_causal_lm:  answers the Tower-Plus prompt, inside its chat template, with the Portuguese.
- build_audio_llm:  a Qwen2-Audio (Whisper-style encoder + Qwen2 LM) that answers
                    "Translate the audio to Portuguese." with the translation of the clip it hears.
- build_tower_gemma2: Tower+'s architecture (Gemma 2, Gemma tokenizer and chat template) answering
                    the paper's Tower+ prompt (build_whisper(num_mel_bins=128): large-v3's front end).
- build_voxtral:    Voxtral's architecture (VoxtralForConditionalGeneration, a Tekken tokenizer
                    file, VoxtralProcessor) answering SPEECH_PROMPT with each clip's Portuguese.
- build_phi4:       Phi-4-multimodal's own architecture, processor and speech LoRA adapter
                    (needs torchvision and peft: .venv-phi4, tests/test_paper_phi4.py).
- build_tiny_desta: a DeSTA-like model (remote code in tiny_desta_code.py) answering the DeSTA2
                    preset's prompt about each clip.

Facts these rely on (transformers 5.x) are in /work/shared/design/MODELS.md.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import numpy as np

TOWER_PROMPT = (
    "Translate the following English source text to Portuguese (Portugal):\nEnglish: {text}\nPortuguese (Portugal): "
)
SPEECH_PROMPT = "Translate the audio to Portuguese."

# English clip text -> (transcript the ASR must write, Portuguese the speech LLM must write)
CLIPS = {
    "hello": ("Hello world.", "Olá mundo."),
    "morning": ("Good morning everyone.", "Bom dia a todos."),
}
# English -> Portuguese pairs for the text MT models
PAIRS = [
    ("Hello world.", "Olá mundo."),
    ("Good morning everyone.", "Bom dia a todos."),
    ("Thank you very much.", "Muito obrigado."),
]

SR = 16000
CHUNK_S = 5  # feature extractors pad to 5 s instead of 30 s: 6x less encoder work


def seed_all(n: int = 0) -> None:
    import torch

    random.seed(n)
    np.random.seed(n)
    torch.manual_seed(n)


def speak(text: str, path: Path, voice: str = "en-us") -> Path:
    """A 16 kHz mono PCM WAV of `text` made by espeak-ng (it writes 22.05 kHz)."""
    import soundfile as sf
    from scipy.signal import resample_poly

    raw = path.with_suffix(".22k.wav")
    subprocess.run(
        ["espeak-ng", "-v", voice, "-w", str(raw), text],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    x, sr = sf.read(str(raw), dtype="float32")
    assert sr == 22050, sr
    y = resample_poly(x, 320, 441).astype("float32")  # 22050 * 320/441 = 16000
    sf.write(str(path), y, SR, subtype="PCM_16")
    raw.unlink()
    return path


def make_clips(folder: Path, lead_s: float = 0.0) -> dict[str, Path]:
    """The CLIPS read by espeak-ng; lead_s of silence first makes them recordings the intake
    takes (it refuses one that starts mid-speech)."""
    import soundfile as sf

    folder.mkdir(parents=True, exist_ok=True)
    clips = {key: speak(CLIPS[key][0].rstrip("."), folder / f"{key}.wav") for key in CLIPS}
    for wav in clips.values() if lead_s else ():
        x, rate = sf.read(str(wav), dtype="float32")
        sf.write(str(wav), np.concatenate([np.zeros(int(lead_s * rate), np.float32), x]), rate, subtype="PCM_16")
    return clips


def _byte_bpe(texts: list[str], vocab_size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE (GPT-2 style) trained on `texts`, without special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def _train(model, batches, steps: int, lr: float, loss_fn=None) -> float:
    """Plain AdamW on a fixed list of batches (dicts of model kwargs with labels)."""
    import torch

    threads = torch.get_num_threads()
    # One thread: these models are so small that a second thread only adds sync overhead
    # (measured 6x slower with 2 threads on a busy 2-core machine).
    torch.set_num_threads(1)
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    loss = None
    for step in range(steps):
        batch = batches[step % len(batches)]
        loss = loss_fn(batch) if loss_fn else model(**batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    torch.set_num_threads(threads)
    return float(loss.detach())


def _load_wav(path: Path) -> np.ndarray:
    import soundfile as sf

    x, sr = sf.read(str(path), dtype="float32")
    assert sr == SR
    return x


# -- Whisper --------------------------------------------------------------------------------
WHISPER_SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|en|>",
    "<|transcribe|>",
    "<|translate|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",
]


def build_whisper(
    out: Path, clips: dict[str, Path], steps: int = 60, num_mel_bins: int = 80, chunk_length: int = CHUNK_S
) -> dict[str, Path]:
    """Writes out/multilingual (lang_to_id, task_to_id: language="en" is passed) and
    out/english_only (no lang_to_id, as whisper tiny.en: language must not be passed).
    Both share the weights, trained on both decoder prompts. num_mel_bins=128 with
    chunk_length=30 is large-v3's front end (v1/v2 and the small models read 80 bins)."""
    import torch
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )

    seed_all(0)
    texts = [" " + CLIPS[k][0] for k in clips]
    vocab, merges = _byte_bpe(texts * 4, vocab_size=300)
    # The special tokens go AFTER the BPE vocabulary, else generate reads text ids as timestamps.
    tok = WhisperTokenizer(
        vocab=vocab,
        merges=merges,
        unk_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    tok.add_special_tokens({"additional_special_tokens": WHISPER_SPECIALS[1:]})
    ids = {t: tok.convert_tokens_to_ids(t) for t in WHISPER_SPECIALS}
    assert min(ids.values()) >= len(vocab), ids
    fe = WhisperFeatureExtractor(feature_size=num_mel_bins, chunk_length=chunk_length)
    proc = WhisperProcessor(feature_extractor=fe, tokenizer=tok)

    eot, sot = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    cfg = WhisperConfig(
        vocab_size=len(tok),
        num_mel_bins=num_mel_bins,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=fe.nb_max_frames // 2,
        max_target_positions=64,
        decoder_start_token_id=sot,
        pad_token_id=eot,
        bos_token_id=eot,
        eos_token_id=eot,
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    model = WhisperForConditionalGeneration(cfg)

    # labels = the decoder prompt after <|startoftranscript|> + text + <|endoftext|>;
    # the model shifts them right behind decoder_start_token_id itself.
    prompts = {
        "multi": [ids["<|en|>"], ids["<|transcribe|>"], ids["<|notimestamps|>"]],
        "en": [ids["<|notimestamps|>"]],
    }
    feats, labels, rows = [], [], []
    for i, (key, wav) in enumerate(clips.items()):
        feats.append(fe(_load_wav(wav), sampling_rate=SR, return_tensors="pt").input_features[0])
        text_ids = tok(" " + CLIPS[key][0], add_special_tokens=False).input_ids
        for prompt in prompts.values():
            rows.append(i)
            labels.append(prompt + text_ids + [eot])
    width = max(map(len, labels))
    lab = torch.tensor([x + [-100] * (width - len(x)) for x in labels])
    batch = {"input_features": torch.stack(feats), "rows": torch.tensor(rows), "labels": lab}

    def loss_fn(b):  # encode each clip once, decode it under both prompts
        enc = model.model.encoder(b["input_features"]).last_hidden_state[b["rows"]]
        return model(encoder_outputs=(enc,), labels=b["labels"]).loss

    _train(model, [batch], steps=steps, lr=1e-2, loss_fn=loss_fn)

    gen = GenerationConfig(
        decoder_start_token_id=sot,
        eos_token_id=eot,
        pad_token_id=eot,
        bos_token_id=eot,
        no_timestamps_token_id=ids["<|notimestamps|>"],
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    paths = {}
    for variant in ("multilingual", "english_only"):
        d = out / variant
        model.generation_config = GenerationConfig.from_dict(gen.to_dict())
        if variant == "multilingual":
            model.generation_config.lang_to_id = {"<|en|>": ids["<|en|>"]}
            model.generation_config.task_to_id = {
                "transcribe": ids["<|transcribe|>"],
                "translate": ids["<|translate|>"],
            }
            model.generation_config.is_multilingual = True
        else:
            model.generation_config.is_multilingual = False
        model.save_pretrained(d)
        proc.save_pretrained(d)
        paths[variant] = d
    return paths


# -- Marian ---------------------------------------------------------------------------------
def build_marian(out: Path, steps: int = 300) -> Path:
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    seed_all(0)
    out.mkdir(parents=True, exist_ok=True)
    src = [s for s, _ in PAIRS]
    tgt = [t for _, t in PAIRS]
    for name, lines in (("source", src), ("target", tgt)):
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines * 10),
            model_prefix=str(out / name),
            vocab_size=40,
            model_type="unigram",
            character_coverage=1.0,
            hard_vocab_limit=False,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,
            minloglevel=2,
        )
        (out / f"{name}.model").rename(out / f"{name}.spm")
        (out / f"{name}.vocab").unlink()
    vocab = {"</s>": 0, "<unk>": 1, "<pad>": 2}
    for name in ("source", "target"):
        sp = spm.SentencePieceProcessor(model_file=str(out / f"{name}.spm"))
        for i in range(sp.get_piece_size()):
            vocab.setdefault(sp.id_to_piece(i), len(vocab))
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    tok = MarianTokenizer(
        source_spm=str(out / "source.spm"), target_spm=str(out / "target.spm"), vocab=str(out / "vocab.json")
    )
    cfg = MarianConfig(
        vocab_size=len(vocab),
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        pad_token_id=2,
        eos_token_id=0,
        decoder_start_token_id=2,
        forced_eos_token_id=0,
        num_beams=1,
        max_length=32,
    )
    model = MarianMTModel(cfg)
    # Sinusoidal position tables are not saved: they must stay as initialised, so freeze them.
    for name, p in model.named_parameters():
        if "embed_positions" in name:
            p.requires_grad_(False)
    batch = tok(src, text_target=tgt, padding=True, return_tensors="pt")
    batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tok.pad_token_id, -100)
    _train(model, [dict(batch)], steps=steps, lr=1e-2)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


# -- causal LM with a chat template (Tower-Plus stand-in) -------------------------------------
# A Gemma-2 style template like Tower-Plus's own (it is built on Gemma 2).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>"
    "{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n{{ m['content'] }}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def build_chat_lm(
    out: Path, pairs: list[tuple[str, str]], steps: int, max_positions: int = 128, vocab_size: int = 400
) -> Path:
    """A tiny Llama with a Gemma-style chat template, trained to answer each user message of
    `pairs` with its answer (left-padded batches, as the backends generate); a larger vocab_size
    shortens long prompts (fewer tokens, faster training)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    seed_all(0)
    corpus = [m + a for m, a in pairs] + ["user\nmodel\n"]
    vocab, merges = _byte_bpe(corpus * 4, vocab_size=vocab_size)
    specials = ["<bos>", "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>"]
    for s in specials:
        vocab[s] = len(vocab)
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        additional_special_tokens=specials[3:],
    )
    tok.chat_template = CHAT_TEMPLATE
    eot = tok.convert_tokens_to_ids("<end_of_turn>")

    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_positions,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(cfg)
    rows, labels = [], []
    for message, answer in pairs:
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        p = tok(prompt, add_special_tokens=False).input_ids
        a = tok(answer, add_special_tokens=False).input_ids + [eot]
        rows.append(p + a)
        labels.append([-100] * len(p) + a)  # learn the answer only
    width = max(map(len, rows))
    pad = tok.pad_token_id
    # left padding, as the backend batches
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    lab = torch.tensor([[-100] * (width - len(r)) + x for r, x in zip(rows, labels)])
    att = (torch.arange(width)[None, :] >= torch.tensor([width - len(r) for r in rows])[:, None]).long()
    _train(model, [{"input_ids": ids, "attention_mask": att, "labels": lab}], steps=steps, lr=5e-3)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, pad_token_id=pad, eos_token_id=[tok.eos_token_id, eot]
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def build_causal_lm(out: Path, steps: int = 100) -> Path:
    """The Tower+ stand-in: the paper's MT prompt of each pair -> its Portuguese."""
    return build_chat_lm(out, [(TOWER_PROMPT.replace("{text}", s), t) for s, t in PAIRS], steps)


# -- Tower+ (Gemma 2 architecture) --------------------------------------------------------------
# Gemma 2's own chat template, as Tower-Plus-9B ships it (no system turn; the content trimmed).
GEMMA2_CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
    "{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"
)


def _gemma_bpe(texts: list[str], vocab_size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A SentencePiece-style BPE as Gemma's tokenizer.json holds it ("\u2581" for a space; the
    specials first, at Gemma's ids: <pad>=0, <eos>=1, <bos>=2, <unk>=3, <mask>=4)."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, show_progress=False, special_tokens=["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    )
    tok.train_from_iterator(texts, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def build_tower_gemma2(out: Path, steps: int = 120) -> Path:
    """Tower+'s architecture (Gemma2ForCausalLM) with a Gemma tokenizer and Gemma 2's chat
    template, trained to answer the paper's Tower+ prompt of each pair with its Portuguese."""
    import torch
    from transformers import Gemma2Config, Gemma2ForCausalLM, GemmaTokenizer, GenerationConfig

    seed_all(0)
    pairs = [(TOWER_PROMPT.replace("{text}", s), t) for s, t in PAIRS]
    vocab, merges = _gemma_bpe([m + a for m, a in pairs] * 4 + ["user\nmodel\n"], vocab_size=400)
    tok = GemmaTokenizer(vocab=vocab, merges=merges)
    tok.add_special_tokens({"additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"]})
    tok.chat_template = GEMMA2_CHAT_TEMPLATE
    eot = tok.convert_tokens_to_ids("<end_of_turn>")
    cfg = Gemma2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=16,
        max_position_embeddings=128,
        sliding_window=64,
        bos_token_id=tok.bos_token_id,
        eos_token_id=[tok.eos_token_id, eot],
        pad_token_id=tok.pad_token_id,
    )
    model = Gemma2ForCausalLM(cfg)
    rows, labels = [], []
    for message, answer in pairs:
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        p = tok(prompt, add_special_tokens=False).input_ids
        a = tok(answer, add_special_tokens=False).input_ids + [eot]
        rows.append(p + a)
        labels.append([-100] * len(p) + a)
    width = max(map(len, rows))
    pad = tok.pad_token_id
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])  # left padding, as the backend batches
    lab = torch.tensor([[-100] * (width - len(r)) + x for r, x in zip(rows, labels)])
    att = (torch.arange(width)[None, :] >= torch.tensor([width - len(r) for r in rows])[:, None]).long()
    _train(model, [{"input_ids": ids, "attention_mask": att, "labels": lab}], steps=steps, lr=5e-3)
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, pad_token_id=pad, eos_token_id=[tok.eos_token_id, eot]
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


# -- audio LLM (Qwen2-Audio architecture; the generic chat-template path) ----------------------
def build_audio_llm(out: Path, clips: dict[str, Path], steps: int = 150) -> Path:
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2AudioConfig,
        Qwen2AudioEncoderConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        Qwen2Config,
        Qwen2Tokenizer,
        WhisperFeatureExtractor,
    )

    seed_all(0)
    corpus = [SPEECH_PROMPT, "system\nYou are a helpful assistant.", "user\nAudio 1: ", "assistant\n"]
    corpus += [CLIPS[k][1] for k in clips]
    vocab, merges = _byte_bpe(corpus * 4, vocab_size=300)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]
    for s in specials:
        vocab[s] = len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges)
    tok.add_special_tokens({"additional_special_tokens": specials[1:]})
    fe = WhisperFeatureExtractor(feature_size=80, chunk_length=CHUNK_S)
    proc = Qwen2AudioProcessor(feature_extractor=fe, tokenizer=tok)  # default (Qwen2-Audio) chat template
    im_end = tok.convert_tokens_to_ids("<|im_end|>")

    cfg = Qwen2AudioConfig(
        audio_config=Qwen2AudioEncoderConfig(
            num_mel_bins=80,
            encoder_layers=1,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            d_model=32,
            max_source_positions=fe.nb_max_frames // 2,
        ),
        text_config=Qwen2Config(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=512,
            eos_token_id=im_end,
            pad_token_id=tok.pad_token_id,
            tie_word_embeddings=True,
        ),
        audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"),
    )
    model = Qwen2AudioForConditionalGeneration(cfg)

    batches = []
    for key, wav in clips.items():
        conv = [
            {
                "role": "user",
                "content": [{"type": "audio", "audio": _load_wav(wav)}, {"type": "text", "text": SPEECH_PROMPT}],
            }
        ]
        enc = proc.apply_chat_template(
            conv, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
        )
        ans = torch.tensor([tok(CLIPS[key][1], add_special_tokens=False).input_ids + [im_end]])
        n = enc["input_ids"].shape[1]
        batches.append(
            {
                "input_ids": torch.cat([enc["input_ids"], ans], 1),
                "attention_mask": torch.ones(1, n + ans.shape[1], dtype=torch.long),
                "input_features": enc["input_features"],
                "feature_attention_mask": enc["feature_attention_mask"],
                "labels": torch.cat([torch.full((1, n), -100), ans], 1),
            }
        )
    _train(model, batches, steps=steps, lr=5e-3)
    model.generation_config = GenerationConfig(eos_token_id=im_end, pad_token_id=tok.pad_token_id)
    model.save_pretrained(out)
    proc.save_pretrained(out)
    return out


# -- Phi-4-multimodal (its own architecture, processor and speech LoRA) ---------------------------
# Phi-4's chat format (<|user|>...<|end|><|assistant|>), an audio part written as the audio token
# that the processor expands to one token per audio embedding.
PHI4_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>' }}{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "{{ '<|image|>' }}{% elif part['type'] == 'audio' %}{{ '<|audio|>' }}{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{{ '<|end|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)
# The real speech-lora's targets: the language model's projections only (the audio encoder has
# modules of the same names, which a plain list of names would also wrap).
PHI4_LORA_TARGETS = r"model.layers.\d+.((self_attn.(qkv|o)_proj)|(mlp.(gate_up|down)_proj))"


def build_phi4(out: Path, clips: dict[str, Path], steps: int = 300) -> Path:
    """A Phi4MultimodalForCausalLM folder as the transformers-native checkpoint lays it out: the
    base model, Phi4MultimodalProcessor (feature extractor, image processor, a GPT-2 style
    byte-level BPE tokenizer with Phi-4's special tokens) and speech-lora/ saved by peft.
    Trained so that with the speech adapter it answers SPEECH_PROMPT about each clip with the
    clip's Portuguese, and without it with the clip's English: the adapter decides the output."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import (
        GenerationConfig,
        GPT2Tokenizer,
        Phi4MultimodalAudioConfig,
        Phi4MultimodalConfig,
        Phi4MultimodalFeatureExtractor,
        Phi4MultimodalForCausalLM,
        Phi4MultimodalImageProcessor,
        Phi4MultimodalProcessor,
        Phi4MultimodalVisionConfig,
    )

    seed_all(0)
    corpus = [SPEECH_PROMPT] + [t for k in clips for t in CLIPS[k]]
    vocab, merges = _byte_bpe(corpus * 4, vocab_size=300)
    specials = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|image|>", "<|audio|>"]
    for sp in specials:
        vocab[sp] = len(vocab)
    tok = GPT2Tokenizer(
        vocab=vocab,
        merges=merges,
        pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image|>", "audio_token": "<|audio|>"},
    )
    tok.add_special_tokens({"additional_special_tokens": specials[1:5]}, replace_extra_special_tokens=False)
    proc = Phi4MultimodalProcessor(
        image_processor=Phi4MultimodalImageProcessor(),
        audio_processor=Phi4MultimodalFeatureExtractor(),
        tokenizer=tok,
        chat_template=PHI4_CHAT_TEMPLATE,
    )
    eot, eos = tok.convert_tokens_to_ids("<|end|>"), tok.convert_tokens_to_ids("<|endoftext|>")

    cfg = Phi4MultimodalConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        original_max_position_embeddings=512,
        bos_token_id=eos,
        eos_token_id=[eos, eot],
        pad_token_id=eos,
        audio_config=Phi4MultimodalAudioConfig(
            num_blocks=1,
            hidden_size=32,
            num_attention_heads=2,
            intermediate_size=48,
            ext_pw_out_channel=32,
            depthwise_separable_out_channel=32,
            nemo_conv_channels=32,
            audio_token_id=proc.audio_token_id,
        ),
        vision_config=Phi4MultimodalVisionConfig(
            num_hidden_layers=1,
            hidden_size=16,
            intermediate_size=32,
            num_attention_heads=2,
            image_token_id=proc.image_token_id,
        ),
    )
    model = get_peft_model(
        Phi4MultimodalForCausalLM(cfg),
        LoraConfig(r=8, lora_alpha=16, target_modules=PHI4_LORA_TARGETS, task_type="CAUSAL_LM"),
    )
    for p in model.parameters():  # the base learns too: it is random, not pretrained
        p.requires_grad = True

    def example(enc, answer: str) -> dict:
        ans = torch.tensor([tok(answer, add_special_tokens=False).input_ids + [eot]])
        n = enc["input_ids"].shape[1]
        return {
            **enc,
            "input_ids": torch.cat([enc["input_ids"], ans], 1),
            "attention_mask": torch.ones(1, n + ans.shape[1], dtype=torch.long),
            "labels": torch.cat([torch.full((1, n), -100), ans], 1),
        }

    batches = []
    for key, wav in clips.items():
        conv = [
            {
                "role": "user",
                "content": [{"type": "audio", "audio": _load_wav(wav)}, {"type": "text", "text": SPEECH_PROMPT}],
            }
        ]
        enc = dict(
            proc.apply_chat_template(
                conv, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
            )
        )
        batches.append((example(enc, CLIPS[key][1]), example(enc, CLIPS[key][0])))

    def loss(pair):
        with_adapter, without = pair
        on = model(**with_adapter).loss
        with model.disable_adapter():
            off = model(**without).loss
        return on + off

    _train(model, batches, steps=steps, lr=5e-3, loss_fn=loss)
    model.save_pretrained(out / "speech-lora")
    base = model.unload()  # the base weights without the LoRA layers
    base.generation_config = GenerationConfig(eos_token_id=[eos, eot], pad_token_id=eos)
    base.save_pretrained(out)
    proc.save_pretrained(out)
    return out


# -- a DeSTA-like model (remote code: tests/tiny_desta_code.py) -------------------------------
DESTA_PROMPT = (
    "Translate this audio to Portuguese. Produce only the Portuguese translation, without any "
    "additional explanations or commentary."
)
DESTA_SYSTEM = "You are a helpful voice assistant."
# Llama 3's chat template (DeSTA2's LM is Llama-3-8B-Instruct)
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)


def readable_by_transformers4(folder: Path) -> None:
    """Adds to a tokenizer (and feature extractor) folder saved by transformers 5 the files and
    keys transformers 4.x reads, as hub checkpoints written by 4.x have them; transformers 5 still
    loads it. DeSTA2's server runs under transformers 4.51 (requirements-desta2.txt), where
    "TokenizersBackend" is no class, extra_special_tokens must be a dict, added tokens come from
    added_tokens_decoder, WhisperProcessor builds the slow WhisperTokenizer (vocab.json,
    merges.txt) and the feature extractor is read from preprocessor_config.json alone."""
    tc_path = folder / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text())
    fast = json.loads((folder / "tokenizer.json").read_text())
    extra = tc.pop("extra_special_tokens", None)
    if isinstance(extra, list):
        tc["additional_special_tokens"] = extra
    elif extra:
        tc["extra_special_tokens"] = extra
    tc.pop("backend", None)
    if tc.get("tokenizer_class") == "TokenizersBackend":
        tc["tokenizer_class"] = "PreTrainedTokenizerFast"
    tc["added_tokens_decoder"] = {
        str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
        for t in fast["added_tokens"]
    }
    tc_path.write_text(json.dumps(tc, indent=2, ensure_ascii=False))
    if tc.get("tokenizer_class") == "WhisperTokenizer" and fast["model"]["type"] == "BPE":
        bpe = fast["model"]
        (folder / "vocab.json").write_text(json.dumps(bpe["vocab"], ensure_ascii=False))
        merges = [m if isinstance(m, str) else " ".join(m) for m in bpe["merges"]]
        (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    pc_path = folder / "processor_config.json"
    processor = json.loads(pc_path.read_text()) if pc_path.exists() else {}
    if "feature_extractor" in processor:
        # 4.x passes processor_config.json's keys to the processor's __init__, which gets
        # feature_extractor twice: hub checkpoints have only preprocessor_config.json
        fe = dict(processor.pop("feature_extractor"), processor_class=processor.get("processor_class"))
        (folder / "preprocessor_config.json").write_text(json.dumps(fe, indent=2))
        pc_path.unlink()


def desta_messages(wav: Path, prompt: str = DESTA_PROMPT) -> list[dict]:
    return [
        {"role": "system", "content": DESTA_SYSTEM},
        {"role": "audio", "content": str(wav)},
        {"role": "user", "content": prompt},
    ]


DESTA_MARGIN = 2.0  # logits: far above the float noise of another thread count or kernel


def build_tiny_desta(out: Path, clips: dict[str, Path], whisper: Path, steps: int = 80) -> Path:
    """A folder loaded by AutoModel.from_pretrained(out, trust_remote_code=True): config.json with
    an auto_map to modeling_tiny_desta.py, qformer_connector.pth, and its Whisper (out/whisper, a
    copy of the build_whisper folder `whisper`) and Llama (out/llama) named by path. Trained to
    answer the DeSTA2 preset's prompt about each clip with the clip's Portuguese. Loads under
    transformers 5 and 4.x (readable_by_transformers4), as DeSTA2's server runs on 4.51."""
    import shutil
    import sys

    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    seed_all(0)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(whisper, out / "whisper", dirs_exist_ok=True)
    whisper = out / "whisper"
    readable_by_transformers4(whisper)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    corpus = [DESTA_SYSTEM, DESTA_PROMPT, "system\n\nuser\n\nassistant\n\n", str(out)]
    corpus += [CLIPS[k][0] + CLIPS[k][1] for k in clips]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab, merges = _byte_bpe(corpus * 4, vocab_size=400)
    for s in specials:
        vocab[s] = len(vocab)
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|begin_of_text|>",
        eos_token="<|end_of_text|>",
        pad_token="<|end_of_text|>",
        additional_special_tokens=specials[2:],
    )
    tok.chat_template = LLAMA3_CHAT_TEMPLATE
    eot = tok.convert_tokens_to_ids("<|eot_id|>")
    lm = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=512,
            bos_token_id=tok.bos_token_id,
            eos_token_id=[tok.eos_token_id, eot],
            pad_token_id=tok.pad_token_id,
            tie_word_embeddings=True,
        )
    )
    lm.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id, eos_token_id=[tok.eos_token_id, eot]
    )
    lm.save_pretrained(out / "llama")
    tok.save_pretrained(out / "llama")

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tiny_desta_code import TinyDestaConfig, TinyDestaModel

    cfg = TinyDestaConfig(whisper_model_id=str(whisper), llama_model_id=str(out / "llama"), llama_hidden_size=64)
    cfg.auto_map = {
        "AutoConfig": "modeling_tiny_desta.TinyDestaConfig",
        "AutoModel": "modeling_tiny_desta.TinyDestaModel",
    }
    model = TinyDestaModel(cfg)
    for p in model.whisper.parameters():
        p.requires_grad_(False)
    examples = [(desta_messages(wav), CLIPS[key][1]) for key, wav in clips.items()]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny: a second thread only adds overhead (see _train)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3, weight_decay=0.0)
    # `steps` first, then on until every answer wins by a wide logit gap (TinyDestaModel.margin). The
    # vocabulary, and so the training, differs per build (the corpus holds the temporary path): 80
    # steps alone left the smallest gap anywhere from -0.5 to 5 logits, so a test failed at random.
    for step in range(steps * 4):
        if step >= steps and step % len(examples) == 0:
            model.eval()
            if min(model.margin(m, a) for m, a in examples) >= DESTA_MARGIN:
                break
        model.train()
        messages, answer = examples[step % len(examples)]
        loss = model.loss(messages, answer)
        opt.zero_grad()
        loss.backward()
        opt.step()
    else:
        raise AssertionError(f"the DeSTA twin did not reach a logit margin of {DESTA_MARGIN} in {steps * 4} steps")
    model.eval()
    torch.set_num_threads(threads)
    model.llama.save_pretrained(out / "llama")
    torch.save(model.connector.state_dict(), out / "qformer_connector.pth")
    cfg.save_pretrained(out)
    shutil.copy(Path(__file__).resolve().parent / "tiny_desta_code.py", out / "modeling_tiny_desta.py")
    readable_by_transformers4(out / "llama")
    return out


# -- Voxtral (Whisper-style encoder + Llama, Mistral's Tekken tokenizer) -------------------------
# The pre-tokenizer pattern of Mistral's Tekken files (tiktoken pat_str).
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Voxtral's control tokens at their ranks (the processor hard-codes [AUDIO] = 24); the ranks in
# between and up to 1000 are <SPECIAL_n> fillers, as in Mistral's files.
TEKKEN_SPECIALS = {
    0: "<unk>",
    1: "<s>",
    2: "</s>",
    3: "[INST]",
    4: "[/INST]",
    5: "[AVAILABLE_TOOLS]",
    6: "[/AVAILABLE_TOOLS]",
    7: "[TOOL_RESULTS]",
    8: "[/TOOL_RESULTS]",
    9: "[TOOL_CALLS]",
    10: "[IMG]",
    11: "<pad>",
    12: "[IMG_BREAK]",
    13: "[IMG_END]",
    14: "[PREFIX]",
    15: "[MIDDLE]",
    16: "[SUFFIX]",
    17: "[SYSTEM_PROMPT]",
    18: "[/SYSTEM_PROMPT]",
    19: "[TOOL_CONTENT]",
    24: "[AUDIO]",
    25: "[BEGIN_AUDIO]",
    32: "[ARGS]",
    33: "[CALL_ID]",
    34: "[TRANSCRIBE]",
}
TEKKEN_NUM_SPECIAL = 1000


def _byte_bpe_ranks(texts: list[str], merges: int) -> list[bytes]:
    """tiktoken mergeable ranks: the 256 bytes, then `merges` byte-pair merges learnt on `texts`
    split by TEKKEN_PATTERN (most frequent pair first)."""
    from collections import Counter

    import regex

    words = Counter(
        tuple(bytes([b]) for b in piece.encode("utf-8")) for t in texts for piece in regex.findall(TEKKEN_PATTERN, t)
    )
    ranks = [bytes([b]) for b in range(256)]
    known = set(ranks)
    for _ in range(merges):
        pairs = Counter()
        for w, n in words.items():
            for a, b in zip(w, w[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _ = pairs.most_common(1)[0]
        if a + b not in known:
            ranks.append(a + b)
            known.add(a + b)
        merged = Counter()
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == (a, b):
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return ranks


def write_tekken(path: Path, texts: list[str], merges: int = 120, num_mel_bins: int = 128) -> Path:
    """A Tekken tokenizer file (mistral_common's tekken.json format) with Voxtral's audio section:
    16 kHz, 12.5 audio tokens a second, 128 mel bins (hop 160, window 400), 30 s chunks."""
    import base64

    ranks = _byte_bpe_ranks(texts, merges)
    vocab = [
        {
            "rank": i,
            "token_bytes": base64.b64encode(b).decode("ascii"),
            "token_str": b.decode("utf-8", errors="replace"),
        }
        for i, b in enumerate(ranks)
    ]
    specials = [
        {"rank": i, "token_str": TEKKEN_SPECIALS.get(i, f"<SPECIAL_{i}>"), "is_control": True}
        for i in range(max(TEKKEN_SPECIALS) + 1)
    ]
    data = {
        "config": {
            "pattern": TEKKEN_PATTERN,
            "num_vocab_tokens": len(vocab),
            "default_vocab_size": TEKKEN_NUM_SPECIAL + len(vocab),
            "default_num_special_tokens": TEKKEN_NUM_SPECIAL,
            "version": "v11",
        },
        "vocab": vocab,
        "special_tokens": specials,
        "audio": {
            "sampling_rate": SR,
            "frame_rate": 12.5,
            "chunk_length_s": 30.0,
            "audio_encoding_config": {"num_mel_bins": num_mel_bins, "hop_length": 160, "window_size": 400},
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def build_voxtral(out: Path, clips: dict[str, Path], steps: int = 140) -> Path:
    """Voxtral's architecture (VoxtralForConditionalGeneration: a Whisper-style encoder on 128 mel
    bins in 30 s windows, Voxtral's projector, a Llama LM) with a Tekken tokenizer file read by
    MistralCommonBackend and a VoxtralProcessor, trained to answer SPEECH_PROMPT about each clip
    with its Portuguese. The folder holds the files transformers reads from
    mistralai/Voxtral-Small-24B-2507: config.json, generation_config.json, the weights, the
    processor's config and tekken.json (~1.3 MB; ~20 s on 2 busy cores: 80 steps do not yet
    tell the clips apart, 140 do with a logit margin of ~6 in fp32 and bf16)."""
    import torch
    from transformers import (
        GenerationConfig,
        LlamaConfig,
        MistralCommonBackend,
        VoxtralConfig,
        VoxtralEncoderConfig,
        VoxtralForConditionalGeneration,
        VoxtralProcessor,
        WhisperFeatureExtractor,
    )

    seed_all(0)
    out.mkdir(parents=True, exist_ok=True)
    write_tekken(out / "tekken.json", [SPEECH_PROMPT] + [CLIPS[k][1] for k in clips] * 4)
    tok = MistralCommonBackend.from_pretrained(out)
    fe = WhisperFeatureExtractor(feature_size=128, chunk_length=30)  # Voxtral's: 30 s windows
    proc = VoxtralProcessor(feature_extractor=fe, tokenizer=tok)
    special = {t: i for i, t in TEKKEN_SPECIALS.items()}
    bos, eos, pad = special["<s>"], special["</s>"], special["<pad>"]

    d_audio = 32
    cfg = VoxtralConfig(
        # intermediate_size = 4 x hidden: the projector reads 4 encoder frames per audio token,
        # so 30 s (1500 encoder frames) give the 375 [AUDIO] tokens the tokenizer writes.
        audio_config=VoxtralEncoderConfig(
            num_mel_bins=128,
            hidden_size=d_audio,
            intermediate_size=4 * d_audio,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_source_positions=1500,
        ),
        text_config=LlamaConfig(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=1024,
            rope_theta=1e8,
            bos_token_id=bos,
            eos_token_id=eos,
            pad_token_id=pad,
            tie_word_embeddings=False,
        ),
        audio_token_id=proc.audio_token_id,
    )
    model = VoxtralForConditionalGeneration(cfg)

    # Both clips in one batch: each step contrasts them (alternating batches only learn the answers).
    rows, labels, feats = [], [], []
    for key, wav in clips.items():
        conv = [
            {"role": "user", "content": [{"type": "audio", "path": str(wav)}, {"type": "text", "text": SPEECH_PROMPT}]}
        ]
        enc = proc.apply_chat_template(conv)
        ans = tok.encode(CLIPS[key][1], add_special_tokens=False) + [eos]
        prompt = enc["input_ids"][0].tolist()
        rows.append(prompt + ans)
        labels.append([-100] * len(prompt) + ans)
        feats.append(enc["input_features"])
    width = max(map(len, rows))
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    batch = {
        "input_ids": ids,
        "audio": ids == cfg.audio_token_id,
        "attention_mask": torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows]),
        "labels": torch.tensor([x + [-100] * (width - len(x)) for x in labels]),
    }
    # The encoder keeps its random weights (they still tell the clips apart) and runs once: the
    # projector and the LM learn, on 1500 frames per clip, in a fraction of the time.
    tower = model.model.audio_tower
    for p in tower.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        frames = tower(torch.cat(feats)).last_hidden_state.reshape(-1, cfg.audio_config.intermediate_size)

    def loss_fn(b):  # what VoxtralModel.forward does, from the encoder's output on
        audio = model.model.multi_modal_projector(frames)
        embeds = model.get_input_embeddings()(b["input_ids"])
        embeds = embeds.masked_scatter(b["audio"][..., None].expand_as(embeds), audio.to(embeds.dtype))
        return model(inputs_embeds=embeds, attention_mask=b["attention_mask"], labels=b["labels"]).loss

    _train(model, [batch], steps=steps, lr=1e-2, loss_fn=loss_fn)
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=eos, pad_token_id=pad)
    model.save_pretrained(out)
    proc.save_pretrained(out)
    return out
