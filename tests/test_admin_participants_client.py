"""The admin tab's participant management and paged tables through gradio_client against the
launched app (two participants per role, see conftest.app_server)."""

from __future__ import annotations

import csv
import json

import pytest

from tests.helpers.app import AppClient, admin_session, token_of

# every new admin event with well-formed arguments after the session
NEW_EVENTS = {
    "admin_participants_page": [1, "demo", "all", "all"],
    "admin_completions_page": [1, "demo"],
    "admin_participants_link": ["demo", 1],
    "admin_participants_deactivate": ["demo", 1, "all", "all", 1],
    "admin_participants_reactivate": ["demo", 1, "all", "all", 1],
    "admin_participants_reassign": ["demo", 1, "all", "all", 1],
    "admin_participants_new_link": ["demo", 1, "all", "all", 1],
    "admin_participants_add": ["demo", "receiver", 1, "", "", "", "all", "all", 1],
    "admin_participants_links_csv": ["demo"],
    "admin_participants_add_self_enrol": ["demo", "receiver", 1, "", "", "", "all", "all", 1],
    "admin_prolific_urls": ["demo"],
    "admin_prolific_urls_csv": ["demo"],
    "admin_completions_csv": ["demo"],
    "admin_review_page": [1, "demo"],
    "admin_exchanges_page": [1, "demo"],
    "admin_jobs_page": [1],
}


@pytest.fixture(scope="module")
def client(app_server):
    return AppClient(app_server.url)


@pytest.fixture(scope="module")
def session(client):
    return admin_session(client)


@pytest.fixture(scope="module")
def links(app_server):
    return app_server.links()


def pid_of(app_server, url):
    return app_server.rows("SELECT id FROM participants WHERE token = ?", (token_of(url),))[0][0]


def view(client, token, tab):
    return client.predict(token, tab, api_name="/view")


def path_of(f):
    return f if isinstance(f, str) else f["path"]


@pytest.mark.parametrize("api", sorted(NEW_EVENTS))
def test_every_new_event_refuses_a_session_that_is_not_the_admins(client, session, links, app_server, api):
    # (the admin's login on this client fills the study dropdown's choices; the calls below forge the session)
    before = app_server.rows("SELECT COUNT(*), SUM(active), GROUP_CONCAT(token) FROM participants")
    for forged in ("forged", token_of(links["receiver"][0])):
        out = client.predict(forged, *NEW_EVENTS[api], api_name=f"/{api}")
        assert "log in" in json.dumps(out, default=str).lower(), (api, out)
    assert app_server.rows("SELECT COUNT(*), SUM(active), GROUP_CONCAT(token) FROM participants") == before


def test_participants_table_is_paged_filtered_and_shows_short_links(client, session, links, app_server):
    msg, table, page, info = client.predict(session, 1, "demo", "receiver", "all", api_name="/admin_participants_page")
    assert msg == "" and page == 1 and info.startswith("Page 1 of 1 · ")
    cols = table["headers"]
    got = [dict(zip(cols, r)) for r in table["data"]]
    assert {r["role"] for r in got} == {"receiver"} and len(got) >= 2
    tokens = {token_of(u) for u in links["receiver"]}
    assert all(r["link"].endswith("…") and len(r["link"]) == 7 for r in got)
    assert not any(t in json.dumps(table) for t in tokens)  # never a whole token in the table
    exchanges = client.predict(session, 1, "demo", api_name="/admin_exchanges_page")
    n = app_server.rows("SELECT COUNT(*) FROM exchanges WHERE study_id = 'demo'")[0][0]
    assert exchanges[0] == "" and exchanges[3] == f"Page 1 of 1 · {n} rows" and len(exchanges[1]["data"]) == n
    clamped = client.predict(session, 99, "demo", api_name="/admin_exchanges_page")
    assert clamped[2] == 1  # they fit on one page of 100
    jobs = client.predict(session, 1, api_name="/admin_jobs_page")
    assert jobs[0] == "" and jobs[3].startswith("Page 1 of")


def test_full_link_deactivate_reactivate_and_a_new_link(client, session, links, app_server):
    url = links["receiver"][1]
    pid = pid_of(app_server, url)
    msg, full = client.predict(session, "demo", pid, api_name="/admin_participants_link")
    assert msg == "" and full == url
    assert "no participant 99999" in client.predict(session, "demo", 99999, api_name="/admin_participants_link")[0]
    out = client.predict(session, "demo", pid, "all", "all", 1, api_name="/admin_participants_deactivate")
    assert "deactivated" in out[0]
    refused = view(client, token_of(url), "receiver")
    assert refused["status"] == "error" and "foi desativada" in refused["message"]  # the receiver's Portuguese
    out = client.predict(session, "demo", pid, "all", "all", 1, api_name="/admin_participants_reactivate")
    assert "active again" in out[0] and view(client, token_of(url), "receiver")["status"] == "item"
    done_before = view(client, token_of(url), "receiver")["progress"]
    out = client.predict(session, "demo", pid, "all", "all", 1, api_name="/admin_participants_new_link")
    assert "new link" in out[0] and out[1] != url and out[1].startswith(app_server.url)
    assert "não é válida" in view(client, token_of(url), "receiver")["message"]
    assert view(client, token_of(out[1]), "receiver")["progress"] == done_before
    assert (
        app_server.rows(
            "SELECT COUNT(*) FROM events WHERE action IN ('deactivate', 'reactivate', 'new_link') AND entity_id = ?",
            (str(pid),),
        )[0][0]
        == 3
    )


def test_reassign_then_add_a_receiver_who_takes_the_waiting_items(client, session, links, app_server):
    pid = pid_of(app_server, links["receiver"][0])
    view = client.predict(token_of(links["receiver"][0]), "receiver", api_name="/view")  # takes one item
    assert view["status"] == "item"
    out = client.predict(session, "demo", pid, "all", "all", 1, api_name="/admin_participants_reassign")
    assert "deactivate them first" in out[0]
    client.predict(session, "demo", pid, "all", "all", 1, api_name="/admin_participants_deactivate")
    out = client.predict(session, "demo", pid, "all", "all", 1, api_name="/admin_participants_reassign")
    assert "went back to the pool" in out[0], out[0]
    assert app_server.rows(
        "SELECT need FROM work_pool WHERE phase = 'receive' AND item_id = ?", (view["item_id"],)
    ) == [(1,)]
    bad = client.predict(
        session, "demo", "receiver", 1, "", "", "ok\nnot ok!", "all", "all", 1, api_name="/admin_participants_add"
    )
    assert "'not ok!' is not valid" in bad[-1]  # the Add form's own message, under its buttons
    count = app_server.rows("SELECT COUNT(*) FROM participants")[0][0]
    out = client.predict(
        session, "demo", "receiver", 1, "", "", "EXT-NEW-1", "receiver", "all", 1, api_name="/admin_participants_add"
    )
    assert "Added 1 receiver" in out[0] and out[1].startswith(app_server.url)
    assert app_server.rows("SELECT COUNT(*) FROM participants")[0][0] == count + 1
    assert client.predict(token_of(out[1]), "receiver", api_name="/view")["status"] == "item"  # work waits for them


def test_the_completion_list_and_its_csv(client, session, links, app_server):
    pid = pid_of(app_server, links["validator"][0])
    # what services/participation/items does when a participant first finishes their role
    app_server.rows(
        "UPDATE participants SET completed_at = '2026-01-02T03:04:05.000+00:00', prolific_pid = 'PPID-7' WHERE id = ?",
        (pid,),
    )
    msg, table, page, info = client.predict(session, 1, "demo", api_name="/admin_completions_page")
    got = [dict(zip(table["headers"], r)) for r in table["data"]]
    assert [r["id"] for r in got] == [pid] and got[0]["prolific_pid"] == "PPID-7" and info.endswith("1 row")
    msg, f = client.predict(session, "demo", api_name="/admin_completions_csv")
    with open(path_of(f), encoding="utf-8") as fh:
        listed = list(csv.DictReader(fh))
    assert [(r["id"], r["prolific_pid"], r["completion_code"]) for r in listed] == [(str(pid), "PPID-7", "DEMO-2026")]
    msg, f = client.predict(session, "demo", api_name="/admin_participants_links_csv")
    with open(path_of(f), encoding="utf-8") as fh:
        urls = {r["url"] for r in csv.DictReader(fh)}
    assert set(links["validator"]) <= urls


def test_a_new_role_in_the_add_form_starts_with_no_group_or_gender(demo_db):
    """Issue 51, point 6: the Add form kept the last sender's group and gender, so the receivers
    added next were stored as USW / Man. Choosing a role now clears both (the page's event)."""
    from tests.helpers.team_page import TeamPage

    page = TeamPage(demo_db)
    fn = page.fn("fresh_cell")
    assert [getattr(c, "label", None) for c in fn.inputs] == ["Role"]
    assert [getattr(c, "label", None) for c in fn.outputs] == ["Group", "Gender"]
    assert list(page.click("fresh_cell", Role="receiver").values()) == ["", ""]
