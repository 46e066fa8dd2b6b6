"""The admin's "A participant" section through gradio_client against the launched app: the search
endpoint returns the status block and the items table, the actions act and show the page again,
and neither a forged session nor a participant's token gets anything (issue 28 point 5)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from services.admin.participant_view import ITEM_COLUMNS
from tests.helpers.app import AppClient, admin_session, token_of
from web.site import role_pages

EVENTS = {
    "admin_participant_view": ["demo", "1"],
    **{f"admin_participant_view_{k}": ["demo", 1] for k in ("new_link", "deactivate", "reactivate", "reassign")},
}


@pytest.fixture(scope="module")
def client(app_server):
    return AppClient(app_server.url)


@pytest.fixture(scope="module")
def session(client):
    return admin_session(client)


def test_a_forged_session_or_a_participants_token_gets_nothing(client, session, app_server):
    links = app_server.links()
    before = app_server.rows("SELECT COUNT(*), SUM(active), GROUP_CONCAT(token) FROM participants")
    for api, args in EVENTS.items():
        for forged in ("forged", token_of(links["receiver"][0])):
            out = client.predict(forged, *args, api_name=f"/{api}")
            text = json.dumps(out, default=str)
            assert "log in" in text.lower() and "Participant 1 " not in text, (api, out)
    assert app_server.rows("SELECT COUNT(*), SUM(active), GROUP_CONCAT(token) FROM participants") == before
    for role in role_pages():  # no participant page serves the section's events
        with urllib.request.urlopen(f"{app_server.url}/{role}/config", timeout=30) as r:
            apis = {d.get("api_name") for d in json.load(r)["dependencies"]}
        assert not apis & set(EVENTS), role


def test_search_shows_the_status_and_items_and_the_actions_act(client, session, app_server):
    url = app_server.links()["da"][0]
    token = token_of(url)
    pid = app_server.rows("SELECT id FROM participants WHERE token = ?", (token,))[0][0]
    msg, status, table, found = client.predict(session, "demo", url, api_name="/admin_participant_view")
    assert msg == "" and found == pid
    assert (
        f"Participant {pid} (DA rater), found by link" in status and "not shown yet" in status and token not in status
    )
    assert table["headers"] == ITEM_COLUMNS
    n = app_server.rows("SELECT COUNT(*) FROM assignments WHERE participant_id = ?", (pid,))[0][0]
    assert len(table["data"]) == n > 0 and {r[0] for r in table["data"]} == {"DA judgment"}
    assert token not in json.dumps(table)
    # the same person by id and by token
    assert client.predict(session, "demo", str(pid), api_name="/admin_participant_view")[3] == pid
    assert client.predict(session, "demo", token, api_name="/admin_participant_view")[3] == pid
    msg, status, _, found = client.predict(session, "demo", "nobody-at-all", api_name="/admin_participant_view")
    assert "No participant of study 'demo'" in msg and status == "" and found is None

    msg, link, status, _, _ = client.predict(session, "demo", pid, api_name="/admin_participant_view_new_link")
    new = app_server.rows("SELECT token FROM participants WHERE id = ?", (pid,))[0][0]
    assert "new link" in msg and new != token and link.endswith(f"?t={new}") and new[:6] in status.replace("\\", "")
    msg, _, status, _, _ = client.predict(session, "demo", pid, api_name="/admin_participant_view_deactivate")
    assert "deactivated" in msg and "**Status:** deactivated" in status
    assert app_server.rows("SELECT active FROM participants WHERE id = ?", (pid,))[0][0] == 0
    msg, _, status, _, _ = client.predict(session, "demo", pid, api_name="/admin_participant_view_reassign")
    assert f"participant {pid}" in msg.lower() or "no open items" in msg
    msg, _, status, _, _ = client.predict(session, "demo", pid, api_name="/admin_participant_view_reactivate")
    assert "active again" in msg and "deactivated" not in status
    msg, link, *_ = client.predict(session, "demo", None, api_name="/admin_participant_view_deactivate")
    assert msg == "Find a participant first (search above)." and link == ""
