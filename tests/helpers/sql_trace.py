"""The SQL statements a database connection runs while a block runs."""

from __future__ import annotations


class Trace:
    def __init__(self, database):
        self.database, self.sql = database, []

    def __enter__(self):
        self.database.db.conn.set_trace_callback(self.sql.append)
        return self

    def __exit__(self, *exc):
        self.database.db.conn.set_trace_callback(None)
