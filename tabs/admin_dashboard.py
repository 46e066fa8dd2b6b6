"""How the admin tab draws its dashboard (services/admin/dashboard.py) as compact HTML, and the
script that shows every timestamp of the admin tab in the browser's own time zone."""

from __future__ import annotations

import datetime as dt
import html

from services.admin.dashboard import Dashboard
from services.common.protocols import phase_label, role_label
from tabs.static import script

EVERY_S = 10  # the dashboard's refresh while the admin is logged in

# Timestamps are stored in UTC (ISO 8601). The browser knows its own time zone and the server
# does not, so the page rewrites each one it shows (a table cell, a <time> element) as
# "YYYY-MM-DD HH:MM" plus the zone's short name, keeping the stored value as a tooltip. The
# tables keep the ISO value underneath, so sorting a column still sorts by time.
LOCAL_TIMES_JS = script("function/local_times")


def utc_label(iso: str | None) -> str:
    """A stored timestamp as "YYYY-MM-DD HH:MM UTC": what the page shows until its script puts it
    in the browser's zone (and what a client without the script reads)."""
    if not iso:
        return ""
    try:
        t = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _time(iso: str | None) -> str:
    if not iso:
        return "never"
    # the stored time is the tooltip from the start, so a refresh never shows one without it
    attr = html.escape(iso, quote=True)
    return f'<time datetime="{attr}" title="{attr}">{utc_label(iso)}</time>'


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _card(label: str, value, note: str, alert: bool) -> str:
    cls = "dash-card alert" if alert else "dash-card"
    return (
        f'<div class="{cls}"><div class="dash-value">{_e(value)}</div>'
        f'<div class="dash-label">{_e(label)}</div><div class="dash-note">{_e(note)}</div></div>'
    )


def _total(r: dict) -> int:
    return r["open"] + r["done"] + r["waiting"]


# what done / total counts, as the participant's page counts it (services/participation/progress.py)
PROGRESS_NOTE = (
    "Done of all items of the phase: those people hold (open or done) and the places in the pool "
    "no one has taken yet; instruction pages are not items."
)


def _progress(rows: list[dict]) -> str:
    if not rows:
        return '<p class="dash-empty">No items assigned yet: add participants (Participants, below).</p>'
    body = []
    for r in rows:
        total = _total(r)
        share = round(100 * r["done"] / total) if total else 0
        waiting = f"<small> · {r['waiting']} not taken yet</small>" if r["waiting"] else ""
        body.append(
            # the team's words for the role and phase (their labels), the ids in a tooltip
            f'<tr><td title="{_e(r["role"])}">{_e(role_label(r["role"]))}</td>'
            f'<td title="{_e(r["phase"])}">{_e(phase_label(r["phase"]))}</td>'
            f'<td class="num">{r["done"]} / {total}</td>'
            f'<td class="bar"><span style="width:{share}%"></span><b>{share}%</b>{waiting}</td></tr>'
        )
    return (
        f'<p class="dash-note">{_e(PROGRESS_NOTE)}</p>'
        '<table class="dash-table"><thead><tr><th>role</th><th>phase</th><th>done</th><th>progress</th></tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def _list(items: list[str], empty: str) -> str:
    if not items:
        return f'<p class="dash-empty">{_e(empty)}</p>'
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def render(d: Dashboard) -> str:
    done = sum(r["done"] for r in d.progress)
    total = sum(_total(r) for r in d.progress)
    overall = f"{round(100 * done / total)}%" if total else "–"
    cards = "".join(
        [
            _card("items done", overall, f"{done} of {total}", False),
            *(_card(title, figure, note, alert) for title, figure, note, alert in d.cards),
            _card("failing jobs", d.failed_jobs, "failed for good", d.failed_jobs > 0),
            _card("stalled", d.stalled_total, f"no activity for {d.stall_minutes} min", d.stalled_total > 0),
        ]
    )
    failing = [
        f"job {j['id']} <code>{_e(j['kind'])}</code> after {j['attempts']} attempt(s), "
        f"{_time(j['updated_at'])}: {_e(j['error'])}"
        for j in d.failing
    ]
    stalled = [
        f"participant {p['id']} ({_e(p['role'])}): {p['open']} open, last seen {_time(p['last_seen_at'])}"
        for p in d.stalled
    ]
    more = d.stalled_total - len(d.stalled)
    if more > 0:
        stalled.append(f"and {more} more (Participants, below: sort by last_seen_at)")
    return f"""<div class="dash">
<div class="dash-head">Study <b>{_e(d.study_id)}</b> · as of {_time(d.as_of)} · refreshes every {EVERY_S} s</div>
<div class="dash-cards">{cards}</div>
<div class="dash-cols">
<section><h4>Progress by role and phase</h4>{_progress(d.progress)}
<h4>Failing jobs</h4>{_list(failing, "No failed jobs.")}
<h4>Stalled participants</h4><p class="dash-note">Opened their link, still have open items, not seen for
{d.stall_minutes} min or more.</p>{_list(stalled, "Nobody has stalled.")}</section>
<section><h4>Waiting on whom, and why</h4>{_list([_e(w) for w in d.waiting], "Nothing is waiting.")}</section>
</div></div>"""
