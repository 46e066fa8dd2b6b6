"""A direct-assessment campaign in the app (paper 001): HIT assignment, what an item shows,
the rules of a judgment, feedback, and the judgments as the analysis reads them.

- A rater gets one HIT in one modality (between-subjects): with `modality = "both"` the
  modality with fewer raters so far, then, in it, the (run, HIT) fewest raters hold, earlier
  runs first. `runs` (default 1) is the number of independent runs of the same HITs: a rater
  of run 2 rates a HIT that another rater rated in run 1, and the run number is stored with the
  assignment (its meta), so the analysis's self-replication (paper 001, section 3.2: "we
  conduct two independent runs and compute the Pearson correlation (r) between the initial and
  self-replicated results") needs one study, not two merged on the command line. Items keep
  the HIT's order (no randomisation, no going back: the tab only ever shows the next open item).
- Text mode shows reference (grey) and candidate (black) as one image; the view never carries
  the candidate as text. Audio mode plays the candidate synthesised by the TTS service and
  shows the reference as an image too (paper 001, Figure 2: "the text in presented in the
  image form"; section 2.2.1: bit-mapped images "to deter workers from using speech feature of
  Web Browsers to read-aloud"), so the view carries neither text; an audio item is shown only
  once its audio exists (a background job renders a HIT's audio and reference images when it
  is assigned, or the admin pre-renders the campaign).
- Reruns (paper 001, section 2.2.3: "Rejected HITs were rescheduled to obtain fresh
  judgments"; Ethics: HITs "completed in an unrealistically short time" were rejected): when a
  rater's last item is saved, hit_completed runs the analysis's reliability test and speed check
  on that rater's HIT; a failed HIT goes back to the pool (its rater no longer counts as
  coverage in assignment) up to `reruns` times per (HIT, modality, run), after which it stays as
  it is and the analysis says so.
- Each audio item stores the TTS engine and voice that spoke it (render time).
- `lock_until_played` (default false: paper 001 does not lock the slider; its rater "can use
  audio control to listen translations"): when true, the audio page keeps the slider locked
  until the candidate has played to its end, and a judgment is refused when it arrives before
  the audio could have been played to the end since the item was shown.
"""

from __future__ import annotations

import datetime as dt
import wave
from pathlib import Path

import pandas as pd

from services.da import analysis as da_analysis
from services.da.render import render_item_images
from services.models import tts
from services.participation.items import limit_requests
from services.study.texts import texts
from storage import assignments, jobs, participants, studies
from storage.da import hits as hit_store
from storage.da import judgments
from storage.db import Transaction, required
from storage.rows import AssignmentRow, StudyRow

MAX_FEEDBACK = 5000
LISTEN_TOLERANCE_S = 0.5


class DAError(ValueError):
    pass


def choose_modality(study: StudyRow, loads: dict) -> str:
    """The study's modality; with "both", the one fewer raters hold (loads: storage.da.hits.da_hit_loads,
    each rater holding one HIT in one modality)."""
    m = study["config"]["da"]["modality"]
    if m != "both":
        return m
    counts = modality_counts(loads)
    return min(("text", "audio"), key=lambda x: counts.get(x, 0))


def modality_counts(loads: dict) -> dict[str, int]:
    """Raters per modality, from the raters per (HIT, modality, run)."""
    counts: dict[str, int] = {}
    for (_, modality, _), n in loads.items():
        counts[modality] = counts.get(modality, 0) + n
    return counts


def assign_hit(tx: Transaction, study: StudyRow, pid: int) -> None:
    sid = study["id"]
    hits = hit_store.da_hits(tx.database, sid)
    if not hits:
        return
    loads = hit_store.da_hit_loads(tx.database, sid)  # read once: the modality comes from it too
    modality = choose_modality(study, loads)
    runs = range(1, int(study["config"]["da"].get("runs", 1)) + 1)
    run, hit = min(
        ((r, h) for r in runs for h in hits),
        key=lambda rh: (loads.get((rh[1]["id"], modality, rh[0]), 0), rh[0], rh[1]["idx"]),
    )
    for it in hit_store.da_hit_items(tx.database, hit["id"]):
        assignments.insert_assignment(
            tx.db,
            sid,
            pid,
            "da",
            it["id"],
            it["pos"],
            meta={"hit_id": hit["id"], "hit_idx": hit["idx"], "pos": it["pos"], "modality": modality, "run": run},
        )
    # the worker renders the HIT ahead of the rater: audio must exist before an item is shown;
    # images would otherwise be drawn inside the rater's submit (about 14 ms each)
    kind = "render_da_audio" if modality == "audio" else "render_da_images"
    jobs.enqueue(tx.db, kind, {"study_id": sid, "hit_id": hit["id"]}, dedupe_key=f"{kind}:{hit['id']}")


def hit_completed(tx: Transaction, study: StudyRow, assignment: AssignmentRow) -> dict | None:
    """After a DA judgment is saved (inside its write): when it was the rater's last open item,
    the rater's HIT is judged (reliability test at p < reliability_alpha, section 2.2.3; speed,
    Ethics) and,
    if it failed and this (HIT, modality, run) has had fewer than `reruns` reruns, released for a
    fresh rater. Idempotent: one outcome per rater, written once."""
    pid = assignment["participant_id"]
    if assignments.counts(tx.database, pid, ("da",))["open"] or hit_store.da_hit_outcome(tx.database, pid):
        return None
    da = study["config"]["da"]
    judged = pd.DataFrame(judgments.da_rater_judgment_rows(tx.database, pid))
    if judged.empty:
        return None
    keep_fast = bool(da.get("keep_fast", False))
    verdict = da_analysis.hit_verdict(
        judged,
        alpha=float(da.get("reliability_alpha", 0.05)),
        fast_item_s=float(da.get("fast_item_s", da_analysis.FAST_ITEM_S)),
    )
    failed = not verdict["reliable"] or (verdict["fast"] and not keep_fast)
    meta = assignment["meta"]
    modality, run = meta["modality"], int(meta.get("run", 1))
    # a pilot that keeps every worker pays no second rater for judgments it keeps anyway
    keep_every = bool(da.get("keep_every_worker", False))
    rerun = (
        failed
        and not keep_every
        and hit_store.da_hit_reruns(tx.database, meta["hit_id"], modality, run) < int(da.get("reruns", 2))
    )
    row = {
        "participant_id": pid,
        "study_id": study["id"],
        "hit_id": meta["hit_id"],
        "modality": modality,
        "run": run,
        **verdict,
        "reliable": int(verdict["reliable"]),
        "fast": int(verdict["fast"]),
        "rerun": int(rerun),
    }
    if hit_store.insert_da_hit_outcome(tx.db, row):
        tx.database.log(
            f"participant:{pid}",
            "da_hit_outcome",
            "da_hits",
            meta["hit_id"],
            {"p_value": verdict["p_value"], "fast": verdict["fast"], "rerun": rerun},
        )
    return row


def _audio_path(study: StudyRow, candidate: str, media_dir) -> Path:
    da = study["config"]["da"]
    return tts.cached_path(candidate, da["language"], media_dir, _backend(da))


def _backend(da: dict):
    return None if da.get("tts_backend", "auto") == "auto" else da["tts_backend"]


def wav_seconds(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / w.getframerate()


def locked(study: StudyRow) -> bool:
    """Audio mode: does the slider wait until the candidate has played to its end?"""
    return bool(study["config"]["da"].get("lock_until_played", False))


def reference_image(reference: str, media_dir) -> tuple[Path, Path] | None:
    """Audio mode's reference, alone in grey as an image and its phone copy (None for an empty
    reference)."""
    return render_item_images(reference, "", media_dir) if (reference or "").strip() else None


def item_content(database, study: StudyRow, assignment: AssignmentRow, media_dir) -> dict | None:
    """What the rating tab shows for an assignment; None while its audio is not rendered yet.
    Neither mode carries the reference or the candidate as text."""
    it = required(hit_store.da_hit_item(database, int(assignment["item_id"])), "HIT item of a DA assignment")
    modality = assignment["meta"]["modality"]
    words = texts(study)["da"]
    # the slider's end labels (paper 001, Figures 1 and 2: the question's answer at either end)
    base = {"modality": modality, "pos": it["pos"], "scale_low": words["scale_low"], "scale_high": words["scale_high"]}
    if modality == "text":
        image, narrow = render_item_images(it["reference"], it["candidate"], media_dir)
        return {**base, "image": str(image), "image_narrow": str(narrow)}
    path = _audio_path(study, it["candidate"], media_dir)
    if not path.is_file():
        return None
    images = reference_image(it["reference"], media_dir)
    out = {
        **base,
        "audio": str(path),
        "audio_seconds": round(wav_seconds(path), 2),
        "image": str(images[0]) if images else None,
        "image_narrow": str(images[1]) if images else None,
        "lock": locked(study),
    }
    if out["lock"]:
        out["audio_note"] = texts(study)["da"]["audio_locked"]
    return out


def check_judgment(database, study: StudyRow, assignment: AssignmentRow, media_dir) -> None:
    """Audio mode with lock_until_played: the whole audio must have had time to play since the
    item was shown."""
    if assignment["meta"]["modality"] != "audio" or not assignment["first_shown_at"] or not locked(study):
        return
    it = required(hit_store.da_hit_item(database, int(assignment["item_id"])), "HIT item of a DA assignment")
    path = _audio_path(study, it["candidate"], media_dir)
    if not path.is_file():
        raise DAError("This item's audio is not ready yet. Please reload the page.")
    shown = dt.datetime.fromisoformat(assignment["first_shown_at"])
    elapsed = (dt.datetime.now(dt.timezone.utc) - shown).total_seconds()
    if elapsed + LISTEN_TOLERANCE_S < wav_seconds(path):
        raise DAError("Please listen to the whole recording before you score it.")


def background_jobs(database, cache=None, media_dir=None) -> dict:
    """The DA campaign's background jobs (Protocol.jobs): a HIT's items rendered as images, or
    spoken (the audio mode)."""
    return {
        "render_da_audio": lambda payload: render_hit_audio(
            database, payload["study_id"], payload["hit_id"], media_dir
        ),
        "render_da_images": lambda payload: render_hit_images(
            database, payload["study_id"], payload["hit_id"], media_dir
        ),
    }


def render_hit_images(database, study_id: str, hit_id: int, media_dir) -> int:
    """Draw every text-mode image of a HIT (each once: the image cache)."""
    items = hit_store.da_hit_items(database, hit_id)
    for it in items:
        render_item_images(it["reference"], it["candidate"], media_dir)
    return len(items)


def render_hit_audio(database, study_id: str, hit_id: int, media_dir, progress=None) -> int:
    """Synthesise every candidate of a HIT (each text once: the TTS cache) and draw its
    references' images."""
    study = required(studies.get_study(database, study_id), "study of a HIT")
    da = study["config"]["da"]
    items = hit_store.da_hit_items(database, hit_id)
    engine = tts.choose(da["language"], _backend(da))  # one engine for the HIT, stored with its items
    for i, it in enumerate(items, start=1):
        reference_image(it["reference"], media_dir)
        tts.speak(it["candidate"], da["language"], media_dir, engine)
        if progress:
            progress(i, len(items))
    _store_tts(database, [it["id"] for it in items], engine)
    return len(items)


def _store_tts(database, item_ids: list[int], engine) -> None:
    if item_ids:
        with database.write() as db:
            hit_store.set_da_item_tts(db, item_ids, engine.name, engine.voice)


def prerender(database, study_id: str, media_dir, progress=None) -> dict:
    """Everything a campaign shows, rendered once: images always, audio and the audio mode's
    reference images unless text-only."""
    study = studies.get_study(database, study_id)
    if study is None:
        raise DAError(f"There is no study '{study_id}'.")
    da = study["config"]["da"]
    items = hit_store.da_campaign_items(database, study_id)
    texts = sorted({it["candidate"] for it in items})
    refs = (
        sorted({it["reference"] for it in items if (it["reference"] or "").strip()}) if da["modality"] != "text" else []
    )
    total = len(items) + len(refs) + (len(texts) if da["modality"] != "text" else 0)
    done = 0
    for it in items:
        render_item_images(it["reference"], it["candidate"], media_dir)
        done += 1
        if progress:
            progress(done, total)
    for ref in refs:
        reference_image(ref, media_dir)
        done += 1
        if progress:
            progress(done, total)
    if da["modality"] != "text":
        engine = tts.choose(da["language"], _backend(da))
        for text in texts:
            tts.speak(text, da["language"], media_dir, engine)
            done += 1
            if progress:
                progress(done, total)
        _store_tts(database, [it["id"] for it in items], engine)
    return {
        "items": len(items),
        "audio_texts": len(texts) if da["modality"] != "text" else 0,
        "reference_images": len(refs),
    }


def save_feedback(database, participant_id: int, text: str) -> bool:
    """A DA rater's comments on the task (the DA tab's last page); no other role gives DA feedback.
    Limited per link as views and submits are (limit_requests: one link had posted 216-336 times
    a second), and the same text again writes nothing: a change is one upsert and one audit row.
    Whether it changed the stored text."""

    p = participants.get(database, participant_id)
    if not p or p["role"] != "da" or not p["active"]:
        raise DAError("Feedback on the rating task is only for its raters.")
    limit_requests(p)
    if text is not None and not isinstance(text, str):
        raise DAError("Your feedback must be text.")
    text = (text or "").strip()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (half an emoji): SQLite cannot store it
        raise DAError(
            "Your feedback contains a character that cannot be stored (half of an emoji or symbol): please retype it."
        ) from None
    if len(text) > MAX_FEEDBACK:
        raise DAError(f"Your feedback is too long (at most {MAX_FEEDBACK} characters).")
    if not text:
        raise DAError("Please write something before sending your feedback (or simply close the page).")
    saved = judgments.da_feedback(database, participant_id)
    if saved is not None and saved["text"] == text:  # a resend: read without the write lock
        return False
    with database.write() as db:
        changed = judgments.save_da_feedback(db, participant_id, text)  # checked again inside the write
        if changed:
            database.log(f"participant:{participant_id}", "feedback", "da_feedback", participant_id)
    return changed


def judgments_frame(database, study_id: str) -> pd.DataFrame:
    """The campaign's judgments in the analysis's input columns (services/da/analysis.py)."""
    rows = judgments.da_judgment_rows(database, study_id)
    return pd.DataFrame(
        rows,
        columns=[
            "worker_id",
            "hit_id",
            "modality",
            "system",
            "segment_id",
            "item_type",
            "score",
            "run",
            "duration_s",
            "tts_engine",
            "tts_voice",
        ],
    )
