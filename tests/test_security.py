"""A receiver never gets the source: every event of the launched app (named or not, public or
private) is called with a receiver's token in each text slot, and no answer carries an English
starter, a transcript or a recording. Admin-only events refuse a participant's token."""

from __future__ import annotations

import csv
import json

import pytest

from harness.demo import DEMO
from tests.helpers.app import AppClient, token_of

# Component types whose value a handler reads as text (a token, a session, an id); dropdowns
# and radios only take their listed choices, so they get None.
TEXT = {"textbox", "markdown", "html", "state"}


def _defaults(config: dict, dep: dict, token: str) -> list:
    comps = {c["id"]: c for c in config["components"]}
    args = []
    for cid in dep["inputs"]:
        kind = comps[cid]["type"]
        if kind in TEXT:
            args.append(token)
        elif kind in ("number", "slider"):
            args.append(50)
        elif kind == "checkbox":
            args.append(True)
        elif kind == "json":
            args.append({"token": token})
        else:  # files, audio, plots, dataframes: nothing
            args.append(None)
    return args


def _secrets() -> list[str]:
    """Phrases of every English starter: none may reach a receiver."""
    out = []
    with open(DEMO / "starters.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            words = row["text"].split()
            out += [" ".join(words[i : i + 6]) for i in range(0, max(1, len(words) - 6), 6)]
    return [s for s in out if len(s) > 20]


@pytest.fixture(scope="module")
def receiver(app_server):
    return token_of(app_server.links()["receiver"][0])


def test_no_event_gives_a_receiver_the_source(app_server, receiver):
    from web.site import role_pages

    secrets = _secrets()
    called, refused = [], []
    pages = AppClient(app_server.url)
    events = [
        (page, index, dep)
        for page in ("", *role_pages())
        for index, dep in enumerate(pages.page(page).config["dependencies"])
    ]
    for page, index, dep in events:  # every page's every event
        client = pages.page(page)
        if dep.get("js") and not dep.get("backend_fn", True):
            continue  # a browser-only step: nothing on the server
        name = f"{page}/" + (dep.get("api_name") or f"#{index}")
        args = _defaults(client.config, dep, receiver)
        try:
            if dep.get("api_visibility") == "private":
                out = client.predict(*args, fn_index=index)
            else:
                out = client.predict(*args, api_name=f"/{dep['api_name']}")
        except Exception as e:  # refused (private, or bad input): fine, if silent
            refused.append(name)
            text = str(e)
        else:
            called.append(name)
            text = json.dumps(out, ensure_ascii=False, default=str)
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{name} gave a receiver source text: {leaked[0]!r}"
        assert ".webm" not in text and "recordings/" not in text, f"{name} gave a receiver a recording"
    # the sweep reached the participant endpoints (not everything was refused)
    assert {"/view", "receiver/view", "receiver/receiver_submit"} <= set(called), (called, refused)


@pytest.mark.parametrize(
    "api",
    [
        "admin_open_recording",
        "admin_accept_recording",
        "admin_reject_recording",
        "admin_retry_job",
        "admin_prerender_da",
    ],
)
def test_admin_events_refuse_a_participant_token(app_server, receiver, api):
    client = AppClient(app_server.url).page()
    dep = next(d for d in client.config["dependencies"] if d.get("api_name") == api)
    out = client.predict(*_defaults(client.config, dep, receiver), api_name=f"/{api}")
    text = json.dumps(out, ensure_ascii=False, default=str).lower()
    assert "log in" in text or "password" in text, (api, text[:300])


def test_the_sweep_would_see_a_leak(app_server):
    """Positive control: a sender's own view does carry the starter, and the detector finds it."""
    client = AppClient(app_server.url)
    sender = token_of(app_server.links()["sender"][0])
    text = json.dumps(client.predict(sender, "record", api_name="/view"), ensure_ascii=False)
    assert any(s in text for s in _secrets())
