"""A corpus of bad inputs sent to the launched app's real endpoints.

Each case must be refused with a message that names the problem (the error in the page state
the endpoint returns, the text a handler returns, or Gradio's error event when a component
refuses the value first), and nothing may be stored: the rows of every answer table, the done
assignments, the audit log's submit events, the jobs and the recording files are counted
before and after each case. Free text that is stored (a receiver's answer with markup) is
shown escaped on the pages that show it (the validator's item, the informed survey).
"""

from __future__ import annotations

import html
import math
import os
import socket
import statistics
import time

import numpy as np
import pytest

from harness.gradio_http import AppError, GradioHTTP, file_data
from harness.load_app import prepared_app
from harness.measure import peak_rss_mb, percentile
from services.study.texts import Voice
from tests.helpers.app import receiver_inputs, validator_inputs
from tests.helpers.audio import tone, wav_bytes
from tests.helpers.raters import SAVED

SAVED_PT = Voice("pt-PT")("saved")  # the receiver's page is in Portuguese: "Guardado."

TABLES = (
    "answers",
    "validations",
    "validation_marks",
    "surveys",
    "da_judgments",
    "da_feedback",
    "recordings",
    "sd_ratings",
    "sd_suitability",
    "sd_suggestions",
    "translations",
    "jobs",
)
MB = 1_000_000
PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    # short header and body timeouts, so that the slow-client test waits seconds (defaults: 10 and 30 s);
    # the corpus sends more uploads a minute, and bytes, from this one address than a sender would
    a = prepared_app(
        tmp_path_factory.mktemp("bad"),
        4,
        extra_roles=True,
        env_extra={
            "TRADLAB_WORKER": "0",
            "TRADLAB_HEADER_TIMEOUT": "2",
            "TRADLAB_BODY_TIMEOUT": "3",
            "TRADLAB_UPLOADS_PER_MINUTE": "100",
            "TRADLAB_UPLOAD_MB_PER_CLIENT": "1000",
        },
    )
    a.start()
    yield a
    a.stop()


@pytest.fixture(scope="module")
def client(app):
    with GradioHTTP(app.url) as c:
        yield c


def snapshot(app) -> dict:
    counts = {t: app.db(f"SELECT COUNT(*) FROM {t}")[0][0] for t in TABLES}
    counts["done assignments"] = app.db("SELECT COUNT(*) FROM assignments WHERE status = 'done'")[0][0]
    counts["audit events"] = app.db("SELECT COUNT(*) FROM events WHERE action IN ('submit', 'feedback')")[0][0]
    counts["active participants"] = app.db("SELECT COUNT(*) FROM participants WHERE active = 1")[0][0]
    rec = app.tmp / "media" / "recordings"
    counts["recording files"] = len(list(rec.iterdir())) if rec.is_dir() else 0
    return counts


def message_of(client, api: str, data: list, label: str = "") -> str:
    try:
        out = client.predict(*data, api_name=api)
    except AppError as e:  # a component refused the value before the handler ran
        return f"[gradio] {e}"
    state = out[0] if isinstance(out, list) else out
    if isinstance(state, dict):
        assert state.get("notice") not in (SAVED, SAVED_PT), f"{label}: {api} saved it: {str(state)[:300]}"
        return state.get("error") or state.get("message") or f"[no message] {str(state)[:300]}"
    return str(state)


# Gradio's own checks of an input's type, of the number of inputs and of file paths refuse before
# any handler runs; their exception text is not shown to participants (launch(show_error=False),
# issue 17.11), only that the call failed
HIDDEN = ["[gradio] None"]


def check(app, client, cases) -> None:
    """cases: (label, api, inputs, fragments one of which the message must contain). Each case
    comes from a fresh page (its own session): Gradio keeps each session's copy of the
    components, and a refusal may change it (e.g. a forged token's page has no choices)."""
    failures = []
    for label, api, data, expect in cases:
        before = snapshot(app)
        with GradioHTTP(app.url) as page:
            msg = message_of(page, api, data, label)
        after = snapshot(app)
        if not any(e.lower() in msg.lower() for e in expect):
            failures.append(f"{label}: the message {msg[:300]!r} does not say {expect}")
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        if changed:
            failures.append(f"{label}: stored something {changed}")
    assert not failures, "\n".join(failures)


def tokens(app, role) -> list[str]:
    return app.tokens(role)


def view(client, token, tab) -> dict:
    return client.predict(token, tab, api_name="/view")


def da(item, score) -> dict:
    """The DA form's value as the page sends it (tabs/item_form.py): null when not moved."""
    return {"item_id": item, "answer": {"score": score}}


def answer_all(client, token, text=PAYLOAD, limit=12) -> int:
    """A receiver answers every open item (the text of every answer given); returns how many."""
    n = 0
    for _ in range(limit):  # bounded: a receiver holds at most 6 items
        v = view(client, token, "receiver")
        if v["status"] != "item":
            break
        k = len(v["content"]["questions"])
        out = client.predict(*receiver_inputs(token, v["item_id"], v, [(text, False)] * k), api_name="/receiver_submit")
        assert out[0].get("notice") == SAVED_PT, out[0]
        n += 1
    return n


# -- direct assessment -------------------------------------------------------------------------
def test_da_submit_refuses_bad_values_foreign_items_and_bad_tokens(app, client):
    t0, t1, _, t3 = tokens(app, "da")[:4]
    item = view(client, t0, "da")["item_id"]
    mine = {
        r[0]
        for r in app.db(
            "SELECT a.item_id FROM assignments a JOIN participants p ON p.id = a.participant_id "
            "WHERE p.token = ? AND a.phase = 'da'",
            (t0,),
        )
    }
    foreign = next(
        r[0]
        for r in app.db(
            "SELECT a.item_id FROM assignments a JOIN participants p ON p.id = "
            "a.participant_id WHERE p.token = ? AND a.phase = 'da' ORDER BY a.position",
            (t1,),
        )
        if r[0] not in mine
    )
    later = app.db(
        "SELECT a.item_id FROM assignments a JOIN participants p ON p.id = a.participant_id "
        "WHERE p.token = ? AND a.phase = 'da' AND a.position = 5",
        (t0,),
    )[0][0]
    item3 = view(client, t3, "da")["item_id"]
    app.db_write("UPDATE participants SET active = 0 WHERE token = ?", (t3,))  # the study team deactivates t3
    check(
        app,
        client,
        [
            ("slider never moved", "/da_submit", [t0, da(item, None)], ["move the slider"]),
            ("no answer at all", "/da_submit", [t0, {"item_id": item}], ["move the slider"]),
            ("score NaN", "/da_submit", [t0, da(item, math.nan)], ["between 0 and 100"]),
            ("score 150", "/da_submit", [t0, da(item, 150)], ["between 0 and 100"]),
            ("score -1", "/da_submit", [t0, da(item, -1)], ["between 0 and 100"]),
            ("score as text", "/da_submit", [t0, da(item, "fifty")], ["must be a number"]),
            ("score as a list", "/da_submit", [t0, da(item, [50])], ["must be a number"]),
            ("score as true", "/da_submit", [t0, da(item, True)], ["must be a number"]),
            ("answer not an object", "/da_submit", [t0, {"item_id": item, "answer": "50"}], ["move the slider"]),
            ("form not an object", "/da_submit", [t0, "50"], ["not in your queue"]),
            ("inputs missing", "/da_submit", [t0], HIDDEN),
            ("forged token", "/da_submit", ["forged-token", da(item, 50)], ["link is not valid"]),
            ("empty token", "/da_submit", ["", da(item, 50)], ["link is not valid"]),
            ("1 MB token", "/da_submit", ["x" * MB, da(item, 50)], ["link is not valid"]),
            ("deactivated participant", "/da_submit", [t3, da(item3, 50)], ["deactivated"]),
            ("another role's token", "/da_submit", [tokens(app, "receiver")[0], da(item, 50)], ["not for your role"]),
            ("another rater's item", "/da_submit", [t0, da(foreign, 50)], ["not in your queue"]),
            ("a later item of mine", "/da_submit", [t0, da(later, 50)], ["rated in order"]),
            ("unknown item", "/da_submit", [t0, da("999999", 50)], ["not in your queue"]),
            ("SQL as item", "/da_submit", [t0, da("1 OR 1=1; DROP TABLE da_judgments; --", 50)], ["not in your queue"]),
            ("1 MB item", "/da_submit", [t0, da("9" * MB, 50)], ["not in your queue"]),
            ("view: forged token", "/view", ["forged-token", "da"], ["link is not valid"]),
            ("view: deactivated", "/view", [t3, "da"], ["deactivated"]),
            ("view: another role's tab", "/view", [t0, "validator"], ["not for your role"]),
            ("view: unknown tab", "/view", [t0, "admin"], ["not for your role"]),
            ("feedback: 1 MB", "/da_feedback", [t0, "x" * MB], ["too long"]),
            ("feedback: empty", "/da_feedback", [t0, "   "], ["write something"]),
            ("feedback: forged token", "/da_feedback", ["forged-token", "fine"], ["link is not valid"]),
            ("feedback: deactivated", "/da_feedback", [t3, "fine"], ["deactivated"]),
            # a lone surrogate (half an emoji) that SQLite cannot store: said plainly, not as codec text
            ("feedback: a lone surrogate", "/da_feedback", [t0, "fine \ud83d"], ["cannot be stored"]),
        ],
    )
    # the rater can still do the real thing
    out = client.predict(t0, da(item, 61), api_name="/da_submit")[0]
    assert out["notice"] == SAVED


# -- surveys, validators, receivers, SD --------------------------------------------------------
def test_survey_refuses_missing_and_out_of_range_values(app, client):
    r0, r1 = tokens(app, "rater")[:2]
    v0, v1 = view(client, r0, "survey"), view(client, r1, "survey")
    assert v0["status"] == v1["status"] == "item" and v0["item_id"] != v1["item_id"]
    item = v0["item_id"]
    rng, kinds = ["between 1 and 5"], ["one of 1, 2, 3, 4, 5"]

    def form(tok, it, sat, tru, rel):
        return [tok, {"item_id": it, "answer": {"satisfaction": sat, "trust": tru, "reliance": rel}}]

    check(
        app,
        client,
        [
            ("satisfaction missing", "/survey_submit", form(r0, item, None, "3", "3"), ["satisfaction"]),
            ("reliance missing", "/survey_submit", form(r0, item, "3", "3", None), ["reliance"]),
            ("6 of 5", "/survey_submit", form(r0, item, "6", "3", "3"), rng),
            ("0", "/survey_submit", form(r0, item, "3", 0, "3"), rng),
            ("2.5", "/survey_submit", form(r0, item, 2.5, "3", "3"), kinds),
            ("'three' as text", "/survey_submit", form(r0, item, "three", "3", "3"), ["must be a number"]),
            ("true as a point", "/survey_submit", form(r0, item, True, "3", "3"), ["must be a number"]),
            ("NaN", "/survey_submit", form(r0, item, math.nan, "3", "3"), rng),
            (
                "an answer that is not a form",
                "/survey_submit",
                [r0, {"item_id": item, "answer": ["3", "3", "3"]}],
                ["satisfaction"],
            ),
            # a bare item id is that item with no answer (form_tab takes one, as the record tab's API
            # always did): refused naming what is missing
            ("inputs missing", "/survey_submit", [r0, item], HIDDEN + ["please answer every statement"]),
            ("forged token", "/survey_submit", form("forged-token", item, "3", "3", "3"), ["link is not valid"]),
            ("another rater's item", "/survey_submit", form(r0, v1["item_id"], "3", "3", "3"), ["not in your queue"]),
            (
                "the informed stage before its time",
                "/survey_submit",
                form(r0, item.replace("baseline", "informed"), "3", "3", "3"),
                ["not in your queue"],
            ),
            ("a malformed item", "/survey_submit", form(r0, "nonsense", "3", "3", "3"), ["not in your queue"]),
        ],
    )


def test_validator_refuses_unmoved_slider_missing_marks_and_forged_state(app, client):
    # a receiver's answer set opens validator work (setup, before any count is taken)
    rec = tokens(app, "receiver")[0]
    v = view(client, rec, "receiver")
    out = client.predict(
        *receiver_inputs(rec, v["item_id"], v, [(PAYLOAD, False)] * len(v["content"]["questions"])),
        api_name="/receiver_submit",
    )
    assert out[0]["notice"] == SAVED_PT
    vt, vv = next((t, w) for t in tokens(app, "validator") if (w := view(client, t, "validator"))["status"] == "item")
    qs = vv["content"]["questions"]
    marks = ["correct"] * len(qs) + [None] * (10 - len(qs))
    item = vv["item_id"]
    check(
        app,
        client,
        [
            (
                "slider never moved",
                "/validator_submit",
                validator_inputs(vt, item, vv, False, 50, *marks),
                ["move the slider"],
            ),
            (
                "score 150",
                "/validator_submit",
                validator_inputs(vt, item, vv, True, 150, *marks),
                ["between 0 and 100"],
            ),
            (
                "score as text",
                "/validator_submit",
                validator_inputs(vt, item, vv, True, "fifty", *marks),
                ["must be a number"],
            ),
            (
                "score NaN",
                "/validator_submit",
                validator_inputs(vt, item, vv, True, math.nan, *marks),
                ["between 0 and 100"],
            ),
            (
                "a mark missing",
                "/validator_submit",
                validator_inputs(vt, item, vv, True, 50, "correct", *[None] * 9),
                ["mark every answer"],
            ),
            (
                "a mark neither correct nor incorrect",
                "/validator_submit",
                validator_inputs(vt, item, vv, True, 50, *(["maybe"] * 10)),
                ["must be correct or incorrect"],
            ),
            (
                "a mark for an answer that does not exist",
                "/validator_submit",
                validator_inputs(
                    vt, item, {"content": {"questions": [{"idx": 99}] + qs}}, True, 50, *(["correct"] * 11)
                ),
                ["do not exist"],
            ),
            (
                "marks as a list",
                "/validator_submit",
                [vt, {"item_id": item, "answer": {"score": 50, "mark-1": ["correct"]}}],
                ["must be correct or incorrect"],
            ),
            (
                "no marks at all",
                "/validator_submit",
                [vt, {"item_id": item, "answer": {"score": 50}}],
                ["mark every answer"],
            ),
            (
                "forged token",
                "/validator_submit",
                validator_inputs("forged-token", item, vv, True, 50, *marks),
                ["link is not valid"],
            ),
            (
                "a receiver's token",
                "/validator_submit",
                validator_inputs(rec, item, vv, True, 50, *marks),
                ["not for your role"],
            ),
            (
                "unknown item",
                "/validator_submit",
                validator_inputs(vt, "424242", vv, True, 50, *marks),
                ["not in your queue"],
            ),
        ],
    )


def test_receiver_refuses_huge_missing_and_malformed_answers(app, client):
    r0, r1 = tokens(app, "receiver")[:2]
    v = view(client, r1, "receiver")
    other = view(client, r0, "receiver")["item_id"]
    item, n = v["item_id"], len(v["content"]["questions"])
    ok = [("uma resposta", False)] * n
    check(
        app,
        client,
        [
            # the receiver's page is in European Portuguese (assets/texts/pt-PT.toml)
            (
                "1 MB answer",
                "/receiver_submit",
                receiver_inputs(r1, item, v, [("x" * MB, False)] + ok[1:]),
                ["demasiado longa"],
            ),
            (
                "2,001 characters",
                "/receiver_submit",
                receiver_inputs(r1, item, v, [("y" * 2001, False)] + ok[1:]),
                ["no máximo 2000 caracteres"],
            ),
            (
                "an answer missing",
                "/receiver_submit",
                receiver_inputs(r1, item, v, ok[:-1]),
                ["Responda a todas as perguntas"],
            ),
            (
                "only whitespace",
                "/receiver_submit",
                receiver_inputs(r1, item, v, [("   ", False)] + ok[1:]),
                ["Responda a todas as perguntas"],
            ),
            (
                "'not answerable' as the text 'false'",
                "/receiver_submit",
                receiver_inputs(r1, item, v, [("", "false")] + ok[1:]),
                ["verdadeira ou falsa"],
            ),
            (
                "a question that does not exist",
                "/receiver_submit",
                receiver_inputs(
                    r1, item, {"content": {"questions": [{"idx": 99}] + v["content"]["questions"]}}, ok + ok
                ),
                ["Não existe a pergunta 99"],
            ),
            (
                "a question number that is not a number",
                "/receiver_submit",
                [r1, {"item_id": item, "answer": {"answer-first": "x", "flag-first": False}}],
                ["Responda a todas as perguntas"],
            ),
            (
                "an answer that is not text",
                "/receiver_submit",
                [r1, {"item_id": item, "answer": {f"answer-{q['idx']}": ["x"] for q in v["content"]["questions"]}}],
                ["tem de ser texto"],
            ),
            (
                "no page state",
                "/receiver_submit",
                receiver_inputs(r1, item, None, ok),
                ["Responda a todas as perguntas"],
            ),
            (
                "another receiver's item",
                "/receiver_submit",
                receiver_inputs(r1, other, v, ok),
                ["não está na sua lista"],
            ),
            (
                "forged token",
                "/receiver_submit",
                receiver_inputs("forged-token", item, v, ok),
                ["ligação não é válida"],
            ),
        ],
    )


def test_sd_refuses_missing_values_points_off_the_scale_and_huge_suggestions(app, client):
    t = tokens(app, "sd")[0]

    def form(tok, it, values, suggestion=""):
        """The page's value as the SD form sends it (tabs/sd.py): a point per slot, as text."""
        answer = {f"pair:{slot}": v for slot, v in values.items()}
        return [tok, {"item_id": it, "answer": {**answer, "suggestion": suggestion}}]

    v = view(client, t, "sd")
    while v["content"].get("kind") in ("welcome", "example"):  # the pages before the scales
        client.predict(*form(t, v["item_id"], {}), api_name="/sd_submit")
        v = view(client, t, "sd")
    item, slots = v["item_id"], [p["slot"] for p in v["content"]["pairs"]]

    def each(value):
        return {s: value for s in slots}

    check(
        app,
        client,
        [
            ("a scale missing", "/sd_submit", form(t, item, {s: "4" for s in slots[:-1]}), ["every scale"]),
            ("8 on a 7-point scale", "/sd_submit", form(t, item, each("8")), ["point from 1 to 7"]),
            ("true as a point", "/sd_submit", form(t, item, each(True)), ["point from 1 to 7"]),
            ("a pair not on the page", "/sd_submit", form(t, item, {**each("4"), "forged": "4"}), ["not on this page"]),
            (
                "values that are not a form",
                "/sd_submit",
                [t, {"item_id": item, "answer": ["4"] * len(slots)}],
                ["every scale"],
            ),
            ("1 MB suggestion", "/sd_submit", form(t, item, each("4"), "x" * MB), ["too long", "not on this page"]),
            ("forged token", "/sd_submit", form("forged-token", item, each("4")), ["link is not valid"]),
        ],
    )


def test_recording_endpoint_refuses_bad_uploads(app, client):
    s = tokens(app, "sender")[0]
    item = view(client, s, "record")["item_id"]
    uploads = [
        ("silent", wav_bytes(np.zeros(16000 * 3)), "silent.wav", "audio/wav", ["silent"]),
        ("empty file", b"", "empty.wav", "audio/wav", ["empty"]),
        (
            "a text file named .wav (audio/wav)",
            b"these are my notes, not a recording\n" * 20,
            "notes.wav",
            "audio/wav",
            ["not an audio recording"],
        ),
        ("a WAV cut off in its header", wav_bytes(tone(3))[:30], "cut.wav", "audio/wav", ["not a readable WAV"]),
        ("0.8 s", wav_bytes(tone(0.8, lead=0.2)), "short.wav", "audio/wav", ["too short"]),
        ("45 s (limit 30)", wav_bytes(tone(45)), "long.wav", "audio/wav", ["too long"]),
        # 5 s: over the floor of the starter's length (shorter is refused as too short first)
        ("speech from the first sample", wav_bytes(tone(5, lead=0.0)), "late.wav", "audio/wav", ["cut off"]),
        ("40 MB of random bytes", os.urandom(40 * 1024 * 1024), "huge.wav", "audio/wav", ["not an audio recording"]),
        ("20 minutes of audio (38 MB)", wav_bytes(tone(1200)), "hours.wav", "audio/wav", ["too long"]),
        (
            "WebM magic, then garbage",
            b"\x1aE\xdf\xa3" + os.urandom(5000),
            "rec.webm",
            "audio/webm",
            ["could not be decoded", "needs ffmpeg"],
        ),
    ]
    cases = []
    for label, data, name, mime, expect in uploads:
        before = snapshot(app)
        fd = client.upload(data, name, mime)
        assert snapshot(app) == before  # an upload alone stores nothing of ours
        cases.append((label, "/record_submit", [s, item, fd], expect))
    cases += [
        ("no file", "/record_submit", [s, item, None], ["empty"]),
        (
            "a server path never uploaded (the database)",
            "/record_submit",
            [s, item, file_data(app.env["TRADLAB_DB"])],
            HIDDEN,
        ),
        ("a server path never uploaded (/etc/passwd)", "/record_submit", [s, item, file_data("/etc/passwd")], HIDDEN),
        ("a bare path instead of a file", "/record_submit", [s, item, "/etc/passwd"], HIDDEN),
        ("forged token", "/record_submit", ["forged-token", item, None], ["link is not valid"]),
    ]
    check(app, client, cases)


# -- stored free text is shown escaped ---------------------------------------------------------
def test_markup_in_answers_is_shown_escaped(app):
    """Receivers' answers are free text: stored as typed, shown as text (never as markup) on
    the validator's page and in the informed survey's outcomes. Each participant has their own
    page (session), as in a browser."""
    escaped = html.escape(PAYLOAD)
    for t in tokens(app, "receiver"):
        with GradioHTTP(app.url) as client:
            answer_all(client, t)
    assert app.db("SELECT COUNT(*) FROM answers WHERE text = ?", (PAYLOAD,))[0][0] > 0
    shown_validator = 0
    for t in tokens(app, "validator"):
        client = GradioHTTP(app.url)
        for _ in range(12):
            v = view(client, t, "validator")
            if v["status"] != "item":
                break
            marks = ["incorrect"] * len(v["content"]["questions"]) + [None] * (10 - len(v["content"]["questions"]))
            # a refused submit returns the page as it is shown
            page = client.predict(*validator_inputs(t, v["item_id"], v, False, 0, *marks), api_name="/validator_submit")
            form = page[0]["html"]
            assert "Answer:" in form and "<script" not in form and "<img" not in form, form[:300]
            shown_validator += form.count(escaped)
            done = client.predict(*validator_inputs(t, v["item_id"], v, True, 55, *marks), api_name="/validator_submit")
            assert done[0]["notice"] == SAVED
        client.close()
    assert shown_validator > 0
    shown_survey = 0
    for t in tokens(app, "rater"):
        client = GradioHTTP(app.url)
        for _ in range(20):
            v = view(client, t, "survey")
            if v["status"] != "item":
                break
            if v["content"]["stage"] == "informed":
                page = client.predict(t, {"item_id": v["item_id"], "answer": {}}, api_name="/survey_submit")
                assert "satisfaction" in page[0]["error"]
                outcomes = page[0]["html"]
                assert "<script" not in outcomes and "<img" not in outcomes, outcomes[:500]
                shown_survey += escaped in outcomes
            out = client.predict(
                t,
                {"item_id": v["item_id"], "answer": {"satisfaction": "4", "trust": "4", "reliance": "4"}},
                api_name="/survey_submit",
            )
            assert out[0]["notice"] == SAVED
        client.close()
    assert shown_survey > 0


# -- bounded work per request, closed routes, slow clients (issue 30) -------------------------
def views_ms(app, token: str, n: int) -> list[float]:
    """An honest DA rater's page asking for its item n times (a fresh page each time): ms each."""
    out = []
    with GradioHTTP(app.url) as c:
        for _ in range(n):
            t0 = time.perf_counter()
            assert c.predict(token, "da", api_name="/view")["status"] == "item"
            out.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.04)  # under the link's rate limit (20 a second)
    return out


# Hostile bodies, sent from processes of their own (in the test's process their sending would
# take the GIL from the honest client being timed): each prints what the server answered.
HOSTILE = r"""
import json, sys, time
import httpx
url, seconds, small = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "small"
bodies = {
    "20 MB chunked": ("/da/gradio_api/api/view", lambda: (b'{"data": ["' + b"x" * 65536 for _ in range(320))),
    "23 MB": ("/da/gradio_api/api/da_submit", lambda: b"[" * 23_000_000),
    "deep": ("/gradio_api/api/view", lambda: b'{"data": ' + b"[" * 1000 + b"]" * 1000 + b"}"),
    "values": ("/da/gradio_api/api/view", lambda: b'{"data": [' + b"0," * 500_000 + b'0], "session_hash": "x"}'),
}
said, end = {}, time.time() + seconds
with httpx.Client(base_url=url, timeout=120, headers={"content-type": "application/json"}) as c:
    while time.time() < end:
        for label, (path, body) in bodies.items():
            try:
                r = c.post(path, content=b'{"data": ["forged", "da"], "session_hash": "x"}' if small else body())
                said[label] = [r.status_code, r.text]
            except httpx.HTTPError as e:
                said[label] = [0, repr(e)]
            time.sleep(0.05)     # one body arriving at a time, as the issue measured it
print(json.dumps(said))
"""


def test_a_huge_or_complex_body_is_refused_before_gradio_and_others_stay_fast(app):
    """Issue 30.1: a 20 MB body (sent chunked, with no length to refuse it by), a 23 MB one that
    says its length, JSON 1,000 levels deep and 1 MB of tiny values, sent over and over, are each
    refused with a 413 saying why, while an honest rater's views stay fast (p95 against the same
    sender sending small bodies) and the server's memory stays put.
    Before, Gradio parsed and walked each on its event loop."""
    import json
    import subprocess
    import sys

    honest = tokens(app, "da")[1]
    views_ms(app, honest, 10)  # warm

    def beside(kind: str) -> tuple[list[float], dict]:
        # "quiet" is the same sender at the same pace with small bodies: on a shared 2-core machine
        # the sender's own CPU is part of what the honest rater waits for, the same in both runs
        sender = subprocess.Popen(
            [sys.executable, "-c", HOSTILE, app.url, "8", kind], stdout=subprocess.PIPE, text=True
        )
        time.sleep(2)
        times = views_ms(app, honest, 60)
        return times, json.loads(sender.communicate(timeout=120)[0])

    quiet, _ = beside("small")
    idle = peak_rss_mb(app.proc.pid)
    busy, said = beside("hostile")
    peak = peak_rss_mb(app.proc.pid)
    q95, b95 = percentile(quiet, 95), percentile(busy, 95)
    print(
        f"\nviews quiet p50 {statistics.median(quiet):.1f} p95 {q95:.1f} ms; beside the bodies p50 "
        f"{statistics.median(busy):.1f} p95 {b95:.1f} ms; peak memory {idle} -> {peak} MB; {said}"
    )
    assert said["20 MB chunked"][0] == 413 and "larger than this server takes" in said["20 MB chunked"][1], said
    assert said["23 MB"][0] == 413, said
    assert said["deep"][0] == 413 and "nested deeper" in said["deep"][1], said
    assert said["values"][0] == 413 and "values" in said["values"][1], said
    # the target is 1.5x; measured here 1.5-4.5x on a shared 2-core machine (p95 14-17 ms
    # quiet, 27-78 ms beside the bodies; before: a stall of seconds). benchmarks/hardening.py, with
    # the conditions in turn over several rounds and the sender paced, measures 0.85-1.04x: the
    # spread here is the machine's (the sender's CPU, one round each), so this bound stays loose:
    # under `make test` two other workers share the cores, and their bursts alone put a p95 at
    # 170 ms; 400 ms still fails the stall of seconds this guards against
    assert b95 <= max(5 * q95, 400), (q95, b95)
    assert peak - idle < 40, (idle, peak)


def escaped_quotes(n: int) -> bytes:
    """A body deeper than the limit whose one text never ends: n escaped quotes. A regex taking a
    whole text at once scans from each quote to the end (n squared steps)."""
    return b'{"data": [' + b"[" * 40 + b'"' + b'\\"' * n


def test_a_bodys_shape_is_judged_in_linear_time():
    """Guard judges a body's depth and values with its texts taken out. Before, the texts were
    taken out by one regex, quadratic on a text of escaped quotes with no end: 32 KB took 8 s,
    128 KB 115 s, all of it holding the interpreter (every other request waited)."""
    from web.guard import MAX_JSON_VALUES, json_problem

    for body in (escaped_quotes(24_000), escaped_quotes(500_000), b"[" * 33 + b'"a' * 500_000):
        t0 = time.perf_counter()
        problem = json_problem(body)
        assert problem and time.perf_counter() - t0 < 1.0, (len(body), problem, time.perf_counter() - t0)
    # what a text holds is no structure, escaped or not; a real quote after an escaped backslash ends it
    assert json_problem(b'{"data": ["' + b"[" * 100 + b'\\"[' * 100 + b'"]}') is None
    assert json_problem(b'{"data": ["\\\\"' + b", [" * 40 + b"]" * 40 + b"]}") == "nested deeper than 32 levels"
    assert json_problem(b"[" + b'"a",' * (MAX_JSON_VALUES + 1) + b"[]]") == f"more than {MAX_JSON_VALUES:,} values"


def test_a_body_of_escaped_quotes_does_not_stall_the_server(app):
    """The same body (48 KB) sent to the launched app is refused at once while an honest rater's
    views go on; before, the server was stuck on it for 18 s or more."""
    import threading

    import httpx

    honest = tokens(app, "da")[1]  # [3] is deactivated by the first test
    views_ms(app, honest, 3)  # warm: a page's first item renders its fonts
    said: dict = {}

    def send():
        t0 = time.perf_counter()
        r = httpx.post(
            app.url + "/da/gradio_api/api/view",
            content=escaped_quotes(24_000),
            headers={"content-type": "application/json"},
            timeout=120,
        )
        said.update(status=r.status_code, text=r.text, s=time.perf_counter() - t0)

    sender = threading.Thread(target=send)
    sender.start()
    views = views_ms(app, honest, 10)
    sender.join(120)
    assert said["status"] == 413 and "nested deeper" in said["text"], said
    assert said["s"] < 3 and max(views) < 2000, (said, views)


CLOSED = [
    ("GET", "/gradio_api/file/https://example.com/x.wav"),
    ("GET", "/da/gradio_api/file/etc/passwd"),
    ("POST", "/da/gradio_api/process_recording"),
    ("POST", "/gradio_api/process_recording"),
    ("GET", "/gradio_api/monitoring"),
    ("GET", "/monitoring"),
    ("GET", "/gradio_api/openapi.json"),
    ("POST", "/login"),
    ("GET", "/logout"),
    ("GET", "/gradio_api/runs"),
    ("POST", "/gradio_api/run-history/connect"),
    ("POST", "/gradio_api/vibe-edit"),
    ("GET", "/gradio_api/vibe-code"),
    ("GET", "/gradio_api/dev/reload"),
    ("GET", "/gradio_api/user"),
    ("GET", "/gradio_api/token"),
    ("GET", "/gradio_api/deep_link"),
    ("POST", "/gradio_api/call/v2/view"),
    ("GET", "/gradio_api/stream/abc/0/1/playlist.m3u8"),
    ("GET", "/gradio_api/proxy=https://example.com/"),
    ("GET", "/pwa_icon"),
    ("GET", "/manifest.json"),
    ("PUT", "/gradio_api/upload"),
    ("DELETE", "/config"),
]


def test_only_the_routes_the_pages_use_answer(app):
    """Issue 30.2: Gradio's routes that no page uses answer 404 at once (the older file route
    fetched a URL for anyone; process_recording ran ffmpeg on a caller's bytes); uploads are
    taken only on the pages with a file input (the sender's, the team's), a few files a request."""
    import httpx

    with httpx.Client(base_url=app.url, timeout=30) as c:
        wrong = {f"{m} {p}": r.status_code for m, p in CLOSED if (r := c.request(m, p)).status_code != 404}
        assert not wrong, wrong
        for page in ("da", "receiver", "validator", "rater", "sd"):
            r = c.post(f"/{page}/gradio_api/upload", files=[("files", ("a.wav", b"RIFF", "audio/wav"))])
            assert r.status_code == 403 and "takes no files" in r.text, (page, r.status_code, r.text)
        r = c.post("/sender/gradio_api/upload", files=[("files", (f"{k}.wav", b"RIFF", "audio/wav")) for k in range(6)])
        assert r.status_code == 400 and "Too many files" in r.text, (r.status_code, r.text)
        ok = c.post("/sender/gradio_api/upload", files=[("files", ("a.wav", b"RIFF", "audio/wav"))])
        assert ok.status_code == 200, ok.text
        with socket.create_connection(("127.0.0.1", app.port), timeout=10) as s:  # says 60 MB, sends none
            s.sendall(
                b"POST /sender/gradio_api/upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data"
                b"\r\nContent-Length: 62914560\r\n\r\n"
            )
            answer = b""
            while chunk := s.recv(4096):  # the server closes after its answer
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 413") and b"maximum allowed size" in answer, answer
        for path in ("/", "/da/", "/config", "/da/config", "/gradio_api/info", "/sender/gradio_api/info"):
            assert c.get(path).status_code == 200, path


def test_no_page_config_shows_memory_addresses(app):
    """Issue 30.9: a gr.State's delete_callback was in every page's config as '<function ... at 0x7f...>'."""
    import httpx

    with httpx.Client(base_url=app.url, timeout=30) as c:
        for page in ("", "da/", "sender/", "receiver/", "validator/", "rater/", "sd/"):
            for path in (f"/{page}config", f"/{page}"):
                text = c.get(path).text
                assert " at 0x" not in text, (path, text[max(0, text.find(" at 0x") - 80) : text.find(" at 0x") + 20])


def test_slow_clients_are_cut_off_and_honest_ones_served(app):
    """Issue 30.8: 200 connections that never finish their headers and 20 that never finish their
    body are closed after the header timeout (2 s here) and the body timeout (3 s, answered 408);
    an honest rater's view answers meanwhile. Before, every one was held open."""
    honest = tokens(app, "da")[2]
    host, port = "127.0.0.1", app.port
    heads, bodies = [], []
    for k in range(200):
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(b"GET /da/config HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        heads.append(s)
    for k in range(20):
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(
            b"POST /da/gradio_api/api/view HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"data": ['
        )
        bodies.append(s)
    # answered meanwhile; once measured 3.0 s for the first view while the 20 bodies were held
    # (the rest 14-18 ms): not explained yet, so the bound is the body timeout plus margin
    assert max(views_ms(app, honest, 5)) < 5000
    time.sleep(5)

    def closed(s) -> tuple[bool, bytes]:
        try:
            data = s.recv(4096)
            return data == b"" or b"408" in data.split(b"\r\n", 1)[0], data
        except (ConnectionResetError, socket.timeout) as e:
            return isinstance(e, ConnectionResetError), b""

    still = sum(not closed(s)[0] for s in heads)
    answers = [closed(s) for s in bodies]
    for s in heads + bodies:
        s.close()
    assert still == 0, f"{still} of 200 half-sent headers still open after 5 s"
    assert all(ok for ok, _ in answers), answers[:3]
    assert any(b"408" in data for _, data in answers), answers[:3]
