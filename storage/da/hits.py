"""The DA campaign: its segments, HITs and their items, who holds each HIT, the raters' HIT
outcomes and the TTS that spoke the audio items."""

from __future__ import annotations

from storage.db import Database, now, rows

# A rater holds a whole HIT (services/da/campaign.assign_hit gives every item of one HIT at once),
# so the rater's assignment of the HIT's first item stands for the HIT: one indexed row per
# rater, instead of every row of the study's DA phase (raters x items) for each new rater. CROSS
# JOIN keeps the HITs outside (SQLite's planner otherwise walks the whole DA phase of the study).
_DA_HOLDERS = """
    SELECT h.id AS hit, json_extract(a.meta, '$.modality') AS modality,
           COALESCE(json_extract(a.meta, '$.run'), 1) AS run, a.participant_id AS pid
    FROM da_hits h
    CROSS JOIN assignments a ON a.study_id = h.study_id AND a.phase = 'da'
         AND a.item_id = CAST((SELECT i.id FROM da_hit_items i WHERE i.hit_id = h.id ORDER BY i.pos LIMIT 1) AS TEXT)
    WHERE h.study_id = ? AND a.status != 'withdrawn'
      AND NOT EXISTS (SELECT 1 FROM assignments w WHERE w.participant_id = a.participant_id
                      AND w.status = 'withdrawn' AND w.phase = 'da')"""


def da_hit_loads(database: Database, study_id: str) -> dict[tuple[int, str, int], int]:
    """How many raters hold each (HIT, modality, run) (an assignment from before runs were
    stored counts as run 1). A rater whose HIT was withdrawn part-way
    (services/admin/participants) no longer counts, so the HIT goes in full to a new rater."""
    found = rows(
        database.db.conn,
        f"SELECT hit, modality, run, COUNT(DISTINCT pid) AS n FROM ({_DA_HOLDERS}) GROUP BY hit, modality, run",
        [study_id],
    )
    loads = {(r["hit"], r["modality"], r["run"]): r["n"] for r in found}
    # a HIT whose rater failed quality control went back to the pool (services/da/campaign.py:
    # hit_completed): that rater is no coverage. Per HIT through the partial index, not the study.
    for r in rows(
        database.db.conn,
        "SELECT o.hit_id AS hit, o.modality, o.run, COUNT(*) AS n FROM da_hits h "
        "CROSS JOIN da_hit_outcomes o ON o.hit_id = h.id AND o.rerun = 1 "
        "WHERE h.study_id = ? GROUP BY o.hit_id, o.modality, o.run",
        [study_id],
    ):
        key = (r["hit"], r["modality"], r["run"])
        loads[key] = max(0, loads.get(key, 0) - r["n"])
    return loads


def da_hit_outcome(database: Database, participant_id: int) -> dict | None:
    return database.one("SELECT * FROM da_hit_outcomes WHERE participant_id = ?", [participant_id])


def da_hit_outcomes_of(database: Database, participant_ids: list[int]) -> dict[int, dict]:
    """The HIT outcomes of these raters (one page of a list), by participant id."""
    if not participant_ids:
        return {}
    found = database.query(
        f"SELECT * FROM da_hit_outcomes WHERE participant_id IN ({','.join('?' * len(participant_ids))})",
        list(participant_ids),
    )
    return {r["participant_id"]: r for r in found}


def da_hit_reruns(database: Database, hit_id: int, modality: str, run: int) -> int:
    """How many raters' failed HITs already went back to the pool for this (HIT, modality, run)."""
    return database.scalar(
        "SELECT COUNT(*) FROM da_hit_outcomes WHERE hit_id = ? AND modality = ? AND run = ? AND rerun = 1",
        [hit_id, modality, run],
    )


def insert_da_hit_outcome(db, row: dict) -> bool:
    """The rater's HIT outcome, once (a second call for the same rater changes nothing)."""
    cols = [
        "participant_id",
        "study_id",
        "hit_id",
        "modality",
        "run",
        "p_value",
        "reliable",
        "fast",
        "median_item_s",
        "rerun",
    ]
    cur = db.execute(
        f"INSERT OR IGNORE INTO da_hit_outcomes ({', '.join(cols)}, decided_at) "
        f"VALUES ({', '.join('?' * len(cols))}, ?)",
        [row[c] for c in cols] + [now()],
    )
    return bool(cur.rowcount)


def da_hit_outcome_rows(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT o.participant_id AS worker_id, h.idx AS hit_id, o.modality, o.run, o.p_value, o.reliable, o.fast, "
        "o.median_item_s, o.rerun, o.decided_at FROM da_hit_outcomes o JOIN da_hits h ON h.id = o.hit_id "
        "WHERE o.study_id = ? ORDER BY h.idx, o.modality, o.run, o.decided_at",
        [study_id],
    )


def set_da_item_tts(db, item_ids: list[int], engine: str, voice: str) -> None:
    """The TTS engine and voice that spoke these audio items (render time)."""
    db.execute(
        f"UPDATE da_hit_items SET tts_engine = ?, tts_voice = ? WHERE id IN ({','.join('?' * len(item_ids))})",
        [engine, voice, *item_ids],
    )


def da_segments(database: Database, study_id: str) -> list[dict]:
    return database.query("SELECT * FROM da_segments WHERE study_id = ? ORDER BY doc_id, position, system", [study_id])


def da_hits(database: Database, study_id: str) -> list[dict]:
    return database.query("SELECT * FROM da_hits WHERE study_id = ? ORDER BY idx", [study_id])


def da_hit_items(database: Database, hit_id: int) -> list[dict]:
    return database.query(
        "SELECT i.*, s.segment_id, s.system, s.doc_id, s.reference, s.source, s.output FROM da_hit_items i "
        "JOIN da_segments s ON s.id = i.segment_row WHERE i.hit_id = ? ORDER BY i.pos",
        [hit_id],
    )


def da_hit_item(database: Database, item_id: int) -> dict | None:
    return database.one(
        "SELECT i.*, h.study_id, h.idx AS hit_idx, s.segment_id, s.system, s.doc_id, s.reference, s.output "
        "FROM da_hit_items i JOIN da_hits h ON h.id = i.hit_id JOIN da_segments s ON s.id = i.segment_row "
        "WHERE i.id = ?",
        [item_id],
    )


def da_campaign_items(database: Database, study_id: str) -> list[dict]:
    return database.query(
        "SELECT i.id, i.candidate, s.reference FROM da_hit_items i JOIN da_hits h ON h.id = i.hit_id "
        "JOIN da_segments s ON s.id = i.segment_row WHERE h.study_id = ? ORDER BY h.idx, i.pos",
        [study_id],
    )


def clear_corpus(db, study_id: str) -> None:
    """The study's DA segments and HITs (a re-import has no participants). In a write transaction."""
    db.execute("DELETE FROM da_hit_items WHERE hit_id IN (SELECT id FROM da_hits WHERE study_id = ?)", [study_id])
    db.execute("DELETE FROM da_hits WHERE study_id = ?", [study_id])
    db.execute("DELETE FROM da_segments WHERE study_id = ?", [study_id])


def insert_corpus(db, study_id: str, segments: list[dict], hits: list[list[dict]]) -> None:
    """The checked segments and the HITs built from them (services/da/hits.py: each item names
    its segment by its row in `segments`). In a write transaction."""
    rows = [db["da_segments"].insert({"study_id": study_id, **s}).last_pk for s in segments]
    for idx, hit in enumerate(hits, start=1):
        hid = db["da_hits"].insert({"study_id": study_id, "idx": idx}).last_pk
        db["da_hit_items"].insert_all(
            {
                "hit_id": hid,
                "pos": it["pos"],
                "type": it["type"],
                "segment_row": rows[it["row"]],
                "of_pos": it["of_pos"],
                "candidate": it["candidate"],
            }
            for it in hit
        )


def corpus_counts(database: Database, study_id: str) -> dict[str, int]:
    """Segment rows (one per segment and system), HITs, and the segments (documents' segments,
    whatever their systems) the HITs hold: fewer where a domain sample was drawn."""
    return database.one_row(
        "SELECT (SELECT COUNT(*) FROM da_segments WHERE study_id = :s) AS segments, "
        "(SELECT COUNT(*) FROM da_hits WHERE study_id = :s) AS hits, "
        "(SELECT COUNT(*) FROM (SELECT DISTINCT s.doc_id, s.segment_id FROM da_hit_items i "
        "JOIN da_hits h ON h.id = i.hit_id JOIN da_segments s ON s.id = i.segment_row "
        "WHERE h.study_id = :s)) AS in_hits",
        {"s": study_id},
    )
