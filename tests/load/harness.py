"""What the load tests and benchmarks/load.py share: the app launched on its own database (and
killed with SIGKILL and restarted on it), a light Gradio client, and simulated DA raters.

GradioHTTP speaks the protocol the browser and gradio_client speak (one session per page:
POST /gradio_api/call/<api> with the session hash, then the event's SSE stream) with
gradio_client's predict() signature, at a fraction of its cost. Measured on the 2-core
machine: a no-op event takes ~15 ms through GradioHTTP and ~170 ms through
gradio_client.Client.predict; 50 raters x 20 DA submits took 50 s with GradioHTTP (6 s of
client CPU) and with 50 gradio_client.Client 142 s of wall and of client CPU (a whole core,
next to the server), 26 % of the submits unfinished and Client constructions timing out.
"""
from __future__ import annotations

import json
import random
import signal
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.conftest import ROOT, RunningApp

HERE = Path(__file__).resolve().parent
STUDY = HERE / "study"
STUDY_ID = "load"
ITEMS_PER_RATER = 20          # the study's hit_size
SAVED = "Saved."
ALREADY = "This answer was already saved."


# -- the app -----------------------------------------------------------------------------------
class LoadApp(RunningApp):
    """RunningApp that keeps one log across restarts and can be killed with SIGKILL."""

    def start(self, *args):
        self.log = open(self.tmp / "server.log", "a")
        self.log.write(f"\n=== start {time.strftime('%H:%M:%S')} ===\n")
        self.log.flush()
        self.proc = subprocess.Popen([sys.executable, "app.py", *args], cwd=ROOT, env=self.env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("app exited: " + (self.tmp / "server.log").read_text()[-4000:])
            try:
                urllib.request.urlopen(self.url, timeout=2)
                return self
            except OSError:
                time.sleep(0.25)
        self.stop()
        raise RuntimeError("app did not start: " + (self.tmp / "server.log").read_text()[-4000:])

    def kill9(self) -> None:
        """SIGKILL: no shutdown handler, no finally block, no flush runs in the server."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def db(self, sql: str, params=()) -> list[tuple]:
        con = sqlite3.connect(self.env["TRADLAB_DB"], timeout=30)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def db_write(self, sql: str, params=()) -> None:
        con = sqlite3.connect(self.env["TRADLAB_DB"], timeout=30)
        try:
            with con:
                con.execute(sql, params)
        finally:
            con.close()

    def tokens(self, role: str) -> list[str]:
        return [r[0] for r in self.db("SELECT token FROM participants WHERE study_id = ? AND role = ? ORDER BY id",
                                      (STUDY_ID, role))]


def prepared_app(tmp: Path, raters: int, extra_roles: bool = False, env_extra: dict | None = None) -> LoadApp:
    """The load study imported through the CLI, `raters` DA raters (and two of every other role
    when extra_roles), not started yet."""
    app = LoadApp(tmp, env_extra)
    res = app.cli("import", str(STUDY))
    assert res.returncode == 0, res.stderr
    res = app.cli("participants", "add", "--study", STUDY_ID, "--role", "da", "--count", str(raters))
    assert res.returncode == 0, res.stderr
    if extra_roles:
        for role in ("receiver", "validator", "rater", "sd"):
            res = app.cli("participants", "add", "--study", STUDY_ID, "--role", role, "--count", "2")
            assert res.returncode == 0, res.stderr
        res = app.cli("participants", "add", "--study", STUDY_ID, "--role", "sender", "--group", "USW",
                      "--gender", "Woman", "--count", "2")
        assert res.returncode == 0, res.stderr
    return app


# -- a light client ----------------------------------------------------------------------------
class ServerGone(ConnectionError):
    """The server did not answer (refused, reset, or the stream ended without a result):
    whether the request ran is unknown."""


class AppError(Exception):
    """The server answered with an error event; the message is what Gradio shows."""


_SSL: list = []


def _ssl_context() -> ssl.SSLContext:
    """One context for every client (loopback HTTP needs none, but httpx builds one per client,
    loading the CA bundle: ~30 ms of CPU each, which 50 clients and their reconnects notice)."""
    if not _SSL:
        _SSL.append(ssl.create_default_context())
    return _SSL[0]


class GradioHTTP:
    """One browser session on a Gradio app: predict(*inputs, api_name="/x") -> outputs."""

    def __init__(self, url: str, timeout: float = 60.0):
        self.root = url.rstrip("/")
        self.session_hash = uuid.uuid4().hex[:11]
        self.http = httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0), verify=_ssl_context())

    def close(self) -> None:
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def base(self, api_name: str = "", tab: str | None = None) -> str:
        """Where an endpoint is served: its role's page (/<role>/gradio_api) or "/"'s; a view of
        a tab is asked on the tab's page, as that page's browser does."""
        from web.site import page_of_api

        page = page_of_api(f"{tab}_{api_name}" if tab else api_name)
        return f"{self.root}/{page}/gradio_api" if page else f"{self.root}/gradio_api"

    _queued: dict = {}          # page base -> {api name: whether its event goes through the queue}

    def queued(self, base: str, api: str) -> bool:
        """Whether the page sends this event through Gradio's queue (the page's config says; the
        app's participant events do not: tabs/common.PARTICIPANT_EVENT)."""
        if base not in GradioHTTP._queued:
            r = self.http.get(base.removesuffix("/gradio_api") + "/config")
            r.raise_for_status()
            GradioHTTP._queued[base] = {d.get("api_name"): d.get("queue") is not False
                                        for d in r.json().get("dependencies", [])}
        return GradioHTTP._queued[base].get(api, True)

    def predict(self, *data, api_name: str):
        api = api_name.lstrip("/")
        tab = data[1] if api == "view" and len(data) > 1 and isinstance(data[1], str) else None
        base = self.base(api, tab)
        try:
            # json.dumps writes NaN and Infinity as JavaScript does (httpx's json= refuses them)
            body = json.dumps({"data": list(data), "session_hash": self.session_hash})
            if not self.queued(base, api):
                # as the browser calls an event outside the queue: one POST, the outputs in its answer
                r = self.http.post(f"{base}/api/{api}", content=body.encode(),
                                   headers={"content-type": "application/json"})
                try:
                    out = r.json()
                except ValueError:
                    out = None
                if not isinstance(out, dict) or "data" not in out:      # the error, as the queue's stream says it
                    raise AppError(str(out["error"]) if isinstance(out, dict) and "error" in out
                                   else f"HTTP {r.status_code}: {r.text[:500]}")
                payload = out["data"]
                return payload[0] if len(payload) == 1 else payload
            r = self.http.post(f"{base}/call/{api}", content=body.encode(),
                               headers={"content-type": "application/json"})
            if r.status_code != 200:
                raise AppError(f"HTTP {r.status_code}: {r.text[:500]}")
            event_id = r.json()["event_id"]
            with self.http.stream("GET", f"{base}/call/{api}/{event_id}") as s:
                event = None
                for line in s.iter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event in ("complete", "error"):
                        payload = json.loads(line[5:].strip() or "null")
                        if event == "complete":
                            return payload[0] if len(payload) == 1 else payload
                        msg = payload.get("error") if isinstance(payload, dict) else payload
                        raise AppError(str(msg))
        except (httpx.TransportError, ConnectionError) as e:
            raise ServerGone(f"{type(e).__name__}: {e}") from e
        raise ServerGone("the event stream ended without a result")


    def upload(self, data: bytes, filename: str, mime: str = "application/octet-stream",
               api_name: str = "record_submit") -> dict:
        """A file sent the way the browser's upload does, to the page of the event that will take
        it (api_name); returns the FileData an input takes."""
        try:
            r = self.http.post(f"{self.base(api_name)}/upload", files=[("files", (filename, data, mime))])
        except (httpx.TransportError, ConnectionError) as e:
            raise ServerGone(f"{type(e).__name__}: {e}") from e
        if r.status_code != 200:
            raise AppError(f"HTTP {r.status_code}: {r.text[:500]}")
        return file_data(r.json()[0], filename)


def file_data(path: str, name: str | None = None) -> dict:
    return {"path": path, "orig_name": name or Path(path).name, "meta": {"_type": "gradio.FileData"}}


def wait_until_up(url: str, seconds: float = 90) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return True
        except OSError:
            time.sleep(0.25)
    return False


# -- simulated DA raters -----------------------------------------------------------------------
@dataclass
class RaterLog:
    token: str
    acks: dict[str, float] = field(default_factory=dict)        # item -> score the server said "Saved." to
    sent: dict[str, set] = field(default_factory=dict)          # item -> every score sent for it
    unknown: list[str] = field(default_factory=list)            # items whose request the server may or may not have run
    already: int = 0
    doubles: int = 0
    concurrent_doubles: int = 0
    reconnects: int = 0
    server_gone: int = 0
    errors: list[str] = field(default_factory=list)             # anything unexpected
    latencies: list[float] = field(default_factory=list)        # seconds per step (a submit, or a double)
    final: dict | None = None


class Rater:
    """One DA rater working through their HIT: a seeded mix of plain submits, double submits
    (again afterwards, or concurrently from a second tab), reconnects (a new session, then
    /view to resume) and, when the server disappears, waiting for it and resuming."""

    def __init__(self, url: str, token: str, seed: int, p_double: float = 0.1, p_concurrent: float = 0.1,
                 p_reconnect: float = 0.1, deadline: float | None = None, gate: threading.Event | None = None):
        self.url, self.token = url, token
        self.gate = gate            # cleared: the rater holds before its next step (a test's pause)
        self.rng = random.Random(seed)
        self.p_double, self.p_concurrent, self.p_reconnect = p_double, p_concurrent, p_reconnect
        self.deadline = deadline or time.time() + 600
        self.log = RaterLog(token)

    def _submit(self, client: GradioHTTP, item: str, score: int) -> dict | None:
        self.log.sent.setdefault(item, set()).add(float(score))
        try:
            state = client.predict(self.token, {"item_id": item, "answer": {"score": score}}, api_name="/da_submit")[0]
        except ServerGone:
            self.log.server_gone += 1
            self.log.unknown.append(item)
            return None
        except AppError as e:
            self.log.errors.append(f"{item}: app error {e}")
            return None
        if state.get("notice") == SAVED:
            if item in self.log.acks:
                self.log.errors.append(f"{item}: saved twice ({self.log.acks[item]} and {score})")
            self.log.acks[item] = float(score)
        elif state.get("notice") == ALREADY:
            self.log.already += 1
        else:
            self.log.errors.append(f"{item}: {state.get('error') or state}")
        return state

    def _view(self, client: GradioHTTP) -> dict | None:
        try:
            return client.predict(self.token, "da", api_name="/view")
        except ServerGone:
            self.log.server_gone += 1
            return None

    def _reconnect(self, client: GradioHTTP | None) -> tuple[GradioHTTP, dict | None]:
        """A new session (a reload), waiting for the server while it is down."""
        if client is not None:
            client.close()
        while time.time() < self.deadline:
            client = GradioHTTP(self.url)
            view = self._view(client)
            if view is not None:
                return client, view
            client.close()
            wait_until_up(self.url, max(1.0, min(30.0, self.deadline - time.time())))
        return GradioHTTP(self.url), None

    def run(self) -> RaterLog:
        client, view = self._reconnect(None)
        try:
            for _ in range(ITEMS_PER_RATER * 4):               # bounded: every step saves an item or recovers
                if self.gate is not None:
                    self.gate.wait(max(0.0, self.deadline - time.time()))
                if view is None or time.time() > self.deadline:
                    break
                if view.get("status") == "complete":
                    break
                if view.get("status") != "item":
                    self.log.errors.append(f"unexpected view {view}")
                    break
                item = view["item_id"]
                score = self.rng.randint(0, 100)
                r = self.rng.random()
                t0 = time.perf_counter()
                if r < self.p_concurrent:                      # a second tab submits the same item at once
                    self.log.concurrent_doubles += 1
                    other = GradioHTTP(self.url)
                    second = {}
                    score2 = self.rng.randint(0, 100)
                    th = threading.Thread(target=lambda: second.update(s=self._submit(other, item, score2)))
                    th.start()
                    state = self._submit(client, item, score)
                    th.join(120)
                    other.close()
                    states = [state, second.get("s")]
                elif r < self.p_concurrent + self.p_double:    # a double click: the same item again afterwards
                    self.log.doubles += 1
                    state = self._submit(client, item, score)
                    states = [state, self._submit(client, item, self.rng.randint(0, 100))]
                else:
                    state = self._submit(client, item, score)
                    states = [state]
                self.log.latencies.append(time.perf_counter() - t0)
                if any(s is None for s in states) and self.log.server_gone:
                    client, view = self._reconnect(client)
                    self.log.reconnects += 1
                    continue
                nxt = next((s for s in states if s and s.get("notice") == SAVED), states[0])
                if nxt is None:
                    break
                if self.rng.random() < self.p_reconnect:       # a reload: new session, resume where we were
                    self.log.reconnects += 1
                    expected = nxt.get("item_id") if nxt.get("status") == "item" else None
                    client, view = self._reconnect(client)
                    if view is not None and expected is not None and view.get("item_id") != expected:
                        self.log.errors.append(f"resumed at {view.get('item_id')}, expected {expected}")
                    continue
                view = nxt
            self.log.final = view
        finally:
            client.close()
        return self.log


def run_raters(url: str, tokens: list[str], seed: int, deadline: float, **kw) -> list[RaterLog]:
    """Every rater on its own thread, all started together; returns their logs."""
    raters = [Rater(url, t, seed * 100003 + i, deadline=deadline, **kw) for i, t in enumerate(tokens)]
    logs: list[RaterLog | None] = [None] * len(raters)

    def work(i):
        try:
            logs[i] = raters[i].run()
        except Exception as e:       # a crash in the simulation is a test failure, not a hang
            raters[i].log.errors.append(f"rater crashed: {type(e).__name__}: {e}")
            logs[i] = raters[i].log

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(raters))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(max(1.0, deadline - time.time() + 30))
    return [lg if lg is not None else raters[i].log for i, lg in enumerate(logs)]


def stored_scores(app: LoadApp) -> dict[tuple[str, str], list[float]]:
    """(token, item) -> every judgment stored for that rater's assignment."""
    out: dict[tuple[str, str], list[float]] = {}
    for tok, item, score in app.db(
            "SELECT p.token, a.item_id, j.score FROM da_judgments j JOIN assignments a ON a.id = j.assignment_id "
            "JOIN participants p ON p.id = a.participant_id WHERE a.study_id = ?", (STUDY_ID,)):
        out.setdefault((tok, item), []).append(score)
    return out


def check_consistency(app: LoadApp, logs: list[RaterLog]) -> list[str]:
    """Problems (empty when none): one judgment per done assignment, raters x 20 in all, every
    acknowledged answer stored with its score, every other stored score one that was sent."""
    problems = []
    n = len(logs)
    stored = stored_scores(app)
    total = sum(len(v) for v in stored.values())
    if total != n * ITEMS_PER_RATER:
        problems.append(f"{total} judgments stored, expected {n} x {ITEMS_PER_RATER}")
    dup = {k: v for k, v in stored.items() if len(v) != 1}
    if dup:
        problems.append(f"assignments with more than one judgment: {list(dup.items())[:5]}")
    done_without = app.db(
        "SELECT COUNT(*) FROM assignments a WHERE a.study_id = ? AND a.phase = 'da' AND a.status = 'done' "
        "AND NOT EXISTS (SELECT 1 FROM da_judgments j WHERE j.assignment_id = a.id)", (STUDY_ID,))[0][0]
    judged_open = app.db(
        "SELECT COUNT(*) FROM da_judgments j JOIN assignments a ON a.id = j.assignment_id "
        "WHERE a.study_id = ? AND a.status != 'done'", (STUDY_ID,))[0][0]
    if done_without or judged_open:
        problems.append(f"{done_without} done assignments without a judgment, {judged_open} judgments of open ones")
    for lg in logs:
        for item, score in lg.acks.items():
            got = stored.get((lg.token, item))
            if got != [score]:
                problems.append(f"acknowledged {lg.token[:6]}/{item} = {score}, stored {got}")
        for (tok, item), scores in stored.items():
            if tok == lg.token and item not in lg.acks and not set(scores) <= lg.sent.get(item, set()):
                problems.append(f"{tok[:6]}/{item} stored {scores}, never sent (sent {lg.sent.get(item)})")
        if lg.errors:
            problems.append(f"rater {lg.token[:6]}: {lg.errors[:3]}")
        if not lg.final or lg.final.get("status") != "complete":
            problems.append(f"rater {lg.token[:6]} did not finish: {str(lg.final)[:200]}")
    return problems


def peak_rss_mb(pid: int) -> float | None:
    """A process's peak resident memory so far (VmHWM), in MB; None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(q / 100 * len(s) + 0.5)) - 1))
    return s[k]
