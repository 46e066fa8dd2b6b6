"""The usability study's exchanges, as the admin's Progress section lists them: where each
stands in the four phases (the usability spec's admin section, tabs/admin_usability.py)."""

from __future__ import annotations

import pandas as pd

from services.common.paging import Page, page_bounds
from storage.usability import exchanges


def exchange_phase(row: dict) -> str:
    """Where an exchange stands in the four phases, in the designer's words."""
    if row["withdrawn"]:  # the sender left: excluded by the team or QC, or dropped out
        return f"withdrawn (sender {row['sender_left'] or 'left'})"
    if row["sender"] is not None and row["recording"] is None:
        return "1 to record"
    if row["recording"] == "rejected":
        return "recording rejected"
    if row["recording"] == "flagged":
        return "recording flagged: review"
    if not row["translated"]:
        return "1 recorded: QC and translation queued"
    if row["recording"] == "pending":
        return "1 translated: QC queued"
    if not row["answered"]:
        return "2 with receivers"
    if row["validated"] < row["answered"]:
        return "3 with validators"
    if not row["informed"]:
        return "4 surveys" + (" (baseline done)" if row["baseline"] else "")
    return "complete"


def exchanges_table(database, study_id: str, page: int = 1, page_size: int = 100) -> pd.DataFrame:
    rows = exchanges.exchange_phases(database, study_id, page_size, (max(page, 1) - 1) * page_size)
    for r in rows:
        r["phase"] = exchange_phase(r)
        r["sender"] = "" if r["sender"] is None else str(r["sender"])  # imported exchanges have none
        r["recording"] = r["recording"] or ""
        r["wer"] = "" if r["wer"] is None else f"{r['wer']:.2f}"
    cols = [
        "exchange",
        "phase",
        "sender",
        "starter",
        "system",
        "recording",
        "wer",
        "answered",
        "validated",
        "baseline",
        "informed",
    ]
    return pd.DataFrame(rows, columns=cols)


def exchanges_page(database, study_id: str, page=1, page_size: int = 100) -> Page:
    total = exchanges.exchange_count(database, study_id)
    page, pages, _ = page_bounds(total, page, page_size)
    return Page(exchanges_table(database, study_id, page, page_size), page, pages, total)
