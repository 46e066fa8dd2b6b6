"""Issue 18 point 5: the receiver's page speaks European Portuguese (what it says around the item:
progress, "Saved.", waiting, refusals), with the texts in assets/texts/<language>.toml and
overridable per study; progress says how many items are ready when they come one at a time."""

from __future__ import annotations

import re
import tomllib

import pytest

from services.participation.items import AccessError, get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError, load_study
from services.study.texts import TEXTS, defaults, placeholders
from tabs.common import header_html, refusal_text
from tabs.receiver import translation_html
from tests.helpers.studies import study_with_scales


def answers_for(view, text="sim"):
    return {"answers": [{"idx": q["idx"], "text": text, "unanswerable": False} for q in view.content["questions"]]}


def test_each_language_file_has_every_key_with_the_same_placeholders():
    files = {f.stem: tomllib.loads(f.read_text(encoding="utf-8")) for f in TEXTS.glob("*.toml")}
    assert {"en", "pt-PT"} <= set(files)
    for lang, words in files.items():
        assert set(words) == set(files["en"]), lang
        for key, text in words.items():
            assert placeholders(text) == placeholders(files["en"][key]), (lang, key)


def test_the_receiver_reads_portuguese_progress_and_how_many_are_ready(demo_db):
    """12 translations in the pool, 12 receivers of 6 items: each holds one, nothing else is
    ready; 'Progress: 0 / 6' read as if six were waiting."""
    people = add_participants(demo_db, "demo", "receiver", 12)
    views = [get_view(demo_db, p.token, "receiver") for p in people]
    assert all(v.status == "item" for v in views)
    v = get_view(demo_db, people[0].token, "receiver")
    assert v.lang == "pt-PT" and v.ready == 1 and v.progress == "0 / 6"
    text = re.sub(r"<[^>]+>", "", header_html(v))
    assert "Progresso: 0 / 6 (1 pronto)" in text and "Progress:" not in text
    # the task wording, set apart: the translation under its own heading
    assert v.content["submit"] == "Enviar respostas" and v.content["answer_label"] == "Resposta"
    box = translation_html(v.content["translation_heading"], v.content["translation"])
    assert 'class="translation-box"' in box and "Mensagem traduzida" in box


def test_a_lone_receiver_sees_all_the_items_ready_for_them(demo_db):
    (r,) = add_participants(demo_db, "demo", "receiver", 1)
    v = get_view(demo_db, r.token, "receiver")
    assert v.ready == 6  # one shown, five more in the pool (their room: 6 items)
    assert "(6 prontos)" in header_html(v)


def test_saved_waiting_and_refusals_are_in_portuguese(demo_db):
    people = add_participants(demo_db, "demo", "receiver", 13)
    views = [get_view(demo_db, p.token, "receiver") for p in people[:12]]
    waiting = get_view(demo_db, people[12].token, "receiver")
    assert waiting.status == "waiting" and waiting.message.startswith("Ainda não há nada pronto para si")
    v = views[0]
    with pytest.raises(SubmissionError) as e:
        submit(demo_db, people[0].token, "receiver", v.item_id, {"answers": []})
    assert e.value.key == "answers_missing" and str(e.value).startswith("Responda a todas as perguntas")
    html = header_html(v, error=refusal_text(e.value))
    assert 'data-key="answers_missing"' in html and "Responda a todas" in html
    too_long = {
        "answers": [{"idx": q["idx"], "text": "x" * 2001, "unanswerable": False} for q in v.content["questions"]]
    }
    with pytest.raises(SubmissionError, match="é demasiado longa"):
        submit(demo_db, people[0].token, "receiver", v.item_id, too_long)
    with pytest.raises(AccessError, match="não está na sua lista"):
        submit(demo_db, people[0].token, "receiver", views[1].item_id, answers_for(views[1]))
    with pytest.raises(AccessError, match="Esta ligação não é válida"):
        get_view(demo_db, "forged", "receiver")
    with pytest.raises(AccessError, match="não se destina à sua função"):
        get_view(demo_db, people[0].token, "validator", lang="pt-PT")
    res = submit(demo_db, people[0].token, "receiver", v.item_id, answers_for(v))
    assert res.message == "Guardado."
    again = submit(demo_db, people[0].token, "receiver", v.item_id, answers_for(v))
    assert again.message == "Esta resposta já tinha sido guardada."
    # the other pages keep English (the validator's, a sender's)
    with pytest.raises(AccessError, match="This link is not valid"):
        get_view(demo_db, "forged", "validator")


def test_finished_receiver_gets_portuguese_completion(demo_db):
    (r,) = add_participants(demo_db, "demo", "receiver", 1)
    for _ in range(6):
        v = get_view(demo_db, r.token, "receiver")
        submit(demo_db, r.token, "receiver", v.item_id, answers_for(v))
    done = get_view(demo_db, r.token, "receiver")
    assert done.status == "complete" and done.message.startswith("Obrigado")
    page = header_html(done)
    assert "O seu código de conclusão:" in page and "Progresso: <b>6 / 6</b>" in page and 'lang="pt-PT"' in page


def test_a_study_rewords_the_receivers_page(database, tmp_path):
    import_study(
        database,
        study_with_scales(
            tmp_path,
            '[page.pt-PT]\nsaved = "Respostas guardadas."\n'
            'answers_missing = "Faltam respostas: {missing}."\n'
            '[receiver]\nsubmit = "Enviar"\n',
        ),
    )
    (r,) = add_participants(database, "demo", "receiver", 1)
    v = get_view(database, r.token, "receiver")
    assert v.content["submit"] == "Enviar"
    assert v.labels["progress"] == "Progresso"  # not overridden: the default
    with pytest.raises(SubmissionError, match=r"^Faltam respostas: \d"):
        submit(database, r.token, "receiver", v.item_id, {"answers": []})
    assert submit(database, r.token, "receiver", v.item_id, answers_for(v)).message == "Respostas guardadas."
    assert defaults()["page"]["pt-PT"]["saved"] == "Guardado."


@pytest.mark.parametrize(
    "scales,field",
    [
        ('[page.pt-PT]\nsavd = "x"\n', "page.pt-PT.savd"),
        ('[page.fr]\nsaved = "x"\n', "page.fr"),
        ('[page.pt-PT]\nanswers_missing = "Faltam {em_falta}."\n', "page.pt-PT.answers_missing"),
        ("[page.pt-PT]\nsaved = 3\n", "page.pt-PT.saved"),
        ('[page]\nsaved = "x"\n', "page"),
    ],
)
def test_mistakes_in_a_studys_page_wording_are_named(tmp_path, scales, field):
    with pytest.raises(StudyValidationError) as e:
        load_study(study_with_scales(tmp_path, scales))
    [err] = e.value.errors
    assert err.file == "scales.toml" and err.field == field


def test_counting_the_ready_items_reads_a_bounded_part_of_the_pool(demo_db):
    """The count is a capped, indexed read: however large the pool, at most room + held + a
    margin of its rows (work_pool_open)."""
    from storage.usability import pool

    plans = []
    real = demo_db.scalar

    def spy(sql, params=()):
        if "json_each" in sql:
            plans.append(demo_db.query("EXPLAIN QUERY PLAN " + sql, params))
        return real(sql, params)

    demo_db.scalar = spy
    try:
        (r,) = add_participants(demo_db, "demo", "receiver", 1)
        get_view(demo_db, r.token, "receiver")
    finally:
        del demo_db.scalar
    assert plans, "the ready count did not use storage.usability.pool.takeable"
    details = " ".join(row["detail"] for plan in plans for row in plan)
    assert "SEARCH work_pool USING INDEX work_pool_open" in details and "SCAN work_pool" not in details
    assert pool.takeable(demo_db, "demo", "receive", r.id, {"id:%d" % r.id}, 0, 10) == 0


def test_too_many_requests_are_refused_in_portuguese_on_the_receivers_page(demo_db):
    from services.participation import rate_limit
    from services.participation.items import TooManyRequests

    (r,) = add_participants(demo_db, "demo", "receiver", 1)
    rate_limit.configure(1)  # 1 per second, a burst of 2
    try:
        with pytest.raises(TooManyRequests, match="^Demasiados pedidos"):
            for _ in range(4):
                get_view(demo_db, r.token, "receiver")
    finally:
        rate_limit.configure(0)
