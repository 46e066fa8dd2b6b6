"""A protocol with tables of its own, as a lab's plugin file would be (tests/test_plugin_tables.py):
its corpus file (items.csv, the section's `items`) is read by its load, stored in its own table by
store_corpus and counted in the import's summary; its phase's answer is saved into its other
table; both are exported, and deleted with the study. It writes no SQL: its tables are declared
(Protocol.tables) and its rows go through storage/protocol_rows.py.

Named in TRADLAB_PLUGINS as "tests.plugins.tables_proof:PROTOCOL" (a launched app imports it from
the repository root); the tests register and unregister PROTOCOL themselves."""

from __future__ import annotations

import html
from pathlib import Path

from services.common.protocols import Column, ExportTable, Index, Phase, Protocol, Role, Tab, Table
from services.common.seeded import order_key
from services.participation.submissions import SubmissionError
from services.study.files import read_rows, require_text, safe_file
from storage import assignments, protocol_rows
from storage.db import Transaction, now

NAME = "tproof"
ITEMS, ANSWERS = f"{NAME}_items", f"{NAME}_answers"

ITEMS_TABLE = Table(
    ITEMS,
    (
        Column("study_id", "TEXT", not_null=True, references="studies.id"),
        Column("item_id", "TEXT", not_null=True),
        Column("text", "TEXT", not_null=True),
    ),
    indexes=(Index(("study_id", "item_id"), unique=True),),
)
ANSWERS_TABLE = Table(
    ANSWERS,
    (
        Column("assignment_id", "INTEGER", not_null=True, references="assignments.id"),
        Column("answer", "TEXT", not_null=True),
        Column("created_at", "TEXT", not_null=True),
    ),
    indexes=(Index(("assignment_id",), unique=True),),
    study_sized=True,
)


def load(folder: Path, config: dict, systems: list[dict], bundle, err) -> None:
    path = safe_file(folder, config[NAME]["items"], f"{NAME}.items", err)
    if path is None:
        return
    found = []
    for rowno, row in read_rows(path, (["id", "text"], []), err):
        if require_text(err, path.name, rowno, row, "id", "text"):
            found.append({"item_id": row["id"], "text": row["text"]})
    bundle.corpus[NAME] = found


def store_corpus(tx: Transaction, study_id: str, corpus) -> None:
    protocol_rows.insert_many(tx.db, ITEMS, [{"study_id": study_id, **r} for r in corpus or []])


def count_corpus(database, study_id: str) -> dict[str, int]:
    return {ITEMS: protocol_rows.count(database, ITEMS, {"study_id": study_id})}


def setup(tx: Transaction, study, pid: int, group, gender, design_index=None) -> None:
    """One item per stored corpus item, in the study's seeded order."""
    items = protocol_rows.select(tx.database, ITEMS, {"study_id": study["id"]}, order_by=("item_id",))
    for i, item in enumerate(items):
        assignments.insert_assignment(
            tx.db, study["id"], pid, NAME, item["item_id"], order_key(study["config"]["study"]["seed"], pid, i)
        )


def content(database, study, participant, assignment, media_dir=None) -> dict:
    item = protocol_rows.one(database, ITEMS, {"study_id": study["id"], "item_id": assignment["item_id"]})
    return {"text": item["text"] if item else ""}


def validate(database, assignment, payload) -> dict:
    if payload.get("answer") not in ("yes", "no"):
        raise SubmissionError("Please answer yes or no.")
    return {"answer": payload["answer"]}


def save(tx: Transaction, study, participant, assignment, data) -> None:
    row = {"assignment_id": assignment["id"], "answer": data["answer"], "created_at": now()}
    protocol_rows.insert(tx.db, ANSWERS, row)


def stored(database, assignment) -> dict:
    row = protocol_rows.one(database, ANSWERS, {"assignment_id": assignment["id"]})
    return {"answer": row["answer"]} if row else {}


def build_tab(ctx):
    from tabs.item_form import form_tab  # gradio: only where the page is built

    def body(c: dict, typed: dict | None = None) -> str:
        return f"<p>{html.escape(c.get('text', ''))}</p>"

    return form_tab(ctx, NAME, "Proof", body, lambda fields: {"answer": fields.get("answer")})


PROTOCOL = Protocol(
    name=NAME,
    roles=(Role(NAME, (NAME,), "Table proof", setup, seconds_per_item=5),),
    tabs=(Tab(NAME, (NAME,), f"{__name__}:build_tab"),),
    phases=(Phase(NAME, content, validate, save, stored),),
    defaults={"items": None},
    load=load,
    corpus_files=("items",),
    export_tables={
        ANSWERS: ExportTable(
            lambda database, study_id: protocol_rows.answer_rows(database, ANSWERS, study_id),
            "One row per answer of the proof's phase.",
            {
                "assignment_id": ("integer", "the item's assignment"),
                "participant": ("string", "pseudonym of the participant who answered"),
                "item_id": ("string", "the item's id in items.csv"),
                "answer": ("string", "yes or no"),
                "created_at": ("timestamp", "when the answer was saved"),
            },
        ),
        ITEMS: ExportTable(
            lambda database, study_id: protocol_rows.select(database, ITEMS, {"study_id": study_id}, ("item_id",)),
            "The proof's corpus, one row per item of items.csv.",
            {"item_id": ("string", "the item's id"), "text": ("string", "the item's text")},
            content=True,
        ),
    },
    texts={"en": {"welcome_tproof": "Welcome. {items} items; about {minutes} minutes."}},
    tables=(ITEMS_TABLE, ANSWERS_TABLE),
    store_corpus=store_corpus,
    count_corpus=count_corpus,
)
