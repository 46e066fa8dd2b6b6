"""The team page built in process (gr.Blocks events called as the browser calls them), and
DA and SD answers to show on it."""

from __future__ import annotations

import asyncio
import random

import gradio as gr
from gradio.state_holder import SessionState

from harness.app import ADMIN_SECRET
from services.admin import auth as admin
from services.common.settings import Settings
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from tests.helpers.da import careful_raters


class TeamPage:
    """The team page ("/") of the app built on `db`, one browser session of it, logged in."""

    def __init__(self, db, password="pw"):
        from web.pages import team_page

        self.auth = admin.AdminAuth(password, local_secret=ADMIN_SECRET)
        self.demo = team_page(Settings.from_env(), db, self.auth)
        self.state = SessionState(self.demo)
        self.session = self.auth.login(password or ADMIN_SECRET, "127.0.0.1")

    def fn(self, name):
        # the first event of that handler (Show's "run" also answers a new session)
        return next(f for f in self.demo.fns.values() if getattr(f.fn, "__name__", "") == name)

    def click(self, name, **values):
        """The event `name` with each input as the browser has it (values by label override)."""
        fn = self.fn(name)
        inputs = []
        for c in fn.inputs:
            label = getattr(c, "label", None)
            if label in values:
                inputs.append(values[label])
            elif isinstance(c, gr.Textbox) and not c.visible:
                inputs.append(self.session)
            elif isinstance(c, gr.Dropdown) and label == "Study":
                inputs.append("demo")
            elif isinstance(c, gr.Number):
                inputs.append(0 if c.value is None else c.value)  # what the browser shows and sends
            elif isinstance(c, gr.State):
                inputs.append(None)
            else:
                inputs.append(None if callable(c.value) else c.value)
        out = asyncio.run(self.demo.process_api(fn, inputs, state=self.state, request=None))
        return dict(zip(fn.outputs, out["data"]))

    def show(self):
        # the study dropdown gets its choices from Show, as on the page
        fn = self.fn("run")
        asyncio.run(self.demo.process_api(fn, [self.session, None], state=self.state, request=None))


def rate_da_and_sd(db, media) -> None:
    """The demo's DA and SD parts done: four DA raters (careful) and six SD raters (random)."""
    careful_raters(db, "demo", 4, media)
    rng = random.Random(1)
    for p in add_participants(db, "demo", "sd", 6):
        while (v := get_view(db, p.token, "sd")).status == "item":
            submit(db, p.token, "sd", v.item_id, {"values": {x["slot"]: rng.randint(1, 7) for x in v.content["pairs"]}})
