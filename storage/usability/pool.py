"""The work pool: items waiting for people, and the per-exchange facts the workflow checks.

Every query here is bounded by one exchange, one participant or one stratum's first rows
(indexes of migration m009), so its cost does not grow with the study; the study-wide ones
are marked and serve only the repair (services/usability/workflow.refresh) and the worker.
"""

from __future__ import annotations

import json

from storage.db import Database, now


def offer(
    db, study_id: str, phase: str, item_id, exchange_id: int, stratum: str, producers, need: int, rkey: float
) -> bool:
    """Puts an item in the pool (need = people still to assign); False when it was there."""
    cur = db.execute(
        "INSERT INTO work_pool (study_id, phase, item_id, exchange_id, stratum, producers, need, rkey, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT (study_id, phase, item_id) DO NOTHING",
        [study_id, phase, str(item_id), exchange_id, stratum, json.dumps(sorted(producers)), max(0, need), rkey, now()],
    )
    return cur.rowcount == 1


def entry(database: Database, study_id: str, phase: str, item_id) -> dict | None:
    return database.one(
        "SELECT * FROM work_pool WHERE study_id = ? AND phase = ? AND item_id = ?", [study_id, phase, str(item_id)]
    )


def set_need(db, study_id: str, phase: str, item_id, need: int) -> None:
    db.execute(
        "UPDATE work_pool SET need = ? WHERE study_id = ? AND phase = ? AND item_id = ?",
        [max(0, need), study_id, phase, str(item_id)],
    )


def take(db, study_id: str, phase: str, item_id) -> bool:
    """One place of the item is taken; False when none was left (nothing changes)."""
    cur = db.execute(
        "UPDATE work_pool SET need = need - 1 WHERE study_id = ? AND phase = ? AND item_id = ? AND need > 0",
        [study_id, phase, str(item_id)],
    )
    return cur.rowcount == 1


def give_back(db, study_id: str, phase: str, item_id) -> bool:
    """A withdrawn holder's place goes back to the pool (only for items that are pooled)."""
    cur = db.execute(
        "UPDATE work_pool SET need = need + 1 WHERE study_id = ? AND phase = ? AND item_id = ?",
        [study_id, phase, str(item_id)],
    )
    return cur.rowcount == 1


# An open item whose exchange reads a starter the participant already had in this phase (any
# status: a withdrawn one may have been seen): its questions are the same, so a second answer set
# would not be independent of the first. CROSS JOIN keeps the participant's own assignments
# outside (index on participant_id, phase: at most their capacity, each exchange by its key),
# never the starter's exchanges (which grow with the senders).
_HAD_STARTER = (
    "EXISTS (SELECT 1 FROM assignments s CROSS JOIN exchanges se ON se.id = s.exchange_id "
    "WHERE s.participant_id = ? AND s.phase = w.phase AND se.starter_id = "
    "(SELECT we.starter_id FROM exchanges we WHERE we.id = w.exchange_id))"
)


def _starter_rule(participant_id: int, distinct_starters: bool, repeat_before: str | None) -> tuple[str, list]:
    """The WHERE clause (and its parameters) that keeps a starter the participant had out; with
    repeat_before (a time), an item waiting in the pool since before it passes anyway (the
    study's receiver_repeat_after_minutes: services/usability/workflow.repeat_cutoff)."""
    if not distinct_starters:
        return "", []
    if repeat_before is None:
        return " AND NOT " + _HAD_STARTER, [participant_id]
    return f" AND (w.created_at <= ? OR NOT {_HAD_STARTER})", [repeat_before, participant_id]


def candidates(
    database: Database,
    study_id: str,
    phase: str,
    stratum: str,
    limit: int,
    participant_id: int,
    distinct_starters: bool = False,
    repeat_before: str | None = None,
) -> list[dict]:
    """The first open items of one stratum that the participant never held: started items first
    (fewest places left), then the seeded random order (index work_pool_open). Those they held are
    skipped in the scan, not after the LIMIT: with redundancy > 1 the other places of the items a
    receiver already answered stay open, and would fill the first rows; the scan passes at most
    the participant's own items (their capacity), whatever the pool's size. distinct_starters: nor
    any item of a starter they already had (_HAD_STARTER), skipped in the scan too; it passes at
    most the open items of those starters in this stratum. repeat_before: such an item passes
    when it has waited since before that time; its row's `repeat` says so (1), to be recorded."""
    rule, params = _starter_rule(participant_id, distinct_starters, repeat_before)
    marked = distinct_starters and repeat_before is not None
    rows = database.query(
        f"SELECT item_id, exchange_id, stratum, producers, need, created_at, {_HAD_STARTER if marked else 0} AS repeat "
        "FROM work_pool w "
        "WHERE study_id = ? AND phase = ? AND stratum = ? AND need > 0 AND NOT EXISTS (SELECT 1 FROM assignments a "
        "WHERE a.participant_id = ? AND a.phase = w.phase AND a.item_id = w.item_id)"
        + rule
        + " ORDER BY need, rkey LIMIT ?",
        [
            *([participant_id] if marked else []),
            study_id,
            phase,
            stratum,
            participant_id,
            *params,
            limit,
        ],
    )
    for r in rows:
        r["producers"] = frozenset(json.loads(r["producers"]))
    return rows


def any_open(database: Database, study_id: str, phase: str) -> bool:
    return bool(
        database.scalar(
            "SELECT 1 FROM work_pool WHERE study_id = ? AND phase = ? AND need > 0 LIMIT 1", [study_id, phase]
        )
    )


def takeable(
    database: Database,
    study_id: str,
    phase: str,
    participant_id: int,
    identities,
    limit: int,
    scan: int,
    distinct_starters: bool = False,
    repeat_before: str | None = None,
) -> int:
    """How many open items of a phase the participant could take (none they hold or had, none
    that is their own work, and with distinct_starters none of a starter they had), counting at
    most `limit` among the first `scan` open rows (index work_pool_open: the cost does not grow
    with the pool). Two open items of one new starter both count: a ready count, not a promise."""
    if limit <= 0:
        return 0
    rule, params = _starter_rule(participant_id, distinct_starters, repeat_before)
    ids = sorted(identities)
    marks = ",".join("?" * len(ids)) or "NULL"
    return database.scalar(
        f"""SELECT COUNT(*) FROM (
              SELECT 1 FROM (SELECT phase, item_id, exchange_id, producers, created_at FROM work_pool
                             WHERE study_id = ? AND phase = ? AND need > 0 LIMIT ?) w
              WHERE NOT EXISTS (SELECT 1 FROM assignments a WHERE a.participant_id = ? AND a.phase = w.phase
                                AND a.item_id = w.item_id)
                AND NOT EXISTS (SELECT 1 FROM json_each(w.producers) j WHERE j.value IN ({marks}))"""
        + rule
        + """
              LIMIT ?)""",
        [study_id, phase, scan, participant_id, *ids, *params, limit],
    )


def open_strata(database: Database, study_id: str, phase: str, strata: list[str]) -> list[str]:
    """Which of these strata have an open item: one statement, one indexed probe per stratum
    (work_pool_open), in the order given."""
    if not strata:
        return []
    rows = database.query(
        "SELECT s.value AS stratum FROM json_each(?) s WHERE EXISTS (SELECT 1 FROM work_pool w "
        "WHERE w.study_id = ? AND w.phase = ? AND w.stratum = s.value AND w.need > 0) ORDER BY s.key",
        [json.dumps(list(strata)), study_id, phase],
    )
    return [r["stratum"] for r in rows]


def held_strata(database: Database, participant_id: int, phase: str) -> dict[str, int]:
    """How many pooled items of each stratum a participant holds (open or done)."""
    rows = database.query(
        "SELECT w.stratum, COUNT(*) AS n FROM assignments a JOIN work_pool w ON w.study_id = a.study_id "
        "AND w.phase = a.phase AND w.item_id = a.item_id WHERE a.participant_id = ? AND a.phase = ? "
        "AND a.status != 'withdrawn' GROUP BY w.stratum",
        [participant_id, phase],
    )
    return {r["stratum"]: r["n"] for r in rows}


def holder_count(database: Database, study_id: str, phase: str, item_id) -> int:
    return database.scalar(
        "SELECT COUNT(*) FROM assignments WHERE study_id = ? AND phase = ? AND item_id = ? AND status != 'withdrawn'",
        [study_id, phase, str(item_id)],
    )


def phase_load(database: Database, participant_id: int, phase: str) -> int:
    """Items a participant holds in a phase (open or done; withdrawn ones do not count)."""
    return database.scalar(
        "SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND phase = ? AND status != 'withdrawn'",
        [participant_id, phase],
    )


# -- one exchange ------------------------------------------------------------------------------


def exchange_state(database: Database, exchange_id: int) -> dict | None:
    """An exchange with what decides whether it can go on: its translation, its recording's QC,
    its starter's questions and its sender's standing."""
    return database.one(
        """SELECT e.id, e.study_id, e.starter_id, e.system_id, e.sender_id,
                  p.grp, p.gender, p.active AS sender_active, p.excluded_at, p.dropped_out_at, p.external_id,
                  p.prolific_pid,
                  EXISTS (SELECT 1 FROM translations t WHERE t.exchange_id = e.id) AS translated,
                  COALESCE((SELECT r.qc_status IN ('passed', 'accepted') FROM recordings r
                            WHERE r.exchange_id = e.id ORDER BY r.id DESC LIMIT 1), 1) AS qc_ok,
                  EXISTS (SELECT 1 FROM questions q WHERE q.study_id = e.study_id
                          AND q.starter_id = e.starter_id) AS has_questions
           FROM exchanges e LEFT JOIN participants p ON p.id = e.sender_id WHERE e.id = ?""",
        [exchange_id],
    )


def exchange_validated(database: Database, exchange_id: int) -> bool:
    """Every finished answer set of the exchange has a validation (and there is one)."""
    return bool(
        database.scalar(
            """SELECT EXISTS (SELECT 1 FROM validations v WHERE v.exchange_id = ?)
           AND NOT EXISTS (SELECT 1 FROM assignments r WHERE r.exchange_id = ? AND r.phase = 'receive'
                           AND r.status = 'done' AND NOT EXISTS (
                               SELECT 1 FROM validations v2 WHERE v2.receive_assignment_id = r.id))""",
            [exchange_id, exchange_id],
        )
    )


def survey_holders(database: Database, exchange_id: int, phase: str, status: str | None = None) -> list[dict]:
    """Who holds the exchange's survey of this phase (withdrawn ones excluded)."""
    sql = (
        "SELECT a.id, a.participant_id, a.status, p.active, p.role, p.dropped_out_at FROM assignments a "
        "JOIN participants p ON p.id = a.participant_id WHERE a.exchange_id = ? AND a.phase = ? "
        "AND a.status != 'withdrawn'"
    )
    params: list = [exchange_id, phase]
    if status:
        sql += " AND a.status = ?"
        params.append(status)
    return database.query(sql, params)


def starter_exchanges(database: Database, study_id: str, starter_id: str) -> list[int]:
    rows = database.query("SELECT id FROM exchanges WHERE study_id = ? AND starter_id = ?", [study_id, starter_id])
    return [r["id"] for r in rows]


def sender_exchanges(database: Database, participant_id: int) -> list[int]:
    rows = database.query("SELECT id FROM exchanges WHERE sender_id = ? ORDER BY id", [participant_id])
    return [r["id"] for r in rows]


def survey_exchanges(database: Database, participant_id: int, phase: str, status: str) -> list[int]:
    rows = database.query(
        "SELECT exchange_id FROM assignments WHERE participant_id = ? AND phase = ? "
        "AND status = ? ORDER BY exchange_id",
        [participant_id, phase, status],
    )
    return [r["exchange_id"] for r in rows]


def receive_assignment_state(database: Database, assignment_id: int) -> dict | None:
    """A finished answer set with the people whose work it contains."""
    return database.one(
        "SELECT a.id, a.participant_id AS receiver_id, a.exchange_id, a.status, e.study_id, e.sender_id "
        "FROM assignments a JOIN exchanges e ON e.id = a.exchange_id WHERE a.id = ?",
        [assignment_id],
    )


# -- the sender cells' waiting recordings ------------------------------------------------------


def cell_orphans(database: Database, study_id: str, cell: str) -> list[dict]:
    """Recording items withdrawn from a sender that no sender of their cell could take yet."""
    return database.query(
        "SELECT w.item_id, w.exchange_id, e.starter_id, e.system_id FROM work_pool w "
        "JOIN exchanges e ON e.id = w.exchange_id WHERE w.study_id = ? AND w.phase = 'record' "
        "AND w.stratum = ? AND w.need > 0 ORDER BY w.rkey",
        [study_id, cell],
    )


# -- study-wide: the repair only ---------------------------------------------------------------


def study_exchange_ids(database: Database, study_id: str, after: int, limit: int) -> list[int]:
    """A chunk of the study's exchange ids (the repair walks them in chunks)."""
    rows = database.query(
        "SELECT id FROM exchanges WHERE study_id = ? AND id > ? ORDER BY id LIMIT ?", [study_id, after, limit]
    )
    return [r["id"] for r in rows]


def done_receive_ids(database: Database, exchange_id: int) -> list[int]:
    rows = database.query(
        "SELECT id FROM assignments WHERE exchange_id = ? AND phase = 'receive' AND status = 'done' ORDER BY id",
        [exchange_id],
    )
    return [r["id"] for r in rows]


def pool_entries(database: Database, study_id: str, after: tuple[str, str], limit: int) -> list[dict]:
    """A chunk of the pool in (phase, item_id) order."""
    return database.query(
        "SELECT w.phase, w.item_id, w.need, (SELECT COUNT(*) FROM assignments a WHERE a.study_id = w.study_id "
        "AND a.phase = w.phase AND a.item_id = w.item_id AND a.status != 'withdrawn') AS holders "
        "FROM work_pool w WHERE w.study_id = ? AND (w.phase, w.item_id) > (?, ?) "
        "ORDER BY w.phase, w.item_id LIMIT ?",
        [study_id, after[0], after[1], limit],
    )


def inactive_senders(database: Database, study_id: str, before: str) -> list[dict]:
    """Active senders not seen since `before` who have open surveys (worker, periodic)."""
    return database.query(
        "SELECT p.* FROM participants p WHERE p.study_id = ? AND p.role = 'sender' AND p.active = 1 "
        "AND COALESCE(p.last_seen_at, p.created_at) < ? AND EXISTS (SELECT 1 FROM assignments a "
        "WHERE a.participant_id = p.id AND a.status = 'open' AND a.phase IN ('survey_baseline', 'survey_informed'))",
        [study_id, before],
    )


# -- study-wide: the design's plan (import and the admin's dashboard, never a participant) ------


def exchanges_per_starter(database: Database, study_id: str) -> dict[str, int]:
    """Exchanges that want answers, per starter: imported ones, recorded ones (a sender who dropped
    out keeps theirs: a rater takes their surveys) and those an active sender is still to record.
    Not the unrecorded ones of a sender who left: their texts wait for another sender of the cell,
    who records them as new exchanges (workflow.adopt_cell_orphans)."""
    rows = database.query(
        "SELECT e.starter_id, COUNT(*) AS n FROM exchanges e LEFT JOIN participants p ON p.id = e.sender_id "
        "WHERE e.study_id = ? AND (e.sender_id IS NULL OR EXISTS (SELECT 1 FROM recordings r "
        "WHERE r.exchange_id = e.id) OR (p.active = 1 AND p.excluded_at IS NULL AND p.dropped_out_at IS NULL)) "
        "GROUP BY e.starter_id",
        [study_id],
    )
    return {r["starter_id"]: r["n"] for r in rows}


def receivers_enrolled(database: Database, study_id: str) -> int:
    """Receivers enrolled and not excluded (finished ones too: they count towards the design)."""
    return database.scalar(
        "SELECT COUNT(*) FROM participants WHERE study_id = ? AND role = 'receiver' AND excluded_at IS NULL",
        [study_id],
    )


_FREE_RECEIVERS = """
    SELECT p.id FROM participants p WHERE p.study_id = ? AND p.role = 'receiver' AND p.active = 1
      AND p.completed_at IS NULL AND p.excluded_at IS NULL AND p.dropped_out_at IS NULL
      AND (SELECT COUNT(*) FROM assignments a WHERE a.participant_id = p.id AND a.phase = 'receive'
           AND a.status != 'withdrawn') < ?"""


def receivers_with_room(database: Database, study_id: str, capacity: int) -> int:
    """Enrolled receivers who can still take an exchange (active, not finished, room left)."""
    return database.scalar(f"SELECT COUNT(*) FROM ({_FREE_RECEIVERS})", [study_id, capacity])


def open_receive_by_starter(database: Database, study_id: str, capacity: int) -> list[dict]:
    """The receive places open in the pool, per starter: how many (places), their exchanges, the
    oldest one's time in the pool, and how many receivers with room already had the starter
    (had: they may not take it, workflow.distinct_starters)."""
    return database.query(
        f"""WITH free AS ({_FREE_RECEIVERS}),
           had AS (SELECT se.starter_id, COUNT(DISTINCT s.participant_id) AS n FROM free f
                   JOIN assignments s ON s.participant_id = f.id AND s.phase = 'receive'
                   JOIN exchanges se ON se.id = s.exchange_id GROUP BY se.starter_id)
        SELECT e.starter_id, SUM(w.need) AS places, json_group_array(w.exchange_id) AS exchanges,
               MIN(w.created_at) AS oldest, COALESCE(MAX(h.n), 0) AS had
        FROM work_pool w JOIN exchanges e ON e.id = w.exchange_id LEFT JOIN had h ON h.starter_id = e.starter_id
        WHERE w.study_id = ? AND w.phase = 'receive' AND w.need > 0
        GROUP BY e.starter_id ORDER BY e.starter_id""",
        [study_id, capacity, study_id],
    )
