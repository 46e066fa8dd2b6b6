"""The usability study's demo people, with a sender who dropped out, so that one person can play
every role to the end (the usability spec's demo hook, services/setup/demo.py).

A rater's work comes only from senders who drop out (paper 000, A.1: third-person raters): the
demo's sender who stays would leave the rater nothing to do. This sender, of another design
cell (so that none of their starters moves to the demo sender), records the rater's share of
starters read by the project's TTS, through the same intake as a browser's recording, then drops
out (services/usability/dropouts.py): the worker translates the recordings, a receiver and a
validator get them beside the demo sender's, and the rater answers their surveys.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from services.models import tts
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.usability.dropouts import drop_out
from storage import assignments, studies
from storage.db import required
from storage.usability import corpus as usability_corpus
from storage.usability import exchanges

STAYS = ("USW", "Woman")  # the demo sender's cell
GROUP, GENDER = "USB", "Man"  # the dropped-out sender's: not the demo sender's cell
LEAD_S = 0.5  # silence before the reading, as after pressing record
REASON = "demo: stopped after their first recordings (their surveys go to the rater)"


def _reading(text: str, media_dir: Path) -> Path:
    """The text read aloud: the study's TTS for English (Piper, or Google with credentials),
    espeak-ng where that cannot run (no Piper voice offline)."""
    # lazy import (soundfile): only a new demo database reads its starter aloud
    import soundfile as sf

    try:
        wav = tts.speak(text, "en", media_dir)
    except Exception:  # a missing voice or backend, whichever: the one on the machine will do
        wav = tts.speak(text, "en", media_dir, backend=tts.EspeakTTS(voice="en-us"))
    x, rate = sf.read(io.BytesIO(Path(wav).read_bytes()), dtype="float32", always_2d=False)
    out = Path(media_dir) / "tts" / f"demo-dropout-{Path(wav).stem}.wav"
    sf.write(str(out), np.concatenate([np.zeros(int(LEAD_S * rate), np.float32), x]), rate, subtype="PCM_16")
    return out


def add_people(database, study_id: str, media_dir: Path) -> str:
    """The usability study's people in the demo (its spec's demo hook): one participant per
    role, and the rater's work, a sender who dropped out after one recording; what that sender
    did, as the start prints it."""
    stays = add_participants(database, study_id, "sender", 1, *STAYS, actor="demo")[0]
    for role in ("receiver", "validator", "rater"):
        add_participants(database, study_id, role, 1, actor="demo")
    return add_dropped_out_sender(database, study_id, media_dir, stays.id)


def add_dropped_out_sender(database, study_id: str, media_dir: Path, stays: int) -> str:
    """The sender who drops out after recording `usability.items_per_rater` starters (the rater's
    share) that the sender who stays (id `stays`) does not have: a receiver answers each starter
    once. Returns what was done, in words."""
    study = required(studies.get_study(database, study_id), "demo study")
    n = study["config"].get("usability", {}).get("items_per_rater")
    if not n:  # a study of the paper's shares (a rater replaces a whole sender): nobody is added
        return "no dropped-out sender: the demo study sets no usability.items_per_rater"
    # the design block after the demo sender's: other starters (every cell's block 0 has the same ones)
    p = add_participants(database, study_id, "sender", 1, GROUP, GENDER, actor="demo", design_index=1)[0]
    taken = exchanges.sender_starters(database, stays)
    mine = [a for a in assignments.open_assignments(database, p.id) if a["phase"] == "record"]
    picks = [
        a
        for a in mine
        if required(exchanges.exchange(database, a["exchange_id"]), "exchange")["starter_id"] not in taken
    ][:n]
    made = []
    try:
        for a in picks:
            exchange = required(exchanges.exchange(database, a["exchange_id"]), "exchange of an assignment")
            starter = required(
                usability_corpus.starter(database, study_id, exchange["starter_id"]), "starter of an exchange"
            )
            wav = _reading(re.sub(r"\s+", " ", starter["text"]), Path(media_dir))
            with database.write() as db:  # this starter next (the ones left are withdrawn below)
                assignments.put_first(db, a["id"])
            view = get_view(database, p.token, "record", media_dir=media_dir)  # the page, as a sender opens it
            submit(database, p.token, "record", view.item_id, {"audio": str(wav)}, media_dir=media_dir, actor="demo")
            made.append(starter["id"])
    except Exception as e:  # no TTS at all: the demo runs with less (or nothing) for the rater
        drop_out(database, p.id, "demo", REASON)
        return f"the dropped-out sender could not record ({type(e).__name__}: {e}); recorded: {made or 'none'}"
    drop_out(database, p.id, "demo", REASON)
    return (
        f"sender {p.id} recorded {', '.join(made)} and dropped out: the rater answers their surveys, "
        "once a receiver and the validator have done their part"
    )
