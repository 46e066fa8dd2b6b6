"""The item forms' JSON routes (web/form_routes.py) against the launched app: the same answers,
refusals and checks as the tabs' Gradio events, and nothing else on them."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.helpers.app import AppClient, receiver_inputs, token_of
from web.form_routes import read_call


@pytest.fixture(scope="module")
def http(app_server):
    with httpx.Client(base_url=app_server.url, timeout=60) as c:
        yield c


def call(http, path: str, body) -> httpx.Response:
    return http.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


def value(res: httpx.Response) -> dict:
    assert res.status_code == 200, res.text
    return res.json()["value"]


def test_submit_saves_once_and_answers_the_next_item_as_the_event_does(app_server, http):
    tok = token_of(app_server.links()["receiver"][1])
    first = value(call(http, "/receiver/form/receiver/view", {"token": tok}))
    assert first["status"] == "item" and first["form"] == "receiver" and first["token"] == tok
    assert first["item_id"] == AppClient(app_server.url).predict(tok, "receiver", api_name="/view")["item_id"]
    assert 'name="answer-' in first["html"]  # the item's form, as the page shows it
    n = len(first["content"]["questions"])
    _, form = receiver_inputs(tok, first["item_id"], first, [(f"resposta {i}", False) for i in range(n)])
    saved = value(call(http, "/receiver/form/receiver/submit", {"token": tok, "value": form}))
    assert saved["notice"] == "Guardado." and saved["progress"] == "1 / 6"
    assert saved["item_id"] != first["item_id"]
    again = value(call(http, "/receiver/form/receiver/submit", {"token": tok, "value": form}))
    assert again["progress"] == "1 / 6" and "já tinha sido guardada" in again["notice"]  # saved once


def test_a_refused_answer_names_its_fields_and_keeps_what_was_typed(app_server, http):
    tok = token_of(app_server.links()["receiver"][0])
    shown = value(call(http, "/receiver/form/receiver/view", {"token": tok}))
    qs = shown["content"]["questions"]
    typed = {f"answer-{qs[0]['idx']}": "só esta"}
    out = value(
        call(
            http,
            "/receiver/form/receiver/submit",
            {"token": tok, "value": {"item_id": shown["item_id"], "answer": typed}},
        )
    )
    assert out["error"] and out["item_id"] == shown["item_id"] and out["progress"] == shown["progress"]
    assert "data-fields" in out["header"] and "só esta" in out["html"]  # marked in place, kept as typed
    assert value(call(http, "/receiver/form/receiver/view", {"token": tok}))["progress"] == shown["progress"]


def test_a_page_serves_only_its_own_tabs_and_the_services_check_the_role(app_server, http):
    links = app_server.links()
    receiver = token_of(links["receiver"][0])
    assert call(http, "/validator/form/receiver/submit", {"token": receiver}).status_code == 404
    assert call(http, "/receiver/form/validator/view", {"token": receiver}).status_code == 404
    assert call(http, "/form/receiver/view", {"token": receiver}).status_code == 404  # not on "/"
    other = value(call(http, "/validator/form/validator/view", {"token": receiver}))
    assert other["status"] == "error" and "not for your role" in other["message"]
    forged = value(call(http, "/receiver/form/receiver/view", {"token": "not-a-real-token"}))
    assert forged["status"] == "error" and "não é válida" in forged["message"]


def test_malformed_calls_are_refused_with_a_reason(app_server, http):
    tok = token_of(app_server.links()["receiver"][0])
    plain = http.post("/receiver/form/receiver/view", content=json.dumps({"token": tok}))
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]
    bad = http.post("/receiver/form/receiver/view", content=b"{", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]
    assert "token" in call(http, "/receiver/form/receiver/view", {"value": {}}).json()["error"]
    assert http.get("/receiver/form/receiver/view").status_code == 404  # POST only
    big = call(
        http, "/receiver/form/receiver/submit", {"token": tok, "value": {"answer": {"answer-1": "x" * 2_000_000}}}
    )
    assert big.status_code == 413  # Guard bounds the body as for any event
    deep = call(http, "/receiver/form/receiver/submit", {"token": tok, "value": json.loads("[" * 40 + "]" * 40)})
    assert deep.status_code == 413


@pytest.mark.parametrize(
    "body, ctype, status",
    [
        (b'{"token": "abc"}', "application/json", 200),
        (b'{"token": "abc"}', "application/json; charset=utf-8", 200),
        (b'{"token": "abc"}', "text/plain", 415),
        (b'["abc"]', "application/json", 400),
        (b'{"token": ""}', "application/json", 400),
        (b'{"token": 5}', "application/json", 400),
        (json.dumps({"token": "a" * 201}).encode(), "application/json", 400),
        (b"\xff", "application/json", 400),
    ],
)
def test_read_call(body, ctype, status):
    call_, got, why = read_call(body, ctype)
    assert got == status and (call_ is not None) == (status == 200) and bool(why) == (status != 200)


def upload(http, data: bytes, name: str, page: str = "sender") -> str:
    """A file sent as the recorder sends it, to the page's own upload route: its path there."""
    r = http.post(f"/{page}/gradio_api/upload", files=[("files", (name, data, "audio/wav"))])
    assert r.status_code == 200, r.text
    return r.json()[0]


def test_a_recording_is_taken_only_as_the_path_its_page_uploaded(app_server, http, tmp_path):
    import re

    import numpy as np
    import soundfile as sf

    from tests.speech import spoken_wav

    tok = token_of(app_server.links()["sender"][0])
    shown = value(call(http, "/sender/form/record/view", {"token": tok}))
    assert shown["status"] == "item" and shown["form"] == "record" and shown["token"] == tok
    assert 'class="starter"' in shown["html"]
    ex = int(shown["item_id"])

    def stored() -> int:
        return app_server.rows("SELECT COUNT(*) FROM recordings WHERE exchange_id = ?", (ex,))[0][0]

    def submit(audio):
        body = {"token": tok, "value": {"item_id": shown["item_id"], "audio": audio}}
        return call(http, "/sender/form/record/submit", body)

    # a server path the page never uploaded, or no path at all: refused before the service
    for forged in ["/etc/passwd", str(app_server.root), 12, ["/etc/passwd"]]:
        r = submit(forged)
        assert r.status_code == 400 and r.json()["error"] == "Only files uploaded to this server are accepted."
    # the service's own checks, as for the Gradio event: the reason, the item kept, nothing stored
    silent = tmp_path / "silent.wav"
    sf.write(str(silent), np.zeros(48000 * 3, np.float32), 48000)
    out = value(submit(upload(http, silent.read_bytes(), "silent.wav")))
    assert "silent" in out["error"] and out["item_id"] == shown["item_id"]
    missing = value(submit(None))
    assert missing["error"] and missing["item_id"] == shown["item_id"]
    assert stored() == 0
    # a spoken reading of the starter: saved, and the next item's words come back
    text = re.sub(r"<[^>]+>", "", shown["content"]["starter_html"])
    path = upload(http, spoken_wav(text, tmp_path / "read.wav").read_bytes(), "audio.wav")
    saved = value(submit(path))
    assert saved["notice"] == "Saved." and saved["progress"].startswith("1 /") and saved["item_id"] != shown["item_id"]
    assert stored() == 1
    again = value(submit(path))
    assert again["progress"] == saved["progress"] and stored() == 1  # saved once
    # a longer recording (over 1 MB): the same checks and answer
    long_silent = tmp_path / "long.wav"
    sf.write(str(long_silent), np.zeros(48000 * 12, np.int16), 48000, subtype="PCM_16")
    out = value(call(http, "/sender/form/record/submit", {"token": tok, "value": {
        "item_id": saved["item_id"], "audio": upload(http, long_silent.read_bytes(), "long.wav")}}))  # fmt: skip
    assert "silent" in out["error"] and out["item_id"] == saved["item_id"] and stored() == 1
