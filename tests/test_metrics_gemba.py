"""GEMBA-DA (services/metrics/gemba.py): the answer parser, the remote backend against the local
OpenAI-compatible server (tests/openai_server.py) and the transformers backend on a tiny causal
LM trained here to answer the GEMBA prompt with "90", "10" or a word."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from services.metrics import registry as metrics
from services.metrics.gemba import GembaDA, factory, parse_score
from services.models.backends import BackendUnavailable
from tests.openai_server import OpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tiny_models, whatever the import mode
import tiny_models as tm  # noqa: E402

KEY_ENV = "TRADLAB_TEST_GEMBA_KEY"
KEY = "sk-gemba-test"

GOOD = ("Hello world.", "Olá mundo.")
BAD = ("Good morning everyone.", "O gato comeu o peixe.")
ODD = ("Thank you very much.", "Muito obrigado.")


# -- parse_score ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, score",
    [
        ("85", 85.0),
        ("Score: 85", 85.0),
        ("85/100", 85.0),
        ("85 / 100", 85.0),
        ("85 out of 100", 85.0),
        ("85.5", 85.5),
        ("85,5", 85.5),
        ("I would give it 85 points", 85.0),
        ("I would give it 85 points.", 85.0),
        ("**85**", 85.0),
        ("85%", 85.0),
        ("  90\n", 90.0),
        ("0", 0.0),
        ("100", 100.0),
        ("100.0", 100.0),
        ("Score: 72\nThe translation keeps the meaning but 3 words are wrong.", 72.0),
        ("Score:-0", 0.0),
        ("I'd rate this translation a 95.", 95.0),
    ],
)
def test_parse_score_accepts(text, score):
    assert parse_score(text) == (score, "")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        ("eighty-five", "no number"),
        ("The translation is good.", "no number"),
        ("150", "outside 0-100"),
        ("-5", "outside 0-100"),
        ("Score: 101", "outside 0-100"),
        ("1,000", "outside 0-100"),
        ("100.5", "outside 0-100"),
        ("80-90", "range"),
        ("between 80 and 90: 85 to 90", "range"),
        ("85 to 90", "range"),
        ("8/10", "another scale"),
        ("4 out of 5", "another scale"),
    ],
)
def test_parse_score_refuses(text, reason):
    value, why = parse_score(text)
    assert value is None
    assert reason in why


def test_parse_score_never_skips_to_a_later_number():
    # The first number decides: an out-of-range first number is a failure, not "the next one".
    assert parse_score("150 words; score 80") == (None, "150 is outside 0-100")


# -- the metric object and the factory ------------------------------------------------------


def test_prompt_is_the_gemba_da_prompt_filled():
    m = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1", src_lang="English", tgt_lang="Portuguese")
    p = m.prompt("He said {hi}.", "Ele disse {tgt_lang}.")
    assert p == metrics.GEMBA_DA_PROMPT.format(
        src_lang="English", tgt_lang="Portuguese", source="He said {hi}.", hypothesis="Ele disse {tgt_lang}."
    )
    assert p.endswith('Portuguese translation: "Ele disse {tgt_lang}."\nScore: ')
    assert (m.name, m.kind, m.version) == ("gemba-da", metrics.QE, "openai-compatible")
    assert m.model_id == "judge" and m.model.startswith("judge")


def test_factory_reads_env_and_names_the_variables(monkeypatch):
    for var in ("TRADLAB_GEMBA_BACKEND", "TRADLAB_GEMBA_MODEL", "TRADLAB_GEMBA_BASE_URL", "TRADLAB_GEMBA_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(BackendUnavailable) as e:
        factory()
    for var in ("TRADLAB_GEMBA_MODEL", "TRADLAB_GEMBA_BACKEND", "TRADLAB_GEMBA_BASE_URL"):
        assert var in str(e.value)
    monkeypatch.setenv("TRADLAB_GEMBA_MODEL", "judge")
    monkeypatch.setenv("TRADLAB_GEMBA_BASE_URL", "http://127.0.0.1:9/v1")
    m = factory()
    assert (m.backend, m.model_id, m.version) == ("remote", "judge", "openai-compatible")
    monkeypatch.setenv("TRADLAB_GEMBA_BACKEND", "transformers")
    m = factory(model="/no/such/folder")  # options win over the env
    assert (m.backend, m.model_id) == ("transformers", "/no/such/folder")
    assert m.version == metrics._package_version("transformers")
    monkeypatch.setenv("TRADLAB_GEMBA_BACKEND", "remote")
    monkeypatch.delenv("TRADLAB_GEMBA_BASE_URL")
    with pytest.raises(BackendUnavailable, match="TRADLAB_GEMBA_BASE_URL"):
        factory()
    with pytest.raises(BackendUnavailable, match="TRADLAB_GEMBA_BACKEND"):
        factory(backend="ollama")


def test_registering_the_factory_makes_get_work(monkeypatch):
    monkeypatch.setattr(metrics, "_FACTORIES", dict(metrics._FACTORIES))
    metrics.register("gemba-da", factory)
    m = metrics.get("gemba-da", backend="remote", model="judge", base_url="http://127.0.0.1:9/v1")
    assert isinstance(m, GembaDA)


# -- remote backend -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(models={"judge"}, api_key=KEY) as srv:
        yield srv


@pytest.fixture
def remote(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    server.requests.clear()
    # this project's strict parser on the raw 0-100 scale, 16 tokens (the paper's defaults are
    # tested in test_gemba_paper.py)
    yield GembaDA(
        "remote",
        "judge",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        parser="strict",
        scale="0-100",
        max_new_tokens=16,
    )
    server.override = None
    server.__dict__.pop("chat", None)


def _reply(content) -> tuple[int, bytes]:
    return 200, json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "judge",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }
    ).encode()


@pytest.mark.parametrize(
    "answer, score", [("85", 85.0), ("Score: 85/100", 85.0), ("I would give it 72.5 points.", 72.5)]
)
def test_remote_sends_the_filled_prompt_at_temperature_0(remote, server, answer, score):
    server.override = _reply(answer)
    assert remote.score([GOOD[0]], [GOOD[1]]) == [score]
    assert remote.failures == []
    (req,) = [r for r in server.requests if r.path == "/v1/chat/completions"]
    body = req.json
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert body["model"] == "judge" and body["temperature"] == 0 and body["max_tokens"] == 16
    (msg,) = body["messages"]
    assert msg["role"] == "user"
    assert msg["content"] == metrics.GEMBA_DA_PROMPT.format(
        src_lang="English", tgt_lang="Portuguese", source=GOOD[0], hypothesis=GOOD[1]
    )
    assert f'English source: "{GOOD[0]}"' in msg["content"]
    assert f'Portuguese translation: "{GOOD[1]}"' in msg["content"]


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("The translation is excellent.", "no number"),
        ("150", "outside 0-100"),
        ("8/10", "another scale"),
        ("", "empty"),
    ],
)
def test_remote_unparsable_answer_is_a_recorded_failure(remote, server, answer, reason):
    server.override = _reply(answer)
    assert remote.score([GOOD[0]], [GOOD[1]]) == [None]
    (f,) = remote.failures
    assert f["index"] == 0 and f["answer"] == answer.strip() and reason in f["reason"]
    assert f["source"] == GOOD[0] and f["hypothesis"] == GOOD[1]


def test_remote_batch_mixes_scores_and_failures(remote, server):
    """One request per pair; each answer parsed on its own; blank inputs never sent."""
    answers = {GOOD[1]: "Score: 95", BAD[1]: "5", ODD[1]: "I cannot score this."}

    def chat(body):  # answers by the translation in the prompt, as a judge would
        text = body["messages"][-1]["content"]
        hyp = next(h for h in answers if f'translation: "{h}"' in text)
        return json.loads(_reply(answers[hyp])[1])

    server.chat = chat
    scores = remote.score([GOOD[0], BAD[0], "", ODD[0], "Hi."], [GOOD[1], BAD[1], "Oi.", ODD[1], "  "])
    assert scores == [95.0, 5.0, None, None, 0.0]
    assert remote.failures == [
        {
            "index": 3,
            "answer": "I cannot score this.",
            "reason": "no number in the answer",
            "source": ODD[0],
            "hypothesis": ODD[1],
        }
    ]
    sent = [r.json["messages"][0]["content"] for r in server.requests if r.path == "/v1/chat/completions"]
    assert len(sent) == 3
    # failures are reset by the next call
    server.__dict__.pop("chat")
    server.override = _reply("50")
    assert remote.score([GOOD[0]], [GOOD[1]]) == [50.0] and remote.failures == []


def test_remote_http_error_raises_not_none(remote, server):
    server.override = (500, json.dumps({"error": {"message": "CUDA out of memory"}}).encode())
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        remote.score([GOOD[0]], [GOOD[1]])


def test_remote_rejects_context(remote):
    with pytest.raises(ValueError, match="context"):
        remote.score([GOOD[0]], [GOOD[1]], contexts=["Earlier sentence."])


# -- transformers backend on a tiny trained causal LM ---------------------------------------

ANSWERS = [(GOOD, "90"), (BAD, "10"), (ODD, "good")]


def build_gemba_lm(out: Path, steps: int = 120) -> Path:
    """The tiny chat Llama of tiny_models, trained instead to answer three GEMBA prompts:
    the faithful pair -> "90", the unrelated one -> "10", a third -> "good"."""
    judge = GembaDA("transformers", str(out))
    return tm.build_chat_lm(out, [(judge.prompt(s, h), a) for (s, h), a in ANSWERS], steps, max_positions=512)


@pytest.fixture(scope="module")
def gemba_lm(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return build_gemba_lm(tmp_path_factory.mktemp("gemba_lm") / "judge")


@pytest.fixture
def offline(no_network):
    """The hub off and any socket to a non-loopback address a failure (conftest's no_network)."""


@pytest.mark.slow
def test_transformers_backend_scores_with_the_trained_judge(gemba_lm, offline, monkeypatch):
    from transformers import LlamaForCausalLM

    from services.models.cache import ModelCache

    calls = []
    real = LlamaForCausalLM.generate

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LlamaForCausalLM, "generate", spy)

    cache = ModelCache(device="cpu")
    judge = GembaDA("transformers", str(gemba_lm), cache=cache)  # paper 003's defaults (A.1)
    sources = [s for (s, _), _ in ANSWERS] + [""]
    hyps = [h for (_, h), _ in ANSWERS] + ["x"]
    assert judge.score(sources, hyps) == [0.9, 0.1, None, None]  # rescaled to 0-1
    assert judge.answers[:3] == ["90", "10", "good"]
    assert judge.failures == [
        {"index": 2, "answer": "good", "reason": "no number in the answer", "source": ODD[0], "hypothesis": ODD[1]}
    ]
    (kw,) = calls  # one batch, greedy, bounded
    assert kw["do_sample"] is False and kw["max_new_tokens"] == 256
    # the prompt went through the chat template (it starts with BOS and the user turn)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gemba_lm)
    first = tok.decode(kw["input_ids"][0][kw["attention_mask"][0].bool()])
    assert first.startswith("<bos><start_of_turn>user\nScore the following translation from English to Portuguese")
    assert first.endswith("\nScore: <end_of_turn>\n<start_of_turn>model\n")

    # loaded once through the cache, and the version is transformers'
    judge.score([GOOD[0]], [GOOD[1]])
    assert cache.loads == 1
    assert judge.version == metrics._package_version("transformers")


def test_transformers_backend_missing_model_is_unavailable(tmp_path, offline):
    judge = GembaDA("transformers", str(tmp_path / "absent"))
    with pytest.raises(BackendUnavailable, match="does not exist"):
        judge.score([GOOD[0]], [GOOD[1]])
