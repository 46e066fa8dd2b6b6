"""Saving answers: validated on the server, saved at once, idempotently.

submit() refuses items outside the caller's queue, returns the saved state when the item
was already submitted (a double click or a reconnect writes nothing twice), and otherwise
validates the payload for the item's phase and stores it with the assignment's timing in
one transaction, with the downstream work it opens for that exchange (services/participation/workflow.py).
What it says back (the notice, a refusal) is in the page's language (services/study/texts.py)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from services.da import campaign as da_campaign
from services.participation import workflow
from services.participation.items import (
    INSTRUCTION_ITEMS,
    TAB_PHASES,
    WORKFLOW_TABS,
    AccessError,
    ItemView,
    get_view,
    limit_requests,
    parse_item_key,
    participant_for_token,
    ready_next,
    tabs_for,
)
from services.participation.serial import ACTIONS
from services.study import consent
from services.study.texts import Voice, page_language, refusal, refusals, reword
from services.usability.audio_intake import IntakeError, store_recording
from storage import assignments, jobs, participants, results, studies
from storage.db import now, required

MAX_TEXT = 2000  # characters in one free-text answer
IDLE_CLAMP_S = 600.0  # time on an item beyond this counts as idle


class SubmissionError(ValueError):
    """The answer cannot be saved as it is; the message names what to fix. `fields`: the form
    fields it refuses, each with what is wrong with it (the page marks each in place), e.g.
    {"answer-3": ..., "mark-2": ..., "score": ...}: the field names of the item forms."""

    fields: dict = {}


def _refuse_all(parts: list, fields: dict) -> None:
    """Every problem of a form at once (so one retry can fix them all): parts are the message's sentences, fields
    {form field: its problem}; each an exception (a refusal() with its key, reworded for the
    page) or words. Nothing is raised when there is no problem."""
    if parts:
        raise refusals(
            SubmissionError,
            [p if isinstance(p, Exception) else SubmissionError(p) for p in parts],
            {f: p if isinstance(p, Exception) else SubmissionError(p) for f, p in fields.items()},
        )


@dataclass
class SubmitResult:
    saved: bool  # False when the item had been saved before (nothing written)
    message: str
    stored: dict = field(default_factory=dict)
    next: ItemView | None = None


def _number(value, name, lo, hi, untouched_msg):
    if value is None or (isinstance(value, str) and not value.strip()):
        raise untouched_msg if isinstance(untouched_msg, SubmissionError) else SubmissionError(untouched_msg)
    if isinstance(value, bool):  # JSON true is not a score of 1
        raise SubmissionError(f"{name} must be a number.")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise SubmissionError(f"{name} must be a number.")
    if not math.isfinite(x) or not lo <= x <= hi:
        raise SubmissionError(f"{name} must be between {lo:g} and {hi:g}.")
    return x


def _likert(value, name):
    x = _number(value, name, 1, 5, f"Please answer the statement about {name}.")
    if x != int(x):
        raise SubmissionError(f"{name} must be one of 1, 2, 3, 4, 5.")
    return int(x)


def _checked_value(check, *args):
    """(value, None) or (None, the refusal) of one field's check."""
    try:
        return check(*args), None
    except SubmissionError as e:
        return None, e


def _idx_map(items, key="idx") -> dict:
    out = {}
    for it in items or []:
        try:
            out[int(it[key])] = it
        except (KeyError, TypeError, ValueError):
            raise refusal(SubmissionError, "answer_without_number")
    return out


def _validate_receive(database, a, payload) -> dict:
    ex = required(assignments.exchange(database, a["exchange_id"]), "exchange of an assignment")
    qs = studies.questions(database, ex["study_id"], ex["starter_id"])
    given = _idx_map(payload.get("answers"))
    unknown = set(given) - {q["idx"] for q in qs}
    if unknown:
        raise refusal(SubmissionError, "no_such_question", idx=min(unknown))
    clean, missing, parts = [], [], []
    fields: dict[str, Exception] = {}
    for q in qs:
        i = q["idx"]
        g = given.get(i, {})
        text, flag = g.get("text"), g.get("unanswerable")
        if not isinstance(text, (str, type(None))):  # a form field is text: no list, no number
            parts.append(fields.setdefault(f"answer-{i}", refusal(SubmissionError, "answer_not_text", idx=i)))
            continue
        text = (text or "").strip()
        if flag not in (None, False, True):  # a checkbox sends a boolean: "false" must not count as ticked
            parts.append(fields.setdefault(f"flag-{i}", refusal(SubmissionError, "flag_not_boolean", idx=i)))
            continue
        flag = bool(flag)
        if len(text) > MAX_TEXT:
            parts.append(
                fields.setdefault(f"answer-{i}", refusal(SubmissionError, "answer_too_long", idx=i, limit=MAX_TEXT))
            )
        elif not text and not flag:
            missing.append(i)
            fields[f"answer-{i}"] = refusal(SubmissionError, "answer_missing_here")
        clean.append({"idx": i, "text": text, "unanswerable": flag})
    if missing:  # one sentence for every unanswered question, first
        parts.insert(0, refusal(SubmissionError, "answers_missing", missing=", ".join(map(str, missing))))
    _refuse_all(parts, fields)
    return {"answers": clean}


def _validate_validate(database, a, payload) -> dict:
    parts, fields = [], {}
    score, problem = _checked_value(
        _number, payload.get("score"), "The translation score", 0, 100, refusal(SubmissionError, "score_missing")
    )
    if problem:
        parts.append(problem)
        fields["score"] = problem
    receive = required(assignments.assignment(database, int(a["item_id"])), "receive item of a validation")
    idxs = [x["idx"] for x in results.answers(database, receive["id"])]
    marks_in = payload.get("marks") or {}
    if not isinstance(marks_in, dict):
        raise SubmissionError("The marks must be given per answer number.")
    extra = {int(k) for k in marks_in} - set(idxs) if all(str(k).isdigit() for k in marks_in) else {"?"}
    if extra:
        raise SubmissionError("Marks were sent for answers that do not exist.")
    marks, missing = {}, []
    for i in idxs:
        m = marks_in.get(i, marks_in.get(str(i)))
        if m is None:
            missing.append(i)
            fields[f"mark-{i}"] = "Mark this answer correct or incorrect."
        elif isinstance(m, bool) or m in (0, 1):
            marks[i] = bool(m)
        elif isinstance(m, str) and m.lower() in ("correct", "incorrect"):
            marks[i] = m.lower() == "correct"
        else:
            parts.append(fields.setdefault(f"mark-{i}", f"The mark of answer {i} must be correct or incorrect."))
    if missing:
        parts.append(f"Please mark every answer as correct or incorrect (missing: {', '.join(map(str, missing))}).")
    _refuse_all(parts, fields)
    qa = sum(marks.values()) / len(marks) if marks else 0.0
    return {"score": score, "marks": marks, "qa_score": qa, "receive_assignment_id": receive["id"]}


SURVEY_DIMENSIONS = ("satisfaction", "trust", "reliance")


def _validate_survey(database, a, payload) -> dict:
    out, missing, parts, fields = {}, [], [], {}
    for k in SURVEY_DIMENSIONS:
        value = payload.get(k)
        if value is None or (isinstance(value, str) and not value.strip()):
            missing.append(k)
            fields[k] = "Choose one of the five points."
            continue
        out[k], problem = _checked_value(_likert, value, k)
        if problem:
            parts.append(fields.setdefault(k, problem))
    if missing:
        parts.insert(0, f"Please answer every statement (missing: {', '.join(missing)}).")
    _refuse_all(parts, fields)
    return out


def _validate_da(database, a, payload) -> dict:
    score, problem = _checked_value(
        _number, payload.get("score"), "The score", 0, 100, refusal(SubmissionError, "score_missing")
    )
    _refuse_all([problem] if problem else [], {"score": problem} if problem else {})
    return {"score": score}


SD_FIELD = "pair:"  # the form field of a scale: "pair:<slot>" (tabs/sd.py)


def _validate_sd(database, a, payload) -> dict:
    layout = a["meta"]["pairs"]
    suitability = a["meta"].get("kind") == "suitability"
    top = 5 if suitability else 7
    given = payload.get("values") or {}
    if set(given) - {e.get("slot", e["pair_id"]) for e in layout}:
        raise SubmissionError("Values were sent for adjective pairs that are not on this page.")
    out, missing, parts, fields = [], [], [], {}
    for n, entry in enumerate(layout, start=1):
        slot = entry.get("slot", entry["pair_id"])
        v = given.get(slot)
        if v is None or v == "":
            missing.append(n)
            fields[SD_FIELD + str(slot)] = f"Choose a point on this scale (scale {n})."
            continue
        try:
            pos = int(v)
        except (TypeError, ValueError):
            pos = None
        if pos is None or not 1 <= pos <= top or str(v).strip() not in {str(pos)}:
            parts.append(fields.setdefault(SD_FIELD + str(slot), f"Scale {n} must be a point from 1 to {top}."))
            continue
        if suitability:
            out.append({"pair_id": entry["pair_id"], "suitability": pos})
            continue
        # position 1 is nearest the left adjective; canonical +3 is the positive adjective
        value = (4 - pos) if entry["positive_left"] else (pos - 4)
        out.append(
            {
                "pair_id": entry["pair_id"],
                "value": value,
                "positive_left": entry["positive_left"],
                "is_repeat": bool(entry.get("repeat")),
            }
        )
    if missing:
        parts.insert(0, f"Please answer every scale (missing: {', '.join(map(str, missing))}).")
    suggestion = str(payload.get("suggestion") or "").strip()
    if len(suggestion) > MAX_TEXT:
        parts.append(fields.setdefault("suggestion", f"Your suggestions are too long (at most {MAX_TEXT} characters)."))
    _refuse_all(parts, fields)
    return {"suitability": out, "suggestion": suggestion} if suitability else {"ratings": out}


def _stored(database, a) -> dict:
    phase = a["phase"]
    if phase == "record":
        return results.recording_for_assignment(database, a["id"]) or {}
    if phase == "receive":
        return {"answers": results.answers(database, a["id"])}
    if phase == "validate":
        return results.validation(database, a["id"]) or {}
    if phase.startswith("survey"):
        return results.survey(database, a["id"]) or {}
    if phase == "da":
        return results.da_judgment(database, a["id"]) or {}
    return {"ratings": results.sd_ratings(database, a["id"])}


def _active_seconds(a) -> float | None:
    if not a["first_shown_at"]:
        return None
    shown = dt.datetime.fromisoformat(a["first_shown_at"])
    elapsed = (dt.datetime.now(dt.timezone.utc) - shown).total_seconds()
    return round(min(max(elapsed, 0.0), IDLE_CLAMP_S), 3)


def _out_of_order(tab: str) -> SubmissionError:
    return refusal(SubmissionError, "out_of_order_da" if tab == "da" else "out_of_order")


def _already_saved(database, a: dict, token, tab: str, media_dir, voice: Voice) -> SubmitResult:
    """A double click or a reconnect: nothing is written, the saved state comes back."""
    words = "" if a["item_id"] in INSTRUCTION_ITEMS.get(tab, ()) else voice("already_saved")
    return SubmitResult(
        False,
        words,
        _stored(database, a),
        get_view(database, token, tab, media_dir=media_dir, limited=False, lang=voice.lang),
    )


def _refuse_in_write(database, p: dict, a: dict, fresh: dict | None, tab: str) -> None:
    """Inside the write: the participant is still active, the item (`fresh`, as read in the
    write) still open, not withdrawn meanwhile, and the caller's next open item of the tab;
    else nothing is written."""
    now_p = participants.get(database, p["id"])
    if not now_p or not now_p["active"]:
        raise refusal(AccessError, "deactivated")
    if fresh is None or fresh["status"] == "withdrawn":
        raise refusal(SubmissionError, "withdrawn")
    nxt = assignments.next_open(database, p["id"], TAB_PHASES[tab])
    if nxt is None or nxt["id"] != a["id"]:
        raise _out_of_order(tab)


def submit(
    database,
    token: str | None,
    tab: str,
    item_id,
    payload: dict,
    media_dir=None,
    actor: str | None = None,
    lang: str | None = None,
) -> SubmitResult:
    """lang: the language of the notice and of a refusal (default: the tab's page language).
    The checks and the save run in the line of participant actions (services/participation/
    serial.py); a recording is decoded between the two, outside it, so that a long recording
    never holds up anyone else's click (the save checks the item again inside its write)."""
    voice = Voice(lang or page_language(tab))
    try:
        with ACTIONS:
            found = _checked(database, token, tab, item_id, media_dir, voice)
        if isinstance(found, SubmitResult):
            return found
        p, study, a = found
        payload = payload or {}
        data = None
        if a["phase"] == "record":
            try:
                ex = required(assignments.exchange(database, a["exchange_id"]), "exchange of an assignment")
                starter = required(studies.starter(database, study["id"], ex["starter_id"]), "starter of an exchange")
                data = {
                    "audio": store_recording(
                        payload.get("audio") or "",
                        media_dir,
                        study["config"]["usability"]["max_recording_seconds"],
                        starter["text"],
                    )
                }
            except IntakeError as e:
                raise SubmissionError(str(e)) from e
        with ACTIONS:
            return _save(database, token, tab, p, study, a, payload, data, media_dir, actor, voice)
    except (AccessError, SubmissionError) as e:
        raise reword(e, voice)


def _checked(database, token, tab, item_id, media_dir, voice: Voice):
    """(participant, study, assignment) of a submit that may go ahead, or the saved state of one
    that was already saved; refusals raise."""
    p = participant_for_token(database, token)
    limit_requests(p)
    if tab not in tabs_for(p) or tab not in TAB_PHASES:
        raise refusal(AccessError, "not_your_role")
    study = required(studies.get_study(database, p["study_id"]), "study of a participant")
    voice.study = study
    stage = consent.pending_stage(database, p, study)
    if stage:
        raise refusal(AccessError, stage)
    a = None
    for phase, item in parse_item_key(tab, item_id):
        a = assignments.find_assignment(database, p["id"], phase, item)
    if a is None:
        raise refusal(AccessError, "not_in_queue")
    if a["status"] == "done":
        return _already_saved(database, a, token, tab, media_dir, voice)
    nxt = assignments.next_open(database, p["id"], TAB_PHASES[tab])
    if nxt is None or nxt["id"] != a["id"]:  # checked again inside the write
        # a concurrent double submit saved it
        if required(assignments.assignment(database, a["id"]), "assignment")["status"] == "done":
            return _already_saved(database, a, token, tab, media_dir, voice)
        raise _out_of_order(tab)
    return p, study, a


def _save(
    database,
    token,
    tab,
    p: dict,
    study: dict,
    a: dict,
    payload: dict,
    data: dict | None,
    media_dir,
    actor,
    voice: Voice,
) -> SubmitResult:
    """The answer's own checks and its write (data: the stored recording of a record item)."""
    phase = a["phase"]
    if phase != "record":
        if phase == "da":
            try:
                da_campaign.check_judgment(database, study, a, media_dir)
            except da_campaign.DAError as e:
                raise SubmissionError(str(e)) from e
        data = {
            "receive": _validate_receive,
            "validate": _validate_validate,
            "survey_baseline": _validate_survey,
            "survey_informed": _validate_survey,
            "da": _validate_da,
            "sd": _validate_sd,
        }[phase](database, a, payload)
    assert data is not None, "a record item's data is the stored recording submit() passes"
    with database.write() as db:
        fresh = assignments.assignment(database, a["id"])
        if fresh is not None and fresh["status"] == "done":  # a concurrent double submit got here first
            return _already_saved(database, a, token, tab, media_dir, voice)
        _refuse_in_write(database, p, a, fresh, tab)
        if phase == "record":
            au = data["audio"]
            rid = results.insert_recording(
                db, a["id"], a["exchange_id"], au.sha256, au.path_original, au.path_16k, au.duration_s
            )
            jobs.enqueue(
                db,
                "process_recording",
                {"recording_id": rid, "exchange_id": a["exchange_id"]},
                dedupe_key=f"process_recording:{rid}",
            )
        elif phase == "receive":
            results.insert_answers(db, a["id"], a["exchange_id"], data["answers"])
        elif phase == "validate":
            results.insert_validation(
                db,
                a["id"],
                data["receive_assignment_id"],
                a["exchange_id"],
                data["score"],
                data["qa_score"],
                data["marks"],
            )
        elif phase.startswith("survey"):
            ex = required(assignments.exchange(database, a["exchange_id"]), "exchange of an assignment")
            perspective = "first" if ex["sender_id"] == p["id"] else "third"
            results.insert_survey(
                db,
                a["id"],
                a["exchange_id"],
                phase.split("_")[1],
                perspective,
                data["satisfaction"],
                data["trust"],
                data["reliance"],
            )
        elif phase == "da":
            it = required(studies.da_hit_item(database, int(a["item_id"])), "HIT item of a DA assignment")
            results.insert_da_judgment(db, a["id"], it["segment_row"], data["score"], it["id"], a["meta"]["modality"])
        elif "suitability" in data:
            results.insert_sd_suitability(db, a["id"], data["suitability"], data["suggestion"])
        else:
            results.insert_sd_ratings(db, a["id"], data["ratings"])
        assignments.mark_done(db, a["id"], _active_seconds(a))
        if phase == "da":  # the rater's last item: their HIT is judged, and rerun if it failed
            da_campaign.hit_completed(db, database, study, a)
        database.log(actor or f"participant:{p['id']}", "submit", phase, a["id"], {"item": a["item_id"], "at": now()})
        if tab in WORKFLOW_TABS:  # a DA or SD answer opens no downstream work
            workflow.after_submit(db, database, study, a)
            ready_next(db, database, p, study, tab)
    # an instruction page (the SD welcome and example) saves no answer, so it says no "Saved."
    words = "" if a["item_id"] in INSTRUCTION_ITEMS.get(tab, ()) else voice("saved")
    return SubmitResult(
        True,
        words,
        _stored(database, assignments.assignment(database, a["id"])),
        get_view(database, token, tab, media_dir=media_dir, limited=False, lang=voice.lang),
    )
