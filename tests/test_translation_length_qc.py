"""Issue 51, point 12: tiny.en and greedy decoding gave a 6-word translation of a 56-word reading
and QC passed it (QC checks the recording). A translation far shorter than its transcript is
flagged for review, with the reason and the word counts; the normal case and short utterances
are not."""

from __future__ import annotations

import shutil

import pytest

from harness.demo import DEMO
from services.admin.usability_review import queue_for_review
from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from services.study.files import StudyValidationError, load_study
from services.usability import pipeline, recording_qc
from storage.usability import corpus as usability_corpus
from tests.helpers.audio import write_wav

READING = " ".join(["word"] * 56)
SIX = "Olá, preciso de ajuda, obrigado."  # the demo's output, as it was


def test_a_far_shorter_translation_is_flagged_and_the_normal_case_is_not():
    assert recording_qc.check(READING, READING, translation=SIX).flags == ["translation_short"]
    same_length = " ".join(["palavra"] * 50)
    assert recording_qc.check(READING, READING, translation=same_length).flags == []
    short = "please help me now today"  # 5 words: under qc_translation_min_words, never checked
    assert recording_qc.check(short, short, translation="socorro").flags == []
    assert recording_qc.check(READING, READING, translation=SIX, usability={"qc_translation_min_ratio": 0}).flags == []


def recorded(db, tmp_path):
    sender = add_participants(db, "demo", "sender", 1, "USB", "Man")[0]
    v = get_view(db, sender.token, "record")
    ex = db.one("SELECT * FROM exchanges WHERE id = ?", [int(v.item_id)])
    text = usability_corpus.starter(db, "demo", ex["starter_id"])["text"]
    res = submit(
        db, sender.token, "record", v.item_id, {"audio": str(write_wav(tmp_path / "a.wav"))}, media_dir=tmp_path
    )
    return res.stored["id"], text


def test_the_short_translation_waits_in_the_review_queue_with_its_reason(demo_db, tmp_path):
    rid, text = recorded(demo_db, tmp_path)
    assert pipeline.record_outcome(demo_db, rid, SIX, text) == "flagged"
    (row,) = queue_for_review(demo_db, "demo")
    n = recording_qc.word_count(text)
    assert row["id"] == rid and row["flags"] == f"translation far shorter than transcript (5 vs {n} words)"


def test_a_translation_as_long_as_the_reading_passes(demo_db, tmp_path):
    rid, text = recorded(demo_db, tmp_path)
    assert pipeline.record_outcome(demo_db, rid, " ".join(["palavra"] * len(text.split())), text) == "passed"
    assert queue_for_review(demo_db, "demo") == []


def test_the_settings_are_checked(tmp_path):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    bad = "[usability]\nqc_translation_min_ratio = 2\nqc_translation_min_words = 0\n"
    (folder / "study.toml").write_text(toml.replace("[usability]\n", bad, 1))
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    assert "usability.qc_translation_min_ratio" in str(e.value) and "usability.qc_translation_min_words" in str(e.value)
    (folder / "study.toml").write_text(toml)
    us = load_study(folder).config["usability"]
    assert (us["qc_translation_min_ratio"], us["qc_translation_min_words"]) == (0.5, 20)
