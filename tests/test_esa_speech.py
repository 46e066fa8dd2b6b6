"""Issue 53 point 3, speech in ESA and MQM, in process: the segments file's source_audio,
target_audio and target_words checked at import (an unreadable, over-long or outside file and
bad word times refused naming the row, nothing stored), the audio copied into the media folder
under its content name; spans marked on the output's audio (start_s, end_s) checked against its
duration (outside it, overlapping, end before start refused naming the span, nothing stored),
mapped to the transcript's words and stored beside the text's spans; MQM's speech categories
offered and scored; the analysis counting them by severity and leaving them out of the
character F1; show_source_transcript on the page."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from services.common import protocols
from services.esa import agreement, analysis, corpus, results
from services.esa.spans import Span, SpanError, TimeSpan, Word, check_time_spans, read_words, words_in
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError
from storage import open_database, protocol_rows
from tabs import esa as esa_tab
from tests.helpers.audio import write_wav

WORDS = [{"word": "o", "start": 0.3, "end": 0.5}, {"word": "gato", "start": 0.5, "end": 1.1}]
WORDS += [{"word": "dorme", "start": 1.2, "end": 1.9}]


def speech_study(folder: Path, protocol: str = "esa", rows: list[dict] | None = None, extra: str = "") -> Path:
    """A study of one document, two segments: the first with a source recording, the output's
    audio (2 s) and its word times; the second text only."""
    folder.mkdir(parents=True, exist_ok=True)
    write_wav(folder / "src.wav", seconds=1.5, rate=16000)
    write_wav(folder / "out.wav", seconds=2.0, rate=16000)
    base = {"doc_id": "d", "system": "s", "source_lang": "en", "target_lang": "pt"}
    rows = rows or [
        {**base, "segment_id": "1", "source": "The cat sleeps.", "target": "O gato dorme.",
         "source_audio": "src.wav", "target_audio": "out.wav", "target_words": json.dumps(WORDS)},
        {**base, "segment_id": "2", "source": "It is late.", "target": "É tarde.", "source_audio": "",
         "target_audio": "", "target_words": ""},
    ]  # fmt: skip
    with open(folder / "segments.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (folder / "study.toml").write_text(
        f'[study]\nid = "speech"\nname = "Speech"\nprotocols = ["{protocol}"]\n\n'
        f'[{protocol}]\nsegments = "segments.csv"\nhit_size = 10\n{extra}',
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def media(tmp_path, monkeypatch):
    folder = tmp_path / "media"
    monkeypatch.setenv("TRADLAB_MEDIA", str(folder))
    return folder


def imported(tmp_path, protocol="esa", extra=""):
    db = open_database(tmp_path / "x.db", schemas=protocols.schemas())
    import_study(db, speech_study(tmp_path / "study", protocol, extra=extra))
    return db


# -- the corpus -------------------------------------------------------------------------------


def test_audio_is_checked_and_copied_under_its_content_name(tmp_path, media):
    db = imported(tmp_path)
    first, second = db.query("SELECT * FROM esa_segments WHERE study_id = 'speech' ORDER BY segment_row")
    assert first["target_audio"].startswith("speech/") and first["target_audio"].endswith(".wav")
    assert (media / first["target_audio"]).read_bytes() == (tmp_path / "study" / "out.wav").read_bytes()
    assert (media / first["source_audio"]).is_file()
    assert first["target_audio_s"] == pytest.approx(2.0, abs=0.01) and first["source_audio_s"] == pytest.approx(1.5)
    assert [w["word"] for w in json.loads(first["target_words"])] == ["o", "gato", "dorme"]
    assert (second["target_audio"], second["target_audio_s"], second["target_words"]) == ("", 0, "")


def test_bad_audio_and_word_times_are_refused_naming_the_row(tmp_path, media, monkeypatch):
    folder = speech_study(tmp_path / "study")
    (folder / "noise.wav").write_bytes(b"this is not audio at all, only text" * 10)
    write_wav(folder / "long.wav", seconds=3.0, rate=16000)
    monkeypatch.setattr(corpus, "MAX_AUDIO_S", 2.5)
    base = {"doc_id": "d", "system": "s", "source": "a", "target": "b", "source_audio": ""}
    late, shapeless = json.dumps([{"word": "x", "start": 1.5, "end": 2.6}]), json.dumps([{"word": "y", "start": "1"}])
    rows = [
        {**base, "segment_id": "1", "target_audio": "noise.wav", "target_words": ""},
        {**base, "segment_id": "2", "target_audio": "long.wav", "target_words": ""},
        {**base, "segment_id": "3", "target_audio": "../outside.wav", "target_words": ""},
        {**base, "segment_id": "4", "target_audio": "absent.wav", "target_words": ""},
        {**base, "segment_id": "5", "target_audio": "out.wav", "target_words": late},
        {**base, "segment_id": "6", "target_audio": "out.wav", "target_words": "[{not json"},
        {**base, "segment_id": "7", "target_audio": "", "target_words": json.dumps(WORDS)},
        {**base, "segment_id": "8", "target_audio": "out.wav", "target_words": shapeless},
    ]  # fmt: skip
    speech_study(folder, rows=rows)
    db = open_database(tmp_path / "x.db", schemas=protocols.schemas())
    with pytest.raises(StudyValidationError) as e:
        import_study(db, folder)
    found = {(x.row, x.field): x.message for x in e.value.errors}
    assert set(found) == {(r, "target_audio") for r in (2, 3, 4, 5)} | {(r, "target_words") for r in (6, 7, 8, 9)}
    assert "'noise.wav' is not audio the server can read" in found[(2, "target_audio")]
    assert "'long.wav' is too long (more than 2.5 s" in found[(3, "target_audio")]
    assert "outside the study folder" in found[(4, "target_audio")]
    assert "'absent.wav' is not in the study folder" in found[(5, "target_audio")]
    assert "word 0 ('x', 1.5-2.6 s): outside 0-2 s" in found[(6, "target_words")]
    assert "not JSON" in found[(7, "target_words")]
    assert "need the output's audio" in found[(8, "target_words")]
    assert "must be a JSON list of {word, start, end}" in found[(9, "target_words")]
    assert all(x.file == "segments.csv" for x in e.value.errors)
    assert db.scalar("SELECT COUNT(*) FROM studies") == 0 and not media.exists()


def test_word_times_read_checked_and_mapped():
    words = read_words(json.dumps(WORDS))
    assert words[1] == Word("gato", 0.5, 1.1)
    # a span covers the words it overlaps for a positive time: touching an edge is not covering
    assert words_in(TimeSpan(0.5, 1.2, "minor"), words) == [1]
    assert words_in(TimeSpan(0.4, 1.3, "minor"), words) == [0, 1, 2]
    assert words_in(TimeSpan(1.1, 1.2, "minor"), words) == []
    with pytest.raises(SpanError, match="word 0: must be a JSON list"):
        read_words('[{"word": "", "start": 0, "end": 1}]')


def test_time_spans_outside_overlapping_or_backwards_are_refused():
    good = [TimeSpan(0.0, 0.5, "minor"), TimeSpan(0.5, 2.0, "major")]  # touching is allowed
    assert check_time_spans(good, 2.0) == good
    with pytest.raises(SpanError) as e:
        check_time_spans([TimeSpan(1.0, 2.5, "minor"), TimeSpan(0.2, 1.5, "major"), TimeSpan(1.8, 1.2, "minor")], 2.0)
    text = str(e.value)
    assert "span 0 (1-2.5 s): times out of range" in text and "span 2 (1.8-1.2 s): times out of range" in text
    assert "span 1 (0.2-1.5 s) overlaps span 0 (1-2.5 s)" in text


# -- the answer -------------------------------------------------------------------------------


def test_esa_time_spans_are_checked_against_the_duration_and_stored_with_their_words(tmp_path, media):
    db = imported(tmp_path)
    (p,) = add_participants(db, "speech", "esa", 1)
    v = get_view(db, p.token, "esa")
    c = v.content
    assert c["target"] == "O gato dorme." and c["target_audio"].startswith(str(media))
    assert c["target_audio_s"] == pytest.approx(2.0, abs=0.01) and c["target_words"] == WORDS
    cases = [
        ([{"start_s": 1.0, "end_s": 2.5, "severity": "minor"}], "times out of range"),
        ([{"start_s": 1.2, "end_s": 0.4, "severity": "minor"}], "times out of range"),
        ([{"start_s": 0.1, "end_s": 1.0, "severity": "minor"}, {"start_s": 0.8, "end_s": 1.5, "severity": "major"}],
         "span 0 (0.1-1 s) overlaps span 1"),
        ([{"start_s": "a", "end_s": 1, "severity": "minor"}], "start_s must be a number of seconds"),
        ([{"start_s": 2.0, "end_s": 2.0, "severity": "minor", "missing": True}], "an omission is marked on the"),
        ([{"start_s": 0.1, "end_s": 0.4, "severity": "critical"}], "unknown severity 'critical'"),
    ]  # fmt: skip
    for spans, words in cases:
        with pytest.raises(SubmissionError) as e:
            submit(db, p.token, "esa", v.item_id, {"spans": json.dumps(spans), "score": 40})
        assert words in e.value.fields["spans"], (spans, e.value.fields)
    assert db.scalar("SELECT COUNT(*) FROM esa_answers") == 0
    sent = [
        {"start_s": 0.45, "end_s": 1.15, "severity": "major", "words": [9]},  # the words are the server's
        {"start": 2, "end": 6, "text": "gato", "severity": "minor", "missing": False},
    ]
    assert submit(db, p.token, "esa", v.item_id, {"spans": json.dumps(sent), "score": 40}).saved
    row = protocol_rows.one(db, "esa_answers", {"assignment_id": db.scalar("SELECT MIN(id) FROM assignments")})
    text, timed = json.loads(row["spans"])
    assert text["text"] == "gato" and "start_s" not in text
    assert timed == {"start_s": 0.45, "end_s": 1.15, "severity": "major", "category": None, "missing": False,
                     "words": [0, 1]}  # fmt: skip
    # the next segment has no audio: a time span is refused there
    v2 = get_view(db, p.token, "esa")
    with pytest.raises(SubmissionError, match="this output has no audio"):
        submit(db, p.token, "esa", v2.item_id, {"spans": json.dumps(sent[:1]), "score": 40})


def test_mqm_time_spans_take_the_speech_categories_and_are_scored(tmp_path, media):
    db = imported(tmp_path, "mqm")
    (p,) = add_participants(db, "speech", "mqm", 1)
    v = get_view(db, p.token, "mqm")
    names = [c["name"] for c in v.content["categories"]]
    assert "Pronunciation" in names  # the output is audio: the speech categories are offered
    pron = next(c for c in v.content["categories"] if c["name"] == "Pronunciation")
    category = f"Pronunciation/{pron['subcategories'][0]}" if pron["subcategories"] else "Pronunciation"
    with pytest.raises(SubmissionError) as e:
        submit(
            db, p.token, "mqm", v.item_id, {"spans": json.dumps([{"start_s": 0.1, "end_s": 0.6, "severity": "major"}])}
        )
    assert "audio span 0: pick its error category" in e.value.fields["spans"]
    spans = [{"start_s": 0.1, "end_s": 0.6, "severity": "major", "category": category}]
    spans += [{"start": 2, "end": 6, "text": "gato", "severity": "minor", "category": "Accuracy/Mistranslation"}]
    assert submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(spans)}).saved
    row = protocol_rows.one(db, "mqm_answers", {"assignment_id": db.scalar("SELECT MIN(id) FROM assignments")})
    assert row["mqm"] == 6.0  # major 5 + minor 1
    assert json.loads(row["spans"])[1]["words"] == [0, 1]
    # the next segment has no audio: no speech category
    v2 = get_view(db, p.token, "mqm")
    assert "Pronunciation" not in [c["name"] for c in v2.content["categories"]]


def test_the_page_shows_the_waveform_and_hides_the_source_text_when_asked(tmp_path, media):
    db = imported(tmp_path, extra="show_source_transcript = false\n")
    (p,) = add_participants(db, "speech", "esa", 1)
    c = get_view(db, p.token, "esa").content
    page = esa_tab.body_html(c)
    assert 'class="esa-wave"' in page and "gradio_api/file=" in page and 'class="esa-src-audio"' in page
    assert "The cat sleeps." not in page and "O gato dorme." in page  # the output's transcript stays
    shown = esa_tab.body_html({**c, "show_source_transcript": True})
    assert "The cat sleeps." in shown


def test_the_sections_setting_is_checked():
    from services.esa.protocol import check

    good = {"segments": "s.csv", "hit_size": 1, "context": "all", "score_labels": {"0": "x"}, "instructions": ""}
    assert ("esa.show_source_transcript", "must be true or false (the source's text beside its audio)") in check(
        {**good, "show_source_transcript": "no"}
    )


# -- the analysis -----------------------------------------------------------------------------


def test_the_analysis_counts_time_spans_by_severity_and_leaves_them_out_of_char_f1():
    text = Span(0, 4, "gato", "minor")
    timed = TimeSpan(0.2, 0.9, "major")
    assert agreement.char_f1([text, timed], [text], 10) == 1.0
    rows = [
        {"participant": a, "system": "s", "doc_id": "d", "segment_id": "1", "score": 50, "target": "o gato dorme",
         "spans": json.dumps([text.to_dict(), timed.to_dict()])}
        for a in ("a1", "a2")
    ]  # fmt: skip
    j = results.judgments_of_rows(rows)
    assert any(isinstance(s, TimeSpan) for s in j["spans"][0])
    sev = analysis.severity_breakdown(j.assign(score=j["score"].astype(float)))
    assert sev[["major", "minor", "n_spans"]].iloc[0].tolist() == [2, 2, 4]
    assert np.isclose(agreement.char_f1(j["spans"][0], j["spans"][1], 12), 1.0)
