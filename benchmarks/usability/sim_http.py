"""The study simulation's sample over HTTP (benchmarks/usability/study_sim.py --http).

Halfway through a simulated study the app is launched as `make run` launches it (`python
app.py`, a subprocess on a free loopback port; harness/load_app.py LoadApp) against the
simulation's own database and media folder, with TRADLAB_WORKER=0 (the simulation plays the
worker: after the sample it runs the model step of the recordings made over HTTP). A bare Gradio
no-op app (benchmarks/load.py's, one event, no state) runs beside it. At each concurrency (16,
then 50) that many participants of every role, who have work or may take some, each open a
browser session (harness/gradio_http.py GradioHTTP: the protocol gradio_client speaks, at a
fraction of its client CPU; see that module) and call /view for their tab, then submit up to
SUBMITS items in a row, then call /view again (a reload: the first /view also pays for setting up
the session) through the endpoint their tab's button calls (/record_submit after an
upload, /receiver_submit, /validator_submit, /survey_submit), each answer the one the in-process
participants would give (study_sim.Answerer). First the same clients call the no-op as many
times, all at once, then the app; each level runs ROUNDS times with other participants, so
that a p95 is not just the maximum of 16 first views. Studies of several sizes measured together
(study_sim.py pair) act on one plan of work each round (matched): the same roles, tabs and
submits per client, so that their 200% / 100% ratios compare the studies, not how much work
their participants had left. Latency: from sending the call to holding its result (for a
submit, the next item). Everything is bounded: participants per level, calls per participant,
and DEADLINE_S per level; only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

# SIM_HTTP_LEVELS="50": one level only (a profile of that level); "": none (SIM_HTTP_COSTS only)
LEVELS = tuple(int(x) for x in os.environ.get("SIM_HTTP_LEVELS", "16,50").split(",") if x.strip())
# how the item forms are called: "json", as the page's script calls them (web/form_routes.py:
# /<role>/form/<tab>/view and /submit); "gradio", through the tabs' Gradio events (/view, then
# /<tab>_submit), as the page did before and still does when a JSON call fails. Both by default,
# in turn within each round, with other participants: the before and after in one run.
MODES = tuple(os.environ.get("SIM_HTTP_ROUTES", "json,gradio").split(","))
# SIM_HTTP_BEFORE=<another checkout>: that code's app too, on the same database, called through
# the Gradio events (mode "before"), in turn with the others: the before and after in one run
BEFORE = os.environ.get("SIM_HTTP_BEFORE", "")
# how that checkout's app is called: "gradio" (its Gradio events; any checkout), "json-forms"
# (its item forms' JSON routes, its record tab by the Gradio event, as its page calls them: a
# checkout from 2026-12-03 to 5b3f11b) or "json" (the record tab's JSON route too: from the
# commit after 5b3f11b on)
BEFORE_WAY = os.environ.get("SIM_HTTP_BEFORE_WAY", "gradio")
FORM_TABS = ("receiver", "validator", "survey")
# the tabs each way calls by their JSON routes (the record tab: an upload, then its route)
JSON_TABS = {"json": (*FORM_TABS, "record"), "json-forms": FORM_TABS}
# the no-op's three ways: its Gradio event outside the queue (the app's participant events'
# kind), its plain JSON route (the item forms' kind), and its event through Gradio's queue (what
# the no-op was until 2026-12-03: the figures were taken against it)
NOOPS = ("gradio", "json", "queued")
SUBMITS = 4
# recordings a sender makes in a level (SIM_HTTP_RECORDINGS): halfway through the study a sender at
# 100% had 1.9 left on average and one at 200% 1.25, and this code's upload holds its client
# 130 ms at p95, so at 100% three of 16 clients were uploading at any time against two at 200%, and
# the actions had 18% fewer competitors (the levels' mix, not the study's size: issue 34, fifth
# pass). One each gives both sizes the same mix.
RECORDINGS = int(os.environ.get("SIM_HTTP_RECORDINGS", "1"))
ROUNDS = 2
# SIM_HTTP_TURN=flipped: studies measured together take their turns the other way round (the
# largest first in the first round): each round's first and last places go to the other study
FLIP = int(os.environ.get("SIM_HTTP_TURN", "") == "flipped")
# SIM_HTTP_COSTS=N: first N participants (per way of calling the app) act one at a time, each
# call's server CPU kept (Meter): what each kind of call costs the server, alone. 0: none
COSTS = int(os.environ.get("SIM_HTTP_COSTS", "0"))
# participants per way, untimed, before the cost sample or the first level (warm_up)
COST_WARMUP = int(os.environ.get("SIM_HTTP_WARMUP", "5"))
DEADLINE_S = 300
ENDPOINT = {
    "record": "/record_submit",
    "receiver": "/receiver_submit",
    "validator": "/validator_submit",
    "survey": "/survey_submit",
}
# the share of each level's clients per (role, tab), filled from whoever is available
MIX = (
    ("sender", "record", 0.3),
    ("sender", "survey", 0.2),
    ("receiver", "receiver", 0.2),
    ("validator", "validator", 0.2),
    ("rater", "survey", 0.1),
)


def _candidates(sim, used: set) -> dict:
    """(role, tab) -> people who may act there now, in a seeded order."""
    from storage import assignments

    out = {}
    for role, tab, _ in MIX:
        people = [p for p in sim.active() if p.role == role and p.tab == tab and p.pid not in used]
        if tab in ("record", "survey") and role == "sender":
            phases = ("record",) if tab == "record" else ("survey_baseline", "survey_informed")
            # whether one is open, not which: no phase is served last
            people = [p for p in people if assignments.next_open(sim.db, p.pid, phases, ()) is not None]
        sim.rng.shuffle(people)
        out[(role, tab)] = people
    return out


def pick(sim, n: int, used: set) -> list:
    cands = _candidates(sim, used)
    picked = []
    for role, tab, share in MIX:
        take = cands[(role, tab)][: max(1, round(share * n))]
        picked += take
        cands[(role, tab)] = cands[(role, tab)][len(take) :]
    rest = [p for v in cands.values() for p in v]
    picked = (picked + rest)[:n]
    used.update(p.pid for p in picked)
    return picked


def is_submit(name: str) -> bool:
    """A latency's name that is a submit's (the others: the views and the record tab's upload)."""
    return name not in ("view", "view_again", "upload")


def most_submits(tab: str) -> int:
    return RECORDINGS if tab == "record" else SUBMITS


def capacity(sim, person) -> int:
    """How many items the participant could submit on their tab now: their open ones, and what
    their role's pool would give them (its `ready`, the page's "n ready": two items of one new
    starter both count for a receiver, who may take one; a sender's baseline survey can open the
    informed one). Reads only. The levels report the submits planned and made."""
    from services.common import protocols
    from storage import assignments, participants, studies

    tab = protocols.tab(person.tab)
    n = assignments.counts(sim.db, person.pid, tab.phases, tab.instruction_items)["open"]
    pool = protocols.role(person.role).pool
    if pool is not None and pool.tab == person.tab:
        row = participants.get(sim.db, person.pid)
        n += pool.ready(sim.db, row, studies.get_study(sim.db, row["study_id"])) or 0
    return n


def matched(sims: list, useds: list, n: int) -> list[tuple[list, dict]]:
    """The participants of a round for each study, with the submits each makes (pid -> k): the
    first study's n picked as for one study, each to make as many as it can up to the tab's most
    (most_submits); every other study's the same plan, a participant of the same role and tab
    who can make as many for each. Halfway through a larger study its participants have more
    left, so unmatched its clients made more calls each (4.90 against 4.65 at 50 clients) and had
    more competitors in flight: the levels' mix, not the study's size (issue 34, fifth pass)."""
    ref = pick(sims[0], n, useds[0])
    plan = [(p.role, p.tab, min(most_submits(p.tab), capacity(sims[0], p))) for p in ref]
    out = [(ref, {p.pid: k for p, (_, _, k) in zip(ref, plan)})]
    for sim, used in zip(sims[1:], useds[1:]):
        cands = _candidates(sim, used)
        people, work = [], {}
        for role, tab, k in plan:
            pool, got = cands[(role, tab)], None
            for i, q in enumerate(pool):
                if capacity(sim, q) >= k:
                    got = pool.pop(i)
                    break
            if got is None:  # reported by the level: the plans differ
                continue
            people.append(got)
            work[got.pid] = k
            used.add(got.pid)
        out.append((people, work))
    return out


def _inputs(tab: str, token: str, view: dict, payload: dict, client, wav: bytes, lat: list) -> list:
    item = view["item_id"]
    if tab == "record":
        t0 = time.perf_counter()
        fd = client.upload(wav, "reading.wav", "audio/wav")
        lat.append(("upload", time.perf_counter() - t0))
        return [token, item, fd]  # the JSON route takes the upload's path (harness/gradio_http.file_data)
    # the receiver's, validator's and survey's pages send their item form's fields as one value
    # (tabs/item_form.py)
    if tab == "receiver":
        fields = {}
        for a in payload["answers"]:
            fields[f"answer-{a['idx']}"], fields[f"flag-{a['idx']}"] = a["text"], a["unanswerable"]
        return [token, {"item_id": item, "answer": fields}]
    if tab == "validator":
        fields = {"score": payload["score"], **{f"mark-{i}": m for i, m in payload["marks"].items()}}
        return [token, {"item_id": item, "answer": fields}]
    return [token, {"item_id": item, "answer": {k: str(payload[k]) for k in ("satisfaction", "trust", "reliance")}}]


def form_call(c, url: str, role: str, tab: str, what: str, body: dict) -> dict:
    """An item form's JSON route on the participant's page, as the page's script calls it."""
    from harness.gradio_http import AppError

    r = c.http.post(
        "/".join([url.rstrip("/"), *([role] if role else []), "form", tab, what]),
        content=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    if r.status_code != 200:
        raise AppError(f"HTTP {r.status_code}: {r.text[:500]}")
    return r.json()["value"]


def server_cpu_ns(pid: int) -> int:
    """A process's time on a CPU so far, all threads, in ns (the scheduler's own count,
    /proc/<pid>/task/*/schedstat: precise enough to time one call, where /proc/<pid>/stat counts
    10 ms ticks)."""
    total = 0
    for f in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(f.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


class Meter:
    """Each call's server CPU and wall, by the call's name, for calls made one at a time (the
    cost sample: nothing else runs on the server, so its CPU over a call is the call's)."""

    def __init__(self, pid: int):
        self.pid, self.by = pid, {}

    def __call__(self, name: str, fn, *args, **kwargs):
        c0, t0 = server_cpu_ns(self.pid), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            wall, cpu = time.perf_counter() - t0, (server_cpu_ns(self.pid) - c0) / 1e9
            self.by.setdefault(name, []).append((wall, cpu))

    def table(self) -> dict:
        from statistics import mean, median

        return {
            k: {
                "n": len(v),
                "server_cpu_ms_mean": round(1000 * mean(c for _, c in v), 3),
                "server_cpu_ms_p50": round(1000 * median(c for _, c in v), 3),
                "wall_ms_p50": round(1000 * median(w for w, _ in v), 3),
            }
            for k, v in sorted(self.by.items())
        }


def _untimed(name: str, fn, *args, **kwargs):
    return fn(*args, **kwargs)


def _drive(
    sim,
    url: str,
    person,
    wav: bytes,
    deadline: float,
    start: threading.Barrier,
    out: dict,
    mode: str = "gradio",
    meter=_untimed,
    work: int | None = None,
) -> None:
    """One participant's session on the app: a view, then up to `work` submits (default the
    tab's most_submits), then a view. meter(name, fn, *args): how each call is made (a Meter:
    its server CPU is kept)."""
    from harness.gradio_http import GradioHTTP
    from services.study.texts import Voice, page_language

    lat, errors, recorded = [], [], []
    tab = person.tab
    json_form = tab in JSON_TABS.get(mode, ())
    way = "json" if json_form else "gradio"

    def view_call(name):
        if json_form:
            return meter(f"{way} {name} {tab}", form_call, c, url, person.role, tab, "view", {"token": person.token})
        return meter(f"{way} {name} {tab}", c.predict, person.token, tab, api_name="/view")

    with GradioHTTP(url, timeout=120) as c:
        c.upload = functools.partial(meter, "gradio upload record", c.upload)  # type: ignore[method-assign]
        try:
            start.wait(120)
            t0 = time.perf_counter()
            view = view_call("view")
            lat.append(("view", time.perf_counter() - t0))
            for _ in range(most_submits(tab) if work is None else work):
                if view.get("status") != "item" or time.time() > deadline:
                    break
                payload = sim.answers.answer(person.pid, view["phase"], view["item_id"], view["content"])
                args = _inputs(tab, person.token, view, payload, c, wav, lat)
                t0 = time.perf_counter()
                name = f"{way} submit {tab}"
                if json_form:
                    value = args[1] if tab != "record" else {"item_id": args[1], "audio": args[2]["path"]}
                    res = meter(name, form_call, c, url, person.role, tab, "submit", {"token": args[0], "value": value})
                else:
                    res = meter(name, c.predict, *args, api_name=ENDPOINT[tab])
                lat.append((ENDPOINT[tab].lstrip("/"), time.perf_counter() - t0))
                state = res[0] if isinstance(res, list) else res
                if state.get("notice") != Voice(page_language(tab))("saved"):  # "Guardado." for a receiver
                    errors.append(f"{person.role} {person.pid} {tab}: {state.get('error') or state.get('notice')}")
                    break
                if tab == "record":
                    # "<exchange>-<attempt>": an exchange recorded again
                    recorded.append(int(str(view["item_id"]).split("-")[0]))
                view = state
            # the view again, now that the session exists (a reload): the first one above also
            # pays for setting up the session
            t0 = time.perf_counter()
            view_call("view_again")
            lat.append(("view_again", time.perf_counter() - t0))
        except Exception as e:  # reported, never hidden
            errors.append(f"{person.role} {person.pid} {tab}: {type(e).__name__}: {e}")
    out[person.pid] = {"lat": lat, "errors": errors, "recorded": recorded, "calls": len(lat)}


def _noop(
    url: str, person, calls: int, start: threading.Barrier, out: dict, mode: str = "gradio", meter=_untimed
) -> None:
    """The no-op's calls: its Gradio event (/noop), or with mode "json" its plain JSON route."""
    from harness.gradio_http import GradioHTTP

    lat, errors = [], []
    with GradioHTTP(url, timeout=120) as c:
        try:
            start.wait(120)
            for k in range(calls):
                value = {"item_id": str(k), "answer": {"score": 1 + k}}
                t0 = time.perf_counter()
                name = f"noop {mode} {'first' if k == 0 else 'next'}"
                if mode == "json":
                    meter(name, form_call, c, url, "", "noop", "submit", {"token": person.token, "value": value})
                else:
                    api = "/noop_queued" if mode == "queued" else "/noop"
                    meter(name, c.predict, person.token, value, api_name=api)
                # the first call of a session, all clients at once, is the /view's counterpart
                lat.append(("noop_first" if k == 0 else "noop_next", time.perf_counter() - t0))
        except Exception as e:
            errors.append(f"noop: {type(e).__name__}: {e}")
    out[person.pid] = {"lat": lat, "errors": errors}


def _run(target, people) -> tuple[dict, float]:
    """target(person, start barrier, out dict) on a thread per person, all started together.
    The clients' process collects no garbage meanwhile: its full passes over the simulation's
    objects took 80-104 ms, every client frozen, so every call in flight looked stalled by as much
    (a window in which nothing completed: submit p95 120-170 ms at 16 clients against a p50 of
    25-30, benchmarks/README.md, issue 34's fourth pass)."""
    import gc

    out: dict = {}
    start = threading.Barrier(len(people))
    threads = [threading.Thread(target=target, args=(p, start, out), daemon=True) for p in people]
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join(DEADLINE_S + 60)
        return out, time.perf_counter() - t0
    finally:
        gc.enable()


def cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system, all threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def io_reads(pid: int) -> tuple[int, int]:
    """A process's read calls and bytes read so far (/proc/<pid>/io syscr, rchar): SQLite reads a
    page it does not hold with one pread, from the OS's cache or the disk."""
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["rchar"])


def _ms(by: dict[str, list[float]]) -> dict[str, list[float]]:
    return {k: [round(1000 * x, 2) for x in xs] for k, xs in by.items()}


def _summary(xs: list[float], wall: float) -> dict:
    from benchmarks.usability.study_sim import summarise

    if not xs:
        return {"n": 0}
    return {**summarise(xs), "wall_s": round(wall, 2), "calls_per_s": round(len(xs) / wall, 1) if wall else None}


def _latencies(outs: dict) -> dict[str, list[float]]:
    by: dict[str, list[float]] = {}
    for o in outs.values():
        for k, x in o["lat"]:
            by.setdefault(k, []).append(x)
    return by


def _mode_row(app_out: dict, noop_by: dict, wall: float, cpu: float, client: float, reads=(0, 0)) -> dict:
    """One way of calling the app at one level: latency per endpoint, against the no-op's."""
    from harness.measure import percentile

    by = _latencies(app_out)
    calls = [x for k, xs in by.items() if k != "upload" for x in xs]
    subs = [x for k, xs in by.items() if is_submit(k) for x in xs]
    n_calls = max(1, sum(len(o["lat"]) for o in app_out.values()))
    row = {
        "app": _summary(calls, wall),
        "submits": _summary(subs, wall),
        "submits_per_s": round(len(subs) / wall, 1) if wall else None,
        "per_endpoint": {k: _summary(xs, wall) for k, xs in sorted(by.items())},
        "server_cpu_ms_per_call": round(1000 * cpu / n_calls, 2),
        "client_cpu_ms_per_call": round(1000 * client / n_calls, 2),
        # the server's read calls and KiB read a call (sockets' included): pages read in
        "server_reads_per_call": round(reads[0] / n_calls, 1),
        "server_read_kib_per_call": round(reads[1] / 1024 / n_calls, 1),
    }
    for noop, suffix in (("noop", ""), ("noop_json", "_json"), ("noop_queued", "_queued")):
        first, nxt = noop_by.get(f"{noop}_first"), noop_by.get(f"{noop}_next")
        if first and "view" in by:
            row[f"view_vs_first_noop{suffix}_p95"] = round(1000 * percentile(by["view"], 95) / _p95(first), 2)
        if nxt and subs:
            row[f"submits_vs_later_noops{suffix}_p95"] = round(1000 * percentile(subs, 95) / _p95(nxt), 2)
        if nxt and "view_again" in by:
            row[f"view_again_vs_later_noops{suffix}_p95"] = round(
                1000 * percentile(by["view_again"], 95) / _p95(nxt), 2
            )
    return row


def kind_of(name: str) -> str:
    """The no-op's kind of a latency's name: noop_json_next -> json, noop_first -> gradio."""
    return next((k for k in ("json", "queued") if name.startswith(f"noop_{k}_")), "gradio")


def _p95(xs: list[float]) -> float:
    from harness.measure import percentile

    return 1000 * percentile(xs, 95)


def _one_at_a_time(sim, server, mode: str, wav: bytes, people, timer) -> None:
    way = BEFORE_WAY if mode == "before" else mode
    for p in people:
        res: dict = {}
        _drive(sim, server.url, p, wav, time.time() + DEADLINE_S, threading.Barrier(1), res, way, timer)
        for eid in res[p.pid]["recorded"]:
            sim.record_outcome(eid)
        if res[p.pid]["errors"]:
            sim.problems += [f"HTTP: {e}" for e in res[p.pid]["errors"]]


def warm_up(sim, server, mode: str, wav: bytes, used: set) -> None:
    """COST_WARMUP participants act on the server one at a time, untimed: the first calls of a
    fresh app (its SQLite pages read in, its code's first paths, the start-up's collection) fall
    on none of the timed ones. Before a level that is the sample's first call to the app, the
    first level (16 clients) paid for them, more at 200% (a larger database to read in): its server
    CPU a call was 1.80-2.16 ms at 100% and 2.17-2.61 at 200%; after the cost sample (35
    participants a way) 2.36 at both; after these five, 2.09 and 2.57 (medians of three runs)."""
    _one_at_a_time(sim, server, mode, wav, pick(sim, COST_WARMUP, used), _untimed)


def cost_sample(sim, app, old, noop, noop_url: str, modes, wav: bytes, used: set, n: int = 0) -> dict:
    """Every call alone: per way of calling the app, n (COSTS) other participants of the level's
    mix act one after another, and the no-op's calls likewise; each call's server CPU and wall
    (Meter), by the call's name ("json submit receiver", "gradio upload record", "noop gradio
    next"). The figures a p95 under load is made of: at a closed loop's saturation a call's
    latency is about the clients' number times the mean server CPU of the calls in flight."""
    n = n or COSTS
    out: dict = {}
    for m in modes:
        server = old if m == "before" else app
        meter = Meter(server.proc.pid)
        # a few of every kind untimed first: a fresh app's first calls (its caches, SQLite's pages)
        # would otherwise fall on whichever way of calling it comes first
        warm_up(sim, server, m, wav, used)
        _one_at_a_time(sim, server, m, wav, pick(sim, n, used), meter)
        out[m] = meter.table()
    meter = Meter(noop.pid)
    for p in pick(sim, min(n, 10), set(used)):
        for kind in NOOPS:
            _noop(noop_url, p, 2 + SUBMITS, threading.Barrier(1), {}, kind, meter)
    out["noop"] = meter.table()
    sim.review()
    return out


def http_sample(sim, levels=LEVELS, modes=MODES, before: str = BEFORE) -> dict:
    """The HTTP sample of one simulated study (study_sim.py one --http)."""
    return http_samples([sim], levels, modes, before)[0]


class _Size:
    """One simulated study in the sample: its app (and the before checkout's), the participants
    already used, and its levels' figures as they are measured."""

    def __init__(self, sim, tmp: Path, before: str):
        from harness.load_app import LoadApp

        env = {
            "TRADLAB_DB": str(sim.db_path),
            "TRADLAB_MEDIA": str(sim.media),
            "TRADLAB_WORKER": "0",
            "TRADLAB_FIGURE_PNG": "0",
        }
        self.sim = sim
        self.app = LoadApp(tmp, env)
        self.old = LoadApp(tmp / "before", env, root=Path(before)) if before else None
        self.wav = Path(sim.wav).read_bytes()
        self.used: set = set()

    def server(self, mode: str):
        return self.old if mode == "before" else self.app

    def stop(self) -> None:
        self.app.stop()
        if self.old is not None:
            self.old.stop()


class _Level:
    """One level's accumulators for one study: per way of calling the app and for the no-op."""

    def __init__(self, modes):
        self.noop_out: dict = {}
        self.app_out: dict = {m: {} for m in modes}
        self.wall = {m: 0.0 for m in modes}
        self.cpu = {m: 0.0 for m in modes}
        self.client = {m: 0.0 for m in modes}
        self.reads = {m: (0, 0) for m in modes}
        self.noop_wall = {k: 0.0 for k in NOOPS}
        self.noop_cpu = {k: 0.0 for k in NOOPS}
        self.roles: dict = {}
        self.recorded: list = []
        self.planned = 0  # submits (those made are the submits' latencies)
        self.unmatched = 0  # participants of the first study's plan no one here could match

    def errors(self) -> list[str]:
        return [e for outs in [*self.app_out.values(), self.noop_out] for o in outs.values() for e in o["errors"]]


def _round(size: _Size, lv: _Level, m: str, people: list, work: dict, noop, noop_url: str) -> None:
    """The participants of one study act on one way of calling its app, all at once, each making
    its `work` (pid -> submits), after the same clients' no-op calls; none when fewer than two."""
    sim = size.sim
    if len(people) < 2:
        return
    lv.planned += sum(work.values())
    for p in people:
        lv.roles[f"{p.role}/{p.tab}"] = lv.roles.get(f"{p.role}/{p.tab}", 0) + 1
    for kind in NOOPS:
        c0 = cpu_s(noop.pid)
        out, w = _run(lambda p, start, out, kind=kind: _noop(noop_url, p, 2 + SUBMITS, start, out, kind), people)
        name = {"gradio": "noop", "json": "noop_json", "queued": "noop_queued"}[kind]
        for pid, o in out.items():
            lv.noop_out[(name, pid)] = {**o, "lat": [(name + k[4:], x) for k, x in o["lat"]]}
        lv.noop_wall[kind] += w
        lv.noop_cpu[kind] += cpu_s(noop.pid) - c0
    deadline = time.time() + DEADLINE_S
    server = size.server(m)
    c0, k0, r0 = cpu_s(server.proc.pid), time.process_time(), io_reads(server.proc.pid)
    way = BEFORE_WAY if m == "before" else m
    wav = size.wav
    out, w = _run(
        lambda p, start, out: _drive(sim, server.url, p, wav, deadline, start, out, way, work=work[p.pid]), people
    )
    lv.app_out[m].update(out)
    lv.wall[m] += w
    lv.cpu[m] += cpu_s(server.proc.pid) - c0
    lv.client[m] += time.process_time() - k0
    r1 = io_reads(server.proc.pid)
    lv.reads[m] = (lv.reads[m][0] + r1[0] - r0[0], lv.reads[m][1] + r1[1] - r0[1])
    # the worker's part, then the admin's review, for what was recorded over HTTP
    made = [e for o in out.values() for e in o["recorded"]]
    for eid in made:
        sim.record_outcome(eid)
    sim.review()
    lv.recorded += made


def _level_row(n: int, lv: _Level, modes) -> dict:
    noop_by = _latencies(lv.noop_out)
    errors = lv.errors()
    return {
        "clients": n,
        "rounds": ROUNDS,
        "roles": lv.roles,
        "noop_per_call": {k: _summary(xs, lv.noop_wall[kind_of(k)]) for k, xs in sorted(noop_by.items())},
        "noop_server_cpu_ms_per_call": {
            kind: round(
                1000 * lv.noop_cpu[kind] / max(1, sum(len(xs) for k, xs in noop_by.items() if kind_of(k) == kind)),
                2,
            )
            for kind in NOOPS
        },
        "modes": {
            m: _mode_row(lv.app_out[m], noop_by, lv.wall[m], lv.cpu[m], lv.client[m], lv.reads[m])
            for m in modes
            if lv.app_out[m]
        },
        # every call's latency (ms), for pooling the runs of a size (sim_http_runs.pooled): the
        # app's per way and endpoint, the no-op event's (the kind the ratios are against)
        "latencies_ms": {
            **{m: _ms(_latencies(lv.app_out[m])) for m in modes},
            "noop": _ms({k: noop_by[k] for k in ("noop_first", "noop_next") if k in noop_by}),
        },
        "recorded_over_http": len(lv.recorded),
        # the submits planned (matched across the studies measured together) and made
        "submits_planned": lv.planned,
        "submits_made": sum(len(xs) for m in modes for k, xs in _latencies(lv.app_out[m]).items() if is_submit(k)),
        "unmatched": lv.unmatched,
        "errors": errors[:10],
        "n_errors": len(errors),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def http_samples(sims: list, levels=LEVELS, modes=MODES, before: str = BEFORE) -> list[dict]:
    """The HTTP sample of one or more simulated studies (of different sizes), each with its own app
    (and the before checkout's) beside one no-op server, their rounds in turn: the sizes measured in
    one run, so that the machine's drift between runs (the no-op's own server CPU a call moved
    from 1.72 to 2.92 ms between runs of one code) falls on each alike. One result per study."""
    from benchmarks.load import start_noop, stop_noop
    from harness.measure import peak_rss_mb

    tmp = Path(tempfile.mkdtemp(prefix="study-sim-http-"))
    if before:
        modes = (*modes, "before")
    sizes = [_Size(sim, tmp / f"size-{i}", before) for i, sim in enumerate(sims)]
    results = [
        {
            "levels": [],
            "modes": list(modes),
            "submits_per_client": SUBMITS,
            "recordings_per_sender": RECORDINGS,
            "client": "harness/gradio_http.py GradioHTTP",
        }
        for _ in sims
    ]
    if len(sims) > 1:
        for res in results:
            res["measured_with"] = [sim.sizes.scale for sim in sims]
    noop = None
    try:
        for size, res in zip(sizes, results):
            t0 = time.time()
            size.app.start()
            res["app_start_s"] = round(time.time() - t0, 1)
            if size.old is not None:
                size.old.start()
                from benchmarks.common import commit_of

                res["before"] = {"code": before, "commit": commit_of(before), "called_by": BEFORE_WAY}
        noop, noop_log, noop_url = start_noop(tmp)
        for size, res in zip(sizes, results):
            if COSTS:
                res["costs"] = cost_sample(size.sim, size.app, size.old, noop, noop_url, modes, size.wav, size.used)
            else:
                for m in modes:
                    warm_up(size.sim, size.server(m), m, size.wav, size.used)
        for n in levels:
            lvs = [_Level(modes) for _ in sizes]
            # ROUNDS rounds; in each, for each way of calling the app and each study, the no-op's
            # kinds of call, then that app with n other participants, the same plan of work in
            # every study (matched); the orders turned round each round
            for r in range(ROUNDS):
                order = list(modes) if r % 2 == 0 else list(reversed(modes))
                turn = list(range(len(sizes))) if (r + FLIP) % 2 == 0 else list(reversed(range(len(sizes))))
                for m in order:
                    plans = matched([sz.sim for sz in sizes], [sz.used for sz in sizes], n)
                    for lv, (people, _) in zip(lvs[1:], plans[1:]):
                        lv.unmatched += len(plans[0][0]) - len(people)
                    for i in turn:
                        _round(sizes[i], lvs[i], m, *plans[i], noop, noop_url)
            for size, lv, res in zip(sizes, lvs, results):
                sim = size.sim
                if not any(lv.app_out.values()):
                    res["levels"].append({"clients": n, "skipped": "fewer than 2 participants have work"})
                    continue
                row = _level_row(n, lv, modes)
                res["levels"].append(row)
                for m, mr in row["modes"].items():
                    sim.log(
                        f"  HTTP {m}, {n} clients x {ROUNDS} rounds: submits p50 {mr['submits'].get('p50_ms')} ms "
                        f"p95 {mr['submits'].get('p95_ms')} ms, {mr['submits_per_s']}/s | submits vs later no-ops "
                        f"p95 {mr.get('submits_vs_later_noops_p95')} (JSON no-op "
                        f"{mr.get('submits_vs_later_noops_json_p95')}, queued no-op "
                        f"{mr.get('submits_vs_later_noops_queued_p95')}), views vs first no-ops "
                        f"{mr.get('view_vs_first_noop_p95')} (queued {mr.get('view_vs_first_noop_queued_p95')}), "
                        f"server CPU/call {mr['server_cpu_ms_per_call']} ms (no-ops "
                        f"{row['noop_server_cpu_ms_per_call']}), reads/call {mr['server_reads_per_call']} "
                        f"({mr['server_read_kib_per_call']} KiB)"
                    )
                if row["errors"]:
                    sim.log(f"  HTTP, {n} clients: {row['n_errors']} errors: {row['errors'][:2]}")
                sim.problems += [f"HTTP: {e}" for e in lv.errors()]
        for size, res in zip(sizes, results):
            res["app_peak_rss_mb"] = peak_rss_mb(size.app.proc.pid) if size.app.proc else None
    finally:
        for size in sizes:
            size.stop()
        if noop is not None:
            stop_noop(noop, noop_log)
        if any(p.startswith("HTTP") for size in sizes for p in size.sim.problems):
            for res in results:
                res["server_logs"] = str(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return results
