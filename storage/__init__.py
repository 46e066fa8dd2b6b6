"""SQLite storage: the schema, its migrations and the only SQL in the project."""

from storage.db import Database, open_database

__all__ = ["Database", "open_database"]
