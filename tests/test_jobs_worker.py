"""The persistent job queue and its worker: retry with backoff, failure, resume after a crash."""

from __future__ import annotations

import threading
import time

from services.common.jobs_worker import Worker
from services.models.backends import BackendUnavailable
from storage import jobs


def add(database, kind="work", payload=None, key=None, max_attempts=3):
    with database.write() as db:
        return jobs.enqueue(db, kind, payload or {}, key, max_attempts)


def test_enqueue_is_deduplicated(database):
    assert add(database, key="k1") is not None
    assert add(database, key="k1") is None
    assert jobs.status_counts(database) == {"pending": 1}


def test_success_marks_done_and_logs(database):
    seen = []
    jid = add(database, payload={"x": 1})
    w = Worker(database, {"work": seen.append})
    assert w.run_once()["status"] == "done"
    assert seen == [{"x": 1}]
    assert jobs.get(database, jid)["status"] == "done" and w.run_once() is None
    assert database.scalar("SELECT COUNT(*) FROM events WHERE action = 'job_done'") == 1


def test_failures_retry_with_exponential_backoff_then_fail(database):
    calls = []

    def flaky(payload):
        calls.append(time.time())
        raise RuntimeError("model server busy")

    jid = add(database, max_attempts=3)
    w = Worker(database, {"work": flaky}, backoff_s=0.2)
    assert [w.retry_delay(n) for n in (1, 2, 3)] == [0.2, 0.4, 0.8]
    assert w.run_once()["status"] == "pending"
    job = jobs.get(database, jid)
    assert job["attempts"] == 1 and "model server busy" in job["last_error"] and job["run_after"]
    assert w.run_once() is None  # still backing off
    time.sleep(0.25)
    assert w.run_once()["status"] == "pending"
    time.sleep(0.45)
    res = w.run_once()
    assert res["status"] == "failed" and len(calls) == 3
    job = jobs.get(database, jid)
    assert job["status"] == "failed" and job["attempts"] == 3 and "RuntimeError: model server busy" in job["last_error"]
    # the admin's retry gives it a fresh set of attempts
    assert jobs.retry(database, jid) and jobs.get(database, jid)["status"] == "pending"


def test_a_missing_model_fails_at_once(database):
    def missing(payload):
        raise BackendUnavailable("faster_whisper is not installed: pip install faster-whisper")

    jid = add(database, max_attempts=5)
    assert Worker(database, {"work": missing}).run_once()["status"] == "failed"
    assert "pip install faster-whisper" in jobs.get(database, jid)["last_error"]


def test_resume_after_a_crash(database):
    """A process that died mid-job left it running: a new worker picks it up again."""
    jid = add(database)
    crashed = jobs.claim_next(database, ["work"])
    assert crashed["id"] == jid and jobs.get(database, jid)["status"] == "running"
    # nothing else can claim it while it is running
    assert jobs.claim_next(database, ["work"]) is None
    done = threading.Event()
    w = Worker(database, {"work": lambda p: done.set()}, poll_s=0.05).start()
    try:
        assert done.wait(5)
        for _ in range(100):
            if jobs.get(database, jid)["status"] == "done":
                break
            time.sleep(0.02)
        job = jobs.get(database, jid)
        assert job["status"] == "done" and job["attempts"] == 2
    finally:
        w.stop()


def test_worker_thread_survives_a_handler_error_and_runs_later_jobs(database):
    ran = []

    def handler(payload):
        ran.append(payload["n"])
        if payload["n"] == 1:
            raise ValueError("bad input")

    add(database, payload={"n": 1}, max_attempts=1)
    add(database, payload={"n": 2})
    w = Worker(database, {"work": handler}, poll_s=0.05).start()
    try:
        deadline = time.time() + 5
        while time.time() < deadline and jobs.status_counts(database) != {"failed": 1, "done": 1}:
            time.sleep(0.05)
        assert jobs.status_counts(database) == {"failed": 1, "done": 1}
        assert ran == [1, 2]
    finally:
        w.stop()


def test_unknown_kinds_are_left_alone(database):
    add(database, kind="other")
    assert Worker(database, {"work": lambda p: None}).run_once() is None
    assert jobs.status_counts(database) == {"pending": 1}


def test_background_jobs_wait_for_participant_facing_ones(database):
    ran = []
    add(database, kind="score_exchange", payload={"n": 1})
    add(database, kind="score_exchange", payload={"n": 2})
    add(database, kind="process_recording", payload={"n": 3})
    w = Worker(
        database, {"score_exchange": lambda p: ran.append(p["n"]), "process_recording": lambda p: ran.append(p["n"])}
    )
    w.run_until_idle()
    assert ran == [3, 1, 2]
