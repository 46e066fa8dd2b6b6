"""The paper's speech-translation presets (assets/systems.toml) run end to end on tiny twins of
their real architectures: a recording goes through the worker's pipeline and the system's output
is stored as the exchange's translation.

The twins are built here from each architecture's own config class (random weights, a tokenizer
of the same kind, trained a few seconds to overfit two clips), saved to a folder and loaded by
the app's backend as the full model would be: from_pretrained from the folder, the preset's
dtype, the chat template, generate, decode. Only the model path of the preset is overridden.

What cannot be built with the packages installed here is checked to fail with a message
naming the package, before any weights are read (docs/speech-pipeline.md, "The paper's systems").
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_models as tm  # noqa: E402
from services.models import systems  # noqa: E402
from services.models.backends import BackendUnavailable, hf  # noqa: E402
from services.models.cache import ModelCache  # noqa: E402
from services.setup.enrolment import add_participants  # noqa: E402
from services.usability import pipeline  # noqa: E402
from storage.usability import recordings  # noqa: E402
from tests.helpers.paper_systems import record_for, study_with  # noqa: E402
from vllm_server import VLLMServer  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.fixture(autouse=True)
def offline(no_network):
    """The hub off and the network refused (conftest's no_network)."""


class BF16Cache(ModelCache):
    """The app's CUDA dtype policy on CPU (the preset's bf16 as configured, "auto" the
    checkpoint's own), so the presets run in the dtype they name: CPU bf16 is slow, but these
    models are tiny."""

    def dtype(self, requested=None):
        if requested in ("bfloat16", "bf16"):
            return torch.bfloat16
        return "auto" if requested in (None, "", "auto") else torch.float32


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """The two espeak-ng clips, with the lead silence the intake wants of a recording."""
    return tm.make_clips(tmp_path_factory.mktemp("paper_clips"), lead_s=0.4)


@pytest.fixture(scope="module")
def twins(tmp_path_factory, clips):
    """The cascade's twins: Whisper with large-v3's front end (128 mel bins) and Tower+'s
    architecture (Gemma 2). ~15 s on 2 busy cores; a few hundred KB each."""
    root = tmp_path_factory.mktemp("paper_twins")
    return {
        "clips": clips,
        "whisper_v3": tm.build_whisper(root / "whisper_v3", clips, num_mel_bins=128)["multilingual"],
        "tower": tm.build_tower_gemma2(root / "tower"),
    }


def test_paper_cascade_preset_translates_a_recording_on_its_tiny_twin(database, twins, tmp_path, monkeypatch):
    """paper-cascade (Whisper large-v3 -> Tower-Plus-9B, bf16): the recording is transcribed by a
    128-bin Whisper and translated by a Gemma 2 LM prompted with the preset's Tower+ prompt inside
    Gemma 2's chat template; the worker stores the Portuguese as the exchange's translation."""
    from transformers import Gemma2ForCausalLM, WhisperForConditionalGeneration

    preset = systems.presets()["paper-cascade"]
    study_with(
        database,
        tmp_path,
        "paper-cascade",
        {"preset": "paper-cascade", "asr_model": str(twins["whisper_v3"]), "mt_model": str(twins["tower"])},
    )
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    asr_in, mt_in = [], []
    for cls, seen in ((WhisperForConditionalGeneration, asr_in), (Gemma2ForCausalLM, mt_in)):
        real = cls.generate
        monkeypatch.setattr(
            cls, "generate", lambda self, *a, _real=real, _seen=seen, **kw: (_seen.append(kw), _real(self, *a, **kw))[1]
        )
    cache = BF16Cache(device="cpu")
    ex_id, rid = record_for(database, "paper-cascade", twins["clips"]["morning"], tmp_path / "media")

    pipeline.process_recording(database, rid, cache)

    tr = recordings.translation(database, ex_id)
    assert tr["system_id"] == "paper-cascade"
    assert tr["transcript"] == "Good morning everyone."
    assert tr["text"] == "Bom dia a todos."
    meta = json.loads(tr["meta"])
    assert meta["models"] == {
        "asr": f"transformers-whisper:{twins['whisper_v3']}",
        "mt": f"transformers-llm:{twins['tower']}",
    }
    # loaded as the full models would be: the preset's dtype, large-v3's 128 mel bins
    loaded = {
        k.split("/")[0]: e.value
        for k, e in cache._entries.items()
        if k.startswith(("asr/transformers/", "mt/transformers-causal/"))
    }
    assert set(loaded) == {"asr", "mt"}
    # appendix B.4: Whisper v3 in bfloat16; Tower+ as its checkpoint is stored (the twin's: float32)
    assert preset["asr_dtype"] == "bfloat16" and preset["mt_dtype"] == "auto"
    assert (loaded["asr"].model.dtype, loaded["mt"].model.dtype) == (torch.bfloat16, torch.float32)
    assert meta["precision"] == {"asr": "bfloat16", "mt": "float32"}
    assert asr_in[0]["input_features"].shape[1] == 128 and asr_in[0]["input_features"].dtype == torch.bfloat16
    assert asr_in[0]["language"] == "en" and asr_in[0]["task"] == "transcribe"
    # Tower+ got the paper's prompt (pt-PT, the demo's variant) as Gemma 2's user turn
    tok = loaded["mt"].tokenizer
    sent = mt_in[0]["input_ids"][0][mt_in[0]["attention_mask"][0].bool()]
    assert tok.decode(sent) == (
        "<bos><start_of_turn>user\nTranslate the following English source text to "
        "Portuguese (Portugal):\nEnglish: Good morning everyone.\nPortuguese (Portugal):"
        "<end_of_turn>\n<start_of_turn>model\n"
    )
    assert type(tok).__name__ == "GemmaTokenizer"
    # QC still read the study's own QC ASR (the offline tiny.en), not the system's Whisper
    assert recordings.recording(database, rid)["transcript"]


def test_paper_cascade_twin_translates_each_clip_differently(twins):
    """The audio itself decides the output: the other clip gives the other translation."""
    st = systems.build(
        "paper-cascade",
        systems.resolve(preset="paper-cascade")
        | {"asr_model": str(twins["whisper_v3"]), "mt_model": str(twins["tower"])},
        BF16Cache(device="cpu"),
    )
    out = st.translate_audio(str(twins["clips"]["hello"]))
    assert (out.transcript, out.translation, out.variant) == ("Hello world.", "Olá mundo.", "pt-PT")


# -- Voxtral Small: the direct system on its own architecture -------------------------------------
@pytest.fixture(scope="module")
def voxtral(tmp_path_factory, clips):
    """Voxtral's twin (VoxtralForConditionalGeneration, Tekken tokenizer, VoxtralProcessor):
    ~20 s on 2 busy cores, ~1.3 MB."""
    return tm.build_voxtral(tmp_path_factory.mktemp("paper_voxtral") / "voxtral", clips)


def test_paper_voxtral_preset_translates_a_recording_on_its_tiny_twin(database, clips, voxtral, tmp_path, monkeypatch):
    """paper-voxtral (Voxtral-Small-24B-2507, bf16): the recording goes to VoxtralProcessor as an
    audio path, its Mistral tokenizer writes the instruction with 375 [AUDIO] tokens per 30 s
    window and the 128-bin features; the worker stores the Portuguese as the translation."""
    from transformers import MistralCommonBackend, VoxtralForConditionalGeneration, VoxtralProcessor

    preset = systems.presets()["paper-voxtral"]
    study_with(database, tmp_path, "paper-voxtral", {"preset": "paper-voxtral", "model": str(voxtral)}, kind="direct")
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    seen = []
    real = VoxtralForConditionalGeneration.generate
    monkeypatch.setattr(
        VoxtralForConditionalGeneration, "generate", lambda self, *a, **kw: (seen.append(kw), real(self, *a, **kw))[1]
    )
    cache = BF16Cache(device="cpu")
    ex_id, rid = record_for(database, "paper-voxtral", clips["morning"], tmp_path / "media")

    pipeline.process_recording(database, rid, cache)

    tr = recordings.translation(database, ex_id)
    assert (tr["system_id"], tr["text"], tr["transcript"]) == ("paper-voxtral", "Bom dia a todos.", None)
    assert json.loads(tr["meta"])["models"] == {"st": f"transformers-speechllm:{voxtral}"}
    # loaded as the full model would be: its own classes, the preset's dtype
    (loaded,) = [e.value for k, e in cache._entries.items() if k.startswith("st/transformers/")]
    assert loaded.family == "voxtral" and preset["dtype"] == "bfloat16"
    assert type(loaded.model) is VoxtralForConditionalGeneration and loaded.model.dtype == torch.bfloat16
    assert type(loaded.processor) is VoxtralProcessor
    assert type(loaded.processor.tokenizer) is MistralCommonBackend
    # one 30 s window of 128 mel bins, cast to bf16; the prompt as Mistral's instruct format
    (inputs,) = seen
    assert tuple(inputs["input_features"].shape) == (1, 128, 3000)
    assert inputs["input_features"].dtype == torch.bfloat16
    prompt = loaded.processor.tokenizer.decode(inputs["input_ids"][0].tolist())
    assert prompt == ("<s>[INST][BEGIN_AUDIO]" + "[AUDIO]" * 375 + preset["prompt"] + "[/INST]")
    assert preset["prompt"] == tm.SPEECH_PROMPT


def test_paper_voxtral_twin_translates_each_clip_differently(clips, voxtral):
    """The audio itself decides the output: the other clip gives the other translation."""
    st = systems.build(
        "paper-voxtral", systems.resolve(preset="paper-voxtral") | {"model": str(voxtral)}, BF16Cache(device="cpu")
    )
    out = st.translate_audio(str(clips["hello"]))
    # the paper's prompt names no variant, so none is claimed for the output
    assert (out.translation, out.transcript, out.variant) == ("Olá mundo.", None, "")


# -- the same systems served by vLLM ----------------------------------------------------------------
KEY_ENV = "TRADLAB_KEY_REMOTE"  # the presets' own key variable (a study's must carry TRADLAB_KEY_)
KEY = "sk-vllm-test"
PHI4_BASE = "microsoft/Phi-4-multimodal-instruct"


@pytest.fixture(scope="module")
def vllm(twins):
    """One fake `vllm serve` per model, as a lab runs them, answering with the twins: the
    Whisper twin transcribes; the Tower+ twin answers a text chat with the message as sent,
    inside its chat template (what vLLM does), and an audio chat with the transcript's
    translation (a stand-in for the audio LLMs behind vLLM).
    Phi-4's base name is served text-only, so a request that skips the speech LoRA fails."""
    cache = ModelCache(device="cpu")
    asr = hf.TransformersWhisperASR(str(twins["whisper_v3"]), cache=cache)
    tower_for_audio = hf.TransformersCausalMT(str(twins["tower"]), tm.TOWER_PROMPT, cache=cache)
    tower_chat = hf.TransformersCausalMT(str(twins["tower"]), "{text}", cache=cache)
    common = {
        "api_key": KEY,
        "asr": asr,
        "mt": tower_for_audio,
        "responder": lambda text, body: tower_chat.translate([text])[0],
    }
    servers = {
        "voxtral": VLLMServer({systems.presets()["remote-voxtral"]["model"]: "audio"}, **common),
        "phi4": VLLMServer({PHI4_BASE: "text", "speech": "audio"}, **common),
        "whisper": VLLMServer({"openai/whisper-large-v3": "transcription"}, **common),
        "tower": VLLMServer({"Unbabel/Tower-Plus-9B": "text"}, **common),
    }
    for srv in servers.values():
        srv.start()
    yield servers
    for srv in servers.values():
        srv.stop()


def served_params(preset: str, vllm) -> dict:
    """The preset as a study names it, pointed at the fake servers."""
    urls = {
        "remote-voxtral": {"base_url": vllm["voxtral"].base_url},
        "remote-phi4": {"base_url": vllm["phi4"].base_url},
        "remote-cascade": {"asr_base_url": vllm["whisper"].base_url, "mt_base_url": vllm["tower"].base_url},
    }
    return {"preset": preset, **urls[preset]}


@pytest.mark.parametrize("preset", ["remote-voxtral", "remote-phi4", "remote-cascade"])
def test_remote_preset_requests_are_what_vllm_accepts(database, twins, vllm, tmp_path, monkeypatch, preset):
    """Each served preset translates a recording through the worker; every request it sent passed
    the vLLM schema checks (tests/vllm_server.py), and the output is stored as the translation."""
    monkeypatch.setenv(KEY_ENV, KEY)
    for srv in vllm.values():
        srv.requests.clear()
    cfg = systems.presets()[preset]
    study_with(database, tmp_path, preset, served_params(preset, vllm), kind=cfg["kind"])
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    ex_id, rid = record_for(database, preset, twins["clips"]["hello"], tmp_path / "media")

    pipeline.process_recording(database, rid, ModelCache(device="cpu"))

    tr = recordings.translation(database, ex_id)
    assert (tr["system_id"], tr["text"]) == (preset, "Olá mundo.")
    sent = [r for srv in vllm.values() for r in srv.requests]
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in sent)
    if cfg["kind"] == "remote":
        (req,) = sent
        body = req.json
        assert req.path == "/v1/chat/completions" and body["model"] == cfg["model"]
        audio, text = body["messages"][0]["content"]
        assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
        assert text == {"type": "text", "text": cfg["prompt"]}
        assert tr["transcript"] is None
    else:
        asr_req, mt_req = vllm["whisper"].requests[0], vllm["tower"].requests[0]
        assert asr_req.form == {"model": "openai/whisper-large-v3", "response_format": "json", "language": "en"}
        assert mt_req.json["messages"] == [
            {"role": "user", "content": tm.TOWER_PROMPT.replace("{text}", "Hello world.")}
        ]
        assert tr["transcript"] == "Hello world."


def test_the_fake_vllm_refuses_what_vllm_refuses(twins, vllm, monkeypatch):
    """The checks can fail: audio sent to a text-only model, the Phi-4 base name (no speech LoRA),
    a model vLLM does not serve, a data: URL inside input_audio, a field vLLM does not know."""
    import httpx

    from services.models.backends.remote import RemoteSpeechLLM

    monkeypatch.setenv(KEY_ENV, KEY)
    clip = str(twins["clips"]["hello"])
    for srv, model, said in (
        (vllm["tower"], "Unbabel/Tower-Plus-9B", "At most 0 audio"),
        (vllm["phi4"], PHI4_BASE, "At most 0 audio"),
        (vllm["voxtral"], "voxtral", "does not exist"),
    ):
        with pytest.raises(RuntimeError, match=said):
            RemoteSpeechLLM(srv.base_url, model, tm.SPEECH_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
    url = vllm["voxtral"].base_url + "/chat/completions"
    model = systems.presets()["remote-voxtral"]["model"]
    audio = {"type": "input_audio", "input_audio": {"data": "data:audio/wav;base64,UklGRg==", "format": "wav"}}
    for body, said in (
        ({"model": model, "messages": [{"role": "user", "content": [audio]}]}, "data: URL"),
        ({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_new_tokens": 5}, "unknown fields"),
    ):
        r = httpx.post(url, json=body, headers={"Authorization": f"Bearer {KEY}"})
        assert r.status_code == 400 and said in r.json()["error"]["message"]


# -- what this environment cannot build: said before any weights are read ----------------------
def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(_installed("torchvision") and _installed("peft"), reason="torchvision and peft are installed")
@pytest.mark.parametrize("adapter", [True, False])
def test_phi4_without_its_packages_says_what_to_install_before_loading(tmp_path, adapter):
    """Phi-4-multimodal's processor includes its image processor, which transformers builds only
    with torchvision, and its speech LoRA adapter needs peft: the backend names what is missing
    at once, instead of reading 11 GB of weights and then failing on the processor."""
    from transformers import Phi4MultimodalConfig

    folder = tmp_path / "phi4"
    Phi4MultimodalConfig().save_pretrained(folder)  # config only: the check comes before weights
    if adapter:
        (folder / "speech-lora").mkdir()
    missing = [m for m in ("torchvision",) + (("peft",) if adapter else ()) if not _installed(m)]
    cache = ModelCache(device="cpu")
    st = hf.TransformersSpeechLLM(str(folder), tm.SPEECH_PROMPT, cache=cache)
    with pytest.raises(BackendUnavailable) as err:
        st.translate_audio("unused.wav")
    assert f"pip install {' '.join(missing)}" in str(err.value)
    assert "Phi-4-multimodal" in str(err.value)
    assert cache.loads == 0


# -- Phi-4-multimodal's tiny twin, in the environment that can build it ------------------------
PHI4_PYTHON = Path(__file__).resolve().parent.parent / ".venv-phi4" / "bin" / "python"


@pytest.mark.timeout(900)
def test_phi4_twin_translates_in_its_own_venv():
    """tests/test_paper_phi4.py (the paper-phi4 preset on Phi-4-multimodal's tiny twin) needs
    torchvision and peft, which do not install beside this torch: it runs in .venv-phi4
    (make phi4-venv), which CI builds; a local checkout without it skips, saying so."""
    if not PHI4_PYTHON.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{PHI4_PYTHON} is missing: CI builds it with `make phi4-venv` before the tests")
        pytest.skip(
            "no .venv-phi4: `make phi4-venv` builds Phi-4's environment (torch 2.14.1, torchvision, "
            "peft; ~6 GB), then this runs tests/test_paper_phi4.py in it"
        )
    root = PHI4_PYTHON.parent.parent.parent
    run = subprocess.run(
        [str(PHI4_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_paper_phi4.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=840,
    )
    tail = (run.stdout + run.stderr)[-3000:]
    assert run.returncode == 0, tail
    # every test ran there: a skip would mean .venv-phi4 lacks what the file needs
    summary = run.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "deselected" not in summary, tail
