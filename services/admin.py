"""What the study designer sees: access control of the admin tab and the progress tables."""
from __future__ import annotations

import hmac
import secrets
import time

import pandas as pd

from services.participants import link
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


def participants_table(database, study_id: str, public_url: str, page: int = 1, page_size: int = 50) -> pd.DataFrame:
    rows = queue.participant_progress(database, study_id, page_size, (max(page, 1) - 1) * page_size)
    # only this page's rows: the token comes with them, never the whole participants table
    df = pd.DataFrame(rows, columns=["id", "token", "role", "grp", "gender", "external_id", "prolific_pid", "active",
                                     "last_seen_at", "done", "open", "last_submitted"])
    df["link"] = [link(public_url, t) for t in df.pop("token")]
    return df.fillna("")


def collected_counts(database, study_id: str) -> pd.DataFrame:
    c = results.table_counts(database, study_id)
    return pd.DataFrame({"what": list(c), "rows": list(c.values())})


def job_counts(database) -> pd.DataFrame:
    c = jobs.status_counts(database)
    return pd.DataFrame({"status": list(c), "jobs": list(c.values())})


def jobs_table(database, limit: int = 50) -> pd.DataFrame:
    """Recent jobs, failures first, with their errors (a failed job can be retried)."""
    rows = jobs.list_jobs(database, limit, "failed") + jobs.list_jobs(database, limit)
    seen, out = set(), []
    for r in rows:
        if r["id"] not in seen:
            seen.add(r["id"])
            out.append({k: r[k] for k in ("id", "kind", "status", "attempts", "max_attempts", "last_error",
                                          "updated_at")})
    cols = ["id", "kind", "status", "attempts", "max_attempts", "last_error", "updated_at"]
    return pd.DataFrame(out[:limit], columns=cols).fillna("")


def retry_job(database, job_id) -> str:
    try:
        jid = int(job_id)
    except (TypeError, ValueError):
        return "Give the id of a failed job."
    return f"Job {jid} will run again." if jobs.retry(database, jid) else f"Job {jid} is not a failed job."


def models_table(cache) -> pd.DataFrame:
    cols = ["model", "device", "size_mb", "load_s", "uses", "last_used"]
    return pd.DataFrame(cache.report(), columns=cols)


def review_table(database, study_id: str) -> pd.DataFrame:
    from services.recording_review import queue_for_review

    cols = ["id", "sender_id", "starter_id", "system_id", "duration_s", "wer", "flags", "prompt", "transcript"]
    return pd.DataFrame(queue_for_review(database, study_id), columns=cols)


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
