"""Tiny learned-metric models built from nothing, for the metric tests (no hub, no download).

- build_comet:   three COMET checkpoints laid out as comet.load_from_checkpoint expects
                 (DIR/hparams.yaml + DIR/checkpoints/model.ckpt), on a 2-layer XLM-R encoder whose
                 tokenizer is a sentencepiece unigram model trained here: "comet" (RegressionMetric),
                 "cometkiwi" (UnifiedMetric without "ref" among its input segments) and "xcomet"
                 (XCOMETMetric on an XLM-RoBERTa-XL encoder, as XCOMET-XL). Randomly initialised:
                 the scores mean nothing, the tests check the plumbing.
- build_metricx: a MetricX-24 stand-in: an mT5 encoder-decoder (MT5ForConditionalGeneration,
                 as MetricX's checkpoints load) with an mT5-style tokenizer (spiece.model, pad 0,
                 </s> 1, <unk> 2, 100 <extra_id_N> after the pieces) and, like MetricX's, an
                 lm_head separate from the embeddings (tie_word_embeddings false). The lm_head row of
                 <extra_id_10> (MetricX's score token, id 250089 in the real vocabulary) is solved
                 so that the designed inputs get the designed raw scores (METRICX_DESIGN), some
                 of them outside [0, 25], so the tests can check values and clipping.

Each build takes a few seconds on 2 CPU cores.
"""

from __future__ import annotations

import json
import socket
from contextlib import contextmanager
from pathlib import Path

TEXTS = [
    "Hello world.",
    "Olá mundo.",
    "Good morning everyone.",
    "Bom dia a todos.",
    "Thank you very much.",
    "Muito obrigado.",
    "The cat ate the fish.",
    "O gato comeu o peixe.",
]

# (source, hypothesis, reference or None for QE) -> raw regression output the tiny MetricX gives
METRICX_DESIGN = {
    ("Hello world.", "Olá mundo.", "Olá mundo."): 1.5,
    ("Good morning everyone.", "Bom dia a todos.", "Bom dia a todos."): 4.0,
    ("Thank you very much.", "Bom dia.", "Muito obrigado."): 18.0,
    ("Thank you very much.", "O gato comeu o peixe.", "Muito obrigado."): 40.0,  # clipped to 25
    ("Hello world.", "Olá mundo.", "Olá mundo!"): -3.0,  # clipped to 0
    ("Hello world.", "Olá mundo.", None): 2.5,
    ("Thank you very much.", "Bom dia.", None): 21.0,
    ("Good morning everyone.", "O gato comeu o peixe.", None): 30.0,  # clipped to 25
}


@contextmanager
def offline():
    """The hub off and no non-loopback connections while building (tests/conftest.py's no_network,
    for session fixtures)."""
    import pytest

    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family == socket.AF_UNIX or host in ("127.0.0.1", "::1", "localhost"):
            return real_connect(self, address)
        raise AssertionError(f"a tiny-model build tried the network: {address}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", guarded)
        yield


def _pieces(texts: list[str], out: Path, prefix: str, vocab_size: int, **ids) -> Path:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts * 10),
        model_prefix=str(out / prefix),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        **ids,
    )
    (out / f"{prefix}.vocab").unlink()
    return out / f"{prefix}.model"


# -- COMET ----------------------------------------------------------------------------------
def _xlmr_tokenizer(out: Path):
    import sentencepiece as spm
    from transformers import XLMRobertaTokenizer

    model = _pieces(TEXTS, out, "xlmr_sp", 80, bos_id=-1, eos_id=-1, unk_id=0)
    sp = spm.SentencePieceProcessor(model_file=str(model))
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size()) if i != sp.unk_id()]
    # XLM-R's layout: <s> <pad> </s> <unk>, the pieces, <mask> last
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + pieces + [("<mask>", 0.0)]
    model.unlink()
    return XLMRobertaTokenizer(vocab=vocab)


def _encoder(out: Path, tok, xl: bool) -> Path:
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaXLConfig, XLMRobertaXLModel

    config_cls, model_cls = (XLMRobertaXLConfig, XLMRobertaXLModel) if xl else (XLMRobertaConfig, XLMRobertaModel)
    cfg = config_cls(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        type_vocab_size=1,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(1)
    tok.save_pretrained(out)
    model_cls(cfg, add_pooling_layer=False).save_pretrained(out)
    return out


def _save_comet(model, folder: Path) -> Path:
    """A Lightning checkpoint + hparams.yaml, as Unbabel's model repositories hold them."""
    import pytorch_lightning as ptl
    import torch
    import yaml

    hparams = {k: v for k, v in dict(model.hparams).items() if k not in ("load_pretrained_weights", "local_files_only")}
    (folder / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "state_dict": model.state_dict(),
            "hyper_parameters": hparams,
            "pytorch-lightning_version": ptl.__version__,
            "epoch": 0,
            "global_step": 0,
        },
        folder / "checkpoints" / "model.ckpt",
    )
    (folder / "hparams.yaml").write_text(yaml.safe_dump(hparams))
    return folder


def build_comet(out: Path) -> dict[str, Path]:
    """{"comet" | "cometkiwi" | "xcomet": model folder}; the encoders are in out/encoders."""
    import torch

    from services.metrics.comet import _import_comet

    _import_comet()
    from comet.models import RegressionMetric, UnifiedMetric, XCOMETMetric

    out.mkdir(parents=True, exist_ok=True)
    tok = _xlmr_tokenizer(out)
    xlmr = _encoder(out / "encoders" / "xlmr", tok, xl=False)
    xlmr_xl = _encoder(out / "encoders" / "xlmr-xl", tok, xl=True)
    common = dict(load_pretrained_weights=True, local_files_only=True, hidden_sizes=[16], dropout=0.1)
    torch.manual_seed(2)
    built = {
        "comet": RegressionMetric(pretrained_model=str(xlmr), **common),
        "cometkiwi": UnifiedMetric(pretrained_model=str(xlmr), input_segments=["mt", "src"], word_layer=2, **common),
        "xcomet": XCOMETMetric(pretrained_model=str(xlmr_xl), word_layer=2, cross_entropy_weights=None, **common),
    }
    return {name: _save_comet(model, out / name) for name, model in built.items()}


# -- MetricX --------------------------------------------------------------------------------
def build_metricx(out: Path) -> dict:
    """{"model": folder, "tokenizer": folder, "score_token_id": id of <extra_id_10>}."""
    import torch
    from transformers import AutoTokenizer, MT5Config, MT5ForConditionalGeneration

    from services.metrics.metricx import encode, metricx_input

    out.mkdir(parents=True, exist_ok=True)
    texts = [metricx_input(s, h, r) for s, h, r in METRICX_DESIGN] + TEXTS
    tok_dir = out / "tokenizer"
    tok_dir.mkdir(exist_ok=True)
    # mT5's sentencepiece layout: <pad> 0, </s> 1, <unk> 2; T5Tokenizer adds the 100 extra ids
    _pieces(texts, out, "spiece", 120, pad_id=0, eos_id=1, unk_id=2, bos_id=-1).rename(tok_dir / "spiece.model")
    (tok_dir / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "T5Tokenizer",
                "extra_ids": 100,
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "<pad>",
            }
        )
    )
    tok = AutoTokenizer.from_pretrained(tok_dir, local_files_only=True)
    score_id = tok.convert_tokens_to_ids("<extra_id_10>")
    assert score_id == len(tok) - 11, score_id  # as 250089 = 250100 - 11 in mT5

    cfg = MT5Config(
        vocab_size=len(tok),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=1,
        num_heads=2,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        architectures=["MT5ForRegression"],
    )  # what MetricX's config.json says
    torch.manual_seed(3)
    model = MT5ForConditionalGeneration(cfg).eval()
    # transformers 5 ties lm_head to the embeddings for every mT5 config; MetricX's checkpoints
    # (like mT5's) hold a separate lm_head, which from_pretrained keeps untied: so untie it here.
    model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    # The decoder's first-step output for each designed input, one input at a time ...
    rows = []
    with torch.no_grad():
        for ids in encode(tok, texts[: len(METRICX_DESIGN)]):
            input_ids = torch.tensor([ids])
            enc = model.get_encoder()(input_ids=input_ids).last_hidden_state
            dec = model.get_decoder()(
                input_ids=torch.zeros((1, 1), dtype=torch.long), encoder_hidden_states=enc, use_cache=False
            ).last_hidden_state
            rows.append(dec[0, 0].double())
        hidden = torch.stack(rows)  # (designs, d_model)
        target = torch.tensor(list(METRICX_DESIGN.values()), dtype=torch.float64)
        # ... and the score row that maps them onto the designed values (least squares, exact here)
        row = torch.linalg.lstsq(hidden, target[:, None]).solution[:, 0]
        assert torch.allclose(hidden @ row, target, atol=1e-6)
        model.lm_head.weight[score_id] = row.float()
    model_dir = out / "model"
    model.save_pretrained(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    config["tie_word_embeddings"] = False  # as MetricX's config.json says
    (model_dir / "config.json").write_text(json.dumps(config, indent=2))
    return {"model": model_dir, "tokenizer": tok_dir, "score_token_id": score_id}
