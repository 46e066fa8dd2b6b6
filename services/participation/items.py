"""What a participant sees: their tabs, their next open item and their progress.

get_view() is what every tab calls on load and after each submit; it only ever builds
the fields the participant's role may see (the receiver's view has no source text). What it
says (progress, waiting and finishing messages, refusals) is in the page's language
(services/study/texts.py: the receiver's page is in European Portuguese)."""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import dataclass, field

from services.common import protocols
from services.participation import rate_limit
from services.participation.progress import participant_counts
from services.participation.serial import one_at_a_time
from services.study import consent
from services.study.texts import Voice, page_language, refusal, reword
from storage import assignments, participants, studies
from storage.db import Transaction, required
from storage.rows import AssignmentRow, LinkParticipant, ParticipantRow, StudyRow


def _pool(participant: ParticipantRow, tab: str) -> protocols.Pool | None:
    """The pool the participant's role takes this tab's items from, one at a time (None: the
    tab's items are all in their queue)."""
    pool = protocols.role(participant["role"]).pool
    return pool if pool is not None and pool.tab == tab else None


class AccessError(PermissionError):
    """The caller may not see or answer this; the message says why, without leaking."""


class TooManyRequests(AccessError):
    """More views and submits for one link than services/participation/rate_limit.py allows."""


def next_open(database, participant_id: int, phases: tuple[str, ...]) -> AssignmentRow | None:
    """The participant's next open item of the phases, those of a served_last phase last."""
    return assignments.next_open(database, participant_id, phases, protocols.served_last(phases))


def limit_requests(participant: ParticipantRow) -> None:
    """The per-link request limit of views and submits (services/participation/rate_limit.py, in
    memory), keyed by the participant found: a made-up token is refused by its lookup and leaves
    nothing behind (a bucket per token string kept 75 MB for 40 forged 2 MB tokens)."""
    if not rate_limit.allow(str(participant["id"])):
        raise refusal(TooManyRequests, "too_many_requests")


@dataclass
class ItemView:
    tab: str
    status: str  # "item" | "waiting" | "complete" | consent.pending_stage()
    message: str = ""
    done: int = 0
    total: int = 0
    phase: str | None = None
    item_id: str | None = None
    content: dict = field(default_factory=dict)
    completion_code: str = ""
    redirect_url: str = ""
    ready: int | None = None  # items ready for the participant now (the one shown included)
    lang: str = "en"
    # the page's words around the item, in its language: progress, ready, completion_code, redirect
    labels: dict = field(default_factory=dict)

    @property
    def progress(self) -> str:
        return f"{self.done} / {self.total}"


def participant_for_token(database, token: str | None) -> LinkParticipant:
    p = participants.by_token(database, token) if token else None
    if not p:
        raise refusal(AccessError, "invalid_link")
    if not p["active"]:  # the study's contact, where it gives one (a lookup on this path only)
        study = studies.get_study(database, p["study_id"])
        raise refusal(AccessError, "deactivated", contact=Voice(study=study).contact)
    if p.get("study_archived_at"):  # the team archived the study (services/study/lifecycle.archive)
        raise refusal(AccessError, "study_closed")
    return p


def ready_participant(database, token: str | None) -> LinkParticipant:
    """The token's participant once consent and the demographics form are done (for side
    endpoints such as DA feedback; get_view and submit check the same stage themselves)."""
    p = participant_for_token(database, token)
    stage = consent.pending_stage(database, p)
    if stage:
        raise refusal(AccessError, stage)
    return p


def tabs_for(participant: ParticipantRow) -> tuple[str, ...]:
    return protocols.role(participant["role"]).tabs


def bold_key_spans(text: str, spans: list[str]) -> str:
    """HTML of the starter with its key information in bold (text escaped)."""
    marks = [False] * len(text)
    for s in spans:
        start = text.find(s)
        while start != -1:
            for i in range(start, start + len(s)):
                marks[i] = True
            start = text.find(s, start + len(s))
    out, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and marks[j] == marks[i]:
            j += 1
        chunk = html.escape(text[i:j])
        out.append(f"<strong>{chunk}</strong>" if marks[i] else chunk)
        i = j
    return "".join(out)


def _total(database, participant: ParticipantRow, study: StudyRow, tab: str, counts: dict[str, int]) -> int:
    total = protocols.tab(tab).total
    return total(database, participant, study, counts) if total else counts["done"] + counts["open"]


@one_at_a_time
def get_view(
    database,
    token: str | None,
    tab: str,
    touch: bool = True,
    media_dir=None,
    limited: bool = True,
    lang: str | None = None,
) -> ItemView:
    """limited=False: the view a submit returns (the submit was counted against the limit).
    lang: the language of what it says (default: the tab's page language)."""
    voice = Voice(lang or page_language(tab))
    try:
        return _view(database, token, tab, touch, media_dir, limited, voice)
    except AccessError as e:
        raise reword(e, voice)


def _labels(voice: Voice, ready: int | None = None) -> dict:
    out = {k: voice(k) for k in ("progress", "completion_code", "redirect", "copy", "copied", "copy_failed")}
    if ready is not None:
        out["ready"] = voice.ready(ready)
    return out


class _Writes:
    """What a view writes besides taking an item (the last-seen, first-shown and completion
    times): gathered and written in one transaction when the view is done, or inside the pool
    take's when it takes one, so that a first view writes once, not three times."""

    def __init__(self, database):
        self.database, self.todo = database, []

    def add(self, fn) -> None:
        self.todo.append(fn)

    def run_in(self, db) -> None:
        for fn in self.todo:
            fn(db)
        self.todo.clear()

    def flush(self) -> None:
        if self.todo:
            with self.database.write() as db:
                self.run_in(db)


def _view(database, token: str | None, tab: str, touch: bool, media_dir, limited: bool, voice: Voice) -> ItemView:
    writes = _Writes(database)
    try:
        return _build_view(database, token, tab, touch, media_dir, limited, voice, writes)
    finally:
        writes.flush()


def _build_view(
    database, token: str | None, tab: str, touch: bool, media_dir, limited: bool, voice: Voice, writes: _Writes
) -> ItemView:
    p = participant_for_token(database, token)
    if limited:
        limit_requests(p)
    if tab not in tabs_for(p):
        raise refusal(AccessError, "not_your_role")
    study = required(studies.get_study(database, p["study_id"]), "study of a participant")
    voice.study = study
    lang = voice.lang
    cfg = study["config"]["study"]
    if touch and _stale(p["last_seen_at"]):
        writes.add(lambda db: participants.touch(db, p["id"]))
    phases = protocols.tab(tab).phases
    stage = consent.pending_stage(database, p, study)
    if stage:  # no item (nor anything of one) before consent and the demographics form
        counts = participant_counts(database, p["id"], tab)
        return ItemView(
            tab,
            stage,
            voice(stage),
            counts["done"],
            _total(database, p, study, tab, counts),
            content=consent.page(study, p["role"], stage),
            lang=lang,
            labels=_labels(voice),
        )
    a = next_open(database, p["id"], phases)
    shown = False
    pool = _pool(p, tab)
    if a is None and touch and pool is not None and pool.may_take(database, p, study):
        # taking one item from the pool (never a DA item: its content may not be ready), shown now
        with database.transaction() as tx:
            a = take_and_show(tx, p, study, tab)
            shown = a is not None
            writes.run_in(tx.db)
    counts = participant_counts(database, p["id"], tab)
    total = _total(database, p, study, tab, counts)
    if a is None:
        if total == 0 and pool is None and protocols.tab(tab).total is None:
            # the role gave them no item at all (a study whose places are all taken): not
            # "finished", no completion code, not in the admin's Finished list
            return ItemView(tab, "complete", voice("no_items", contact=voice.contact), lang=lang, labels=_labels(voice))
        if counts["done"] >= total:
            if not _finished_elsewhere(database, p, study, tab):
                # "your other tab" read as another browser tab: the page's tab is named
                other = next((protocols.tab(t).label or t for t in tabs_for(p) if t != tab), "")
                return ItemView(
                    tab,
                    "complete",
                    voice("finished_tab", tab=other),
                    counts["done"],
                    total,
                    lang=lang,
                    labels=_labels(voice),
                )
            if touch and not p["completed_at"]:  # the completion-code list's time (admin)
                writes.add(lambda db: participants.mark_completed(db, p["id"]))
            return ItemView(
                tab,
                "complete",
                voice("finished"),
                counts["done"],
                total,
                completion_code=cfg["completion_code"],
                redirect_url=cfg["redirect_url"],
                lang=lang,
                labels=_labels(voice),
            )
        return ItemView(
            tab,
            "waiting",
            _waiting_message(database, p, tab, voice),
            counts["done"],
            total,
            lang=lang,
            labels=_labels(voice),
        )
    phase = protocols.phase(a["phase"])
    content = phase.content(database, study, p, a, media_dir)
    if content is None:  # not ready yet (a DA item's audio being rendered)
        return ItemView(
            tab,
            "waiting",
            phase.not_ready,
            counts["done"],
            total,
            lang=lang,
            labels=_labels(voice),
        )
    if touch and not a["first_shown_at"] and not shown:
        writes.add(lambda db: assignments.mark_shown(db, a["id"]))
    ready = None
    if pool is not None:  # items come one at a time: say how many are ready now
        more = pool.ready(database, p, study)
        ready = None if more is None else counts["open"] + more
    return ItemView(
        tab,
        "item",
        "",
        counts["done"],
        total,
        a["phase"],
        item_key(tab, a),
        content,
        ready=ready,
        lang=lang,
        labels=_labels(voice, ready),
    )


def take_and_show(tx: Transaction, participant: ParticipantRow, study: StudyRow, tab: str) -> AssignmentRow | None:
    """Inside a write: the participant's next open item of the tab, or one taken from the pool
    (the role's Pool.take checks their room and the pool), marked shown from now."""
    a = next_open(tx.database, participant["id"], protocols.tab(tab).phases)
    pool = _pool(participant, tab)
    if a is None and pool is not None:
        a = pool.take(tx, participant, study)
    if a is not None and not a["first_shown_at"]:
        assignments.mark_shown(tx.db, a["id"])
    return a


def ready_next(tx: Transaction, participant: ParticipantRow, study: StudyRow, tab: str) -> None:
    """Inside a submit's write: what the view that follows it would write (the next item taken
    from the pool, that item's first-shown time, the participant's last-seen time), so that
    the view writes nothing and a submit takes the write lock once, not twice."""
    take_and_show(tx, participant, study, tab)
    if _stale(participant["last_seen_at"]):
        participants.touch(tx.db, participant["id"])


TOUCH_EVERY_S = 60  # last_seen_at's resolution: a view within a minute of the last writes nothing


def _stale(last_seen: str | None) -> bool:
    if not last_seen:
        return True
    seen = dt.datetime.fromisoformat(last_seen)
    return (dt.datetime.now(dt.timezone.utc) - seen).total_seconds() >= TOUCH_EVERY_S


def _waiting_message(database, participant: ParticipantRow, tab: str, voice: Voice | None = None) -> str:
    """Why the tab waits: the tab's own words when the reason is the participant's to know."""
    waiting = protocols.tab(tab).waiting
    said = waiting(database, participant, voice) if waiting else None
    return said if said is not None else (voice or Voice())("waiting")


def _finished_elsewhere(database, participant: ParticipantRow, study: StudyRow, tab: str) -> bool:
    """The completion code (and Prolific redirect) come only when every tab of the role is done."""
    for other in tabs_for(participant):
        if other == tab:
            continue
        phases = protocols.tab(other).phases
        counts = participant_counts(database, participant["id"], other)
        if next_open(database, participant["id"], phases) is not None or counts["done"] < _total(
            database, participant, study, other, counts
        ):
            return False
    return True


def item_key(tab: str, assignment: AssignmentRow) -> str:
    """The id a tab submits: on a tab with several phases (the survey's baseline and
    informed stages of one exchange) the phase is part of it."""
    return (
        assignment["item_id"]
        if len(protocols.tab(tab).phases) == 1
        else f"{assignment['phase']}:{assignment['item_id']}"
    )


def parse_item_key(tab: str, key) -> list[tuple[str, str]]:
    """(phase, item_id) candidates for a submitted key."""
    key = str(key or "")
    phases = protocols.tab(tab).phases
    if len(phases) == 1:
        return [(phases[0], key)]
    phase, _, item = key.partition(":")
    return [(phase, item)] if phase in phases else []
