"""Issue 52, part A: a protocol is a plugin with tables of its own. A plugin kept outside the
packages (tests/plugins/proof/) declares its tables and indexes; the core makes and
migrates them per protocol where it migrates its own (a version per protocol, a restart a no-op,
a newer database refused), reads its corpus file into its table at import and counts it in the
summary, saves its phase's answers into its other table (a participant's view and submit reach
them through its index), exports them and only the tables of the study's protocols, and deletes
them with the study. In process, fast: the edge cases (schema steps, refusals, a re-import); the
plugin end to end in a browser is tests/test_plugin_proof.py."""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest

from services.common import protocols
from services.common.protocols import AddColumn, AddIndex, Column, Index, SchemaStep, Table
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study import lifecycle
from services.study.export import export_study
from services.study.files import StudyValidationError
from storage import open_database, protocol_schema
from storage.protocol_schema import SchemaError
from tests.helpers.sql_trace import Trace, scans
from tests.plugins import proof

NAME = proof.NAME
ITEMS = [
    ("a1", "Le chat.", "The cat sat on the mat."),
    ("a2", "Le tapis.", "Mat the on sat cat."),
    ("a3", "Un chien.", "A dog."),
]
BUILT_IN_TABLES = {t for p in ("usability", "da", "sd") for t in protocols.protocol(p).export_tables}


def write_study(folder, items=ITEMS, study_id="tp"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.toml").write_text(
        f'[study]\nid = "{study_id}"\nname = "Tables proof"\nprotocols = ["{NAME}"]\nseed = 3\n\n'
        f'[{NAME}]\nsegments = "segments.csv"\n',
        encoding="utf-8",
    )
    with open(folder / "segments.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "source", "target"])
        w.writerows(items)
    return folder


@pytest.fixture
def registered():
    protocols.register(proof.PROTOCOL)
    yield proof.PROTOCOL
    protocols.unregister(NAME)


def opened(path):
    return open_database(path, schemas=protocols.schemas())


def mine_of(database) -> set[str]:
    return {t for t in tables_of(database) if t in {proof.SEGMENTS, proof.ANSWERS, proof.SPANS, proof.QC}}


def tables_of(database) -> set[str]:
    return {r["name"] for r in database.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}


# -- the tables hook: made at start, once; migrated by version; refused when clashing ----------


def test_tables_are_made_once_and_migrated_step_by_step(registered, tmp_path):
    path = tmp_path / "t.db"
    db = opened(path)
    import_study(db, write_study(tmp_path / "study"))
    mine = {proof.SEGMENTS, proof.ANSWERS, proof.SPANS, proof.QC}
    indexes = {"proof_segments_study_id_segment_id", "proof_answers_assignment_id", "proof_answers_participant_id"}
    assert mine | indexes | {"proof_spans_assignment_id_start_char", "proof_qc_participant_id"} <= tables_of(db)
    assert db.query("SELECT protocol, version, tables FROM protocol_schemas WHERE protocol = ?", [NAME]) == [
        {"protocol": NAME, "version": 1, "tables": json.dumps(sorted(mine))}
    ]
    stamp = db.scalar("SELECT updated_at FROM protocol_schemas WHERE protocol = ?", [NAME])
    # a restart: nothing to do, no write (the write lock is never asked for)
    again = open_database(path)
    with Trace(again) as t:
        assert protocol_schema.migrate(again, protocols.schemas()) == []
    assert [s for s in t.sql if not s.lstrip().upper().startswith("SELECT")] == []
    assert again.scalar("SELECT updated_at FROM protocol_schemas WHERE protocol = ?", [NAME]) == stamp
    # version 2: a new column and index on the answers and a new table; only the new step runs
    note = Column("note", "TEXT", not_null=True, default="")
    by_score = Index(("score",))
    flags = Table("proof_flags", (Column("assignment_id", "INTEGER", references="assignments.id"),))
    answers2 = dataclasses.replace(
        proof.ANSWERS_TABLE,
        columns=(*proof.ANSWERS_TABLE.columns, note),
        indexes=(*proof.ANSWERS_TABLE.indexes, by_score),
    )
    v2 = dataclasses.replace(
        proof.PROTOCOL,
        schema_version=2,
        tables=(proof.SEGMENTS_TABLE, answers2, proof.SPANS_TABLE, proof.QC_TABLE, flags),
        schema_steps=(SchemaStep(2, (AddColumn(proof.ANSWERS, note), AddIndex(proof.ANSWERS, by_score), flags)),),
    )
    protocols.register(v2)
    db2 = opened(path)
    assert db2.scalar("SELECT version FROM protocol_schemas WHERE protocol = ?", [NAME]) == 2
    assert "note" in {c[1] for c in db2.db.execute("PRAGMA table_info(proof_answers)")}
    assert {"proof_flags", "proof_answers_score"} <= tables_of(db2)
    assert db2.scalar("SELECT COUNT(*) FROM proof_segments") == 3  # the rows made at version 1 stay
    # the plugin of version 1 again: refused, naming both versions, the database left as it is
    protocols.register(proof.PROTOCOL)
    with pytest.raises(SchemaError, match="'proof'.*schema version 2, newer than this code's 1"):
        opened(path)
    assert open_database(path).scalar("SELECT version FROM protocol_schemas WHERE protocol = ?", [NAME]) == 2


def test_a_step_left_out_is_refused_and_nothing_changes(registered, tmp_path):
    """A declaration whose steps do not make what its tables say is refused, and its write undone."""
    path = tmp_path / "t.db"
    opened(path)
    extra = Column("extra", "TEXT")
    by_score = Index(("score",), name="proof_by_score")
    answers2 = dataclasses.replace(
        proof.ANSWERS_TABLE,
        columns=(*proof.ANSWERS_TABLE.columns, extra),
        indexes=(*proof.ANSWERS_TABLE.indexes, by_score),
    )
    with pytest.raises(ValueError, match="schema step 2 changes proof_nothing"):
        protocols.register(
            dataclasses.replace(
                proof.PROTOCOL,
                schema_version=2,
                tables=(proof.SEGMENTS_TABLE, answers2, proof.SPANS_TABLE, proof.QC_TABLE),
                schema_steps=(SchemaStep(2, (AddIndex("proof_nothing", Index(("x",))),)),),
            )
        )
    protocols.register(
        dataclasses.replace(
            proof.PROTOCOL,
            schema_version=2,
            tables=(proof.SEGMENTS_TABLE, answers2, proof.SPANS_TABLE, proof.QC_TABLE),
            schema_steps=(SchemaStep(2, (AddIndex(proof.ANSWERS, by_score),)),),  # no AddColumn of extra
        )
    )
    with pytest.raises(SchemaError, match="leave proof_answers without extra: add a step"):
        opened(path)
    assert open_database(path).scalar("SELECT version FROM protocol_schemas WHERE protocol = ?", [NAME]) == 1
    assert "proof_by_score" not in tables_of(open_database(path))


def test_a_table_name_that_is_not_its_own_is_refused(tmp_path):
    """A table named outside the protocol's prefix, one that another protocol already declares,
    one that exists as a core table, and one whose rows no study reaches: each refused by name."""
    col = Column("study_id", "TEXT", not_null=True)
    with pytest.raises(ValueError, match="'proof': table 'answers' must be named proof_<name>"):
        protocols.register(dataclasses.replace(proof.PROTOCOL, tables=(Table("answers", (col,)),)))
    with pytest.raises(ValueError, match="table proof_loose holds no study's rows"):
        protocols.register(dataclasses.replace(proof.PROTOCOL, tables=(Table("proof_loose", (Column("x"),)),)))
    assert NAME not in protocols.names()
    # the core's work_pool, claimed by a protocol named "work"
    work = protocols.Protocol(name="work", tables=(Table("work_pool", (col,)),), in_studies=False)
    protocols.register(work)
    try:
        with pytest.raises(SchemaError, match="'work': work_pool already exists in the database, a core table's"):
            opened(tmp_path / "w.db")
        # another registered protocol's table: "work" declares work_x_t, which "work_x" may name too
        protocols.register(dataclasses.replace(work, tables=(Table("work_x_t", (col,)),)))
        with pytest.raises(ValueError, match="'work_x': tables work_x_t already registered"):
            protocols.register(protocols.Protocol(name="work_x", tables=(Table("work_x_t", (col,)),)))
    finally:
        protocols.unregister("work")
        protocols.unregister("work_x")


# -- the corpus stored and counted, an answer saved, exported, deleted ------------------------


def test_its_corpus_and_answers_are_its_own_rows_exported_alone_and_deleted(registered, tmp_path):
    db = opened(tmp_path / "t.db")
    res = import_study(db, write_study(tmp_path / "study"))
    assert res.counts[proof.SEGMENTS] == 3 and "proof_segments 3" in res.summary()
    assert db.query("SELECT segment_id, source, target FROM proof_segments WHERE study_id = 'tp' ORDER BY 1") == [
        {"segment_id": i, "source": s, "target": t} for i, s, t in ITEMS
    ]
    assert import_study(db, tmp_path / "study").counts[proof.SEGMENTS] == 3  # unchanged: counted from storage
    (person,) = add_participants(db, "tp", NAME, 1)
    statements = []
    given = {}
    for score in (100, 60, 90):
        with Trace(db) as t:
            view = get_view(db, person.token, NAME)
            assert view.status == "item"
            given[view.item_id] = score
            spans = [{"start": 0, "end": 1, "severity": "minor"}] if score == 100 else []
            done = submit(db, person.token, NAME, view.item_id, {"spans": json.dumps(spans), "score": score})
            assert done.saved
        statements += t.sql
    assert done.next.status == "complete"
    stored = db.query(
        "SELECT a.item_id, t.score FROM proof_answers t JOIN assignments a ON a.id = t.assignment_id ORDER BY 1"
    )
    assert {r["item_id"]: r["score"] for r in stored} == given
    # its participant's path reaches its tables through their indexes: no scan, its index searched
    assert scans(db, statements) == []
    plans = [
        row[-1]
        for s in statements
        if proof.ANSWERS in s and s.lstrip().upper().startswith("SELECT")
        for row in db.db.conn.execute("EXPLAIN QUERY PLAN " + s)
    ]
    assert "SEARCH proof_answers USING INDEX proof_answers_assignment_id (assignment_id=?)" in plans
    # exported through its export_tables; no table of a protocol the study does not list
    out = export_study(db, "tp", tmp_path / "export", "csv", media_dir=tmp_path / "media")
    common = {"participants", "consents", "demographics", "assignments"}
    assert set(out.rows) == common | {proof.ANSWERS, proof.SPANS, proof.SEGMENTS}
    assert not {f"{t}.csv" for t in BUILT_IN_TABLES} & {p.name for p in out.folder.iterdir()}
    with open(out.folder / "proof_answers.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["item_id"], int(r["score"]), r["participant"]) for r in rows) == sorted(
        (i, a, f"{NAME}-001") for i, a in given.items()
    )
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert "### `proof_answers.csv`" in readme and "### `proof_segments.csv`" in readme
    assert "1 of 3 answers mark errors yet score 100" in readme  # its warnings, from its extras' column
    assert "### `da_judgments.csv`" not in readme and "### `recordings.csv`" not in readme
    # deleted with the study, every row of its tables (its QC decided after the last answer too)
    assert [db.scalar(f"SELECT COUNT(*) FROM {t}") for t in sorted(mine_of(db))] == [3, 1, 3, 1]
    _, n = lifecycle.deletion_question(db, "tp")
    lifecycle.delete(db, "tp", "test", n)
    assert [db.scalar(f"SELECT COUNT(*) FROM {t}") for t in sorted(mine_of(db))] == [0, 0, 0, 0]


def test_a_reimport_replaces_its_corpus(registered, tmp_path):
    """A changed corpus file is a changed study (its part of the corpus hash): the re-import of a
    study without participants replaces its rows, and a study with participants refuses it."""
    db = opened(tmp_path / "t.db")
    import_study(db, write_study(tmp_path / "study"))
    res = import_study(db, write_study(tmp_path / "study", ITEMS[:2] + [("b9", "Neuf.", "New.")]))
    assert res.status == "updated" and res.counts[proof.SEGMENTS] == 3
    assert [r["segment_id"] for r in db.query("SELECT segment_id FROM proof_segments ORDER BY 1")] == ["a1", "a2", "b9"]
    add_participants(db, "tp", NAME, 1)
    with pytest.raises(StudyValidationError, match=r"the corpus changed \(proof corpus\)"):
        import_study(db, write_study(tmp_path / "study", ITEMS))


def test_the_plan_check_applies_to_its_tables(registered, tmp_path):
    """A query of its study-sized table on a column no index has is a scan the check reports."""
    db = opened(tmp_path / "t.db")
    assert scans(db, ["SELECT * FROM proof_answers WHERE score = 100"])
    assert scans(db, ["SELECT * FROM proof_answers WHERE assignment_id = 3"]) == []
