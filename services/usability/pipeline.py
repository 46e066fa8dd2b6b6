"""What the worker does with a saved recording: QC, then translation, then open the next phase.

Both steps are idempotent (a retried or resumed job skips what is stored), and no model
runs in a request handler: submissions only enqueue this job.

QC needs a transcript, and every recording of a study gets it from the same ASR (the study's
[usability] qc_asr, services/usability/recording_qc.py), so that the flag rate does not depend on the
system: a cascade whose ASR is that config lends its own transcript; otherwise the QC ASR
transcribes the recording for QC only. With the second opinion on (recording_qc.second_opinion)
and a QC ASR that can score a text (faster-whisper), the QC ASR also scores the starter against
the audio: on the encoder output of its own transcription, or in a pass of its own when the
transcript was lent and the paper's rule raised an edge flag (else nothing could change).
"""

from __future__ import annotations

import datetime as dt
import json

from services.metrics import exchange as exchange_metrics
from services.models import systems
from services.models.cache import CACHE
from services.usability import audio_intake, recording_qc, workflow
from storage import jobs, studies
from storage.db import required
from storage.usability import corpus as usability_corpus
from storage.usability import exchanges, recordings


def process_recording(database, recording_id: int, cache=CACHE) -> dict:
    rec = recordings.recording(database, int(recording_id))
    if rec is None:
        raise ValueError(f"recording {recording_id} does not exist")
    ex = required(exchanges.exchange(database, rec["exchange_id"]), "exchange of a recording")
    study = required(studies.get_study(database, ex["study_id"]), "study of an exchange")
    system = next((s for s in study["config"]["systems"] if s["id"] == ex["system_id"]), None)
    if system is None:
        raise ValueError(f"system '{ex['system_id']}' is not in study '{ex['study_id']}'")
    starter = required(usability_corpus.starter(database, ex["study_id"], ex["starter_id"]), "starter of an exchange")
    done = {"qc": rec["transcript"] is not None, "translation": recordings.translation(database, ex["id"]) is not None}
    if all(done.values()):
        return {"skipped": True}
    st = systems.from_study_system(system, cache)
    result = None
    if not done["translation"]:
        result = st.translate_audio(rec["path_16k"])
        save_translation(
            database,
            rec,
            ex,
            result.translation,
            result.transcript,
            {
                "models": result.models,
                "seconds": result.seconds,
                "audio_s": rec["duration_s"],
                "precision": result.precision,
                **({"cut": result.cut} if result.cut else {}),
            },
        )
    if not done["qc"]:
        usability = study["config"].get("usability")
        qc_asr = recording_qc.qc_asr_config(usability)
        opinion = recording_qc.second_opinion(usability)
        transcript, scored = None, None
        params = dict(system.get("params") or {})
        cfg = systems.resolve(system["kind"], params, params.pop("preset", None))
        if cfg.get("kind") == "cascade" and recording_qc.same_asr(cfg, qc_asr):
            transcript = (
                result.transcript
                if result is not None
                else required(recordings.translation(database, ex["id"]), "translation")["transcript"]
            )
        asr = None
        if transcript is None:
            asr = systems.build_asr(qc_asr, cache)
            if opinion["on"] and getattr(asr, "can_score", False):
                transcript, scored = asr.transcribe_scored(rec["path_16k"], starter["text"])
            else:
                transcript = asr.transcribe(rec["path_16k"])
        elif opinion["on"] and recording_qc.needs_second_opinion(recording_qc.check(starter["text"], transcript)):
            asr = systems.build_asr(qc_asr, cache)
            scored = asr.score(rec["path_16k"], starter["text"]) if getattr(asr, "can_score", False) else None
        translated = required(recordings.translation(database, ex["id"]), "translation")["text"]
        edges = recording_qc.edge_probabilities(scored)
        save_qc(database, rec, starter["text"], transcript, qc_asr, edges, opinion, translated, usability)
    workflow.exchange_ready(database, ex["id"])
    return {"skipped": False}


def save_translation(database, rec: dict, ex: dict, text: str, transcript: str | None, meta: dict) -> None:
    """Stores a system's output for the exchange and queues its automatic metrics."""
    with database.write() as db:
        recordings.insert_translation(db, ex["id"], ex["system_id"], text, transcript, json.dumps(meta))
        database.log("worker", "translate", "exchanges", ex["id"], {"system": ex["system_id"]})
        exchange_metrics.enqueue(db, ex["id"])


def save_qc(
    database,
    rec: dict,
    starter_text: str,
    transcript: str,
    asr: dict | None = None,
    edges: dict | None = None,
    opinion: dict | None = None,
    translation: str | None = None,
    usability: dict | None = None,
) -> recording_qc.QCResult:
    """QC of the recording (and, given the system's translation, of its length against the
    transcript: recording_qc.translation_short), stored and logged."""
    qc = recording_qc.check(
        starter_text, transcript, edges=edges, settings=opinion, translation=translation, usability=usability
    )
    with database.write() as db:
        recordings.set_recording_qc(db, rec["id"], qc.status, transcript, qc.wer, qc.flags, qc.edges_record())
        # which ASR wrote the transcript QC read (None: a caller's own transcript)
        database.log(
            "worker",
            "qc",
            "recordings",
            rec["id"],
            {"status": qc.status, "wer": qc.wer, "asr": asr, "forgiven": qc.forgiven},
        )
    return qc


def record_outcome(database, recording_id: int, translation: str, transcript: str, meta: dict | None = None) -> str:
    """What the worker stores once a system has run on a recording (translation, QC from the
    transcript) and the work it opens; for callers that already have the system's output
    (the study simulation in benchmarks/, an import of outputs computed elsewhere). Returns the
    QC status."""
    rec = recordings.recording(database, int(recording_id))
    if rec is None:
        raise ValueError(f"recording {recording_id} does not exist")
    ex = required(exchanges.exchange(database, rec["exchange_id"]), "exchange of a recording")
    starter = required(usability_corpus.starter(database, ex["study_id"], ex["starter_id"]), "starter of an exchange")
    if recordings.translation(database, ex["id"]) is None:
        save_translation(database, rec, ex, translation, transcript, meta or {})
    status = rec["qc_status"]
    if rec["transcript"] is None:
        usability = required(studies.get_study(database, ex["study_id"]), "study")["config"].get("usability")
        translated = required(recordings.translation(database, ex["id"]), "translation")["text"]
        status = save_qc(database, rec, starter["text"], transcript, None, None, None, translated, usability).status
    workflow.exchange_ready(database, ex["id"])
    return status


SWEEP_KIND = "sweep_recordings"


def sweep_recordings(database, media_dir) -> int:
    """The recording files no row names, once an hour old, removed (audio_intake.sweep): what a
    crash between an intake and its save left behind."""
    if media_dir is None:
        return 0
    return audio_intake.sweep(media_dir, recordings.file_names(database))


def schedule_sweep(database, study_id: str) -> int:
    """The study upkeep's (Protocol.repair): refreshes the workflow and queues the media sweep, at
    most once an hour whatever the number of studies (its dedupe key is the hour). Counts what the
    refresh added or changed."""
    changed = workflow.refresh(database, study_id)
    hour = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H")
    with database.write() as db:
        jobs.enqueue(db, SWEEP_KIND, {}, dedupe_key=f"{SWEEP_KIND}:{hour}")
    return changed


def background_jobs(database, cache=CACHE, media_dir=None) -> dict:
    """The usability study's background jobs (Protocol.jobs): a recording's system run and QC,
    an exchange's automatic metrics, the hourly sweep of recording files no row names."""
    return {
        "process_recording": lambda payload: process_recording(database, payload["recording_id"], cache),
        "score_exchange": lambda payload: exchange_metrics.score_exchange(database, payload["exchange_id"], cache),
        SWEEP_KIND: lambda payload: sweep_recordings(database, media_dir),
    }
