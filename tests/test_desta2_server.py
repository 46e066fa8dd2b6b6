"""DeSTA2's path (paper 000's fourth system): its own OpenAI-compatible server
(tools/desta2_server.py, environment requirements-desta2.txt), reached by the app's
remote backend through the remote-desta2 preset; tested on a tiny DeSTA-like model whose remote
code (tests/tiny_desta_code.py) follows DeSTA2's structure (Whisper perception, Q-Former
connector, Llama LM, chat() with an "audio" role), loaded with trust_remote_code as DeSTA2 is.
The same model also runs the app's in-process DeSTA branch (paper-desta2).
"""
from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import base64  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_models as tm  # noqa: E402
from services.models import systems  # noqa: E402
from services.models.backends import hf  # noqa: E402
from services.models.backends.remote import RemoteSpeechLLM  # noqa: E402
from services.models.cache import ModelCache  # noqa: E402
from services.setup.enrolment import add_participants  # noqa: E402
from services.usability import pipeline  # noqa: E402
from storage import results  # noqa: E402
from tests.helpers.paper_systems import record_for, study_with  # noqa: E402
from tools.desta2_server import Desta2Server, load  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "TRADLAB_KEY_REMOTE"
KEY = "sk-desta-test"
SERVED = systems.presets()["remote-desta2"]["model"]


@pytest.fixture(autouse=True)
def offline(no_network):
    """The hub off and the network refused (conftest's no_network)."""


@pytest.fixture(scope="module")
def desta(tmp_path_factory):
    """The DeSTA-like twin: an 80-bin Whisper (DeSTA2 perceives with whisper-small) and a Llama
    with Llama 3's chat template. ~25 s on 2 busy cores; under 1 MB."""
    root = tmp_path_factory.mktemp("desta_twin")
    clips = tm.make_clips(root / "clips", lead_s=0.4)
    whisper = tm.build_whisper(root / "whisper", clips)["multilingual"]
    return {"clips": clips, "model": tm.build_tiny_desta(root / "desta", clips, whisper)}


@pytest.fixture(scope="module")
def server(desta):
    srv = Desta2Server(load(str(desta["model"])), SERVED, api_key=KEY, port=0).start()
    yield srv
    srv.stop()


def test_remote_desta2_preset_translates_a_recording_through_the_server(database, desta, server, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    chats = []
    real_chat = server.model.chat
    monkeypatch.setattr(server.model, "chat", lambda messages, **kw: (chats.append((messages, kw)),
                                                                      real_chat(messages, **kw))[1])
    study_with(database, tmp_path, "remote-desta2", {"preset": "remote-desta2", "base_url": server.base_url},
               kind="remote")
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    ex_id, rid = record_for(database, "remote-desta2", desta["clips"]["morning"], tmp_path / "media")

    pipeline.process_recording(database, rid, ModelCache(device="cpu"))

    tr = results.translation(database, ex_id)
    assert (tr["system_id"], tr["text"], tr["transcript"]) == ("remote-desta2", "Bom dia a todos.", None)
    # DeSTA2's own message format, the preset's prompt, greedy (the app sends temperature 0)
    (messages, kw), = chats
    assert [m["role"] for m in messages] == ["system", "audio", "user"]
    assert messages[2]["content"] == systems.presets()["remote-desta2"]["prompt"] == tm.DESTA_PROMPT
    assert kw == {"max_new_tokens": 512, "do_sample": False}
    assert not Path(messages[1]["content"]).exists()          # the clip's temporary file is gone


def test_the_server_refuses_what_it_cannot_serve(desta, server, monkeypatch):
    import httpx
    monkeypatch.setenv(KEY_ENV, KEY)
    clip = str(desta["clips"]["hello"])
    assert RemoteSpeechLLM(server.base_url, SERVED, tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip) \
        == "Olá mundo."
    with pytest.raises(RuntimeError, match="does not exist"):
        RemoteSpeechLLM(server.base_url, "desta", tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
    monkeypatch.setenv(KEY_ENV, "wrong")
    with pytest.raises(RuntimeError, match="401"):
        RemoteSpeechLLM(server.base_url, SERVED, tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
    auth = {"Authorization": f"Bearer {KEY}"}
    url = server.base_url + "/chat/completions"
    not_wav = base64.b64encode(b"not a wav").decode()
    for content, said in (("just text", "exactly one input_audio"),
                          ([{"type": "input_audio", "input_audio": {"data": not_wav, "format": "wav"}}],
                           "not a WAV")):
        r = httpx.post(url, json={"model": SERVED, "messages": [{"role": "user", "content": content}]}, headers=auth)
        assert r.status_code == 400 and said in r.json()["error"]["message"]
    assert httpx.get(server.base_url + "/models", headers=auth).json()["data"][0]["id"] == SERVED


def test_paper_desta2_preset_runs_in_process_on_the_twin(database, desta, tmp_path):
    """The in-process branch (transformers 5, trust_remote_code from the preset, model.chat) on
    the same model, through the worker."""
    study_with(database, tmp_path, "paper-desta2", {"preset": "paper-desta2", "model": str(desta["model"])},
               kind="direct")
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    ex_id, rid = record_for(database, "paper-desta2", desta["clips"]["hello"], tmp_path / "media")
    cache = ModelCache(device="cpu")

    pipeline.process_recording(database, rid, cache)

    tr = results.translation(database, ex_id)
    assert (tr["system_id"], tr["text"]) == ("paper-desta2", "Olá mundo.")
    (entry,) = [e for k, e in cache._entries.items() if k.startswith("st/transformers/")]
    assert entry.value.family == "desta" and type(entry.value.model).__name__ == "TinyDestaModel"
    assert isinstance(systems.from_preset("paper-desta2").model, hf.TransformersSpeechLLM)


def test_the_server_module_imports_nothing_of_the_app():
    """It runs in DeSTA2's own environment, where the app's packages are not installed."""
    code = ("import sys; sys.path.insert(0, 'tools'); import desta2_server; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'gradio', "
            "'httpx', 'services', 'storage', 'sqlite_utils', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
