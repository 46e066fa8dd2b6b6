"""The automatic QA score (services/metrics/auto_qa.py, the registry's "auto-qa" metric): the LLM of
tests/test_question_gen.py answers accepted questions from the starter and from translations of
known quality; scores per comparison method and mode, caching, storage per exchange, the
command line, and its place in the usability analysis."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sacrebleu
from scipy import stats

from services.metrics import auto_qa
from services.metrics import exchange as exchange_metrics
from services.metrics import registry as metrics
from services.models import llm
from services.questions import review as question_review
from services.setup.importer import import_study
from storage import studies
from storage.usability import corpus as usability_corpus
from tests.helpers.app import run_cli
from tests.helpers.questions import STUDY, make_study, respond  # noqa: F401  (respond: the LLM)
from tests.openai_server import OpenAIServer

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

QUESTIONS = [  # en, pt; the last cannot be answered from s01: it does not count
    ("What is the name of the daughter?", "Como se chama a filha?"),
    ("How high is the fever?", "Qual é a temperatura da febre?"),
    ("How many milligrams of paracetamol does she take?", "Quantos miligramas de paracetamol toma?"),
    ("What is the father's name?", "Como se chama o pai?"),
]
GOOD = (
    "Olá, hum, bom dia. Preciso de ver um médico hoje. A minha filha Sofia, que tem sete anos, está com febre "
    "de 39 graus há três dias. Tenho-lhe dado 250 miligramas de paracetamol de seis em seis horas."
)
PARTIAL = "Bom dia. A minha filha Sofia está doente e tem febre."
BAD = "Bom dia. O meu filho tem dores de cabeça há muito tempo."
EXTRA_SYSTEMS = """
[[systems]]
id = "partial-mt"
label = "A translation that keeps the name only"
kind = "human"
assign = false

[[systems]]
id = "bad-mt"
label = "A translation that loses everything"
kind = "human"
assign = false
"""


@pytest.fixture(scope="module")
def qa_server():
    with OpenAIServer(models={"qa-llm"}, responder=respond) as srv:
        yield srv


@pytest.fixture
def qa_db(database, tmp_path):
    """s01 has the four QUESTIONS (accepted through a CSV) and three translations: good, partial, bad;
    the other starters have no questions."""
    # only s01 has questions: the others have none to ask (no score), which keeps the LLM calls few
    folder = make_study(
        tmp_path / "study", "[questions]\n" + EXTRA_SYSTEMS, drop=tuple(f"s{i:02d}" for i in range(1, 13))
    )
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    (folder / "study.toml").write_text(
        toml.replace("starter_words = [40, 60]", 'starter_words = [40, 60]\nmetrics = ["chrf", "auto-qa"]'),
        encoding="utf-8",
    )
    rows = (folder / "exchanges.csv").read_text(encoding="utf-8").splitlines()
    rows = [r for r in rows if not r.startswith("s01,")] + [
        f's01,human-reference,"{GOOD}"',
        f's01,partial-mt,"{PARTIAL}"',
        f's01,bad-mt,"{BAD}"',
    ]
    (folder / "exchanges.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    import_study(database, folder)
    csv_path = tmp_path / "q.csv"
    csv_path.write_text(
        "starter_id,status,en,pt\n" + "".join(f"s01,accepted,{en},{pt}\n" for en, pt in QUESTIONS), encoding="utf-8"
    )
    question_review.import_csv(database, STUDY, csv_path)
    return database


def exchange_of(db, system: str) -> int:
    return db.scalar(
        "SELECT id FROM exchanges WHERE study_id = ? AND starter_id = 's01' AND system_id = ?", [STUDY, system]
    )


def stored(db, eid: int) -> dict:
    return db.one("SELECT * FROM exchange_metrics WHERE exchange_id = ? AND metric = 'auto-qa'", [eid])


def test_scores_follow_the_information_kept(qa_db, llm_env):
    db = qa_db
    got = {
        s: exchange_metrics.score_exchange(db, exchange_of(db, s)) for s in ("human-reference", "partial-mt", "bad-mt")
    }
    assert {s: v["auto-qa"] for s, v in got.items()} == {
        "human-reference": 1.0,
        "partial-mt": pytest.approx(1 / 3),
        "bad-mt": 0.0,
    }
    assert set(got["bad-mt"]) == {"chrf", "auto-qa"}  # the study's metric list, other metrics too
    row = stored(db, exchange_of(db, "partial-mt"))
    assert row["score"] == pytest.approx(1 / 3)
    assert "qa-llm" in row["model"] and "mode pt" in row["model"] and "chrf >= 50" in row["model"]
    # a starter without accepted questions has no auto-qa score
    other = db.scalar("SELECT id FROM exchanges WHERE study_id = ? AND starter_id = 's02'", [STUDY])
    assert exchange_metrics.score_exchange(db, other, names=["auto-qa"]) == {"auto-qa": None}


def test_the_details_show_each_answer(qa_db, llm_env):
    cfg = studies.get_study(qa_db, STUDY)["config"]
    m = metrics.get("auto-qa", study_config=cfg)
    starter = usability_corpus.starter(qa_db, STUDY, "s01")["text"]
    ctx = auto_qa.questions_context([{"en": en, "pt": pt} for en, pt in QUESTIONS])
    assert m.score([starter], [PARTIAL], contexts=[ctx]) == [pytest.approx(1 / 3)]
    d = {x["question_en"]: x for x in m.details}
    assert d[QUESTIONS[0][0]]["match"] is True and d[QUESTIONS[0][0]]["answer_translation"] == "Sofia"
    assert d[QUESTIONS[1][0]]["match"] is False and d[QUESTIONS[1][0]]["answer_translation"] == "NÃO CONSTA"
    assert d[QUESTIONS[3][0]]["counted"] is False and d[QUESTIONS[3][0]]["match"] is None


def test_scores_are_cached_until_the_questions_change(qa_db, llm_env):
    db = qa_db
    eid = exchange_of(db, "human-reference")
    exchange_metrics.score_exchange(db, eid, names=["auto-qa"])
    llm_env.requests.clear()
    assert exchange_metrics.score_exchange(db, eid, names=["auto-qa"]) == {"auto-qa": 1.0}
    assert llm_env.requests == []  # the cache answered
    drafts = question_review.starter_view(db, STUDY, "s01")["drafts"]
    question_review.reject(db, int(drafts["id"].iloc[0]))  # other questions: asked again
    assert exchange_metrics.score_exchange(db, eid, names=["auto-qa"]) == {"auto-qa": 1.0}
    assert len(llm_env.requests) == 6  # 3 questions, source and translation


@pytest.mark.parametrize(
    "mode, method", [("pt", "exact"), ("pt", "e5"), ("backtranslation", "chrf"), ("backtranslation", "exact")]
)
def test_every_mode_and_method_separates_good_from_bad(qa_db, llm_env, mode, method):
    cfg = studies.get_study(qa_db, STUDY)["config"]
    m = metrics.get("auto-qa", study_config=cfg, mode=mode, method=method)
    starter = usability_corpus.starter(qa_db, STUDY, "s01")["text"]
    ctx = auto_qa.questions_context([{"en": en, "pt": pt} for en, pt in QUESTIONS])
    assert m.score([starter, starter], [GOOD, BAD], contexts=[ctx, ctx]) == [1.0, 0.0]
    assert f"mode {mode}" in m.model and (method in m.model or "exact match" in m.model)
    assert m.info()["method"] == method


def test_thresholds_and_normalisation(llm_env):
    chrf = metrics.get("auto-qa", method="chrf", threshold=50)
    value = sacrebleu.sentence_chrf("39 degrees Celsius", ["39 degrees"]).score
    for thr, expected in ((value - 0.01, True), (value + 0.01, False)):
        chrf.threshold = thr
        assert chrf._matches(["39 degrees"], ["39 degrees Celsius"]) == [(expected, pytest.approx(value))]
    exact = metrics.get("auto-qa", method="exact")
    assert [m for m, _ in exact._matches(["Sofia.", "Sofia", "três dias"], ["sofia", "Ana", "Tres dias!"])] == [
        True,
        False,
        True,
    ]
    models = {
        metrics.get("auto-qa", method=meth, mode=mode).model
        for meth in ("exact", "chrf", "e5")
        for mode in ("pt", "backtranslation")
    }
    assert len(models) == 6  # settings never share cached scores


def test_registered_and_says_what_to_configure(monkeypatch):
    for var in ("TRADLAB_LLM_BACKEND", "TRADLAB_LLM_MODEL", "TRADLAB_LLM_BASE_URL", "TRADLAB_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    assert "auto-qa" in metrics.names()
    with pytest.raises(llm.LLMNotConfigured, match="TRADLAB_LLM_MODEL"):
        metrics.get("auto-qa")
    assert "auto-qa" not in [m["name"] for m in metrics.available()]
    with pytest.raises(ValueError, match="method"):
        metrics.get("auto-qa", method="bleu", llm=object())
    with pytest.raises(ValueError, match="JSON"):
        auto_qa._questions("Earlier sentence.")


def test_cli_scores_the_study(qa_db, llm_env, tmp_path):
    env = {**os.environ, "TRADLAB_DB": str(qa_db.path), "TRADLAB_MEDIA": str(tmp_path / "media")}
    res = run_cli("metrics", "auto-qa", "--study", STUDY, env=env)
    assert res.returncode == 0, res.stderr
    n = qa_db.scalar("SELECT COUNT(*) FROM exchanges WHERE study_id = ?", [STUDY])
    assert f"3 of {n} exchanges scored" in res.stdout and "exchanges" in res.stderr
    assert stored(qa_db, exchange_of(qa_db, "bad-mt"))["score"] == 0.0
    res = run_cli("metrics", "auto-qa", "--study", "nope", env=env)
    assert res.returncode == 2 and "no study 'nope'" in res.stderr


def test_the_usability_analysis_takes_it_as_a_signal():
    from services.usability import analysis as U
    from tests.helpers.usability import generate

    d = generate(seed=2, senders_per_cell=6, per_sender=10, receivers=15, validators=15)
    rng = np.random.default_rng(0)
    d["metric_auto_qa"] = np.clip(d["qa_score"] + rng.normal(0, 0.1, len(d)), 0, 1)  # the column stored rows make
    res = U.analyze(d, pa_iterations=20, metric_lmm=False)
    assert "metric_auto_qa" in list(res.correlations["signal"])
    assert "metric_auto_qa" in list(res.thresholds["signal"])
    u = d[U.ITEMS].mean(axis=1)
    rho = res.correlations.set_index("signal").loc["metric_auto_qa", "spearman_rho"]
    assert rho == pytest.approx(stats.spearmanr(u, d["metric_auto_qa"]).statistic)
    # beside the human QA score in the correlation matrix
    assert res.correlation_matrix.loc["qa_score", "metric_auto_qa"] == pytest.approx(
        stats.spearmanr(d["qa_score"], d["metric_auto_qa"]).statistic
    )
