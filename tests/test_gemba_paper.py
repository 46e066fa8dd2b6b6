"""GEMBA-DA as paper 003 ran it (issue 20, point 3): its Table 3 prompts (plain, context,
paraphrased), the languages of the pair named in English, up to 256 new tokens, the appendix A.1
parsing rule and the rescaling to 0-1; per-language prompts and the context prompts in the audit.

Reference texts, quoted:
- paper 003 (Watching the watchers: gender disparities in MT quality estimation), appendix A,
  Table 3 "Templates for LMs", as printed (its typographic quotes '' '' and its placeholder
  spelling "{hyphothesis}"; the print flattens the line breaks);
- appendix A.1 "Computing DA Scores", GEMBA: "we use greedy decoding, with a maximum number of
  generated tokens of 256 ... We post-process each output using regexes to capture the
  recommended score, e.g., 'i would score this translation (\\d+(\\.\\d+)?).' ... If no patterns
  are matched, we take the first integer number in the response. Since some models produced
  numbered lists (e.g., "1. [...]"), we filter out every row with a numerical score lower than
  ten or without a score. As prompts request a score between 0 and 100, we rescale them to the
  interval 0 to 1 after extraction."
- the GEMBA-DA prompt of Kocmi & Federmann (2023), github.com/MicrosoftTranslator/GEMBA,
  gemba/prompt.py, prompts["GEMBA-DA"]: 'Score the following translation from {source_lang} to
  {target_lang} on a continuous scale from 0 to 100, where a score of zero means "no meaning
  preserved" and score of one hundred means "perfect meaning and grammar".\\n\\n{source_lang}
  source: "{source_seg}"\\n{target_lang} translation: "{target_seg}"\\nScore: ' (paper 003's
  Table 3 drops the "a" of "where a score"; the paper's wording is used)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from services.metrics import registry as metrics  # noqa: F401  (registers the metrics; imports metrics_gemba)
from services.metrics.gemba import LANGUAGE_NAMES, PROMPTS, GembaDA, factory, language_name, parse_score_paper
from services.qe import audit as qe_audit
from tests.openai_server import OpenAIServer

TABLE_3 = {
    "gemba": "Score the following translation from {src_lang} to {tgt_lang} on a continuous scale from 0 to 100, "
    "where score of zero means ‘‘no meaning preserved’’ and score of one hundred means ‘‘perfect meaning "
    "and grammar’’. {src_lang} source: ‘‘{source}’’ {tgt_lang} translation: ‘‘{hyphothesis}’’ Score:",
    "context": "Score the following translation from {src_lang} to {tgt_lang} on a continuous scale from 0 to 100 "
    "given the preceding context, where score of zero means ‘‘no meaning preserved’’ and score of one "
    "hundred means ‘‘perfect meaning and grammar’’. {src_lang} source: ‘‘{context}’’ {src_lang} source: "
    "‘‘{source}’’ {tgt_lang} translation: ‘‘{hyphothesis}’’ Score:",
    "paraphrased": "Score the following translation from {src_lang} to {tgt_lang} on a continuous scale from 0 to "
    "100, where score of zero means ‘‘no meaning preserved’’ and score of one hundred means ‘‘perfect "
    "meaning and grammar’’. You can use the preceding context to evaluate the translation of the "
    "source. {src_lang} source: ‘‘{context}’’ {src_lang} preceding context: ‘‘{source}’’ {tgt_lang} "
    "translation: ‘‘{hyphothesis}’’ Score:",
}
GEMBA_REPO_DA = (
    "Score the following translation from {source_lang} to {target_lang} on a continuous scale from 0 "
    'to 100, where a score of zero means "no meaning preserved" and score of one hundred means "perfect '
    'meaning and grammar".\n\n{source_lang} source: "{source_seg}"\n{target_lang} translation: '
    '"{target_seg}"\nScore: '
)


def _flatten(text: str) -> str:
    return " ".join(text.replace("‘‘", '"').replace("’’", '"').replace("{hyphothesis}", "{hypothesis}").split())


@pytest.mark.parametrize("variant", ["gemba", "context", "paraphrased"])
def test_prompts_are_table_3(variant):
    assert _flatten(PROMPTS[variant]) == _flatten(TABLE_3[variant])
    assert PROMPTS[variant].endswith('translation: "{hypothesis}"\nScore: ')


def test_plain_prompt_is_the_gemba_da_prompt_with_the_papers_wording():
    ours = (
        PROMPTS["gemba"]
        .replace("{src_lang}", "{source_lang}")
        .replace("{tgt_lang}", "{target_lang}")
        .replace("{source}", "{source_seg}")
        .replace("{hypothesis}", "{target_seg}")
    )
    assert ours == GEMBA_REPO_DA.replace("where a score of zero", "where score of zero")


def test_language_codes_become_english_names():
    assert language_name("pt") == "Portuguese" and language_name("pt-BR") == "Portuguese"
    assert language_name("it_IT") == "Italian" and language_name("Brazilian Portuguese") == "Brazilian Portuguese"
    for code in ("ar", "de", "es", "fr", "hi", "it", "pt", "ru"):  # MT-GenEval's eight, GATE's, GeNTE's
        assert code in LANGUAGE_NAMES
    with pytest.raises(ValueError, match="unknown language code"):
        language_name("xx")
    judge = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1", src_lang="en", tgt_lang="it")
    assert judge.prompt("Hi.", "Ciao.").startswith("Score the following translation from English to Italian ")
    assert 'Italian translation: "Ciao."' in judge.prompt("Hi.", "Ciao.")
    es = judge.for_languages("en", "es")
    assert "from English to Spanish" in es.prompt("a", "b") and "to Italian" in judge.prompt("a", "b")
    assert es.model != judge.model and "English->Spanish" in es.model  # separate cache keys


@pytest.mark.parametrize(
    "text, score",
    [
        ("I would score this translation 85.5 out of 100.", 85.5),
        ("i would score this translation 70", 70.0),
        ("After careful review, I WOULD SCORE THIS TRANSLATION 95.", 95.0),
        ("Score: 90", 90.0),
        ("90", 90.0),
        ("85.5", 85.0),  # no pattern: the first integer
        ("The translation deserves 80 points, maybe 85.", 80.0),
        ("10", 10.0),
        ("100", 100.0),
    ],
)
def test_paper_parser_reads(text, score):
    assert parse_score_paper(text) == (score, "")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("1. Accuracy: good\n2. Fluency: good\nScore: 90", "below 10"),
        ("5", "below 10"),
        ("0", "below 10"),
        ("The translation is good.", "no number"),
        ("", "empty"),
        ("150", "outside 0-100"),
    ],
)
def test_paper_parser_drops(text, reason):
    value, why = parse_score_paper(text)
    assert value is None and reason in why


# -- the remote backend with the paper's defaults ---------------------------------------------


def _reply(content):
    return 200, json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "judge",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }
    ).encode()


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(models={"judge"}) as srv:
        yield srv


def test_defaults_are_the_papers(server):
    server.requests.clear()
    judge = GembaDA("remote", "judge", base_url=server.base_url)
    assert (judge.prompt_variant, judge.parser, judge.scale_name, judge.max_new_tokens) == (
        "gemba",
        "paper",
        "0-1",
        256,
    )
    server.override = _reply("I would score this translation 85.5, as it is fluent.")
    try:
        assert judge.score(["Hello."], ["Olá."]) == [pytest.approx(0.855)]
        (req,) = [r for r in server.requests if r.path == "/v1/chat/completions"]
        assert req.json["max_tokens"] == 256 and req.json["temperature"] == 0
        server.override = _reply("1. Accuracy\n2. Fluency")
        assert judge.score(["Hello."], ["Olá."]) == [None]
        (f,) = judge.failures
        assert "below 10" in f["reason"] and f["answer"] == "1. Accuracy\n2. Fluency"
    finally:
        server.override = None


def test_factory_reads_the_variant_settings(monkeypatch):
    monkeypatch.setenv("TRADLAB_GEMBA_PROMPT", "paraphrased")
    monkeypatch.setenv("TRADLAB_GEMBA_PARSER", "strict")
    monkeypatch.setenv("TRADLAB_GEMBA_SCALE", "0-100")
    monkeypatch.setenv("TRADLAB_GEMBA_MAX_NEW_TOKENS", "32")
    m = factory(backend="remote", model="judge", base_url="http://127.0.0.1:9/v1")
    assert (m.prompt_variant, m.parser, m.scale_name, m.max_new_tokens) == ("paraphrased", "strict", "0-100", 32)
    assert m.supports_context and "prompt paraphrased" in m.model
    monkeypatch.setenv("TRADLAB_GEMBA_PROMPT", "fancy")
    with pytest.raises(ValueError, match="prompt variant"):
        factory(backend="remote", model="judge", base_url="http://127.0.0.1:9/v1")


# -- in the audit -------------------------------------------------------------------------------


class Asked:
    """Replaces GembaDA.ask: records every prompt, answers from a function of the prompt."""

    def __init__(self, answer=lambda p: "90"):
        self.prompts: list[str] = []
        self.answer = answer

    def __call__(self, judge, prompts):
        self.prompts += prompts
        return [self.answer(p) for p in prompts]


PAIRS = pd.DataFrame(
    {
        "instance_id": ["1", "2", "1"],
        "lang": ["pt", "pt", "it"],
        "source": ["The nurse arrived.", "The judge left.", "The doctor is here."],
        "hyp_f": ["A enfermeira chegou.", "A juíza saiu.", "La dottoressa è qui."],
        "hyp_m": ["O enfermeiro chegou.", "O juiz saiu.", "Il dottore è qui."],
        "gold": ["F", "M", "F"],
        "context": ["Ana is a nurse.", "Rui is a judge.", "Lia is a doctor."],
    }
)


def test_the_audit_names_each_rows_language(monkeypatch):
    asked = Asked(lambda p: "I would score this translation 80" if "A enfermeira" in p else "90")
    monkeypatch.setattr(GembaDA, "ask", lambda self, prompts: asked(self, prompts))
    judge = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1")
    scored = qe_audit.score_pairs(PAIRS, judge)
    it_prompts = [p for p in asked.prompts if "dottore" in p or "dottoressa" in p]
    pt_prompts = [p for p in asked.prompts if p not in it_prompts]
    assert len(it_prompts) == 2 and len(pt_prompts) == 4
    assert all("from English to Italian" in p and "Italian translation:" in p for p in it_prompts)
    assert all("from English to Portuguese" in p for p in pt_prompts)
    assert scored["score_f"].tolist() == pytest.approx([0.8, 0.9, 0.9])


def test_context_prompts_get_the_pairs_context(monkeypatch):
    asked = Asked()
    monkeypatch.setattr(GembaDA, "ask", lambda self, prompts: asked(self, prompts))
    judge = GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1", prompt_variant="context")
    scored = qe_audit.score_pairs(PAIRS, judge)
    assert scored.attrs["qe_scoring"]["context"] == "prompt"
    assert (
        'English source: "Ana is a nurse."\nEnglish source: "The nurse arrived."\nPortuguese translation: '
        '"A enfermeira chegou."\nScore: '
    ) in asked.prompts[0]
    assert "given the preceding context" in asked.prompts[0]
    with pytest.raises(ValueError, match="context mode 'none'"):
        qe_audit.score_pairs(PAIRS, judge, context="mon")
    with pytest.raises(ValueError, match="needs a context column"):
        qe_audit.score_pairs(PAIRS.drop(columns="context"), judge)
    with pytest.raises(ValueError, match="needs a context"):
        judge.score(["a"], ["b"])


def test_unreadable_answers_are_recorded_in_the_audit(monkeypatch):
    asked = Asked(lambda p: "I cannot judge this." if "Il dottore" in p else "90")
    monkeypatch.setattr(GembaDA, "ask", lambda self, prompts: asked(self, prompts))
    scored = qe_audit.score_pairs(PAIRS, GembaDA("remote", "judge", base_url="http://127.0.0.1:9/v1"))
    (f,) = scored.attrs["qe_scoring"]["failures"]
    assert (f["lang"], f["column"], f["row"], f["answer"]) == ("it", "hyp_m", 2, "I cannot judge this.")
    assert pd.isna(scored.loc[2, "score_m"])
    result = qe_audit.audit(scored, thresholds=[0.5])
    assert any("could not be read as a score" in w for w in result.warnings)
