"""What the study designer sees, progress: the studies, the workflow's progress, the jobs, the
models, the recording review queue and the exchanges, as paged tables."""

from __future__ import annotations

import json

import pandas as pd

from services.admin.recording_review import queue_for_review
from services.common import protocols
from services.common.paging import Page, page_bounds
from services.participation import maintenance
from services.participation.progress import study_counts
from services.usability.recording_qc import FLAG_TEXT, align, edges_text
from storage import jobs, results, studies
from storage.db import required
from storage.usability import exchanges, recordings


def study_choices(database, archived: bool = False) -> list[tuple[str, str]]:
    """The study dropdown's entries; archived studies only when asked (marked so)."""
    return [
        (f"{s['name']} ({s['id']})" + (" [archived]" if s["archived_at"] else ""), s["id"])
        for s in studies.list_studies(database, archived)
    ]


def progress_chart(database, study_id: str):
    """The progress table and its stacked bar chart of items done and open per phase (the
    Analysis tab's first figure)."""
    import plotly.express as px  # heavy (~1 s): only the Analysis tab draws this chart

    df = progress_table(database, study_id)
    long = df.melt(
        id_vars=["role", "phase"], value_vars=["done", "open", "waiting"], var_name="status", value_name="items"
    )
    fig = px.bar(long, x="phase", y="items", color="status", barmode="stack", title=f"Progress of study {study_id}")
    return df, fig


def progress_table(database, study_id: str) -> pd.DataFrame:
    """Items per role and phase: open, done and waiting (pool places no one has taken yet), as
    services/participation/progress.py defines them for the participant's page too."""
    return pd.DataFrame(study_counts(database, study_id), columns=["role", "phase", "open", "done", "waiting"])


def collected_counts(database, study_id: str) -> pd.DataFrame:
    c = results.table_counts(database, study_id)
    return pd.DataFrame({"what": list(c), "rows": list(c.values())})


def jobs_page(database, page=1, page_size: int = 50) -> Page:
    """Jobs, failures first, then the newest, with their errors (a failed job can be retried)."""
    total = jobs.count(database)
    page, pages, offset = page_bounds(total, page, page_size)
    cols = ["id", "kind", "status", "attempts", "max_attempts", "last_error", "updated_at"]
    rows = pd.DataFrame(jobs.page(database, page_size, offset), columns=cols).fillna("")
    return Page(rows, page, pages, total)


def repair_workflow(database, study_id: str | None) -> str:
    """The periodic upkeep, now: drop-out detection and the workflow's repair."""

    study = studies.get_study(database, study_id) if study_id else None
    if not study:
        return "Pick a study first."
    repaired = [spec.name for spec, _ in protocols.with_hook("repair")]
    if not set(repaired) & set(study["config"]["study"]["protocols"]):
        with_one = ", ".join(repaired)
        return f"Study '{study_id}' lists no protocol with a workflow to repair (protocols with one: {with_one})."
    out = maintenance.run(database, study["id"], every_s=0)
    dropped = f"; {len(out['dropped_out'])} inactive sender(s) marked as dropped out" if out["dropped_out"] else ""
    return (
        f"Repair done: {out['repaired']} missing item(s) or pool place(s) put right{dropped}."
        if out["repaired"] or dropped
        else "Repair done: nothing was missing."
    )


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

    total = recordings.review_count(database, study_id)
    page, pages, offset = page_bounds(total, page, page_size)
    # alignment: the prompt and transcript word by word (recording_qc.align), which the tab draws
    cols = ["id", "sender_id", "starter_id", "system_id", "duration_s", "wer", "flags", "edges", "alignment"]
    rows = pd.DataFrame(queue_for_review(database, study_id, limit=page_size, offset=offset), columns=cols)
    return Page(rows, page, pages, total)


def review_item(database, recording_id) -> dict | None:
    """What the reviewer compares for one recording: audio, prompt and transcript, its flags in
    words and the two aligned word by word (recording_qc.align)."""

    try:
        rec = recordings.recording(database, int(recording_id))
    except (TypeError, ValueError):
        return None
    if rec is None:
        return None
    ex = required(exchanges.exchange(database, rec["exchange_id"]), "exchange of a recording")
    starter = required(studies.starter(database, ex["study_id"], ex["starter_id"]), "starter of an exchange")
    flags = json.loads(rec["qc_flags"] or "[]")
    return {
        "id": rec["id"],
        "audio": rec["path_original"],
        "prompt": starter["text"],
        "transcript": rec["transcript"] or "",
        "wer": rec["wer"],
        "status": rec["qc_status"],
        "flags": [FLAG_TEXT.get(f, f) for f in flags],
        # the QC ASR's second opinion: why a start/end mismatch passed or waits
        "edges": edges_text(json.loads(rec["qc_edges"]) if rec.get("qc_edges") else None),
        "alignment": align(starter["text"], rec["transcript"] or ""),
    }


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
