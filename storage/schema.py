"""The schema read back: which tables hold a study's rows, and how to find them (deleting a
study, storage/studies.delete_study; a protocol's tables checked when made,
storage/protocol_schema.py)."""

from __future__ import annotations


def study_rows(db) -> tuple[dict[str, str], list[str]]:
    """Each table that holds a study's rows, with the WHERE that finds them (a `study_id` column,
    or a single-column foreign key to such a table), and the order to delete them: children
    first. Read from the schema, so a table added later is covered without a change here."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'studies'")]
    cols = {t: {c[1] for c in db.execute(f"PRAGMA table_info({t})")} for t in tables}
    fks: dict[str, list[tuple[str, str, str]]] = {}
    for t in tables:
        by_id: dict[int, list] = {}
        for f in db.execute(f"PRAGMA foreign_key_list({t})"):
            by_id.setdefault(f[0], []).append(f)
        # (column, parent table, parent column): single-column keys (the composite ones carry study_id)
        fks[t] = [(f[0][3], f[0][2], f[0][4] or "rowid") for f in by_id.values() if len(f) == 1]
    where: dict[str, str] = {}

    def find(t: str, seen: tuple = ()) -> str | None:
        if t in where:
            return where[t]
        parts = ["study_id = :sid"] if "study_id" in cols.get(t, ()) else []
        for col, parent, pcol in fks.get(t, []):
            if parent == "studies":
                continue
            sub = find(parent, seen + (t,)) if parent not in seen else None
            if sub:
                parts.append(f"{col} IN (SELECT {pcol} FROM {parent} WHERE {sub})")
        if parts:
            where[t] = " OR ".join(f"({p})" for p in parts)
        return where.get(t)

    for t in tables:
        find(t)
    order: list[str] = []
    left = set(where)
    while left:  # a table goes once no table still to delete refers to it
        ready = sorted(t for t in left if not any(p == t for c in left - {t} for _, p, _ in fks.get(c, [])))
        if not ready:
            raise RuntimeError(f"foreign keys in a cycle among {sorted(left)}")
        order += ready
        left -= set(ready)
    return where, order


def study_tables(db) -> set[str]:
    """The tables in which a study's rows are found."""
    return set(study_rows(db)[0])
