"""The usability study's exchanges (a sender's starter with the system that translates it) and
what holds each one up: its recording, its translation, its receivers' answers; a sender's
exchanges and load; the starters whose questions receivers already saw."""

from __future__ import annotations

from storage.db import Database, now


def insert_exchange(
    db, study_id: str, starter_id: str, system_id: str, sender_id: int | None, import_key: str | None = None
) -> int:
    return (
        db["exchanges"]
        .insert(
            {
                "study_id": study_id,
                "starter_id": starter_id,
                "system_id": system_id,
                "sender_id": sender_id,
                "import_key": import_key,
                "created_at": now(),
            }
        )
        .last_pk
    )


def exchange(database: Database, exchange_id: int | None) -> dict | None:
    """The exchange (None: there is none, or an assignment's exchange_id was NULL)."""
    return database.one("SELECT * FROM exchanges WHERE id = ?", [exchange_id])


def exchange_count(database: Database, study_id: str) -> int:
    return database.scalar("SELECT COUNT(*) FROM exchanges WHERE study_id = ?", [study_id])


def translated_exchanges(database: Database, study_id: str) -> list[dict]:
    """Translated exchanges whose recording is past QC (passed, or accepted by a reviewer) and
    whose sender is not excluded; has_questions: their starter has accepted questions (only
    then can receivers answer)."""
    return database.query(
        "SELECT e.id, e.sender_id, EXISTS (SELECT 1 FROM questions q WHERE q.study_id = e.study_id "
        "AND q.starter_id = e.starter_id) AS has_questions FROM exchanges e "
        "JOIN translations t ON t.exchange_id = e.id "
        "LEFT JOIN participants p ON p.id = e.sender_id "
        "WHERE e.study_id = ? AND (p.id IS NULL OR p.excluded_at IS NULL) "
        # the latest recording decides: one rejected and recorded again no longer holds it up
        "AND COALESCE((SELECT r.qc_status IN ('passed', 'accepted') FROM recordings r "
        "              WHERE r.exchange_id = e.id ORDER BY r.id DESC LIMIT 1), 1) ORDER BY e.id",
        [study_id],
    )


def sent_back(database: Database, exchange_id: int, recording_id: int) -> bool:
    """The recording was rejected and its sender given the exchange to record again."""
    return bool(
        database.scalar(
            "SELECT EXISTS (SELECT 1 FROM assignments WHERE exchange_id = ? AND phase = 'record' "
            "AND json_extract(meta, '$.record_again') = ?)",
            [exchange_id, recording_id],
        )
    )


def exchange_phases(database: Database, study_id: str, limit: int = 200, offset: int = 0) -> list[dict]:
    """Each exchange with what exists of every phase, for the admin tab."""
    return database.query(
        """SELECT e.id AS exchange, e.sender_id AS sender, e.starter_id AS starter, e.system_id AS system,
                  r.qc_status AS recording, r.wer,
                  (t.id IS NOT NULL) AS translated,
                  (SELECT COUNT(*) FROM assignments a WHERE a.exchange_id = e.id AND a.phase = 'receive'
                     AND a.status = 'done') AS answered,
                  (SELECT COUNT(*) FROM validations v WHERE v.exchange_id = e.id) AS validated,
                  (SELECT COUNT(*) FROM assignments a WHERE a.exchange_id = e.id AND a.phase = 'survey_baseline'
                     AND a.status = 'done') AS baseline,
                  (SELECT COUNT(*) FROM assignments a WHERE a.exchange_id = e.id AND a.phase = 'survey_informed'
                     AND a.status = 'done') AS informed,
                  (SELECT COUNT(*) FROM assignments a WHERE a.exchange_id = e.id AND a.phase = 'record'
                     AND a.status = 'withdrawn') AS withdrawn,
                  (SELECT CASE WHEN sp.excluded_at IS NOT NULL THEN 'excluded'
                               WHEN sp.dropped_out_at IS NOT NULL THEN 'dropped out' END
                     FROM participants sp WHERE sp.id = e.sender_id) AS sender_left
           FROM exchanges e
           LEFT JOIN recordings r ON r.id = (SELECT MAX(id) FROM recordings WHERE exchange_id = e.id)
           LEFT JOIN translations t ON t.exchange_id = e.id
           WHERE e.study_id = ? ORDER BY e.id LIMIT ? OFFSET ?""",
        [study_id, limit, offset],
    )


def sender_starters(database: Database, participant_id: int) -> set[str]:
    rows = database.query("SELECT starter_id FROM exchanges WHERE sender_id = ?", [participant_id])
    return {r["starter_id"] for r in rows}


def record_load(database: Database, participant_id: int) -> int:
    """Record items a sender holds (open or done)."""
    return database.scalar(
        "SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND phase = 'record' AND status != 'withdrawn'",
        [participant_id],
    )


def sender_recording_state(database: Database, participant_id: int) -> dict:
    """A sender's recordings that hold up their surveys: not recorded yet, flagged for review,
    still in QC or translation (one sender's ten or so rows)."""
    return database.one_row(
        """SELECT (SELECT COUNT(*) FROM assignments WHERE participant_id = :p AND phase = 'record'
                   AND status = 'open') AS unrecorded,
                  (SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id
                   WHERE e.sender_id = :p AND r.qc_status = 'flagged') AS in_review,
                  (SELECT COUNT(*) FROM assignments a WHERE a.participant_id = :p AND a.phase = 'record'
                   AND a.status = 'done'
                   AND NOT EXISTS (SELECT 1 FROM recordings r WHERE r.assignment_id = a.id
                                   AND r.qc_status = 'rejected')
                   AND (NOT EXISTS (SELECT 1 FROM translations t WHERE t.exchange_id = a.exchange_id)
                       OR EXISTS (SELECT 1 FROM recordings r WHERE r.exchange_id = a.exchange_id
                                  AND r.qc_status = 'pending'))) AS processing""",
        {"p": participant_id},
    )


def has_receive_items(database: Database, study_id: str, starter_id: str) -> bool:
    """Whether receivers hold (open or done) an item of one of the starter's exchanges."""
    return (
        database.one_row(
            "SELECT EXISTS (SELECT 1 FROM assignments s JOIN exchanges e ON e.id = s.exchange_id WHERE "
            "e.study_id = ? AND e.starter_id = ? AND s.phase = 'receive' AND s.status != 'withdrawn') AS x",
            [study_id, starter_id],
        )["x"]
        == 1
    )


def starters_in_use(database: Database, study_id: str) -> set[str]:
    """Starters whose questions a receiver has seen or answered: a receive item was shown, or
    answers exist, for one of their exchanges. Their questions must not change any more."""
    return {
        r["starter_id"]
        for r in database.query(
            "SELECT DISTINCT e.starter_id FROM exchanges e WHERE e.study_id = ? AND ("
            " EXISTS (SELECT 1 FROM answers a WHERE a.exchange_id = e.id) OR"
            " EXISTS (SELECT 1 FROM assignments s WHERE s.exchange_id = e.id AND s.phase = 'receive'"
            "         AND s.first_shown_at IS NOT NULL))",
            [study_id],
        )
    }


def collected_counts(database: Database, study_id: str) -> dict[str, int]:
    """What the study's participants gave, per kind (the team's progress tab, Collected)."""
    q = {
        "recordings": "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id WHERE e.study_id = ?",
        "translations": "SELECT COUNT(*) FROM translations t JOIN exchanges e ON e.id = t.exchange_id "
        "WHERE e.study_id = ?",
        "answer sets": "SELECT COUNT(DISTINCT a.assignment_id) FROM answers a JOIN exchanges e ON e.id = a.exchange_id "
        "WHERE e.study_id = ?",
        "validations": "SELECT COUNT(*) FROM validations v JOIN exchanges e ON e.id = v.exchange_id "
        "WHERE e.study_id = ?",
        "surveys": "SELECT COUNT(*) FROM surveys s JOIN exchanges e ON e.id = s.exchange_id WHERE e.study_id = ?",
    }
    return {k: database.scalar(sql, [study_id]) for k, sql in q.items()}
