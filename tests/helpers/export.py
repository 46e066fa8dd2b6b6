"""The demo study with a little of everything for the export tests, and an export of it."""

from __future__ import annotations

import json

from harness.demo import demo_with_exchanges
from services.admin.usability_review import decide
from services.da.campaign import save_feedback
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants, enrol
from services.study.export import export_study
from storage import participants as participant_store
from storage.usability import exchange_metrics, recordings
from tests.helpers.audio import write_wav

FORMULAS = ['=HYPERLINK("http://evil.example","x")', "+1+2", "-2+3", "@SUM(A1)"]  # answers are stripped

EXCLUSION_REASON = "\t=test exclusion"

S2_TRANSCRIPT = "zebra quokka transcript of the second sender"

S2_TRANSLATION = "zebra quokka traducao do segundo remetente"

REVIEWER = "admin@reviewer-host.example"

METADATA = [
    "file_name",
    "recording_id",
    "exchange_id",
    "sender",
    "sender_group",
    "sender_gender",
    "starter_id",
    "domain",
    "starter_source",
    "prompt",
    "duration_s",
    "qc_result",
    "review_decision",
    "qc_transcript",
    "wer",
    "system",
    "translation",
    "translation_transcript",
]


def export(study, fmt, name=None, **kw):
    out = study["tmp"] / (name or f"out-{fmt}-{len(list(study['tmp'].iterdir()))}")
    kw.setdefault("include_events", True)
    return export_study(study["db"], "demo", out, fmt, media_dir=study["media"], **kw)


def _record(db, person, wav, media, transcript, translation, qc_status, flags):
    v = get_view(db, person.token, "record", media_dir=media)
    res = submit(db, person.token, "record", v.item_id, {"audio": str(wav)}, media_dir=media)
    rid, ex_id = res.stored["id"], int(v.item_id)
    system = db.scalar("SELECT system_id FROM exchanges WHERE id = ?", [ex_id])
    with db.write() as w:  # what the worker would store, without running the models
        recordings.set_recording_qc(w, rid, qc_status, transcript, 0.4, flags)
        recordings.insert_translation(w, ex_id, system, translation, transcript, json.dumps({"models": {"mt": "test"}}))
        exchange_metrics.put_exchange_metric(w, ex_id, "chrf", "1", "sacrebleu", 42.5)
    return rid, ex_id


def exported_study(tmp) -> dict:
    """The demo study with a little of everything: two recordings (one flagged and accepted by a
    reviewer, one from a Prolific self-enrolment), answers with formula-like text, a validation,
    third-person surveys, a DA judgment with feedback, SD ratings, metrics, an exclusion; its
    human translations are both references and exchanges of a listed human system."""
    from services.setup.importer import import_study
    from services.usability import workflow
    from storage import open_database

    media = tmp / "media"
    db = open_database(tmp / "study.db")
    import_study(db, demo_with_exchanges(tmp / "demo_study", keep_references=True))
    people = {r: add_participants(db, "demo", r, 1)[0] for r in ("receiver", "validator", "rater", "da", "sd")}
    people["sender"] = add_participants(db, "demo", "sender", 1, "USB", "Man", external_ids=["EXT-SENDER-1"])[0]
    slot = add_participants(db, "demo", "sender", 1, "USW", "Woman", self_enrol=True)[0]
    enrol(db, "demo", "sender", "PROLIFICPID0123456789", "PSTUDY0123456789", "PSESSION0123456789", "USW", "Woman")
    people["sender2"] = slot
    excluded = add_participants(db, "demo", "receiver", 1, external_ids=["EXT-RECEIVER-2"])[0]
    with db.write() as w:
        participant_store.exclude(w, excluded.id, EXCLUSION_REASON)

    rid1, ex1 = _record(
        db,
        people["sender"],
        write_wav(tmp / "a.wav", seconds=4.0),
        media,
        "first sender transcript",
        "primeira traducao",
        "flagged",
        ["high_wer"],
    )
    decide(db, rid1, "accept", REVIEWER)
    rid2, ex2 = _record(
        db, slot, write_wav(tmp / "b.wav", seconds=4.5), media, S2_TRANSCRIPT, S2_TRANSLATION, "passed", []
    )
    workflow.refresh(db, "demo")

    rtok = people["receiver"].token
    v = get_view(db, rtok, "receiver", media_dir=media)
    answers = [
        {"idx": q["idx"], "text": FORMULAS[i % len(FORMULAS)], "unanswerable": False}
        for i, q in enumerate(v.content["questions"])
    ]
    submit(db, rtok, "receiver", v.item_id, {"answers": answers}, media_dir=media)
    val = get_view(db, people["validator"].token, "validator", media_dir=media)
    marks = {a["idx"]: i % 2 == 0 for i, a in enumerate(val.content["answers"])}
    submit(db, people["validator"].token, "validator", val.item_id, {"score": 73, "marks": marks}, media_dir=media)
    sv = get_view(db, people["rater"].token, "survey", media_dir=media)
    for _ in range(2):
        if sv.status != "item":
            break
        sv = submit(
            db,
            people["rater"].token,
            "survey",
            sv.item_id,
            {"satisfaction": 4, "trust": 3, "reliance": 2},
            media_dir=media,
        ).next
    dv = get_view(db, people["da"].token, "da", media_dir=media)
    submit(db, people["da"].token, "da", dv.item_id, {"score": 61}, media_dir=media)
    save_feedback(db, people["da"].id, "=cmd|' /C calc'!A0 the slider was fine")
    s = get_view(db, people["sd"].token, "sd", media_dir=media)
    while s.content["kind"] in ("welcome", "example"):  # the pages before the scales store nothing
        s = submit(db, people["sd"].token, "sd", s.item_id, {"values": {}}, media_dir=media).next
    submit(
        db,
        people["sd"].token,
        "sd",
        s.item_id,
        {"values": {p["pair_id"]: 7 for p in s.content["pairs"]}},
        media_dir=media,
    )

    tokens = [p["token"] for p in participant_store.list_for_study(db, "demo")]
    externals = ["EXT-SENDER-1", "EXT-RECEIVER-2", "PROLIFICPID0123456789", "PSTUDY0123456789", "PSESSION0123456789"]
    return {
        "db": db,
        "media": media,
        "tmp": tmp,
        "people": people,
        "tokens": tokens,
        "externals": externals,
        "s2": {"id": slot.id, "exchange": ex2, "recording": rid2},
        "s1": {"exchange": ex1, "recording": rid1},
        "excluded": excluded.id,
    }


def cli_export(tmp, db_path, media, study: str, fmt: str, monkeypatch) -> str:
    """`python app.py export` of a study into tmp/export-STUDY-FMT (once: later calls reuse it),
    the database and media given through the environment as the CLI reads them."""
    import cli

    out = tmp / f"export-{study}-{fmt}"
    if not out.exists():
        monkeypatch.setenv("TRADLAB_DB", str(db_path))
        monkeypatch.setenv("TRADLAB_MEDIA", str(media))
        assert cli.main(["export", "--study", study, "--out", str(out), "--format", fmt, "--no-audio"]) == 0
    return str(out)
