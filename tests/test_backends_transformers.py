"""The transformers backends (services/models/backends/hf.py) on tiny models built by the tests.

The paper's models (Whisper large-v3, Tower-Plus, Phi-4, Voxtral, ...) cannot be downloaded
here, so tests/tiny_models.py builds same-code-path stand-ins and overfits them on a few
examples: the assertions are on real outputs, not just "it ran". Nothing may touch the
network: the hub is switched off and sockets to anything but loopback are refused.
"""

from __future__ import annotations

import os

# Before anything imports huggingface_hub (it reads these once).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tiny_models, whatever the import mode
import tiny_models as tm  # noqa: E402
from services.models.backends import BackendUnavailable, hf  # noqa: E402
from services.models.cache import ModelCache  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")]


@pytest.fixture(autouse=True)
def offline(no_network):
    """Every test here runs with the hub off and the network refused (conftest's no_network)."""


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Every tiny model, built and trained once per session (~15-25 s on 2 cores)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    root = tmp_path_factory.mktemp("tiny_models")
    clips = tm.make_clips(root / "clips")
    return {
        "clips": clips,
        "whisper": tm.build_whisper(root / "whisper", clips),
        "marian": tm.build_marian(root / "marian"),
        "llm": tm.build_causal_lm(root / "llm"),
        "audio_llm": tm.build_audio_llm(root / "audio_llm", clips),
    }


@pytest.fixture
def cache():
    return ModelCache(device="cpu")


def spy_generate(monkeypatch, cls):
    """Record the keyword inputs of every cls.generate call (and still run it)."""
    calls = []
    real = cls.generate

    def generate(self, *args, **kwargs):
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, "generate", generate)
    return calls


# -- import ----------------------------------------------------------------------------------
def test_import_loads_no_model_library():
    code = (
        "import sys; import services.models.backends.hf; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- ASR -------------------------------------------------------------------------------------
def test_whisper_transcribes_clips_with_language(tiny, cache, monkeypatch):
    from transformers import WhisperForConditionalGeneration

    calls = spy_generate(monkeypatch, WhisperForConditionalGeneration)
    asr = hf.TransformersWhisperASR(str(tiny["whisper"]["multilingual"]), dtype="bfloat16", cache=cache)
    assert asr.transcribe(str(tiny["clips"]["hello"])) == "Hello world."
    assert asr.transcribe(str(tiny["clips"]["morning"])) == "Good morning everyone."
    assert cache.loads == 1
    assert calls[0]["language"] == "en" and calls[0]["task"] == "transcribe"
    assert "return_timestamps" not in calls[0]
    # bf16 was asked for, but the cache gives float32 on CPU (features are cast to the model's dtype)
    assert calls[0]["input_features"].dtype == torch.float32


def test_whisper_reads_other_rates_and_stereo(tiny, cache, tmp_path):
    import soundfile as sf
    from scipy.signal import resample_poly

    x, _ = sf.read(str(tiny["clips"]["hello"]), dtype="float32")
    stereo = np.stack([x, x], axis=1)
    sf.write(str(tmp_path / "s.wav"), resample_poly(stereo, 441, 320, axis=0), 22050)
    asr = hf.TransformersWhisperASR(str(tiny["whisper"]["multilingual"]), cache=cache)
    assert asr.transcribe(str(tmp_path / "s.wav")) == "Hello world."


def test_whisper_long_form_runs(tiny, cache, tmp_path, monkeypatch):
    """Audio longer than one window goes through Whisper's sequential long-form decoding (which needs
    timestamps). The tiny model never learnt timestamps, so only the path is checked, not the words."""
    import soundfile as sf
    from transformers import WhisperForConditionalGeneration

    calls = spy_generate(monkeypatch, WhisperForConditionalGeneration)
    a, _ = sf.read(str(tiny["clips"]["hello"]), dtype="float32")
    b, _ = sf.read(str(tiny["clips"]["morning"]), dtype="float32")
    sf.write(str(tmp_path / "long.wav"), np.concatenate([a, np.zeros(4 * tm.SR, "float32"), b]), tm.SR)
    asr = hf.TransformersWhisperASR(str(tiny["whisper"]["multilingual"]), cache=cache)
    assert isinstance(asr.transcribe(str(tmp_path / "long.wav")), str)
    assert calls[0]["return_timestamps"] is True
    assert calls[0]["input_features"].shape[-1] > tm.CHUNK_S * 100


def test_whisper_english_only_model_gets_no_language(tiny, cache, monkeypatch):
    from transformers import WhisperForConditionalGeneration

    calls = spy_generate(monkeypatch, WhisperForConditionalGeneration)
    asr = hf.TransformersWhisperASR(str(tiny["whisper"]["english_only"]), language="en", cache=cache)
    assert asr.transcribe(str(tiny["clips"]["morning"])) == "Good morning everyone."
    assert asr.transcribe(str(tiny["clips"]["hello"])) == "Hello world."
    assert "language" not in calls[0] and "task" not in calls[0]
    assert cache.loads == 1


# -- text MT ---------------------------------------------------------------------------------
def test_seq2seq_translates_a_batch(tiny, cache):
    mt = hf.TransformersSeq2SeqMT(str(tiny["marian"]), dtype="bfloat16", cache=cache)
    src = [s for s, _ in tm.PAIRS]
    assert mt.translate(src) == [t for _, t in tm.PAIRS]
    assert mt.translate(["Thank you very much.", "  ", "Hello world."]) == ["Muito obrigado.", "", "Olá mundo."]
    assert cache.loads == 1
    (entry,) = cache._entries.values()
    assert entry.value.model.dtype == torch.float32  # bf16 only on CUDA


def test_seq2seq_samples_n_candidates_per_source_with_epsilon(tiny, cache, monkeypatch):
    from transformers import MarianMTModel

    calls = spy_generate(monkeypatch, MarianMTModel)
    mt = hf.TransformersSeq2SeqMT(str(tiny["marian"]), cache=cache)
    src = ["Hello world.", "", "Thank you very much."]
    a = mt.sample(src, n=6, epsilon=0.02, seed=3)
    assert [len(h) for h in a] == [6, 0, 6]
    assert all(isinstance(t, str) and t for t in a[0] + a[2])
    assert mt.sample(src, n=6, epsilon=0.02, seed=3) == a  # seeded: repeatable
    sent = calls[-1]
    assert sent["do_sample"] is True and sent["epsilon_cutoff"] == 0.02 and sent["num_return_sequences"] == 6
    assert sent["top_k"] == 0 and sent["top_p"] == 1.0  # pure epsilon sampling
    assert mt.translate(["Hello world."]) == ["Olá mundo."]  # greedy still greedy
    with pytest.raises(ValueError, match="epsilon"):
        mt.sample(src, n=2, epsilon=0)
    with pytest.raises(ValueError, match="n must"):
        mt.sample(src, n=0)


def test_causal_mt_samples_new_tokens_only(tiny, cache):
    mt = hf.TransformersCausalMT(str(tiny["llm"]), tm.TOWER_PROMPT, max_new_tokens=12, cache=cache)
    out = mt.sample(["Hello world.", "Good morning everyone."], n=4, seed=0)
    assert [len(h) for h in out] == [4, 4]
    assert all("Translate the following" not in t for h in out for t in h)
    assert mt.sample(["Hello world.", "Good morning everyone."], n=4, seed=0) == out


def test_seq2seq_unknown_target_language_is_explained(tiny, cache):
    mt = hf.TransformersSeq2SeqMT(str(tiny["marian"]), tgt_lang="por_Latn", cache=cache)
    with pytest.raises(BackendUnavailable, match="por_Latn"):
        mt.translate(["Hello world."])


def test_causal_mt_uses_tower_prompt_in_chat_template(tiny, cache, monkeypatch):
    from transformers import LlamaForCausalLM

    calls = spy_generate(monkeypatch, LlamaForCausalLM)
    mt = hf.TransformersCausalMT(str(tiny["llm"]), tm.TOWER_PROMPT, cache=cache)
    src = [s for s, _ in tm.PAIRS]
    assert mt.translate(src) == [t for _, t in tm.PAIRS]
    assert mt.translate(["", "Good morning everyone."]) == ["", "Bom dia a todos."]
    assert cache.loads == 1

    # What the model really received: the Tower prompt as the user turn of the chat template.
    (entry,) = cache._entries.values()
    tok = entry.value.tokenizer
    sent = calls[-1]
    assert sent["do_sample"] is False
    ids = sent["input_ids"][0][sent["attention_mask"][0].bool()]
    expected = (
        "<bos><start_of_turn>user\n"
        "Translate the following English source text to Portuguese (Portugal):\n"
        "English: Good morning everyone.\nPortuguese (Portugal): <end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert tok.decode(ids) == expected
    assert mt.render(tok, "Good morning everyone.") == expected
    assert tok.padding_side == "left"


def test_causal_mt_plain_prompt_without_chat_template(tiny, cache):
    mt = hf.TransformersCausalMT(
        str(tiny["llm"]), tm.TOWER_PROMPT, use_chat_template=False, max_new_tokens=8, cache=cache
    )
    out = mt.translate(["Hello world."])
    (entry,) = cache._entries.values()
    assert mt.render(entry.value.tokenizer, "Hello world.") == tm.TOWER_PROMPT.replace("{text}", "Hello world.")
    assert isinstance(out[0], str) and "\n" not in out[0]


def test_run_on_keeps_the_translation_and_cuts_a_new_turn_only():
    """(tests/test_mt_output_whole.py has the rest: issue 50, point 2)"""
    assert hf.run_on(" Olá mundo.\nEnglish: next one", "Hello world.", "English:") == (
        "Olá mundo.",
        "English: next one",
    )
    assert hf.run_on("Olá.\nAdeus.\n\nNote: informal", "Hi.\nBye.", "English:") == (
        "Olá.\nAdeus.\n\nNote: informal",
        "",
    )
    assert hf.run_on("\n\nOlá mundo.", "Hello world.", "English:") == ("Olá mundo.", "")


def test_causal_prompt_needs_placeholder():
    with pytest.raises(ValueError):
        hf.TransformersCausalMT("x", "Translate this")


# -- direct speech translation ---------------------------------------------------------------
def test_speech_llm_translates_each_clip_through_the_chat_template(tiny, cache, monkeypatch):
    from transformers import Qwen2AudioForConditionalGeneration

    calls = spy_generate(monkeypatch, Qwen2AudioForConditionalGeneration)
    st = hf.TransformersSpeechLLM(str(tiny["audio_llm"]), tm.SPEECH_PROMPT, max_new_tokens=20, cache=cache)
    # Two clips, two different answers: the audio itself reaches the model.
    assert st.translate_audio(str(tiny["clips"]["hello"])) == "Olá mundo."
    assert st.translate_audio(str(tiny["clips"]["morning"])) == "Bom dia a todos."
    assert cache.loads == 1

    (entry,) = cache._entries.values()
    proc = entry.value.processor
    sent = calls[0]
    text = proc.tokenizer.decode(sent["input_ids"][0])
    assert "<|im_start|>user\nAudio 1: <|audio_bos|><|AUDIO|>" in text
    assert f"<|audio_eos|>\n{tm.SPEECH_PROMPT}<|im_end|>\n<|im_start|>assistant\n" in text
    assert text.endswith("<|im_start|>assistant\n")
    assert text.count("<|AUDIO|>") > 10  # one per audio frame group
    assert sent["input_features"].shape[1] == 80
    assert "feature_attention_mask" in sent


def test_speech_llm_returns_only_new_tokens():
    prompt = torch.tensor([[5, 6, 7]])
    assert hf._new_tokens(torch.tensor([[5, 6, 7, 8, 9]]), prompt).tolist() == [[8, 9]]
    assert hf._new_tokens(torch.tensor([[8, 9]]), prompt).tolist() == [[8, 9]]


def test_speech_family_branches():
    from types import SimpleNamespace as NS

    assert hf._speech_family(NS(model_type="voxtral")) == "voxtral"
    assert hf._speech_family(NS(model_type="phi4_multimodal")) == "phi4"
    assert hf._speech_family(NS(model_type="qwen2_audio")) == "generic"
    assert hf._speech_family(NS(model_type="llama", auto_map={"AutoModel": "modeling_desta.DestaModel"})) == "desta"


# -- missing models --------------------------------------------------------------------------
def _backends(model, cache):
    return [
        (hf.TransformersWhisperASR(model, cache=cache), "transcribe", "clip"),
        (hf.TransformersSeq2SeqMT(model, cache=cache), "translate", ["Hello."]),
        (hf.TransformersCausalMT(model, tm.TOWER_PROMPT, cache=cache), "translate", ["Hello."]),
        (hf.TransformersSpeechLLM(model, tm.SPEECH_PROMPT, cache=cache), "translate_audio", "clip"),
    ]


def test_missing_model_folder_raises_backend_unavailable(tiny, cache, tmp_path):
    missing = str(tmp_path / "no-such-model")
    for backend, method, arg in _backends(missing, cache):
        if arg == "clip":
            arg = str(tiny["clips"]["hello"])
        with pytest.raises(BackendUnavailable) as err:
            getattr(backend, method)(arg)
        msg = str(err.value)
        assert missing in msg and "download" in msg
    assert cache.loads == 0 and cache.report() == []


@pytest.mark.parametrize("model_id", ["openai/whisper-large-v3", "Unbabel/Tower-Plus-9B"])
def test_hub_id_not_downloaded_offline(tiny, cache, model_id):
    for backend, method, arg in _backends(model_id, cache):
        if arg == "clip":
            arg = str(tiny["clips"]["hello"])
        with pytest.raises(BackendUnavailable) as err:
            getattr(backend, method)(arg)
        msg = str(err.value)
        assert model_id in msg and f"hf download {model_id}" in msg
    assert cache.loads == 0


# -- family branches: Voxtral without mistral-common, DeSTA2's chat() ---------------------------
# (Voxtral itself runs end to end on its tiny twin in tests/test_paper_systems.py.)
def test_voxtral_without_mistral_common_says_what_to_install(cache, tmp_path, monkeypatch):
    from transformers import VoxtralConfig

    monkeypatch.setitem(sys.modules, "mistral_common", None)  # import fails as if not installed
    VoxtralConfig().save_pretrained(tmp_path / "voxtral")  # config only: fails before weights
    st = hf.TransformersSpeechLLM(str(tmp_path / "voxtral"), tm.SPEECH_PROMPT, cache=cache)
    with pytest.raises(BackendUnavailable, match=r"pip install --no-deps mistral-common==1\.13\.1"):
        st.translate_audio("unused.wav")
    assert cache.loads == 0


def test_speech_llm_desta_branch_uses_model_chat(cache):
    """DeSTA2's remote code has no processor: messages with an "audio" role go to model.chat(),
    which returns only the new tokens."""
    from types import SimpleNamespace as NS

    seen = []

    class FakeDesta:
        tokenizer = NS(batch_decode=lambda ids, skip_special_tokens: [" Olá mundo. "])

        def chat(self, messages, max_new_tokens):
            seen.append((messages, max_new_tokens))
            return [[1, 2, 3]]

    cache.get(
        "st/transformers/DeSTA-ntu/DeSTA2-8B-beta",
        lambda: hf._Loaded(model=FakeDesta(), processor=None, family="desta"),
    )
    st = hf.TransformersSpeechLLM(
        "DeSTA-ntu/DeSTA2-8B-beta", tm.SPEECH_PROMPT, max_new_tokens=64, trust_remote_code=True, cache=cache
    )
    assert st.translate_audio("/data/clip.wav") == "Olá mundo."
    assert seen == [
        (
            [
                {"role": "system", "content": "You are a helpful voice assistant."},
                {"role": "audio", "content": "/data/clip.wav"},
                {"role": "user", "content": tm.SPEECH_PROMPT},
            ],
            64,
        )
    ]


class _BF16Cache(ModelCache):
    """The CUDA dtype policy (bf16 as configured) on CPU, so the casts of inputs to the model's
    dtype run here too; CPU bf16 is slow but these models are tiny."""

    def dtype(self, requested=None):
        return torch.bfloat16 if requested in ("bfloat16", "bf16") else torch.float32


def test_bf16_models_get_bf16_inputs(tiny, monkeypatch):
    from transformers import Qwen2AudioForConditionalGeneration, WhisperForConditionalGeneration

    cache = _BF16Cache(device="cpu")
    asr_calls = spy_generate(monkeypatch, WhisperForConditionalGeneration)
    st_calls = spy_generate(monkeypatch, Qwen2AudioForConditionalGeneration)
    clip = str(tiny["clips"]["hello"])
    outs = [
        hf.TransformersWhisperASR(str(tiny["whisper"]["multilingual"]), dtype="bfloat16", cache=cache).transcribe(clip),
        hf.TransformersSeq2SeqMT(str(tiny["marian"]), dtype="bfloat16", cache=cache).translate(["Hello world."])[0],
        hf.TransformersCausalMT(
            str(tiny["llm"]), tm.TOWER_PROMPT, dtype="bfloat16", max_new_tokens=12, cache=cache
        ).translate(["Hello world."])[0],
        hf.TransformersSpeechLLM(
            str(tiny["audio_llm"]), tm.SPEECH_PROMPT, dtype="bfloat16", max_new_tokens=12, cache=cache
        ).translate_audio(clip),
    ]
    assert all(isinstance(o, str) for o in outs)
    assert {e.value.model.dtype for e in cache._entries.values()} == {torch.bfloat16}
    assert asr_calls[0]["input_features"].dtype == torch.bfloat16
    assert st_calls[0]["input_features"].dtype == torch.bfloat16
    assert st_calls[0]["input_ids"].dtype == torch.long
