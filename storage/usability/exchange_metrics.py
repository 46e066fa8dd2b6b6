"""The usability study's automatic metric scores per exchange, and the human references they
are scored against (services/metrics/exchange.py)."""

from __future__ import annotations

from storage.db import Database, now


def put_exchange_metric(db, exchange_id: int, metric: str, version: str, model: str, score) -> None:
    db.execute(
        "INSERT OR REPLACE INTO exchange_metrics (exchange_id, metric, version, model, score, created_at) "
        "VALUES (?,?,?,?,?,?)",
        [exchange_id, metric, version, model, score, now()],
    )


def exchange_metric_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT m.exchange_id, m.metric, m.version, m.model, m.score FROM exchange_metrics m "
        "JOIN exchanges e ON e.id = m.exchange_id WHERE e.study_id = ?",
        [study_id],
    )


def reference_translation(database: Database, study_id: str, starter_id: str, system_id: str) -> str | list[str] | None:
    """The human reference of the starter, as a metric's reference cell: the study's reference
    translations (references.csv; a list when there are several), else, for a study without
    any for this starter, the translation of an imported exchange of a `human` system other
    than system_id (a designer who lists human translation as a system); None when neither."""
    refs = [
        r["text"]
        for r in database.query(
            "SELECT text FROM reference_translations WHERE study_id = ? AND starter_id = ? ORDER BY idx",
            [study_id, starter_id],
        )
    ]
    if refs:
        return refs[0] if len(refs) == 1 else refs
    row = database.one(
        "SELECT t.text FROM exchanges e JOIN translations t ON t.exchange_id = e.id JOIN systems s "
        "ON s.study_id = e.study_id AND s.id = e.system_id WHERE e.study_id = ? AND e.starter_id = ? "
        "AND s.kind = 'human' AND e.system_id != ? ORDER BY e.id LIMIT 1",
        [study_id, starter_id, system_id],
    )
    return row["text"] if row else None
