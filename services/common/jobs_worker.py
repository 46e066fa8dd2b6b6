"""The background worker: runs persistent jobs (storage/jobs.py) on one thread.

A job is claimed (status running, attempts + 1), run by the handler for its kind, and
marked done; an exception puts it back to pending after an exponential backoff until its
attempts reach max_attempts, then it is failed with the error for the admin tab. A missing
model or credential (BackendUnavailable) fails at once: retrying cannot fix it, and the
admin retries after installing (an unreachable model server is retried: it may come back). On
start, jobs left running by a dead process are resumed.
"""

from __future__ import annotations

import logging
import threading
import traceback
from typing import Callable

from services.common.unavailable import BackendUnavailable
from storage import jobs

log = logging.getLogger("tradlab.worker")

Handler = Callable[[dict], None]


class Worker:
    def __init__(
        self,
        database,
        handlers: dict[str, Handler],
        poll_s: float = 1.0,
        backoff_s: float = 5.0,
        max_backoff_s: float = 300.0,
    ):
        self.database = database
        self.handlers = handlers
        self.poll_s = poll_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def retry_delay(self, attempts: int) -> float:
        return min(self.max_backoff_s, self.backoff_s * 2 ** max(0, attempts - 1))

    def run_once(self) -> dict | None:
        """Run the next runnable job; returns it (with its outcome) or None when idle."""
        job = jobs.claim_next(self.database, list(self.handlers))
        if job is None:
            return None
        try:
            self.handlers[job["kind"]](job["payload"])
        except Exception as e:  # a job's failure must never kill the worker
            message = f"{type(e).__name__}: {e}"
            permanent = (isinstance(e, BackendUnavailable) and not getattr(e, "transient", False)) or job[
                "attempts"
            ] >= job["max_attempts"]
            job["status"] = jobs.fail(
                self.database, job["id"], message[:2000], None if permanent else self.retry_delay(job["attempts"])
            )
            job["error"] = message
            log.warning(
                "job %s (%s) attempt %s: %s\n%s",
                job["id"],
                job["kind"],
                job["attempts"],
                message,
                traceback.format_exc(limit=3),
            )
            return job
        jobs.finish(self.database, job["id"])
        job["status"] = "done"
        return job

    def run_until_idle(self, limit: int = 1000) -> list[dict]:
        done = []
        for _ in range(limit):
            job = self.run_once()
            if job is None:
                break
            done.append(job)
        return done

    def start(self) -> "Worker":
        resumed = jobs.reset_interrupted(self.database)
        if resumed:
            log.info("resuming %s interrupted job(s)", resumed)
        self._thread = threading.Thread(target=self._loop, name="tradlab-worker", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                ran = self.run_once()
            except Exception:  # e.g. the database briefly locked: keep the thread alive
                log.exception("worker loop")
                ran = None
            if ran is None:
                self._wake.wait(self.poll_s)
                self._wake.clear()
