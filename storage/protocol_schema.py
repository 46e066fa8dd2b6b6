"""A protocol's own tables, declared as data (services/common/protocols.py: Protocol.tables,
schema_version, schema_steps) and created and migrated here, per protocol, in the app's one
SQLite file: the SQL that makes them is storage's, as the SQL that reads and writes their rows
is (storage/protocol_rows.py), so a protocol (a lab's plugin file too) writes none.

Each protocol's schema version is kept in protocol_schemas (storage/migrations.py m019), with the
tables it made there. At start (open_database(..., schemas)): a protocol not seen before gets its
tables as declared now, at its schema_version; one at an older version gets the steps after it,
in order; one at its version is left alone (a read, no write); one whose stored version is newer
than its declaration is refused (a database is never migrated down). A table is named
`<protocol>_<name>` and may not be a table that exists and is not the protocol's own (a core
table, another protocol's); each holds a study's rows (a study_id column or a foreign key that
leads to one), so deleting a study (storage/studies.delete_study) reaches them.

The core's tables keep their migrations in storage/migrations.py; the built-in protocols' tables
are among them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Iterable

from storage.schema import study_tables

COLUMN_TYPES = ("INTEGER", "TEXT", "REAL", "BLOB")
IDENT = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


class SchemaError(RuntimeError):
    """A protocol's tables cannot be made or migrated as declared; the message says why."""


@dataclass(frozen=True)
class Column:
    """A column: its SQLite type (COLUMN_TYPES), NOT NULL or not, its default, and a foreign key
    (references: "table.column", e.g. "assignments.id")."""

    name: str
    type: str = "TEXT"
    not_null: bool = False
    default: str | int | float | None = None
    references: str = ""


@dataclass(frozen=True)
class Index:
    """An index on columns of its table; name: `<table>_<columns>` unless given (then it starts
    with the protocol's prefix too)."""

    columns: tuple[str, ...]
    unique: bool = False
    name: str = ""


@dataclass(frozen=True)
class Table:
    """A protocol's table as its current schema version has it.

    primary_key: its columns ((): rowid; one INTEGER column: that column is the rowid)
    study_sized: its rows grow with the study's participants or answers, so a participant's
        action must reach them through an index (tests/test_participant_path_plans.py checks
        every statement against the registered protocols' study-sized tables)
    """

    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    indexes: tuple[Index, ...] = ()
    study_sized: bool = False


@dataclass(frozen=True)
class AddColumn:
    """A step's change: a column added to an existing table (SQLite: a NOT NULL column needs a
    default, a foreign key column a NULL default)."""

    table: str
    column: Column


@dataclass(frozen=True)
class AddIndex:
    """A step's change: an index added to an existing table."""

    table: str
    index: Index


@dataclass(frozen=True)
class SchemaStep:
    """What brings a protocol's tables from the version before to `version`: new tables (a
    Table), new columns (AddColumn), new indexes (AddIndex), in order. Never edit a step a
    database has had: add one."""

    version: int
    changes: tuple[Table | AddColumn | AddIndex, ...]


@dataclass(frozen=True)
class Schema:
    """One protocol's declaration, as the registry hands it to storage."""

    owner: str
    version: int
    tables: tuple[Table, ...]
    steps: tuple[SchemaStep, ...] = ()


# -- the declaration checked (at registration: no database needed) ----------------------------


def index_name(table: str, index: Index) -> str:
    return index.name or f"{table}_{'_'.join(index.columns)}"


def problems(schema: Schema) -> list[str]:
    """What is wrong with a declaration, each in words naming the protocol's table."""
    prefix = schema.owner + "_"
    out: list[str] = []
    if not isinstance(schema.version, int) or schema.version < 1:
        out.append(f"schema_version must be a whole number >= 1, not {schema.version!r}")
    names = [t.name for t in schema.tables]
    if len(set(names)) != len(names):
        out.append("a table is declared twice")
    for t in schema.tables:
        out += _table_problems(t, prefix)
    declared = {t.name: t for t in schema.tables}
    versions = [s.version for s in schema.steps]
    if versions != sorted(set(versions)) or any(v < 2 or v > schema.version for v in versions):
        out.append(f"schema_steps' versions must rise, each 2..{schema.version} (the schema_version)")
    if schema.steps and versions[-1] != schema.version:
        out.append(f"the last schema step is version {versions[-1]}, not the schema_version {schema.version}")
    for step in schema.steps:
        for change in step.changes:
            target = change.name if isinstance(change, Table) else change.table
            if target not in declared:
                out.append(f"schema step {step.version} changes {target}, which tables does not declare as it is now")
            elif isinstance(change, Table):
                out += _table_problems(change, prefix)
            elif isinstance(change, AddColumn):
                if change.column not in declared[target].columns:
                    out.append(
                        f"schema step {step.version} adds {target}.{change.column.name} unlike tables declares it"
                    )
                elif change.column.not_null and change.column.default is None:
                    out.append(f"schema step {step.version}: {target}.{change.column.name} NOT NULL needs a default")
            elif change.index not in declared[target].indexes:
                out.append(f"schema step {step.version} adds an index of {target} that tables does not declare")
    return out


def _table_problems(t: Table, prefix: str) -> list[str]:
    out = []
    if not IDENT.match(t.name) or not t.name.startswith(prefix) or t.name == prefix:
        out.append(f"table {t.name!r} must be named {prefix}<name> (lower-case letters, digits, _)")
    cols = [c.name for c in t.columns]
    if not cols or len(set(cols)) != len(cols):
        out.append(f"table {t.name}: its columns must be given, each once")
    for c in t.columns:
        if not IDENT.match(c.name):
            out.append(f"table {t.name}: column {c.name!r} is not lower-case letters, digits, _")
        if c.type not in COLUMN_TYPES:
            out.append(f"table {t.name}: column {c.name} has type {c.type!r}, not one of {', '.join(COLUMN_TYPES)}")
        if c.references and not re.match(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$", c.references):
            out.append(f"table {t.name}: column {c.name} references {c.references!r}, not 'table.column'")
    for key in (t.primary_key, *(i.columns for i in t.indexes)):
        if not set(key) <= set(cols) or (key is not t.primary_key and not key):
            out.append(f"table {t.name}: a key or index names columns it does not have ({', '.join(key)})")
    for i in t.indexes:
        if not IDENT.match(index_name(t.name, i)) or not index_name(t.name, i).startswith(prefix):
            out.append(f"table {t.name}: index {index_name(t.name, i)!r} must be named {prefix}<name>")
    if "study_id" not in cols and not any(c.references for c in t.columns):
        out.append(
            f"table {t.name} holds no study's rows: give it a study_id column or a foreign key "
            "(deleting a study deletes its rows by these)"
        )
    return out


# -- the SQL of a declaration ---------------------------------------------------------------


def _literal(value: str | int | float) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise SchemaError(f"a default must be text or a number, not {value!r}")
    return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else repr(value)


def _column_sql(c: Column, primary: bool = False) -> str:
    sql = f"{c.name} {c.type}" + (" PRIMARY KEY" if primary else "")
    if c.not_null:
        sql += " NOT NULL"
    if c.default is not None:
        sql += f" DEFAULT {_literal(c.default)}"
    if c.references:
        parent, column = c.references.split(".")
        sql += f" REFERENCES {parent}({column})"
    return sql


def _index_sql(table: str, i: Index) -> str:
    unique = "UNIQUE " if i.unique else ""
    return f"CREATE {unique}INDEX {index_name(table, i)} ON {table} ({', '.join(i.columns)})"


def create_sql(t: Table) -> list[str]:
    """CREATE TABLE and its CREATE INDEXes."""
    single = len(t.primary_key) == 1
    cols = [_column_sql(c, single and c.name == t.primary_key[0]) for c in t.columns]
    if len(t.primary_key) > 1:
        cols.append(f"PRIMARY KEY ({', '.join(t.primary_key)})")
    return [f"CREATE TABLE {t.name} ({', '.join(cols)})", *(_index_sql(t.name, i) for i in t.indexes)]


def change_sql(change: Table | AddColumn | AddIndex) -> list[str]:
    if isinstance(change, Table):
        return create_sql(change)
    if isinstance(change, AddColumn):
        return [f"ALTER TABLE {change.table} ADD COLUMN {_column_sql(change.column)}"]
    return [_index_sql(change.table, change.index)]


# -- creating and migrating at start ---------------------------------------------------------


def stored_versions(database) -> dict[str, dict]:
    """{protocol: {version, tables}} as the database has them."""
    return {
        r["protocol"]: {"version": r["version"], "tables": json.loads(r["tables"])}
        for r in database.query("SELECT protocol, version, tables FROM protocol_schemas")
    }


def migrate(database, schemas: Iterable[Schema]) -> list[str]:
    """Each protocol's tables made or brought to its schema_version, one write per protocol that
    needs it; returns what was done ("<protocol>: created at 1", "<protocol>: 1 -> 2"). Nothing to
    do (the usual start): reads only. Raises SchemaError, leaving that protocol's tables as
    they were."""
    schemas = list(schemas)
    if not schemas:
        return []
    done = []
    stored = stored_versions(database)
    for schema in schemas:
        wrong = problems(schema)
        if wrong:
            raise SchemaError(f"protocol '{schema.owner}': " + "; ".join(wrong))
        if _at(schema, stored.get(schema.owner)):
            continue
        with database.write() as db:
            had = stored_versions(database).get(schema.owner)  # again, under the write lock:
            if _at(schema, had):  # another process (the app, a command) made them meanwhile
                continue
            _apply(db, schema, had)
        done.append(
            f"{schema.owner}: created at {schema.version}"
            if had is None
            else f"{schema.owner}: {had['version']} -> {schema.version}"
        )
    return done


def _at(schema: Schema, had: dict | None) -> bool:
    """Whether the stored version is the declared one; a newer one is refused."""
    if had is not None and had["version"] > schema.version:
        raise SchemaError(
            f"protocol '{schema.owner}': the database holds its tables at schema version {had['version']}, "
            f"newer than this code's {schema.version}: run the version of the protocol that made them "
            "(a database is never migrated down)"
        )
    return had is not None and had["version"] == schema.version


def _made_by(change: Table | AddColumn | AddIndex) -> list[str]:
    """The tables and indexes a change makes."""
    if isinstance(change, Table):
        return [change.name, *(index_name(change.name, i) for i in change.indexes)]
    if isinstance(change, AddIndex):
        return [index_name(change.table, change.index)]
    return []


def _apply(db, schema: Schema, had: dict | None) -> None:
    """Inside the write: the tables made (had None) or the steps after the stored version run,
    checked, and the version recorded."""
    if had is None:
        changes: list[Table | AddColumn | AddIndex] = list(schema.tables)
        owned: set[str] = set()
    else:
        changes = [c for s in schema.steps if s.version > had["version"] for c in s.changes]
        owned = set(had["tables"])
    existing = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    for change in changes:
        taken = sorted(n for n in _made_by(change) if n in existing and n not in owned)
        if taken:
            raise SchemaError(
                f"protocol '{schema.owner}': {', '.join(taken)} already exists in the database, a core "
                "table's or another protocol's: rename it"
            )
        for sql in change_sql(change):
            db.execute(sql)
        owned |= {change.name} if isinstance(change, Table) else set()
    _check_made(db, schema)
    db.execute(
        "INSERT INTO protocol_schemas (protocol, version, tables, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (protocol) DO UPDATE SET version = excluded.version, tables = excluded.tables, "
        "updated_at = excluded.updated_at",
        [schema.owner, schema.version, json.dumps(sorted(owned | {t.name for t in schema.tables})), _now()],
    )


def _check_made(db, schema: Schema) -> None:
    """The tables as made are the tables declared (a step forgotten shows here), and a deleted
    study's rows in each are found (storage/studies.delete_study)."""
    for t in schema.tables:
        have = {c[1] for c in db.execute(f"PRAGMA table_info({t.name})")}
        indexes = {i[1] for i in db.execute(f"PRAGMA index_list({t.name})")}
        missing = [c.name for c in t.columns if c.name not in have]
        missing += [index_name(t.name, i) for i in t.indexes if index_name(t.name, i) not in indexes]
        if not have or missing:
            raise SchemaError(
                f"protocol '{schema.owner}': its schema steps to version {schema.version} leave {t.name} "
                f"without {', '.join(missing) or 'the table'}: add a step that makes it"
            )
    unreached = sorted({t.name for t in schema.tables} - study_tables(db))
    if unreached:
        raise SchemaError(
            f"protocol '{schema.owner}': no study's rows can be found in {', '.join(unreached)}: its foreign "
            "keys lead to no table with a study_id column (deleting a study would leave them)"
        )


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
