"""What the study designer sees: access control of the admin tab and the progress tables."""
from __future__ import annotations

import hmac
import math
import secrets
import time
from dataclasses import dataclass

import pandas as pd

from storage import jobs, queue, results, studies

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
SESSION_SECONDS = 12 * 3600


FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host")


def client_address(host: str | None, headers=None) -> str | None:
    """The caller's address as the admin rule sees it. A request that came through a reverse
    proxy (it carries a forwarding header) is never local, whatever the socket's peer is: a
    proxy on the same machine would otherwise make every visitor look like 127.0.0.1 and open
    the passwordless admin tab to the world."""
    if headers is not None:
        try:
            keys = {str(k).lower() for k in headers.keys()}
        except AttributeError:
            keys = set()
        if keys & set(FORWARDING_HEADERS):
            return "forwarded"
    return host


class AdminAuth:
    """Admin sessions: a password from the settings; with none set, localhost only."""

    def __init__(self, password: str):
        self.password = password or ""
        self._sessions: dict[str, float] = {}

    def available(self, client_host: str | None) -> bool:
        return bool(self.password) or (client_host or "") in LOOPBACK

    def login(self, password: str, client_host: str | None) -> str:
        if not self.available(client_host):
            raise PermissionError("The admin tab is served only to localhost until TRADLAB_ADMIN_PASSWORD is set.")
        if self.password and not hmac.compare_digest(self.password.encode(), (password or "").encode()):
            raise PermissionError("Wrong password.")
        session = secrets.token_urlsafe(24)
        self._sessions[session] = time.time() + SESSION_SECONDS
        return session

    def check(self, session: str | None, client_host: str | None) -> None:
        if not self.available(client_host):
            raise PermissionError("The admin tab is served only to localhost until TRADLAB_ADMIN_PASSWORD is set.")
        expiry = self._sessions.get(session or "")
        if not expiry or expiry < time.time():
            raise PermissionError("Please log in.")


def study_choices(database) -> list[tuple[str, str]]:
    return [(f"{s['name']} ({s['id']})", s["id"]) for s in studies.list_studies(database)]


def progress_table(database, study_id: str) -> pd.DataFrame:
    rows = queue.study_progress(database, study_id)
    if not rows:
        return pd.DataFrame(columns=["role", "phase", "open", "done"])
    df = pd.DataFrame(rows).pivot_table(index=["role", "phase"], columns="status", values="n",
                                        aggfunc="sum", fill_value=0).reset_index()
    for col in ("open", "done"):
        if col not in df:
            df[col] = 0
    return df[["role", "phase", "open", "done"]]


@dataclass
class Page:
    """One page of an admin table: its rows and where it stands (every table is paged, so
    no handler sends a whole table to the browser)."""
    rows: pd.DataFrame
    page: int
    pages: int
    total: int

    @property
    def label(self) -> str:
        return f"Page {self.page} of {self.pages} · {self.total} row{'' if self.total == 1 else 's'}"


def page_bounds(total: int, page, page_size: int) -> tuple[int, int, int]:
    """(page, pages, offset) with the asked page clamped into 1..pages (empty: page 1 of 1)."""
    pages = max(1, math.ceil(total / page_size))
    try:
        asked = int(page)
    except (TypeError, ValueError, OverflowError):
        asked = 1
    page = min(max(asked, 1), pages)
    return page, pages, (page - 1) * page_size


def collected_counts(database, study_id: str) -> pd.DataFrame:
    c = results.table_counts(database, study_id)
    return pd.DataFrame({"what": list(c), "rows": list(c.values())})


def job_counts(database) -> pd.DataFrame:
    c = jobs.status_counts(database)
    return pd.DataFrame({"status": list(c), "jobs": list(c.values())})


def jobs_page(database, page=1, page_size: int = 50) -> Page:
    """Jobs, failures first, then the newest, with their errors (a failed job can be retried)."""
    total = jobs.count(database)
    page, pages, offset = page_bounds(total, page, page_size)
    cols = ["id", "kind", "status", "attempts", "max_attempts", "last_error", "updated_at"]
    rows = pd.DataFrame(jobs.page(database, page_size, offset), columns=cols).fillna("")
    return Page(rows, page, pages, total)


def repair_workflow(database, study_id: str | None) -> str:
    """The periodic upkeep, now: drop-out detection and the workflow's repair."""
    from services import maintenance

    study = studies.get_study(database, study_id) if study_id else None
    if not study:
        return "Pick a study first."
    if "usability" not in study["config"]["study"]["protocols"]:
        return f"Study '{study_id}' has no four-phase workflow to repair."
    out = maintenance.run(database, study_id, every_s=0)
    dropped = f"; {len(out['dropped_out'])} inactive sender(s) marked as dropped out" if out["dropped_out"] else ""
    return (f"Repair done: {out['repaired']} missing item(s) or pool place(s) put right{dropped}."
            if out["repaired"] or dropped else "Repair done: nothing was missing.")


def retry_job(database, job_id) -> str:
    try:
        jid = int(job_id)
    except (TypeError, ValueError):
        return "Give the id of a failed job."
    return f"Job {jid} will run again." if jobs.retry(database, jid) else f"Job {jid} is not a failed job."


def models_table(cache) -> pd.DataFrame:
    cols = ["model", "device", "size_mb", "load_s", "uses", "last_used"]
    return pd.DataFrame(cache.report(), columns=cols)


def review_page(database, study_id: str, page=1, page_size: int = 20) -> Page:
    from services.recording_review import queue_for_review

    total = results.review_count(database, study_id)
    page, pages, offset = page_bounds(total, page, page_size)
    cols = ["id", "sender_id", "starter_id", "system_id", "duration_s", "wer", "flags", "prompt", "transcript"]
    rows = pd.DataFrame(queue_for_review(database, study_id, limit=page_size, offset=offset), columns=cols)
    return Page(rows, page, pages, total)


def review_item(database, recording_id) -> dict | None:
    """What the reviewer compares for one recording: audio, prompt and transcript."""
    from storage import results as res

    try:
        rec = res.recording(database, int(recording_id))
    except (TypeError, ValueError):
        return None
    if rec is None:
        return None
    ex = queue.exchange(database, rec["exchange_id"])
    starter = studies.starter(database, ex["study_id"], ex["starter_id"])
    return {"id": rec["id"], "audio": rec["path_original"], "prompt": starter["text"],
            "transcript": rec["transcript"] or "", "wer": rec["wer"], "status": rec["qc_status"]}


def exchange_phase(row: dict) -> str:
    """Where an exchange stands in the four phases, in the designer's words."""
    if row["withdrawn"]:
        return "withdrawn (sender excluded)"
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
    rows = queue.exchange_phases(database, study_id, page_size, (max(page, 1) - 1) * page_size)
    for r in rows:
        r["phase"] = exchange_phase(r)
        r["sender"] = "" if r["sender"] is None else str(r["sender"])   # imported exchanges have none
        r["recording"] = r["recording"] or ""
        r["wer"] = "" if r["wer"] is None else f"{r['wer']:.2f}"
    cols = ["exchange", "phase", "sender", "starter", "system", "recording", "wer", "answered", "validated",
            "baseline", "informed"]
    return pd.DataFrame(rows, columns=cols)


def exchanges_page(database, study_id: str, page=1, page_size: int = 100) -> Page:
    total = queue.exchange_count(database, study_id)
    page, pages, _ = page_bounds(total, page, page_size)
    return Page(exchanges_table(database, study_id, page, page_size), page, pages, total)
