"""Issue 49, done-when: a stranger's page loads and events have a per-address budget.

The team page's six load events cost Gradio 5-26 ms of CPU each whatever ?admin= secret they
carry, and a page's HTML about 48 ms: one address sending them 24 a second held the honest
rater's view p95 at 2.7x of quiet, with nothing to stop it. Now requests that come with no valid
link or admin session spend their address's bucket (TRADLAB_STRANGER_REQUESTS_PER_MINUTE, the
burst as large); past it they are answered 429, while the same address's valid links, the admin
link and other addresses are served."""

from __future__ import annotations

import httpx
import pytest

from harness.load_app import prepared_app

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

BUDGET = 30
BURST = 10  # a quarter of the minute's budget, at least 10


# -- in process ----------------------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def callers(tmp_path_factory):
    from services.common.settings import Settings
    from storage import open_database
    from web.app import build_app
    from web.sessions import Callers

    database = open_database(tmp_path_factory.mktemp("s") / "a.db")
    return Callers(build_app(Settings.from_env(), database), database, strangers_per_minute=BUDGET)


def test_a_strangers_bucket_empties_refills_and_is_its_own(callers):
    clock = Clock()
    callers.strangers.clock = clock
    callers.strangers.reset()
    event = b'{"data": [], "fn_index": 3, "session_hash": "s1"}'
    said = [callers.admit("", "/gradio_api/queue/join", b"admin=wrong", event, "A") for _ in range(BURST + 5)]
    assert said[:BURST] == [None] * BURST
    assert all(s is not None and s[0] == 429 and "Too many requests" in s[1] for s in said[BURST:]), said[-1]
    assert callers.admit_page(b"", "A") == (429, callers.TOO_MANY)  # page loads share the bucket
    assert callers.admit("", "/gradio_api/queue/join", b"", event, "B") is None  # another address
    assert callers.admit_page(b"", "B") is None
    clock.now += 2.0  # BUDGET a minute: one request every two seconds
    assert callers.admit("", "/gradio_api/queue/join", b"", event, "A") is None
    assert callers.admit("", "/gradio_api/queue/join", b"", event, "A") is not None


def test_a_forged_participant_call_is_still_403_and_zero_turns_the_budget_off(tmp_path):
    from services.common.settings import Settings
    from storage import open_database
    from web.app import build_app
    from web.sessions import NOT_YOUR_LINK, Callers

    database = open_database(tmp_path / "a.db")
    off = Callers(build_app(Settings.from_env(), database), database, strangers_per_minute=0)
    assert off.strangers is None
    body = b'{"data": [], "fn_index": 3, "session_hash": "s1"}'
    assert all(off.admit("", "/gradio_api/queue/join", b"", body, "A") is None for _ in range(500))
    assert off.admit("", "/gradio_api/api/view", b"", b'{"data": ["x"], "session_hash": "s2"}', "A") == (
        403,
        NOT_YOUR_LINK,
    )


# -- the launched app ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def app(tmp_path_factory):
    a = prepared_app(
        tmp_path_factory.mktemp("strangers"),
        2,
        extra_roles=True,
        env_extra={"TRADLAB_WORKER": "0", "TRADLAB_STRANGER_REQUESTS_PER_MINUTE": str(BUDGET)},
    )
    a.start()
    yield a
    a.stop()


def client(app, address: str) -> httpx.Client:
    return httpx.Client(
        base_url=app.url, timeout=30, transport=httpx.HTTPTransport(local_address=address), follow_redirects=False
    )


def test_a_flood_of_admin_loads_is_refused_and_honest_callers_on_that_address_are_served(app):
    """Before: every one of the stranger's load events and page loads was served (200)."""
    loads = [
        d["id"]
        for d in httpx.get(app.url + "/config", timeout=30).json()["dependencies"]
        if d["backend_fn"] and any(t[1] == "load" for t in d["targets"])
    ]
    assert loads
    rater = app.tokens("da")[0]
    with client(app, "127.0.0.9") as c:
        codes = []
        for k in range(2 * BUDGET):
            body = {"data": [], "fn_index": loads[k % len(loads)], "session_hash": f"flood{k}"}
            body.update(event_data=None, trigger_id=None)
            codes.append(c.post(f"/gradio_api/queue/join?admin=wrong-{k}", json=body).status_code)
        assert codes.count(200) <= BURST + 2 and codes[-1] == 429, codes  # +2: refilled meanwhile
        page = c.get("/")
        assert page.status_code == 429 and "Too many requests" in page.text, page.text[:200]
        assert page.headers.get("connection") != "close"  # read whole: the connection is kept
        # the same address's honest callers: a rater's link, its events, the admin link
        assert c.get(f"/da/?t={rater}").status_code == 200
        view = c.post("/da/form/da/view", json={"token": rater})
        assert view.status_code == 200 and view.json()["value"].get("item_id"), view.text[:300]
        assert c.get(app.admin_url.removeprefix(app.url)).status_code == 200
    with client(app, "127.0.0.10") as other:  # another address has its own bucket
        assert other.get("/").status_code == 200
