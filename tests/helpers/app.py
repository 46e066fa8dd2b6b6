"""Talking to the app from a test: its command line run in process, gradio_client sessions on
its pages, an admin session, the token of a participant's link."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.app import ADMIN_SECRET, ROOT


def run_cli(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python app.py ARGS` run in this process (cli.main): env, when given, is the whole
    environment during the call (as a subprocess's env would be); returns what the process would
    have (returncode, stdout, stderr). The working directory, environment and umask are restored."""
    import contextlib
    import io

    import cli

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([str(a) for a in args])
            except SystemExit as e:  # argparse's errors (2) and commands that exit
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int) and e.code is not None:
                    print(e.code, file=sys.stderr)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        os.umask(saved_umask)
    return subprocess.CompletedProcess(["app.py", *map(str, args)], code or 0, out.getvalue(), err.getvalue())


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
