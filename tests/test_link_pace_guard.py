"""Issue 49, done-when flat out: a link past its per-link pace is refused in Guard, before Gradio.

The per-link limit (services/participation/rate_limit.py) was enforced by the service only, after
Gradio had routed the call, parsed it and run its handler: 5-8 ms of the server's CPU for each
refusal, so one DA link posting feedback flat out (80-100 a second) kept the interpreter busy
(0.81 s of CPU a second) and, with the other loops of a stranger, held an honest rater's view p95
at 2.56x of quiet. Now Guard looks up the link a call names (an item form's token, an API call's
data, or the link its session came with) and answers 429 at once while its bucket is empty."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from harness.load_app import prepared_app

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

RATE = 2.0  # requests a second per link; the burst is twice that
PAUSE_MS = 100  # TRADLAB_REFUSAL_PAUSE_MS in the launched app (default 500)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def paced():
    """The per-link buckets at RATE on a clock the test moves; put back afterwards."""
    from services.participation import rate_limit

    clock = Clock()
    rate_limit.BUCKETS.clock = clock
    rate_limit.configure(RATE)
    yield clock
    rate_limit.configure(None)
    rate_limit.BUCKETS.clock = time.monotonic


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The load study's database with its participants (the app is not started)."""
    from services.common.settings import Settings
    from storage import open_database
    from web.app import build_app
    from web.sessions import Callers, session_classes

    app = prepared_app(tmp_path_factory.mktemp("pace"), 2, extra_roles=True)
    database = open_database(app.env["TRADLAB_DB"])
    site = build_app(Settings.from_env(), database)
    site.pages["receiver"].state_holder = session_classes()[1]()  # as served (web/gradio_patches.py)
    return app, database, Callers(site, database, strangers_per_minute=0)


def spend(pid: int) -> None:
    from services.participation import rate_limit

    while rate_limit.allow(str(pid)):
        pass


def test_an_item_form_call_of_a_spent_link_is_refused_and_served_again_once_it_refills(study, paced):
    from services.participation.rate_limit import MESSAGE

    app, database, callers = study
    token = app.tokens("da")[0]
    pid = database.one("SELECT id FROM participants WHERE token = ?", [token])["id"]
    body = json.dumps({"token": token}).encode()
    assert callers.admit("da", "/form/da/view", b"", body, "A") is None
    spend(pid)
    assert callers.admit("da", "/form/da/view", b"", body, "A") == (429, MESSAGE)
    # an API call naming the link in its data, with no session: the same link, the same bucket
    api = json.dumps({"data": [token, "Some feedback."]}).encode()
    assert callers.admit("da", "/gradio_api/api/da_feedback", b"", api, "A") == (429, MESSAGE)
    other = app.tokens("da")[1]  # another link has its own bucket
    assert callers.admit("da", "/form/da/view", b"", json.dumps({"token": other}).encode(), "A") is None
    paced.now += 1 / RATE  # one request refilled
    assert callers.admit("da", "/form/da/view", b"", body, "A") is None


def test_a_known_sessions_events_are_paced_by_the_link_it_came_with(study, paced):
    app, database, callers = study
    token = app.tokens("receiver")[0]
    pid = database.one("SELECT id FROM participants WHERE token = ?", [token])["id"]
    first = json.dumps({"data": [token], "fn_index": 1, "session_hash": "pace1"}).encode()
    assert callers.admit("receiver", "/gradio_api/queue/join", b"", first, "A") is None  # vouched
    assert callers.session_links["pace1"] == pid
    later = json.dumps({"data": ["an answer"], "fn_index": 2, "session_hash": "pace1"}).encode()
    assert callers.admit("receiver", "/gradio_api/queue/join", b"", later, "A") is None
    spend(pid)
    refused = callers.admit("receiver", "/gradio_api/queue/join", b"", later, "A")
    assert refused == (429, callers.too_fast("receiver")) and refused[1].startswith("Demasiados pedidos"), refused
    assert callers.admit("receiver", "/gradio_api/queue/join", b"", first, "A") == refused


def test_a_forged_token_is_left_to_the_service_and_not_remembered(study, paced):
    _, _, callers = study
    forged = json.dumps({"token": "x" * 43}).encode()
    assert callers.admit("da", "/form/da/view", b"", forged, "A") is None  # the service says "not valid"
    assert "x" * 43 not in callers.links


# -- the launched app ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def running(tmp_path_factory):
    env = {"TRADLAB_WORKER": "0", "TRADLAB_RATE_LIMIT": str(RATE), "TRADLAB_REFUSAL_PAUSE_MS": str(PAUSE_MS)}
    a = prepared_app(tmp_path_factory.mktemp("pace-app"), 2, env_extra=env)
    a.start()
    yield a
    a.stop()


def test_feedback_flat_out_is_refused_at_the_door_and_only_the_pace_is_written(running):
    """Before: every call reached Gradio and its handler (no 429; the service's refusal came back
    as the event's error), answered as fast as the script sent them. Now each refusal waits
    PAUSE_MS first, so the loop cannot go faster than one refusal per pause."""
    token = running.tokens("da")[0]
    with httpx.Client(base_url=running.url, timeout=30) as c:
        start = time.monotonic()
        codes = [
            c.post("/da/gradio_api/api/da_feedback", json={"data": [token, f"Feedback {k}."]}).status_code
            for k in range(40)
        ]
        seconds = time.monotonic() - start
        assert codes.count(429) >= 40 - (2 * RATE + RATE * seconds + 1), (codes, seconds)
        assert seconds >= codes.count(429) * PAUSE_MS / 1000, seconds
        written = running.db("SELECT COUNT(*) FROM events WHERE action = 'feedback'")[0][0]
        assert written <= 2 * RATE + RATE * seconds + 1, written
        time.sleep(1.5 / RATE)
        view = c.post("/da/form/da/view", json={"token": token})
        assert view.status_code == 200 and view.json()["value"].get("item_id"), view.text[:300]
