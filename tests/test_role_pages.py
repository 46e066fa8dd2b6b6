"""One page per role (issue 21 point 1): a participant's link opens a page that holds only that
role's components (a Blocks of its own, mounted at /<role>/); "/" holds the study team's Admin
and Analysis tabs, which no participant page contains; old links (/?t=...) and Prolific URLs
arrive at the role's page."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from web.site import role_pages


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get(url: str) -> tuple[int, dict]:
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=30) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)


def page_config(app_server, page: str) -> dict:
    with urllib.request.urlopen(
        f"{app_server.url}/{page}/config" if page else f"{app_server.url}/config", timeout=30
    ) as r:
        return json.load(r)


def tab_ids(cfg: dict) -> set:
    return {c["props"].get("id") for c in cfg["components"] if c["type"] == "tabitem"}


def test_no_participant_page_holds_an_admin_or_analysis_component(app_server):
    team = page_config(app_server, "")
    assert {"admin", "analysis"} <= tab_ids(team)
    team_apis = {d.get("api_name") for d in team["dependencies"]}
    sizes = {}
    for role in role_pages():
        cfg = page_config(app_server, role)
        ids = {c["id"] for c in cfg["components"]}
        assert not tab_ids(cfg) & {"admin", "analysis", "qe_audit"}
        apis = {d.get("api_name") for d in cfg["dependencies"]}
        assert not {a for a in apis if a and a.startswith(("admin", "analysis", "qe"))}, role
        # the page's Blocks is its own: its config lists no component it does not hold
        assert len(cfg["components"]) == len(ids)
        sizes[role] = len(ids)
    assert any(a and a.startswith("admin") for a in team_apis)
    # every role's page is a fraction of what one page of every role's tab held (about 560)
    assert max(sizes.values()) < 200, sizes
    assert tab_ids(page_config(app_server, "receiver")) == {"receiver"}
    assert tab_ids(page_config(app_server, "sender")) == {"record", "survey"}


@pytest.mark.parametrize("role", ["receiver", "validator", "da", "sender"])
def test_an_old_link_redirects_to_its_role_page(app_server, role):
    url = app_server.links()[role][0]
    token = url.split("?t=", 1)[1]
    status, headers = get(url)
    assert status == 302 and headers["location"] == f"{role}/?t={token}"
    # the role's own page answers without a redirect; without its final slash it gets one
    assert get(f"{app_server.url}/{role}/?t={token}")[0] == 200
    assert get(f"{app_server.url}/{role}?t={token}")[1]["location"] == f"{role}/?t={token}"
    # another role's page sends the link on to its own
    other = "sd" if role != "sd" else "da"
    status, headers = get(f"{app_server.url}/{other}?t={token}")
    assert status == 302 and headers["location"] == f"{role}/?t={token}"
    status, headers = get(f"{app_server.url}/{other}/?t={token}")
    assert status == 302 and headers["location"] == f"../{role}/?t={token}"


def test_a_forged_token_or_a_bare_visit_is_not_redirected(app_server):
    assert get(f"{app_server.url}/?t=forged-token")[0] == 200
    assert get(f"{app_server.url}/receiver/?t=forged-token")[0] == 200
    assert get(f"{app_server.url}/")[0] == 200


def test_a_prolific_url_goes_to_the_page_of_its_signed_role(app_server):
    query = "study=demo&role=rater&sig=x&PROLIFIC_PID=abc&STUDY_ID=s&SESSION_ID=q"
    status, headers = get(f"{app_server.url}/?{query}")
    assert status == 302 and headers["location"] == f"rater/?{query}"
    # a role that is not a page is left to the page, which refuses the link
    assert get(f"{app_server.url}/?study=demo&role=admin&PROLIFIC_PID=abc")[0] == 200


def test_the_pages_queues_poll_no_more_often_than_one_did(tmp_path):
    """Each page's Blocks has its own event queue, polling every millisecond when free: the
    server slows each so that all together wake no more often than one page's queue did."""
    from services.common.settings import Settings
    from storage import open_database
    from web.app import build_app
    from web.gradio_patches import QUEUE_POLL_S, quiet_queues

    site = build_app(Settings.from_env(), open_database(tmp_path / "a.db"))
    for blocks in site.blocks:
        blocks.queue(default_concurrency_limit=16)
    assert {b._queue.sleep_when_free for b in site.blocks} == {0.001}  # gradio's, on Linux
    quiet_queues(site)
    assert sum(1 / b._queue.sleep_when_free for b in site.blocks) <= 1000 + 1e-6
    assert {b._queue.sleep_when_free for b in site.blocks} == {QUEUE_POLL_S * len(site.blocks)}
    assert len(site.blocks) >= 8  # "/" and a page per role, ESA's included: a new role slows none past this
