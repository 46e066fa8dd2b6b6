"""The SQL statements a database connection runs while a block runs, and the check that none of
them scans a table that grows with the study (tests/test_participant_path_plans.py)."""

from __future__ import annotations

import re

from services.common import protocols


class Trace:
    def __init__(self, database):
        self.database, self.sql = database, []

    def __enter__(self):
        self.database.db.conn.set_trace_callback(self.sql.append)
        return self

    def __exit__(self, *exc):
        self.database.db.conn.set_trace_callback(None)


# tables whose size grows with participants, exchanges or answers (and each registered protocol's
# own tables that say so: Table.study_sized, study_sized())
STUDY_SIZED = {
    "participants",
    "exchanges",
    "assignments",
    "recordings",
    "translations",
    "answers",
    "validations",
    "validation_marks",
    "surveys",
    "work_pool",
    "events",
    "jobs",
    "consents",
    "demographics",
    "exchange_metrics",
    "question_drafts",
    "da_hit_outcomes",
    "da_judgments",
}


# an index search that only narrows to the study (or its phase) reads every row of it: a scan too
# (how queue.da_hit_loads read every DA assignment for each new rater). Not work_pool_open: a
# partial index of the open items only, which storage/usability/pool.py always reads with a LIMIT.
WHOLE_STUDY = re.compile(
    r"SEARCH (\w+) USING (?:COVERING )?INDEX (?!work_pool_open )\w+ "
    r"\(study_id=\?(?: AND phase=\?)?\)$"
)

KEYWORDS = {"WHERE", "ON", "JOIN", "LEFT", "INNER", "CROSS", "ORDER", "GROUP", "LIMIT", "USING", "SET", "AND"}


def aliases(sql: str) -> dict[str, str]:
    """alias -> table for `FROM t x`, `JOIN t AS x` (the plan names a table by its alias)."""
    out = {}
    for table, alias in re.findall(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?", sql, re.I):
        out[table] = table
        if alias and alias.upper() not in KEYWORDS:
            out[alias] = table
    return out


def study_sized() -> set[str]:
    """The core's study-sized tables and the registered protocols' (services/common/protocols.py)."""
    return STUDY_SIZED | {t.name for t in protocols.tables() if t.study_sized}


def scans(database, statements) -> list[tuple[str, str]]:
    bad = []
    sized = study_sized()
    for sql in statements:
        head = sql.lstrip().split(None, 1)[0].upper()
        if head not in ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH"):
            continue
        names = aliases(sql)
        for row in database.db.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall():
            detail = row[-1]
            m = re.match(r"SCAN (\w+)", detail) or WHOLE_STUDY.match(detail)
            if m and names.get(m.group(1), m.group(1)) in sized:
                bad.append((detail, sql[:300]))
    return bad
