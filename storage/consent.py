"""Consent decisions and demographics answers, one row per participant."""

from __future__ import annotations

import json
from typing import cast

from storage.db import Database, now
from storage.rows import ConsentRow, DemographicsRow


def get(database: Database, participant_id: int) -> ConsentRow | None:
    return cast("ConsentRow | None", database.one("SELECT * FROM consents WHERE participant_id = ?", [participant_id]))


def record(db, participant_id: int, study_id: str, agreed: bool, text_hash: str) -> None:
    # a decline may be changed to agreement (a misclick); an agreement is final here and is
    # withdrawn by the study team (deactivation), which keeps the record of what was agreed
    db.execute(
        "INSERT INTO consents (participant_id, study_id, agreed, text_hash, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (participant_id) DO UPDATE SET "
        "agreed = excluded.agreed, text_hash = excluded.text_hash, created_at = excluded.created_at "
        "WHERE consents.agreed = 0",
        [participant_id, study_id, int(agreed), text_hash, now()],
    )


def demographics(database: Database, participant_id: int) -> DemographicsRow | None:
    row = database.one("SELECT * FROM demographics WHERE participant_id = ?", [participant_id])
    if row:
        row["answers"] = json.loads(row["answers"])
    return cast("DemographicsRow | None", row)


def save_demographics(db, participant_id: int, study_id: str, answers: dict) -> bool:
    """False when the participant had already answered (the first answer stands)."""
    cur = db.execute(
        "INSERT INTO demographics (participant_id, study_id, answers, created_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (participant_id) DO NOTHING",
        [participant_id, study_id, json.dumps(answers, ensure_ascii=False), now()],
    )
    return cur.rowcount == 1


def agreed_ids(database: Database, study_id: str) -> set[int]:
    rows = database.query("SELECT participant_id FROM consents WHERE study_id = ? AND agreed = 1", [study_id])
    return {r["participant_id"] for r in rows}
