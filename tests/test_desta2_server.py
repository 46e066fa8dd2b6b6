"""DeSTA2's path (paper 000's fourth system): its own OpenAI-compatible server
(tools/desta2_server.py, environment requirements-desta2.txt), reached by the app's
remote backend through the remote-desta2 preset; tested on a tiny DeSTA-like model whose remote
code (tests/tiny_desta_code.py) follows DeSTA2's structure (Whisper perception, Q-Former
connector, Llama LM, chat() with an "audio" role), loaded with trust_remote_code as DeSTA2 is.
The same model also runs the app's in-process DeSTA branch (paper-desta2), and the server runs
as a subprocess in its own pinned environment (.venv-desta2, `make desta2-venv`: transformers 4.x,
as DeSTA2's real remote code needs).
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import base64  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
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
from storage.usability import recordings  # noqa: E402
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


def test_remote_desta2_preset_translates_a_recording_through_the_server(database, desta, server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    chats = []
    real_chat = server.model.chat
    monkeypatch.setattr(
        server.model, "chat", lambda messages, **kw: (chats.append((messages, kw)), real_chat(messages, **kw))[1]
    )
    study_with(
        database, tmp_path, "remote-desta2", {"preset": "remote-desta2", "base_url": server.base_url}, kind="remote"
    )
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    ex_id, rid = record_for(database, "remote-desta2", desta["clips"]["morning"], tmp_path / "media")

    pipeline.process_recording(database, rid, ModelCache(device="cpu"))

    tr = recordings.translation(database, ex_id)
    assert (tr["system_id"], tr["text"], tr["transcript"]) == ("remote-desta2", "Bom dia a todos.", None)
    # DeSTA2's own message format, the preset's prompt, greedy (the app sends temperature 0)
    ((messages, kw),) = chats
    assert [m["role"] for m in messages] == ["system", "audio", "user"]
    assert messages[2]["content"] == systems.presets()["remote-desta2"]["prompt"] == tm.DESTA_PROMPT
    assert kw == {"max_new_tokens": 512, "do_sample": False}
    assert not Path(messages[1]["content"]).exists()  # the clip's temporary file is gone


def test_the_server_refuses_what_it_cannot_serve(desta, server, monkeypatch):
    import httpx

    monkeypatch.setenv(KEY_ENV, KEY)
    clip = str(desta["clips"]["hello"])
    assert (
        RemoteSpeechLLM(server.base_url, SERVED, tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
        == "Olá mundo."
    )
    with pytest.raises(RuntimeError, match="does not exist"):
        RemoteSpeechLLM(server.base_url, "desta", tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
    monkeypatch.setenv(KEY_ENV, "wrong")
    with pytest.raises(RuntimeError, match="401"):
        RemoteSpeechLLM(server.base_url, SERVED, tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
    auth = {"Authorization": f"Bearer {KEY}"}
    url = server.base_url + "/chat/completions"
    not_wav = base64.b64encode(b"not a wav").decode()
    for content, said in (
        ("just text", "exactly one input_audio"),
        ([{"type": "input_audio", "input_audio": {"data": not_wav, "format": "wav"}}], "not a WAV"),
    ):
        r = httpx.post(url, json={"model": SERVED, "messages": [{"role": "user", "content": content}]}, headers=auth)
        assert r.status_code == 400 and said in r.json()["error"]["message"]
    assert httpx.get(server.base_url + "/models", headers=auth).json()["data"][0]["id"] == SERVED


def test_paper_desta2_preset_runs_in_process_on_the_twin(database, desta, tmp_path):
    """The in-process branch (transformers 5, trust_remote_code from the preset, model.chat) on
    the same model, through the worker."""
    study_with(
        database, tmp_path, "paper-desta2", {"preset": "paper-desta2", "model": str(desta["model"])}, kind="direct"
    )
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    ex_id, rid = record_for(database, "paper-desta2", desta["clips"]["hello"], tmp_path / "media")
    cache = ModelCache(device="cpu")

    pipeline.process_recording(database, rid, cache)

    tr = recordings.translation(database, ex_id)
    assert (tr["system_id"], tr["text"]) == ("paper-desta2", "Olá mundo.")
    (entry,) = [e for k, e in cache._entries.items() if k.startswith("st/transformers/")]
    assert entry.value.family == "desta" and type(entry.value.model).__name__ == "TinyDestaModel"
    assert isinstance(systems.from_preset("paper-desta2").model, hf.TransformersSpeechLLM)


def test_the_server_module_imports_nothing_of_the_app():
    """It runs in DeSTA2's own environment, where the app's packages are not installed."""
    code = (
        "import sys; sys.path.insert(0, 'tools'); import desta2_server; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'gradio', "
        "'httpx', 'services', 'storage', 'sqlite_utils', 'numpy')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the server in its own pinned environment, as `make desta2-server` runs it -----------------
DESTA2_PYTHON = ROOT / ".venv-desta2" / "bin" / "python"
PINNED = dict(re.findall(r"^(torch|transformers)==(\S+)", (ROOT / "requirements-desta2.txt").read_text(), re.M))
READY = re.compile(r"serving at (http://\S+/v1) \(transformers (\S+), torch (\S+)\)")
STARTUP_S = 240  # torch's import and the twin's load on 2 busy cores take well under a minute


class ServerProcess:
    """tools/desta2_server.py under .venv-desta2/bin/python; its output (stdout and stderr) is
    drained by a thread, so a chatty server never blocks on a full pipe."""

    def __init__(self, model: Path, hf_home: Path):
        env = dict(
            os.environ,
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HOME=str(hf_home),
            TRADLAB_KEY_REMOTE=KEY,
            PYTHONUNBUFFERED="1",
        )
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen(
            [
                str(DESTA2_PYTHON),
                str(ROOT / "tools" / "desta2_server.py"),
                "--model",
                str(model),
                "--served-model-name",
                SERVED,
                "--device",
                "cpu",
                "--port",
                "0",
                "--api-key-env",
                KEY_ENV,
            ],
            cwd=hf_home,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines[-60:])

    def wait_ready(self, timeout_s: float) -> re.Match:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = next((m for m in map(READY.search, list(self.lines)) if m), None)
            if found:
                return found
            if self.proc.poll() is not None:
                self._reader.join(5)
                raise AssertionError(f"the server exited ({self.proc.returncode}) before serving:\n{self.output()}")
            time.sleep(0.2)
        raise AssertionError(f"the server did not serve within {timeout_s} s:\n{self.output()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)


@pytest.fixture(scope="module")
def pinned_server(desta, tmp_path_factory):
    """The server as a subprocess in .venv-desta2 on the twin's folder (built above under the
    app's transformers 5, loaded there with trust_remote_code under the pinned 4.x); killed at
    the end even when a test fails. Skips without .venv-desta2, except in CI, which builds it."""
    if not DESTA2_PYTHON.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{DESTA2_PYTHON} is missing: CI builds it with `make desta2-venv` before the tests")
        pytest.skip(
            "no .venv-desta2: `make desta2-venv` builds DeSTA2's environment (requirements-desta2.txt: "
            "torch 2.13.0, transformers 4.51.3, librosa; ~1.5 GB, about a minute), then this runs "
            "tools/desta2_server.py in it"
        )
    srv = ServerProcess(desta["model"], tmp_path_factory.mktemp("desta2_hf_home"))
    try:
        ready = srv.wait_ready(STARTUP_S)
        # without a local label (torch's wheel here is 2.13.0+cpu)
        srv.base_url = ready.group(1)
        srv.versions = {"transformers": ready.group(2), "torch": ready.group(3).split("+")[0]}
        yield srv
    finally:
        srv.stop()


@pytest.mark.timeout(600)
def test_remote_desta2_preset_translates_through_the_server_in_its_pinned_venv(
    database, desta, pinned_server, tmp_path, monkeypatch
):
    # the pins of requirements-desta2.txt, not the app's transformers 5
    assert pinned_server.versions == PINNED, pinned_server.output()
    assert PINNED["transformers"].startswith("4.")
    monkeypatch.setenv(KEY_ENV, KEY)
    study_with(
        database,
        tmp_path,
        "remote-desta2",
        {"preset": "remote-desta2", "base_url": pinned_server.base_url},
        kind="remote",
    )
    add_participants(database, "demo", "sender", 1, "USW", "Woman")
    ex_id, rid = record_for(database, "remote-desta2", desta["clips"]["morning"], tmp_path / "media")

    pipeline.process_recording(database, rid, ModelCache(device="cpu"))

    tr = recordings.translation(database, ex_id)
    assert (tr["system_id"], tr["text"], tr["transcript"]) == ("remote-desta2", "Bom dia a todos.", None), (
        pinned_server.output()
    )
    clip = str(desta["clips"]["hello"])
    assert (
        RemoteSpeechLLM(pinned_server.base_url, SERVED, tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
        == "Olá mundo."
    )
    monkeypatch.setenv(KEY_ENV, "wrong")
    with pytest.raises(RuntimeError, match="401"):
        RemoteSpeechLLM(pinned_server.base_url, SERVED, tm.DESTA_PROMPT, api_key_env=KEY_ENV).translate_audio(clip)
    # both translations reached the server's own endpoint (its one log line per request)
    assert sum('"POST /v1/chat/completions HTTP/1.1" 200' in line for line in pinned_server.lines) == 2, (
        pinned_server.output()
    )
