"""Links, resume and idempotency through gradio_client against the launched app."""
from __future__ import annotations

import sqlite3

import pytest
from gradio_client import Client

from tests.conftest import token_of


@pytest.fixture(scope="module")
def client(app_server):
    return Client(app_server.url, verbose=False)


@pytest.fixture(scope="module")
def links(app_server):
    return app_server.links()


def view(client, token, tab):
    return client.predict(token, tab, api_name="/view")


def receiver_inputs(token, item_id, state, answers):
    """Inputs of /receiver_submit: token, item, state, then (text, flag) for 10 slots."""
    slots = []
    for i in range(10):
        slots += answers[i] if i < len(answers) else ("", False)
    return [token, item_id, state, *slots]


def db_rows(app_server, sql, params=()):
    con = sqlite3.connect(app_server.env["TRADLAB_DB"])
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def test_link_shows_next_item_and_progress(client, links):
    v = view(client, token_of(links["receiver"][0]), "receiver")
    assert v["status"] == "item"
    assert v["progress"] == "0 / 6"
    assert v["content"]["translation"] and v["content"]["questions"]


def test_forged_token_is_refused(client):
    v = view(client, "not-a-real-token", "receiver")
    assert v["status"] == "error"
    assert "not valid" in v["message"]


def test_role_sees_only_its_tab(client, links):
    v = view(client, token_of(links["receiver"][0]), "validator")
    assert v["status"] == "error" and "not for your role" in v["message"]


def test_submit_is_idempotent_and_resumes(client, links, app_server):
    tok = token_of(links["receiver"][0])
    first = view(client, tok, "receiver")
    item = first["item_id"]
    n = len(first["content"]["questions"])
    answers = [(f"resposta {i}", False) for i in range(n - 1)] + [("", True)]
    out = client.predict(*receiver_inputs(tok, item, first, answers), api_name="/receiver_submit")
    state = out[0]
    assert state.get("notice") == "Saved." and state["progress"] == "1 / 6"
    assert state["item_id"] != item
    # the same submission again writes nothing and says so
    out2 = client.predict(*receiver_inputs(tok, item, first, answers), api_name="/receiver_submit")
    assert out2[0].get("notice") == "This answer was already saved."
    rows = db_rows(app_server, "SELECT COUNT(*) FROM answers a JOIN assignments s ON s.id = a.assignment_id "
                               "WHERE s.item_id = ? AND s.phase = 'receive'", (item,))
    assert rows[0][0] == n
    # a reload (a fresh view) resumes at the first unfinished item
    again = view(client, tok, "receiver")
    assert again["item_id"] == state["item_id"] and again["progress"] == "1 / 6"


def test_missing_answers_are_refused_and_nothing_stored(client, links, app_server):
    tok = token_of(links["receiver"][1])
    v = view(client, tok, "receiver")
    out = client.predict(*receiver_inputs(tok, v["item_id"], v, [("só uma", False)]), api_name="/receiver_submit")
    assert "answer every question" in out[0]["error"]
    assert out[0]["item_id"] == v["item_id"]
    rows = db_rows(app_server, "SELECT COUNT(*) FROM answers a JOIN assignments s ON s.id = a.assignment_id "
                               "JOIN participants p ON p.id = s.participant_id WHERE p.token = ?", (tok,))
    assert rows[0][0] == 0


def test_item_of_another_participant_is_refused(client, links):
    a, b = token_of(links["receiver"][0]), token_of(links["receiver"][1])
    item_b = view(client, b, "receiver")["item_id"]
    mine = {view(client, a, "receiver")["item_id"]}
    if item_b in mine:
        pytest.skip("both receivers hold the same item")
    answers = [("x", False)] * 10
    out = client.predict(*receiver_inputs(a, item_b, {"content": {"questions": [{"idx": i} for i in range(1, 11)]}},
                                          answers), api_name="/receiver_submit")
    assert "not in your queue" in out[0]["error"]


def test_validator_slider_untouched_is_refused(client, links):
    # the receiver's answers above opened validator work for one of the two validators
    views = [(token_of(u), view(client, token_of(u), "validator")) for u in links["validator"]]
    tok, v = next(((t, v) for t, v in views if v["status"] == "item"), (None, views[0][1]))
    assert tok is not None, v
    assert "source" in v["content"]
    marks = ["correct"] * len(v["content"]["questions"]) + [None] * (10 - len(v["content"]["questions"]))
    out = client.predict(tok, v["item_id"], v, False, 0, *marks, api_name="/validator_submit")
    assert "move the slider" in out[0]["error"]
    out = client.predict(tok, v["item_id"], v, True, 73, *marks, api_name="/validator_submit")
    assert out[0]["notice"] == "Saved."


def test_receiver_view_never_carries_source(client, links, app_server):
    tok = token_of(links["receiver"][1])
    v = view(client, tok, "receiver")
    ex = db_rows(app_server, "SELECT st.text FROM assignments a JOIN exchanges e ON e.id = a.exchange_id "
                             "JOIN starters st ON st.id = e.starter_id AND st.study_id = e.study_id "
                             "WHERE a.phase = 'receive' AND a.item_id = ?", (v["item_id"],))
    source = ex[0][0]
    assert source not in str(v)
    assert "source" not in v["content"]
