"""What the study designer sees, progress: the studies, the workflow's progress, the jobs, the
models, the recording review queue and the exchanges, as paged tables."""

from __future__ import annotations

import pandas as pd

from services.common import protocols
from services.common.paging import Page, page_bounds
from services.participation import maintenance
from services.participation.progress import study_counts
from storage import jobs, studies


def study_choices(database, archived: bool = False) -> list[tuple[str, str]]:
    """The study dropdown's entries; archived studies only when asked (marked so)."""
    return [
        (f"{s['name']} ({s['id']})" + (" [archived]" if s["archived_at"] else ""), s["id"])
        for s in studies.list_studies(database, archived)
    ]


def study_protocols(database, study_id: str | None) -> list[str]:
    """The protocols the study lists (none for no study)."""
    study = studies.get_study(database, study_id) if study_id else None
    return list(study["config"]["study"]["protocols"]) if study else []


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
    """What participants gave, per kind: each protocol the study lists (Protocol.count_collected)."""
    study = studies.get_study(database, study_id)
    listed = study["config"]["study"]["protocols"] if study else ()
    c: dict[str, int] = {}
    for spec in protocols.protocols():
        if spec.name in listed and spec.count_collected is not None:
            c.update(spec.count_collected(database, study_id))
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
