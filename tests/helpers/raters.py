"""Simulated DA raters on the load study (harness/load_app.py): each works through its HIT with
double submits, concurrent second tabs and reconnects; then what the database holds is checked
against what the server acknowledged."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from harness.app import wait_until_up
from harness.gradio_http import AppError, GradioHTTP, ServerGone
from harness.load_app import ITEMS_PER_RATER, STUDY_ID, LoadApp

SAVED = "Saved."
ALREADY = "This answer was already saved."


# -- simulated DA raters -----------------------------------------------------------------------
@dataclass
class RaterLog:
    token: str
    acks: dict[str, float] = field(default_factory=dict)  # item -> score the server said "Saved." to
    sent: dict[str, set] = field(default_factory=dict)  # item -> every score sent for it
    unknown: list[str] = field(default_factory=list)  # items whose request the server may or may not have run
    already: int = 0
    doubles: int = 0
    concurrent_doubles: int = 0
    reconnects: int = 0
    server_gone: int = 0
    errors: list[str] = field(default_factory=list)  # anything unexpected
    latencies: list[float] = field(default_factory=list)  # seconds per step (a submit, or a double)
    final: dict | None = None


class Rater:
    """One DA rater working through their HIT: a seeded mix of plain submits, double submits
    (again afterwards, or concurrently from a second tab), reconnects (a new session, then
    /view to resume) and, when the server disappears, waiting for it and resuming."""

    def __init__(
        self,
        url: str,
        token: str,
        seed: int,
        p_double: float = 0.1,
        p_concurrent: float = 0.1,
        p_reconnect: float = 0.1,
        deadline: float | None = None,
        gate: threading.Event | None = None,
    ):
        self.url, self.token = url, token
        self.gate = gate  # cleared: the rater holds before its next step (a test's pause)
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
            for _ in range(ITEMS_PER_RATER * 4):  # bounded: every step saves an item or recovers
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
                if r < self.p_concurrent:  # a second tab submits the same item at once
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
                elif r < self.p_concurrent + self.p_double:  # a double click: the same item again afterwards
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
                if self.rng.random() < self.p_reconnect:  # a reload: new session, resume where we were
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
        except Exception as e:  # a crash in the simulation is a test failure, not a hang
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
        "JOIN participants p ON p.id = a.participant_id WHERE a.study_id = ?",
        (STUDY_ID,),
    ):
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
        "AND NOT EXISTS (SELECT 1 FROM da_judgments j WHERE j.assignment_id = a.id)",
        (STUDY_ID,),
    )[0][0]
    judged_open = app.db(
        "SELECT COUNT(*) FROM da_judgments j JOIN assignments a ON a.id = j.assignment_id "
        "WHERE a.study_id = ? AND a.status != 'done'",
        (STUDY_ID,),
    )[0][0]
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
