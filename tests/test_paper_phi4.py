"""The Phi-4-multimodal preset (paper-phi4) runs on a tiny twin of its real architecture:
Phi4MultimodalForCausalLM with Phi4MultimodalProcessor and its speech LoRA adapter in
speech-lora/, loaded by the app's backend as the full model would be (from_pretrained from the
folder, the preset's dtype, the adapter through peft, the chat template, generate, decode).

It needs torchvision (Phi-4's processor includes its image processor) and peft (the adapter),
which do not install beside the app's torch: it runs in its own environment,
`make phi4-venv` then `.venv-phi4/bin/python -m pytest -q tests/test_paper_phi4.py`.
tests/test_paper_systems.py runs it there from the main suite.
"""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip(
    "torchvision", reason="Phi-4's processor needs torchvision: run this file in .venv-phi4 (make phi4-venv)"
)
pytest.importorskip("peft", reason="Phi-4's speech adapter needs peft: run this file in .venv-phi4 (make phi4-venv)")
torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_models as tm  # noqa: E402
from services.models import systems  # noqa: E402
from services.models.cache import ModelCache  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.fixture(autouse=True)
def offline(no_network):
    """The hub off and the network refused (conftest's no_network)."""


class BF16Cache(ModelCache):
    """The app's CUDA dtype policy on CPU (bf16 as configured, "auto" the checkpoint's own), so
    the preset runs in the dtype it names."""

    def dtype(self, requested=None):
        if requested in ("bfloat16", "bf16"):
            return torch.bfloat16
        return "auto" if requested in (None, "", "auto") else torch.float32


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    root = tmp_path_factory.mktemp("phi4_twin")
    clips = tm.make_clips(root / "clips", lead_s=0.4)
    folder = tm.build_phi4(root / "phi4", clips)
    # stored as a bf16 checkpoint: the preset's "auto" (paper 000 names no precision for Phi-4)
    # loads what the checkpoint's config says
    config = json.loads((folder / "config.json").read_text())
    config["dtype"] = "bfloat16"
    (folder / "config.json").write_text(json.dumps(config))
    return {"clips": clips, "phi4": folder}


def _system(folder: Path, cache):
    return systems.build("paper-phi4", systems.resolve(preset="paper-phi4") | {"model": str(folder)}, cache)


def test_paper_phi4_preset_translates_each_recording_on_its_tiny_twin(twin, monkeypatch):
    """Each clip gets its own Portuguese, through the speech adapter, in the checkpoint's bf16, with
    the preset's prompt inside Phi-4's chat format and one audio token per audio embedding."""
    from transformers import Phi4MultimodalForCausalLM

    preset = systems.presets()["paper-phi4"]
    assert (preset["kind"], preset["dtype"]) == ("direct", "auto")
    seen = []
    real = Phi4MultimodalForCausalLM.generate
    monkeypatch.setattr(
        Phi4MultimodalForCausalLM, "generate", lambda self, *a, **kw: (seen.append(kw), real(self, *a, **kw))[1]
    )
    cache = BF16Cache(device="cpu")
    st = _system(twin["phi4"], cache)

    out = {key: st.translate_audio(str(wav)) for key, wav in twin["clips"].items()}

    assert {key: r.translation for key, r in out.items()} == {key: tm.CLIPS[key][1] for key in twin["clips"]}
    assert out["hello"].models == {"st": f"transformers-speechllm:{twin['phi4']}"}
    assert cache.loads == 1
    (entry,) = [e.value for k, e in cache._entries.items() if k.startswith("st/transformers/")]
    model, proc = entry.model, entry.processor
    assert type(model) is Phi4MultimodalForCausalLM and type(proc).__name__ == "Phi4MultimodalProcessor"
    assert model.dtype == torch.bfloat16 and out["hello"].precision == {"st": "bfloat16"}
    assert model.active_adapters() == ["speech"]
    # the prompt: Phi-4's user turn with the audio expanded to its embeddings, then the preset's text
    ids = seen[0]["input_ids"][0]
    n_audio = int((ids == proc.audio_token_id).sum())
    assert n_audio == int(seen[0]["audio_embed_sizes"][0]) > 0
    assert proc.tokenizer.decode(ids) == (
        "<|user|>" + "<|audio|>" * n_audio + preset["prompt"] + "<|end|><|assistant|>"
    )
    assert seen[0]["audio_input_features"].dtype == torch.bfloat16


def test_without_its_speech_adapter_the_twin_does_not_translate(twin, tmp_path):
    """A folder without speech-lora/ is taken to have the adapter merged: this twin's base model
    then answers with the English it hears, so the adapter the backend loads is what translates."""
    bare = tmp_path / "phi4-no-lora"
    shutil.copytree(twin["phi4"], bare, ignore=shutil.ignore_patterns("speech-lora"))
    cache = BF16Cache(device="cpu")
    out = _system(bare, cache).translate_audio(str(twin["clips"]["hello"]))
    assert out.translation == tm.CLIPS["hello"][0]
    (entry,) = [e.value for k, e in cache._entries.items() if k.startswith("st/transformers/")]
    assert not getattr(entry.model, "_hf_peft_config_loaded", False)


def test_a_peft_older_than_transformers_wants_is_said_before_the_weights(twin, monkeypatch):
    """transformers' set_adapter refuses a peft older than its MIN_PEFT_VERSION, after the
    weights are read (11 GB for the real model): the backend says it first, naming the version."""
    from transformers.integrations import peft as tf_peft

    from services.models.backends import BackendUnavailable

    monkeypatch.setattr(tf_peft, "MIN_PEFT_VERSION", "99.0")
    cache = BF16Cache(device="cpu")
    with pytest.raises(BackendUnavailable, match=r"pip install -U 'peft>=99.0'"):
        _system(twin["phi4"], cache).translate_audio(str(twin["clips"]["hello"]))
    assert cache.loads == 0
