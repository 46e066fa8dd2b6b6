"""The LLM behind the comprehension-question features (services/models/llm.py): configuration from the
study's [llm] section and TRADLAB_LLM_* variables, the remote backend against the local
OpenAI-compatible server, the transformers backend on a tiny chat LM trained here, and the
[llm] / [questions] sections of study.toml."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from services.comprehension import settings as question_settings
from services.models import llm
from services.models.backends import BackendUnavailable
from services.study.files import StudyValidationError, load_study
from tests.openai_server import OpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tiny_models, whatever the import mode
import tiny_models as tm  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "assets" / "demo_study"
ENV = ("TRADLAB_LLM_BACKEND", "TRADLAB_LLM_MODEL", "TRADLAB_LLM_BASE_URL", "TRADLAB_LLM_API_KEY_ENV")
KEY_ENV, KEY = "TRADLAB_TEST_LLM_KEY", "sk-llm-test"


@pytest.fixture
def clean_env(monkeypatch):
    for var in ENV:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


# -- configuration ----------------------------------------------------------------------------


def test_unconfigured_llm_names_every_variable(clean_env):
    with pytest.raises(llm.LLMNotConfigured) as e:
        llm.config()
    for var in ENV:
        assert var in str(e.value)
    assert "[llm]" in str(e.value)
    assert not llm.configured({"llm": {}})
    assert isinstance(e.value, BackendUnavailable)  # the app's "missing model" family


def test_env_then_study_section_then_overrides(clean_env):
    clean_env.setenv("TRADLAB_LLM_MODEL", "env-model")
    clean_env.setenv("TRADLAB_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    clean_env.setenv("TRADLAB_LLM_API_KEY_ENV", KEY_ENV)
    cfg = llm.config()
    assert (cfg.backend, cfg.model, cfg.base_url, cfg.api_key_env) == (
        "remote",
        "env-model",
        "http://127.0.0.1:9/v1",
        KEY_ENV,
    )
    assert (cfg.temperature, cfg.max_tokens, cfg.seed) == (0.0, 512, 0)
    study = {"llm": {**llm.DEFAULTS, "model": "study-model", "temperature": 0.7, "seed": 3, "max_tokens": 64}}
    cfg = llm.config(study)
    assert (cfg.model, cfg.temperature, cfg.seed, cfg.max_tokens) == ("study-model", 0.7, 3, 64)
    assert cfg.base_url == "http://127.0.0.1:9/v1"  # not in the section: from the environment
    assert "study-model" in cfg.label and "temperature 0.7" in cfg.label and "seed 3" in cfg.label
    assert llm.config(study, model="override").model == "override"
    clean_env.delenv("TRADLAB_LLM_BASE_URL")
    assert llm.config(study).backend == "transformers"  # no URL: a local model


@pytest.mark.parametrize(
    "section, key",
    [
        ({"backend": "ollama"}, "backend"),
        ({"temperature": -1}, "temperature"),
        ({"temperature": "hot"}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"seed": 1.5}, "seed"),
        ({"base_url": "gpu-box:8000"}, "base_url"),
        ({"model": 5}, "model"),
    ],
)
def test_bad_llm_settings_are_named(section, key):
    assert key in [k for k, _ in llm.problems({**llm.DEFAULTS, **section})]


def test_remote_without_url_says_so(clean_env):
    with pytest.raises(BackendUnavailable, match="base_url"):
        llm.config({"llm": {**llm.DEFAULTS, "backend": "remote", "model": "m"}})


# -- remote backend -------------------------------------------------------------------------


def echo(text: str, body: dict) -> str:
    return "ECHO " + text.upper()


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(models={"qa-llm"}, api_key=KEY, responder=echo) as srv:
        yield srv


def test_remote_sends_the_prompt_with_the_sampling_settings(server, clean_env):
    clean_env.setenv(KEY_ENV, KEY)
    model = llm.get(
        {
            "llm": {
                **llm.DEFAULTS,
                "model": "qa-llm",
                "base_url": server.base_url,
                "api_key_env": KEY_ENV,
                "temperature": 0.5,
                "seed": 7,
                "max_tokens": 33,
            }
        }
    )
    server.requests.clear()
    assert model.complete(["Say hi.", "  ", "Again {braces} stay."]) == [
        "ECHO SAY HI.",
        "",
        "ECHO AGAIN {BRACES} STAY.",
    ]
    bodies = [r.json for r in server.requests]
    assert len(bodies) == 2  # a blank prompt is not sent
    assert bodies[0]["messages"] == [{"role": "user", "content": "Say hi."}]
    assert (bodies[0]["temperature"], bodies[0]["seed"], bodies[0]["max_tokens"]) == (0.5, 7, 33)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_remote_errors_are_clear(server, clean_env):
    clean_env.delenv(KEY_ENV, raising=False)
    model = llm.get({"llm": {**llm.DEFAULTS, "model": "qa-llm", "base_url": server.base_url, "api_key_env": KEY_ENV}})
    with pytest.raises(BackendUnavailable, match=KEY_ENV):  # the key's variable is named
        model.complete(["x"])
    clean_env.setenv(KEY_ENV, KEY)
    wrong = llm.get({"llm": {**llm.DEFAULTS, "model": "nope", "base_url": server.base_url, "api_key_env": KEY_ENV}})
    with pytest.raises(RuntimeError, match="404.*nope"):
        wrong.complete(["x"])


def test_an_existing_text_chat_still_translates(server, clean_env):
    """The server's default behaviour (the MT) is kept for tests that pass no responder."""
    with OpenAIServer(models={"mt"}) as plain:
        model = llm.get({"llm": {**llm.DEFAULTS, "model": "mt", "base_url": plain.base_url}})
        assert model.complete(["Hello world."])[0].rstrip(".!").lower() in ("olá mundo", "olá, mundo")


# -- transformers backend on a tiny trained chat LM -----------------------------------------

PAIRS = [
    ("Name the capital of France.", "Paris is the capital."),
    ("Say hello to the team.", "Hello team, good morning."),
]


@pytest.fixture(scope="module")
def chat_lm(tmp_path_factory):
    pytest.importorskip("transformers")
    return tm.build_chat_lm(tmp_path_factory.mktemp("llm") / "chat", PAIRS, steps=120)


@pytest.mark.slow
def test_transformers_backend_answers_through_the_chat_template(chat_lm, no_network, clean_env):
    from services.models.cache import ModelCache

    cache = ModelCache(device="cpu")
    clean_env.setenv("TRADLAB_LLM_MODEL", str(chat_lm))
    model = llm.get(cache=cache, max_tokens=16)
    assert model.cfg.backend == "transformers"
    assert model.complete([p for p, _ in PAIRS] + [""]) == [a for _, a in PAIRS] + [""]
    # the same cache entry as the causal MT backend: loaded once
    model.complete([PAIRS[0][0]])
    assert cache.loads == 1
    # sampling is seeded: the same seed gives the same text
    hot = llm.get(cache=cache, max_tokens=8, temperature=1.5, seed=11)
    assert hot.complete(["Tell me a story."]) == hot.complete(["Tell me a story."])


def test_transformers_backend_missing_model_is_unavailable(tmp_path, no_network, clean_env):
    model = llm.get({"llm": {**llm.DEFAULTS, "model": str(tmp_path / "absent")}})
    with pytest.raises(BackendUnavailable, match="does not exist"):
        model.complete(["x"])


# -- the [llm] and [questions] sections of study.toml ---------------------------------------


@pytest.fixture
def study(tmp_path) -> Path:
    dest = tmp_path / "study"
    shutil.copytree(DEMO, dest)
    return dest


def append(folder: Path, text: str) -> None:
    p = folder / "study.toml"
    p.write_text(p.read_text(encoding="utf-8") + "\n" + text + "\n", encoding="utf-8")


def errors_of(folder: Path) -> dict[str, str]:
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    return {err.field: err.message for err in e.value.errors}


def test_sections_are_optional_and_stored_with_their_defaults(study):
    bundle = load_study(study)
    assert "llm" not in bundle.config and "questions" not in bundle.config
    append(study, '[llm]\nmodel = "qwen"\ntemperature = 0.2\n\n[questions]\nn = 6\nauto_qa_method = "e5"')
    bundle = load_study(study)
    assert bundle.config["llm"] == {**llm.DEFAULTS, "model": "qwen", "temperature": 0.2}
    assert bundle.config["questions"] == {**question_settings.DEFAULTS, "n": 6, "auto_qa_method": "e5", "prompts": {}}


def test_prompt_override_is_read_at_import(study):
    (study / "my_prompt.txt").write_text("Ask {n} things about: {starter}", encoding="utf-8")
    append(study, '[questions]\nprompt_generate = "my_prompt.txt"')
    bundle = load_study(study)
    assert bundle.config["questions"]["prompts"] == {"generate": "Ask {n} things about: {starter}"}
    assert question_settings.prompt(bundle.config, "generate") == "Ask {n} things about: {starter}"
    assert question_settings.prompt(bundle.config, "answer") == question_settings.prompt(None, "answer")
    before = bundle.content_hash
    (study / "my_prompt.txt").write_text("Ask {n} other things about: {starter}", encoding="utf-8")
    assert load_study(study).content_hash != before  # a changed prompt is a changed study


@pytest.mark.parametrize(
    "toml, field",
    [
        ('[llm]\nbackend = "ollama"', "llm.backend"),
        ('[llm]\nmodle = "x"', "llm.modle"),
        ("[questions]\nn = 11", "questions.n"),
        ("[questions]\nn = 0", "questions.n"),
        ('[questions]\nauto_qa_method = "bleu"', "questions.auto_qa_method"),
        ('[questions]\nauto_qa_mode = "fr"', "questions.auto_qa_mode"),
        ("[questions]\nchrf_threshold = 101", "questions.chrf_threshold"),
        ('[questions]\ntranslate = "google"', "questions.translate"),
        ('[questions]\nprompt_generate = "absent.txt"', "questions.prompt_generate"),
        ('[questions]\nprompt_answer = "../outside.txt"', "questions.prompt_answer"),
    ],
)
def test_bad_sections_are_import_errors_naming_the_key(study, toml, field):
    append(study, toml)
    assert field in errors_of(study)


def test_a_prompt_without_its_placeholders_is_refused(study):
    (study / "p.txt").write_text("Answer the question.", encoding="utf-8")
    append(study, '[questions]\nprompt_answer = "p.txt"')
    message = errors_of(study)["questions.prompt_answer"]
    assert "{text}" in message and "{question}" in message


def test_starters_without_questions_need_the_questions_section(study):
    rows = (study / "questions.csv").read_text(encoding="utf-8").splitlines()
    (study / "questions.csv").write_text(
        "\n".join(r for r in rows if not r.startswith("s01,")) + "\n", encoding="utf-8"
    )
    assert "starter_id" in errors_of(study)  # as before: every starter needs questions
    append(study, "[questions]")
    bundle = load_study(study)
    assert not [q for q in bundle.corpus["usability"]["questions"] if q["starter_id"] == "s01"]
