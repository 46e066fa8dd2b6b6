"""Talking to the app from a test: its command line run in process, gradio_client sessions on
its pages, an admin session, the token of a participant's link."""

from __future__ import annotations

from harness.app import ADMIN_SECRET, run_cli  # noqa: F401  (run_cli: the tests import it from here)


class AppClient:
    """A gradio_client session on the app as a browser has it: each call goes to the page that
    serves it (app.page_of_api: a role's submit on /<role>/, the team's calls and the
    participant calls on "/"), one Client per page, made when first needed."""

    def __init__(self, url: str, **kwargs):
        self.url, self.kwargs, self.pages = url.rstrip("/"), {"verbose": False, **kwargs}, {}

    def page(self, name: str = ""):
        from gradio_client import Client

        if name not in self.pages:
            self.pages[name] = Client(f"{self.url}/{name}/" if name else self.url, **self.kwargs)
        return self.pages[name]

    def predict(self, *args, api_name: str):
        from web.site import page_of_api

        return self.page(page_of_api(api_name)).predict(*args, api_name=api_name)

    def submit(self, *args, api_name: str):
        from web.site import page_of_api

        return self.page(page_of_api(api_name)).submit(*args, api_name=api_name)


def admin_session(client, secret: str = ADMIN_SECRET) -> str:
    """An admin session from the login event: with no password set its value is the admin link's
    secret (the tests' local, passwordless admin)."""
    return client.predict(secret, api_name="/admin_login")[0]


def token_of(url: str) -> str:
    return url.split("?t=", 1)[1]


def validator_inputs(token, item, state, moved, score, *marks):
    """Inputs of /validator_submit: the token and the form's value, the score (null when the
    slider was not moved) and the mark of the i-th question shown (state's content) = marks[i]."""
    qs = ((state or {}).get("content") or {}).get("questions", [])
    fields = {"score": score if moved else None}
    for q, m in zip(qs, marks):
        fields[f"mark-{q['idx']}"] = m
    return [token, {"item_id": item, "answer": fields}]


def receiver_inputs(token, item, state, answers):
    """Inputs of /receiver_submit: the token and the form's value, the page's fields for the
    i-th question shown (state's content) holding answers[i] = (text, not answerable)."""
    qs = ((state or {}).get("content") or {}).get("questions", [])
    fields = {}
    for q, (text, flag) in zip(qs, answers):
        fields[f"answer-{q['idx']}"], fields[f"flag-{q['idx']}"] = text, flag
    return [token, {"item_id": item, "answer": fields}]
