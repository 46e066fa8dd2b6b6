"""Saving answers: validated on the server, saved at once, idempotently.

submit() refuses items outside the caller's queue, returns the saved state when the item
was already submitted (a double click or a reconnect writes nothing twice), and otherwise
validates the payload for the item's phase and stores it with the assignment's timing in
one transaction, with the downstream work it opens (the tab's on_submit: services/common/protocols.py).
What it says back (the notice, a refusal) is in the page's language (services/study/texts.py)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from services.common import protocols
from services.participation.items import (
    AccessError,
    ItemView,
    get_view,
    limit_requests,
    next_open,
    parse_item_key,
    participant_for_token,
    ready_next,
    tabs_for,
)
from services.participation.serial import ACTIONS
from services.study import consent
from services.study.texts import Voice, page_language, refusal, refusals, reword
from storage import assignments, participants, studies
from storage.db import now, required
from storage.rows import AssignmentRow, LinkParticipant, ParticipantRow, StudyRow

MAX_TEXT = 2000  # characters in one free-text answer
IDLE_CLAMP_S = 600.0  # time on an item beyond this counts as idle


class SubmissionError(ValueError):
    """The answer cannot be saved as it is; the message names what to fix. `fields`: the form
    fields it refuses, each with what is wrong with it (the page marks each in place), e.g.
    {"answer-3": ..., "mark-2": ..., "score": ...}: the field names of the item forms."""

    fields: dict = {}


def refuse_all(parts: list, fields: dict) -> None:
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


def number_in(value, name, lo, hi, untouched_msg):
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


def checked_value(check, *args):
    """(value, None) or (None, the refusal) of one field's check."""
    try:
        return check(*args), None
    except SubmissionError as e:
        return None, e


def idx_map(items, key="idx") -> dict:
    out = {}
    for it in items or []:
        try:
            out[int(it[key])] = it
        except (KeyError, TypeError, ValueError):
            raise refusal(SubmissionError, "answer_without_number")
    return out


def _stored(database, assignment) -> dict:
    return protocols.phase(assignment["phase"]).stored(database, assignment)


def _active_seconds(assignment) -> float | None:
    if not assignment["first_shown_at"]:
        return None
    shown = dt.datetime.fromisoformat(assignment["first_shown_at"])
    elapsed = (dt.datetime.now(dt.timezone.utc) - shown).total_seconds()
    return round(min(max(elapsed, 0.0), IDLE_CLAMP_S), 3)


def _in_turn(nxt: AssignmentRow | None, assignment: AssignmentRow) -> bool:
    """Whether the item may be answered now: it is the participant's next open item, or one they
    have been shown already. An item that joins their queue while one is on their screen (a
    dropped-out sender's survey handed to a rater) may take a place before it; the one shown is
    still answered, and the newcomer comes next. One never shown stays refused (no skipping
    ahead by naming another item)."""
    return nxt is not None and (nxt["id"] == assignment["id"] or bool(assignment["first_shown_at"]))


def _out_of_order(tab: str) -> SubmissionError:
    return refusal(SubmissionError, protocols.tab(tab).refusal_out_of_order)


def _already_saved(database, assignment: AssignmentRow, token, tab: str, media_dir, voice: Voice) -> SubmitResult:
    """A double click or a reconnect: nothing is written, the saved state comes back."""
    words = "" if assignment["item_id"] in protocols.tab(tab).instruction_items else voice("already_saved")
    return SubmitResult(
        False,
        words,
        _stored(database, assignment),
        get_view(database, token, tab, media_dir=media_dir, limited=False, lang=voice.lang),
    )


def _refuse_in_write(
    database, participant: ParticipantRow, assignment: AssignmentRow, fresh: AssignmentRow | None, tab: str
) -> None:
    """Inside the write: the participant is still active, the item (`fresh`, as read in the
    write) still open, not withdrawn meanwhile, and the caller's next open item of the tab;
    else nothing is written."""
    now_p = participants.get(database, participant["id"])
    if not now_p or not now_p["active"]:
        study = studies.get_study(database, participant["study_id"])
        raise refusal(AccessError, "deactivated", contact=Voice(study=study).contact)
    if fresh is None or fresh["status"] == "withdrawn":
        raise refusal(SubmissionError, "withdrawn")
    nxt = next_open(database, participant["id"], protocols.tab(tab).phases)
    if not _in_turn(nxt, fresh):
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
        spec = protocols.phase(a["phase"])
        data = spec.intake(database, study, a, payload, media_dir) if spec.intake else None
        with ACTIONS:
            taken = False
            try:
                result = _save(database, token, tab, p, study, a, payload, data, media_dir, actor, voice)
                taken = result.saved
                return result
            finally:
                if data is not None and not taken and spec.discard is not None:
                    spec.discard(database, data)
    except (AccessError, SubmissionError) as e:
        raise reword(e, voice)


def _checked(
    database, token, tab: str, item_id, media_dir, voice: Voice
) -> SubmitResult | tuple[LinkParticipant, StudyRow, AssignmentRow]:
    """(participant, study, assignment) of a submit that may go ahead, or the saved state of one
    that was already saved; refusals raise."""
    p = participant_for_token(database, token)
    limit_requests(p)
    if tab not in tabs_for(p) or tab not in protocols.tabs():
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
    nxt = next_open(database, p["id"], protocols.tab(tab).phases)
    if not _in_turn(nxt, a):  # checked again inside the write
        # a concurrent double submit saved it
        if required(assignments.assignment(database, a["id"]), "assignment")["status"] == "done":
            return _already_saved(database, a, token, tab, media_dir, voice)
        raise _out_of_order(tab)
    return p, study, a


def _save(
    database,
    token,
    tab,
    participant: ParticipantRow,
    study: StudyRow,
    assignment: AssignmentRow,
    payload: dict,
    data: dict | None,
    media_dir,
    actor,
    voice: Voice,
) -> SubmitResult:
    """The answer's own checks and its write (data: what the phase's intake made, e.g. the
    stored recording of a record item)."""
    spec = protocols.phase(assignment["phase"])
    if spec.intake is None:
        if spec.check is not None:
            spec.check(database, study, assignment, media_dir)
        assert spec.validate is not None, f"phase {spec.name} has neither intake nor validate"
        data = spec.validate(database, assignment, payload)
    assert data is not None, "an intake phase's data is what submit() passes"
    with database.transaction() as tx:
        fresh = assignments.assignment(database, assignment["id"])
        if fresh is not None and fresh["status"] == "done":  # a concurrent double submit got here first
            return _already_saved(database, assignment, token, tab, media_dir, voice)
        _refuse_in_write(database, participant, assignment, fresh, tab)
        spec.save(tx, study, participant, assignment, data)
        assignments.mark_done(tx.db, assignment["id"], _active_seconds(assignment))
        if spec.after_save is not None:
            spec.after_save(tx, study, assignment)
        database.log(
            actor or f"participant:{participant['id']}",
            "submit",
            spec.name,
            assignment["id"],
            {"item": assignment["item_id"], "at": now()},
        )
        on_submit = protocols.tab(tab).on_submit
        if on_submit is not None:  # a DA or SD answer opens no downstream work
            on_submit(tx, study, assignment)
            ready_next(tx, participant, study, tab)
    # an instruction page (the SD welcome and example) saves no answer, so it says no "Saved."
    words = "" if assignment["item_id"] in protocols.tab(tab).instruction_items else voice("saved")
    return SubmitResult(
        True,
        words,
        _stored(database, assignments.assignment(database, assignment["id"])),
        get_view(database, token, tab, media_dir=media_dir, limited=False, lang=voice.lang),
    )
