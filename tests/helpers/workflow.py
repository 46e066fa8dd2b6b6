"""Driving the four-phase workflow in tests: senders record, the worker's outcome is stored as
the worker would store it (services/usability/pipeline.record_outcome: no model runs), and receivers,
validators and raters answer through the same calls the tabs make."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from harness.demo import DEMO_ASSETS
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.usability import dropouts, pipeline
from tests.helpers.audio import write_wav

# the bundled demo study itself (no imported exchanges): senders record every exchange
DEMO = DEMO_ASSETS


def study_folder(tmp_path: Path, seed: int | None = None, **usability) -> Path:
    """The demo study copied, with another seed or [usability] settings."""
    folder = tmp_path / f"study-{seed}-{len(usability)}"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    if seed is not None:
        toml = "\n".join(f"seed = {seed}" if line.startswith("seed = ") else line for line in toml.splitlines())
    for key, value in usability.items():
        if re.search(rf"^{key} = ", toml, flags=re.M):
            toml = re.sub(rf"^{key} = .*$", f"{key} = {value}", toml, count=1, flags=re.M)
        else:
            toml = toml.replace("[usability]\n", f"[usability]\n{key} = {value}\n", 1)
    (folder / "study.toml").write_text(toml + "\n")
    return folder


def stand_in_translation(text: str) -> str:
    """A plausible stand-in for a system's Portuguese: as many words as the reading (QC flags a
    translation far shorter than its transcript: recording_qc.translation_short)."""
    return " ".join(["Tradução", "de", "teste."] * (len(text.split()) // 3 + 1))


def record_all(db, sender, media: Path, wav: Path) -> list[int]:
    """The sender records every item; each recording passes QC and is translated. Returns the
    exchanges."""
    done = []
    while (v := get_view(db, sender.token, "record")).status == "item":
        res = submit(db, sender.token, "record", v.item_id, {"audio": str(wav)}, media_dir=media)
        rec = res.stored
        starter = db.one(
            "SELECT s.text FROM exchanges e JOIN starters s ON s.study_id = e.study_id "
            "AND s.id = e.starter_id WHERE e.id = ?",
            [rec["exchange_id"]],
        )["text"]
        assert pipeline.record_outcome(db, rec["id"], stand_in_translation(starter), starter) == "passed"
        done.append(rec["exchange_id"])
    return done


def answer_receiver(db, token) -> dict | None:
    v = get_view(db, token, "receiver")
    if v.status != "item":
        return None
    submit(
        db,
        token,
        "receiver",
        v.item_id,
        {"answers": [{"idx": q["idx"], "text": "resposta", "unanswerable": False} for q in v.content["questions"]]},
    )
    return {"item": v.item_id}


def answer_validator(db, token, score=70) -> dict | None:
    v = get_view(db, token, "validator")
    if v.status != "item":
        return None
    submit(db, token, "validator", v.item_id, {"score": score, "marks": {a["idx"]: True for a in v.content["answers"]}})
    return {"item": v.item_id}


def answer_survey(db, token, value=4) -> dict | None:
    v = get_view(db, token, "survey")
    if v.status != "item":
        return None
    submit(db, token, "survey", v.item_id, {"satisfaction": value, "trust": value, "reliance": value})
    return {"item": v.item_id, "phase": v.phase, "perspective": v.content["perspective"]}


def rate_imported_exchanges(db, rater, receiver, validator, mark=lambda idx: "correct") -> list[int]:
    """The demo's imported exchanges through one rater's baseline surveys, a receiver's answers,
    a validator's marks (mark(question number)) and the rater's informed surveys: the ids of the
    exchanges whose informed survey was answered, in order."""
    while (b := get_view(db, rater.token, "survey")).status == "item" and b.item_id.startswith("survey_baseline"):
        submit(db, rater.token, "survey", b.item_id, {"satisfaction": 4, "trust": 4, "reliance": 5})
    while (v := get_view(db, receiver.token, "receiver")).status == "item":
        submit(
            db,
            receiver.token,
            "receiver",
            v.item_id,
            {"answers": [{"idx": q["idx"], "text": "x"} for q in v.content["questions"]]},
        )
    while (val := get_view(db, validator.token, "validator")).status == "item":
        submit(
            db,
            validator.token,
            "validator",
            val.item_id,
            {"score": 55, "marks": {q["idx"]: mark(q["idx"]) for q in val.content["questions"]}},
        )
    informed = []
    while (s := get_view(db, rater.token, "survey")).status == "item":
        assert s.item_id.startswith("survey_informed")
        informed.append(int(s.item_id.split(":")[1]))
        submit(db, rater.token, "survey", s.item_id, {"satisfaction": 2, "trust": 3, "reliance": 2})
    return informed


def until_none(fn, *args, limit=500, **kw) -> list:
    out = []
    for _ in range(limit):
        r = fn(*args, **kw)
        if r is None:
            return out
        out.append(r)
    raise AssertionError("no end")


def wav(tmp_path: Path) -> Path:
    return write_wav(tmp_path / "reading.wav", seconds=4.0)


TABS = {"sender": "survey", "rater": "survey", "receiver": "receiver", "validator": "validator"}


def answer_everything(db, people):
    """Every open survey, receiver and validator item, until none is left; answers and scores
    vary with the item (a model needs some variance)."""
    moved = True
    while moved:
        moved = False
        for p in people:
            tab = TABS[p.role]
            v = get_view(db, p.token, tab)
            while v.status == "item":
                k = int(str(v.item_id).split(":")[-1])
                if tab == "survey":
                    payload = {"satisfaction": 1 + k % 5, "trust": 1 + 2 * k % 5, "reliance": 1 + 3 * k % 4}
                elif tab == "receiver":
                    payload = {"answers": [{"idx": q["idx"], "text": "x"} for q in v.content["questions"]]}
                else:
                    payload = {
                        "score": 20 + 7 * k % 80,
                        "marks": {q["idx"]: (q["idx"] + k) % 3 > 0 for q in v.content["questions"]},
                    }
                v = submit(db, p.token, tab, v.item_id, payload).next
                moved = True


def mixed_study(db, tmp_path):
    """The demo study (with its 12 imported exchanges: no sender) and four senders who record
    their starters: USB Man and USW Woman answer their own surveys (first person); USB Woman
    and USW Man drop out first, so raters answer their exchanges' surveys (third person, the
    paper's case); raters without group or gender also answer the imported exchanges'
    surveys (third person, no speaker). Six receivers and validators; every item answered."""
    audio = wav(tmp_path)
    cells = (("USB", "Man"), ("USW", "Woman"), ("USB", "Woman"), ("USW", "Man"))
    senders = [add_participants(db, "demo", "sender", 1, g, s)[0] for g, s in cells]
    for s in senders:
        record_all(db, s, tmp_path / "media", audio)
    for s in senders[2:]:
        dropouts.drop_out(db, s.id, "test", "did not come back")
    people = senders[:2] + [
        p for role in ("rater", "receiver", "validator") for p in add_participants(db, "demo", role, 6)
    ]
    answer_everything(db, people)
    return db, senders
