"""The typed rows of storage/rows.py match the tables of a freshly migrated database: every column
is a key (and nothing else), a nullable column's type takes None, a NOT NULL one's does not, and
the storage functions that return them give exactly those keys."""

from __future__ import annotations

import types
import typing

import pytest

from storage import assignments, consent, participants, rows, studies
from storage.db import now

# a column storage returns parsed (JSON), not as SQLite stores it
PARSED = {("studies", "config"), ("assignments", "meta"), ("demographics", "answers")}
AFFINITY = {"INTEGER": int, "TEXT": str, "REAL": float}


def _columns(database, table: str) -> dict[str, tuple[str, bool]]:
    """{column: (declared type, may be NULL)}: a primary key never is (our keys are the rowid or
    given by the code, though SQLite would take a NULL in a TEXT one)."""
    return {c[1]: (c[2], not c[3] and not c[5]) for c in database.db.execute(f"PRAGMA table_info({table})")}


def _types(hint) -> set:
    return set(typing.get_args(hint)) if isinstance(hint, types.UnionType) else {hint}


@pytest.mark.parametrize("row_type", list(rows.TABLES), ids=lambda t: t.__name__)
def test_typed_row_has_every_column_of_its_table(database, row_type):
    table = rows.TABLES[row_type]
    columns = _columns(database, table)
    assert row_type.__optional_keys__ == frozenset(), f"{row_type.__name__}: every column is in every row"
    assert set(row_type.__required_keys__) == set(columns), (
        f"{row_type.__name__} and table {table} differ: missing {sorted(set(columns) - row_type.__required_keys__)}, "
        f"not columns {sorted(row_type.__required_keys__ - set(columns))} (storage/rows.py)"
    )
    hints = typing.get_type_hints(row_type)
    for name, (declared, nullable) in columns.items():
        got = _types(hints[name])
        if typing.Any in got:
            continue
        assert (type(None) in got) == nullable, f"{row_type.__name__}.{name}: NULL {'allowed' if nullable else 'never'}"
        if (table, name) not in PARSED:
            assert AFFINITY[declared] in got, f"{row_type.__name__}.{name} is {hints[name]}, the column {declared}"


def test_storage_returns_the_typed_keys(database):
    with database.write() as db:
        db["studies"].insert({"id": "s", "name": "S", "config": "{}", "content_hash": "h", "created_at": now()})
        pid = participants.insert(db, {"study_id": "s", "role": "da", "token": "t"})
        assignments.insert_assignment(db, "s", pid, "da", "1", 0.5, meta={"modality": "text"})
        consent.record(db, pid, "s", True, "h")
        consent.save_demographics(db, pid, "s", {"age": 30})

    def keys(row_type) -> set[str]:
        return set(row_type.__required_keys__)

    assert set(studies.get_study(database, "s")) == keys(rows.StudyRow)
    assert set(participants.get(database, pid)) == keys(rows.ParticipantRow)
    assert set(participants.by_token(database, "t")) == keys(rows.LinkParticipant)
    a = assignments.next_open(database, pid, ("da",), ())
    assert set(a) == keys(rows.AssignmentRow) and a["meta"] == {"modality": "text"}
    (record,) = assignments.open_assignments(database, pid)
    assert set(record) == keys(rows.AssignmentRecord) and isinstance(record["meta"], str)
    assert set(consent.get(database, pid)) == keys(rows.ConsentRow)
    assert set(consent.demographics(database, pid)) == keys(rows.DemographicsRow)
