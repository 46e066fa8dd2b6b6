"""What an end-to-end test reads from a launched app: the links it printed and its database rows."""

from __future__ import annotations

import re
import sqlite3


def printed_links(app) -> dict[str, str]:
    """The one link per role that `make run` prints."""
    text = (app.tmp / "server.log").read_text()
    return dict(re.findall(r"^\s+(sender|receiver|validator|rater)\s+(http\S+)", text, flags=re.M))


def rows(app, sql, params=()):
    con = sqlite3.connect(app.env["TRADLAB_DB"])
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params).fetchall()]
    finally:
        con.close()
