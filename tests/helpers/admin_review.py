"""Recordings as QC leaves them for the admin's review, written into a launched app's database."""

from __future__ import annotations

import json


def flag_two_recordings(app_server) -> list[int]:
    """What the worker stores for two readings QC flagged: one lost its first words, one is
    another text (the second has markup in it, as a transcript may)."""
    items = app_server.rows(
        "SELECT a.id, a.exchange_id, s.text FROM assignments a JOIN exchanges e ON e.id = "
        "a.exchange_id JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        "WHERE a.phase = 'record' AND a.status = 'open' ORDER BY a.id LIMIT 2"
    )
    heard = [" ".join(items[0][2].split()[4:]), "Good evening, a <b>pizza</b> and water please."]
    flags = [["start_differs"], ["start_differs", "end_differs", "high_wer"]]
    ids = []
    for (aid, exid, _), text, fl in zip(items, heard, flags):
        app_server.rows(
            "INSERT INTO recordings (assignment_id, exchange_id, sha256, path_original, path_16k, "
            "duration_s, created_at, qc_status, transcript, wer, qc_flags) VALUES "
            "(?, ?, ?, 'x.wav', 'x16.wav', 17.5, '2026-01-01T00:00:00Z', 'flagged', ?, 0.5, ?)",
            (aid, exid, f"sha-{aid}", text, json.dumps(fl)),
        )
        ids.append(app_server.rows("SELECT id FROM recordings WHERE assignment_id = ?", (aid,))[0][0])
    return ids
