"""Issue 17, points 4, 5 and 11: the passwordless admin is not reachable from a web page (DNS
rebinding), the admin password resists guessing, sessions end, frames and errors are guarded."""

from __future__ import annotations

import httpx
import pytest
from gradio_client import Client

from harness.app import ADMIN_SECRET
from services.admin import auth as admin
from services.admin.auth import AdminAuth, LoginThrottle, client_address, exposure_warning, throttle_key
from tests.helpers.app import AppClient
from tests.helpers.clock import FakeClock, paced_auth

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

LINK = "the-admin-link-secret-of-this-test"  # what the server would print as /?admin=...


# -- point 4: DNS rebinding and forwarding headers ---------------------------------------------


def test_a_rebound_host_name_is_not_local():
    """A page whose DNS name now points at 127.0.0.1 sends its own name as Host: the connection
    is from loopback, but it gets no passwordless admin. The designer's own browser does."""
    auth = AdminAuth("", local_secret=LINK)
    for host in ("evil.example:7860", "evil.example", "localhost.evil.example:7860", "127.0.0.1.nip.io:7860"):
        caller = client_address("127.0.0.1", {"host": host})
        assert not auth.available(caller), host
        with pytest.raises(PermissionError):
            auth.login("", caller)
    for host in ("localhost:7860", "127.0.0.1:7860", "[::1]:7860", "localhost", "LOCALHOST:7860"):
        caller = client_address("127.0.0.1", {"Host": host})
        assert auth.available(caller), host
        auth.check(auth.login(LINK, caller), caller)


def test_a_rebound_host_name_is_refused_by_the_running_app(app_server):
    rebound = AppClient(app_server.url, headers={"Host": f"evil.example:{app_server.port}"})
    out = rebound.predict("", api_name="/admin_login")
    assert not isinstance(out[0], str) or not out[0]  # no session handed out
    assert "localhost" in str(out[1])
    local = Client(
        app_server.url.replace("127.0.0.1", "localhost"),
        verbose=False,
        headers={"Host": f"localhost:{app_server.port}"},
    )
    assert local.predict(ADMIN_SECRET, api_name="/admin_login")[0]


def test_forwarded_requests_need_the_password_and_are_throttled_per_client():
    """A forwarding header is never local, whatever Host says; behind a proxy each visitor's
    failures count under the address the proxy appended (a forged first entry changes nothing)."""
    auth = AdminAuth("")
    caller = client_address("127.0.0.1", {"host": "localhost:7860", "x-forwarded-for": "203.0.113.9"})
    assert not auth.available(caller)
    with pytest.raises(PermissionError):
        auth.login("", caller)
    a = throttle_key("127.0.0.1", {"X-Forwarded-For": "1.2.3.4, 203.0.113.9"})
    assert a == throttle_key("127.0.0.1", {"X-Forwarded-For": "9.9.9.9, 203.0.113.9"})
    b = throttle_key("127.0.0.1", {"X-Forwarded-For": "198.51.100.7"})
    assert a != b
    auth, clock = paced_auth("secret", free=1)
    for _ in range(3):
        with pytest.raises(PermissionError):
            auth.login("wrong", caller, a)
    with pytest.raises(PermissionError, match="Too many"):
        auth.login("secret", caller, a)  # a waits, right password or not
    assert auth.login("secret", caller, b)  # another visitor does not


def test_start_up_warns_when_exposed_without_a_password():
    for host in ("0.0.0.0", "::", "192.0.2.4"):
        msg = exposure_warning(host, "")
        assert msg and "WARNING" in msg and "TRADLAB_ADMIN_PASSWORD" in msg and "forwarding header" in msg
    assert exposure_warning("127.0.0.1", "", on_space=True)
    assert exposure_warning("127.0.0.1", "", root_path="/tradlab")
    assert exposure_warning("0.0.0.0", "a password") is None
    for host in ("127.0.0.1", "localhost", "::1"):
        assert exposure_warning(host, "") is None


# -- point 5: guessing the password, sessions ---------------------------------------------------


def test_200_wrong_guesses_take_hours_and_are_logged(database):
    """Every guess is made the moment the throttle allows it; the enforced waits add up on the
    clock. An attempt during a wait is refused unchecked (the right password too)."""
    auth, clock = paced_auth("correct horse", database)
    key = throttle_key("203.0.113.9")
    start = clock()
    for i in range(200):
        clock.advance(auth.throttle.wait_left(key))
        with pytest.raises(PermissionError, match="Wrong password"):
            auth.login(f"guess-{i}", "203.0.113.9", key)
    waited = clock() - start
    assert waited >= 60 * 60, f"200 guesses took only {waited:.0f} s of enforced waiting"
    with pytest.raises(PermissionError, match="Too many failed logins"):
        auth.login("correct horse", "203.0.113.9", key)
    failed = database.query("SELECT actor, entity_id FROM events WHERE action = 'admin_login_failed'")
    assert len(failed) == 200 and failed[0]["actor"] == "admin@203.0.113.9"
    clock.advance(auth.throttle.wait_left(key))
    session = auth.login("correct horse", "203.0.113.9", key)  # after the wait the right password works
    auth.check(session, "203.0.113.9")
    print(f"200 wrong guesses need {waited / 3600:.1f} h of enforced waiting")


def test_the_running_app_throttles_and_logs_wrong_passwords(tmp_path):
    from harness.app import RunningApp

    app = RunningApp(tmp_path, {"TRADLAB_ADMIN_PASSWORD": "s3cret-pass"}).start()
    try:
        client = AppClient(app.url)
        said = []
        while len(said) < 200 and "Try again in 8 s" not in (said or [""])[-1]:  # about 7 s of hammering
            said.append(str(client.predict(f"guess-{len(said)}", api_name="/admin_login")[1]))
        assert said[:5] == ["Wrong password."] * 5 and "Try again in 8 s" in said[-1], said
        assert any("Too many failed logins" in m for m in said)  # refused unchecked during a wait
        # at once after that failure: refused, the right password too
        assert "Too many failed logins" in str(client.predict("s3cret-pass", api_name="/admin_login")[1])
        failed = app.rows("SELECT COUNT(*) FROM events WHERE action = 'admin_login_failed'")[0][0]
        assert failed == sum(m.startswith("Wrong password") for m in said) == 9
    finally:
        app.stop()


def test_many_forged_clients_are_paced_overall():
    """A new forged X-Forwarded-For for every guess escapes the per-client wait, not the overall
    pace: each check waits its turn (issue 30, point 6: 60 wrong guesses take at least 30 s)."""
    auth, clock = paced_auth("secret")
    start = clock()
    for i in range(60):  # from this machine, where the header is trusted as a proxy's
        key = throttle_key("127.0.0.1", {"x-forwarded-for": f"10.0.{i // 256}.{i % 256}"})
        with pytest.raises(PermissionError, match="Wrong password"):
            auth.login("guess", "127.0.0.1", key)
    assert clock() - start >= 30, clock() - start


def test_sessions_expire_and_log_out_ends_them(database):
    clock = FakeClock()
    auth = AdminAuth("", database, clock=clock, local_secret=LINK)
    session = auth.login(LINK, "127.0.0.1")
    auth.check(session, "127.0.0.1")
    assert auth.logout(session, "127.0.0.1")
    with pytest.raises(PermissionError, match="log in"):
        auth.check(session, "127.0.0.1")
    assert database.query("SELECT 1 FROM events WHERE action = 'admin_logout'")
    other = auth.login(LINK, "127.0.0.1")
    clock.advance(admin.SESSION_SECONDS + 1)
    with pytest.raises(PermissionError, match="log in"):
        auth.check(other, "127.0.0.1")


def test_log_out_in_the_running_app(app_server):
    client = AppClient(app_server.url)
    session = client.predict(ADMIN_SECRET, api_name="/admin_login")[0]
    assert "Repair done" in client.predict(session, "demo", api_name="/admin_repair")
    out = client.predict(session, api_name="/admin_logout")
    assert out[0] == "" and "Logged out" in out[2]
    assert "log in" in client.predict(session, "demo", api_name="/admin_repair").lower()


# -- point 11: frames and errors ------------------------------------------------------------------


def test_pages_carry_frame_protection(app_server):
    r = httpx.get(app_server.url + "/", timeout=30)
    assert r.status_code == 200
    assert r.headers["content-security-policy"] == "frame-ancestors 'self'"
    assert r.headers["x-frame-options"] == "SAMEORIGIN"


def test_frame_ancestors_setting_and_its_space_default():
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from services.common.settings import Settings
    from web.middleware import SecurityHeaders

    assert Settings.from_env({}).frame_ancestors == "'self'"
    space = Settings.from_env({"SPACE_ID": "me/app"}, data_root="/nonexistent")
    assert space.frame_ancestors == "'self' https://huggingface.co"
    assert Settings.from_env({"SPACE_ID": "x", "TRADLAB_FRAME_ANCESTORS": "'none'"}).frame_ancestors == "'none'"

    def page(frame_ancestors):
        app = Starlette(
            routes=[Route("/", lambda req: PlainTextResponse("hi"))],
            middleware=[Middleware(SecurityHeaders, frame_ancestors=frame_ancestors)],
        )
        return TestClient(app).get("/").headers

    h = page(space.frame_ancestors)
    assert h["content-security-policy"] == "frame-ancestors 'self' https://huggingface.co"
    assert "x-frame-options" not in h  # it cannot name huggingface.co
    assert page("'none'")["x-frame-options"] == "DENY"
    assert page("'self'; script-src *")["content-security-policy"] == "frame-ancestors 'self' script-src *"


def test_participants_see_no_raw_exception_text(app_server):
    """launch(show_error=False): an unexpected exception reaches the page as a bare "Error"."""
    assert httpx.get(app_server.url + "/config", timeout=30).json()["show_error"] is False


def test_the_admin_sees_an_unexpected_error_in_full():
    import gradio as gr

    from tabs.admin import details_for_admin

    auth = AdminAuth("", local_secret=LINK)
    session = auth.login(LINK, "127.0.0.1")

    @details_for_admin
    def handler(sess):
        auth.check(sess, "127.0.0.1")
        raise KeyError("the detail")

    with pytest.raises(gr.Error, match="the detail"):
        handler(session)
    with pytest.raises(PermissionError):  # no session: no gr.Error, no details
        handler("forged")


def test_admin_only_checks_the_session_before_the_handler_runs():
    import gradio as gr

    from tabs.admin_common import admin_only

    auth = AdminAuth("", local_secret=LINK)
    ran = []

    @admin_only(auth, "notice")
    def handler(request, sess, value):
        ran.append(value)
        return {"notice": "", "value": value}

    assert handler.shows_admin_details  # through details_for_admin
    assert handler(None, "forged", 1)["notice"] and ran == []  # refused: the message, the handler never ran
    request = gr.Request(client=type("Client", (), {"host": "127.0.0.1"})())
    assert handler(request, auth.login(LINK, "127.0.0.1"), 2) == {"notice": "", "value": 2} and ran == [2]
    with pytest.raises(TypeError, match="sess and request"):
        admin_only(auth)(lambda session, request: None)


def test_an_old_failure_count_is_forgotten():
    clock = FakeClock()
    throttle = LoginThrottle(clock, free=2, forget_after=3600)
    for _ in range(4):
        clock.advance(throttle.wait_left("k"))
        throttle.failed("k")
    assert throttle.wait_left("k") > 0
    clock.advance(3601)
    assert throttle.failed("k") == 0  # a fresh count: within the free failures


def test_every_admin_event_shows_the_admin_its_unexpected_errors(tmp_path):
    """Each admin, analysis and QE-audit event goes through details_for_admin (login and logout
    run before any session exists)."""
    from services.common.settings import Settings
    from storage import open_database
    from web.app import build_app

    demo = build_app(Settings.from_env(), open_database(tmp_path / "a.db")).team
    admin_events = [
        f
        for f in demo.fns.values()
        if f.fn is not None
        and f.api_name
        and f.api_name.startswith(("admin", "analysis", "qe"))
        and f.api_name not in ("admin_login", "admin_logout")
    ]
    assert len(admin_events) > 30
    bare = [f.api_name for f in admin_events if not getattr(f.fn, "shows_admin_details", False)]
    assert bare == []
