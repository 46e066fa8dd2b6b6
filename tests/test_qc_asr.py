"""One QC ASR for every system of a study ([usability] qc_asr): validated at import, used by
the worker whatever system translates the recording (real tiny.en; no model is faked)."""

from __future__ import annotations

import json
import shutil

import pytest

from harness.demo import DEMO
from services.models import systems
from services.models.cache import ModelCache
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError, load_study
from services.usability import pipeline, recording_qc
from speech import spoken_wav
from storage.usability import recordings

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)

CACHE = ModelCache(device="cpu")


def demo_copy(tmp_path, usability_extra: str = ""):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    if usability_extra:
        toml = folder / "study.toml"
        text = toml.read_text(encoding="utf-8")
        assert "starter_words = [40, 60]" in text
        toml.write_text(
            text.replace("starter_words = [40, 60]", f"starter_words = [40, 60]\n{usability_extra}", 1),
            encoding="utf-8",
        )
    return folder


def test_the_default_qc_asr_is_the_offline_whisper():
    bundle = load_study(DEMO)
    cfg = recording_qc.qc_asr_config(bundle.config["usability"])
    assert cfg == recording_qc.DEFAULT_QC_ASR
    assert cfg["asr"] == "faster-whisper" and cfg["asr_beam_size"] == 5


def test_a_study_names_its_qc_asr(tmp_path):
    folder = demo_copy(
        tmp_path,
        'qc_asr = {asr = "transformers-whisper", asr_model = "openai/whisper-large-v3", asr_dtype = "bfloat16"}',
    )
    cfg = recording_qc.qc_asr_config(load_study(folder).config["usability"])
    assert cfg["asr"] == "transformers-whisper" and cfg["asr_model"] == "openai/whisper-large-v3"


@pytest.mark.parametrize(
    "given,field",
    [
        ('qc_asr = {asr = "whisperx"}', "usability.qc_asr.asr"),
        ('qc_asr = {asr = "transformers-whisper"}', "usability.qc_asr.asr_model"),
        ('qc_asr = {asr = "remote", asr_model = "whisper-1"}', "usability.qc_asr.asr_base_url"),
        ("qc_asr = {asr_beam_size = 0}", "usability.qc_asr.asr_beam_size"),
        ('qc_asr = {mt = "bergamot"}', "usability.qc_asr.mt"),
        ('qc_asr = "faster-whisper"', "usability.qc_asr"),
    ],
)
def test_a_wrong_qc_asr_is_an_import_error_naming_the_field(tmp_path, given, field):
    with pytest.raises(StudyValidationError) as e:
        load_study(demo_copy(tmp_path, given))
    assert any(err.field == field for err in e.value.errors), [str(x) for x in e.value.errors]


def test_same_asr_reads_defaults_left_out():
    assert recording_qc.same_asr(
        {"kind": "cascade", "asr": "faster-whisper", "asr_beam_size": 5, "mt": "bergamot"}, recording_qc.DEFAULT_QC_ASR
    )
    assert not recording_qc.same_asr({"asr": "faster-whisper", "asr_beam_size": 1}, recording_qc.DEFAULT_QC_ASR)
    assert not recording_qc.same_asr(
        {"asr": "faster-whisper", "asr_model": "/models/large-v3"}, recording_qc.DEFAULT_QC_ASR
    )


@pytest.mark.parametrize("qc_beam,reused", [(5, {"cascade-beam"}), (2, set())])
def test_every_system_gets_its_qc_transcript_from_the_qc_asr(database, tmp_path, monkeypatch, qc_beam, reused):
    """The demo's two cascades (beam 5 and greedy) each translate one recording. QC always reads
    the study's QC ASR's transcript: a cascade with that very ASR lends its own (no second
    transcription); any other is transcribed again by the QC ASR."""
    extra = "" if qc_beam == 5 else f'qc_asr = {{asr = "faster-whisper", asr_beam_size = {qc_beam}}}'
    import_study(database, demo_copy(tmp_path, extra))
    db = database
    sender = add_participants(db, "demo", "sender", 1, "USW", "Woman")[0]
    built = []
    real_build = systems.build_asr

    transcribed = []

    def spy(cfg, cache=CACHE):  # the real ASR, with a note of the config it was built for
        built.append(dict(cfg))
        asr = real_build(cfg, cache)
        if cfg.get("kind") != "cascade":  # and of each transcription the QC ASR makes
            real = asr.transcribe_scored
            asr.transcribe_scored = lambda *a: (transcribed.append(cfg), real(*a))[1]
        return asr

    monkeypatch.setattr(systems, "build_asr", spy)
    ex = db.query(
        "SELECT e.id, s.text FROM exchanges e JOIN assignments a ON a.exchange_id = e.id "
        "JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        "WHERE a.participant_id = ? AND a.phase = 'record' ORDER BY e.id LIMIT 2",
        [sender.id],
    )
    from services.usability.audio_intake import store_recording

    for e, system in zip(ex, ("cascade-beam", "cascade-greedy")):
        built.clear()
        transcribed.clear()
        with db.write() as w:  # this exchange goes to the system under test
            w.execute("UPDATE exchanges SET system_id = ? WHERE id = ?", [system, e["id"]])
            a = w.execute(
                "SELECT id FROM assignments WHERE exchange_id = ? AND phase = 'record'", [e["id"]]
            ).fetchone()[0]
            st = store_recording(spoken_wav(e["text"], tmp_path / f"{system}.wav", cache=CACHE), tmp_path / "m", 60)
            rid = recordings.insert_recording(w, a, e["id"], st.sha256, st.path_original, st.path_16k, st.duration_s)
        pipeline.process_recording(db, rid, CACHE)
        qc_builds = [c for c in built if c.get("kind") != "cascade"]
        if system in reused:
            # no second transcription (the QC ASR may score the starter when the paper's rule
            # raised an edge flag on the lent transcript: issue 31's second opinion)
            assert transcribed == [], built
            assert not qc_builds or recordings.recording(db, rid)["qc_edges"], built
            assert recordings.recording(db, rid)["transcript"] == recordings.translation(db, e["id"])["transcript"]
        else:
            assert [c["asr_beam_size"] for c in qc_builds] == [qc_beam], built
        rec = recordings.recording(db, rid)
        assert rec["qc_status"] in ("passed", "flagged") and rec["transcript"]
        if system not in reused:  # the QC ASR scored the starter on its own transcription's encoding
            assert json.loads(rec["qc_edges"])["first_p"] > 0, rec["qc_edges"]
        logged = db.query("SELECT detail FROM events WHERE action = 'qc' AND entity_id = ?", [str(rid)])
        assert logged and f'"asr_beam_size": {qc_beam}' in logged[-1]["detail"]


def test_the_demo_s04_read_aloud_passes_and_its_cut_readings_are_flagged(tmp_path):
    """The issue's case, end to end with the benchmark's own steps (benchmarks/usability/
    qc_flags.py): s04, which ends with a phone number, read by Piper and transcribed by the
    default QC ASR, passes; the same reading with its first or last 1.5 s of speech cut does not."""
    import csv

    from benchmarks.usability import qc_flags
    from harness.demo import DEMO_ASSETS

    with open(DEMO_ASSETS / "starters.csv", newline="", encoding="utf-8") as f:
        s04 = next(r for r in csv.DictReader(f) if r["id"] == "s04")["text"]
    asr = systems.build_asr(recording_qc.DEFAULT_QC_ASR, CACHE)
    x, rate = qc_flags.speech(qc_flags.voice("joe"), s04)
    n = int(1.5 * rate)
    heard = {
        kind: qc_flags.transcribe(asr, part, rate, tmp_path, kind)[0]
        for kind, part in (("whole", x), ("cut_start", x[n:]), ("cut_end", x[:-n]))
    }
    assert recording_qc.check(s04, heard["whole"]).flags == [], heard["whole"]
    assert "start_differs" in recording_qc.check(s04, heard["cut_start"]).flags, heard["cut_start"]
    assert "end_differs" in recording_qc.check(s04, heard["cut_end"]).flags, heard["cut_end"]


@pytest.mark.parametrize(
    "given,field",
    [
        ('qc_second_opinion = "yes"', "usability.qc_second_opinion"),
        ("qc_first_word_min_p = 1.5", "usability.qc_first_word_min_p"),
        ('qc_last_word_min_p = "high"', "usability.qc_last_word_min_p"),
    ],
)
def test_a_wrong_second_opinion_setting_is_an_import_error_naming_it(tmp_path, given, field):
    with pytest.raises(StudyValidationError) as e:
        load_study(demo_copy(tmp_path, given))
    assert any(err.field == field for err in e.value.errors), [str(x) for x in e.value.errors]


def test_a_study_sets_the_second_opinion(tmp_path):
    us = load_study(demo_copy(tmp_path, "qc_second_opinion = false\nqc_first_word_min_p = 0.1")).config["usability"]
    assert recording_qc.second_opinion(us) == {
        "on": False,
        "first_word_min_p": 0.1,
        "last_word_min_p": recording_qc.SECOND_OPINION_DEFAULTS["qc_last_word_min_p"],
        "edge_min_cover": recording_qc.SECOND_OPINION_DEFAULTS["qc_edge_min_cover"],
    }


@pytest.fixture(scope="module")
def s12_readings(tmp_path_factory):
    """The demo's s12 read by Piper's joe (deterministic) and spoiled as the benchmark spoils
    readings (benchmarks/usability/qc_flags.py), each transcribed and its prompt scored by the
    default QC ASR: {kind: (transcript, edge probabilities)}."""
    import csv

    from benchmarks.usability import qc_flags
    from harness.demo import DEMO_ASSETS

    with open(DEMO_ASSETS / "starters.csv", newline="", encoding="utf-8") as f:
        by_id = {r["id"]: r["text"] for r in csv.DictReader(f)}
    text, other = by_id["s12"], by_id["s01"]
    tmp = tmp_path_factory.mktemp("s12")
    asr = systems.build_asr(recording_qc.DEFAULT_QC_ASR, CACHE)
    tts = qc_flags.voice("joe")
    x, rate = qc_flags.speech(tts, text)
    w = text.split()
    half, whole = int(0.5 * rate), int(1.5 * rate)
    parts = {
        "good": x,
        "cut_start_0.5s": x[half:],
        "cut_start_1.5s": x[whole:],
        "cut_end_0.5s": x[:-half],
        "cut_end_1.5s": x[:-whole],
        "first_word_left_out": qc_flags.speech(tts, " ".join(w[1:]))[0],
        "last_word_left_out": qc_flags.speech(tts, " ".join(w[:-1]))[0],
        "first_two_swapped": qc_flags.speech(tts, " ".join([w[1], w[0]] + w[2:]))[0],
        "pause_then_end_cut": qc_flags.with_pause(x, rate)[:-half],
        "other_starter": qc_flags.speech(tts, other)[0],
    }
    out = {}
    for kind, part in parts.items():
        r = qc_flags.read_and_score(asr, text, part, rate, tmp, kind)
        out[kind] = r["transcript"], r["edges"]
    return text, out


def test_a_good_reading_that_the_paper_s_rule_flags_passes_on_the_second_opinion(s12_readings):
    """tiny.en hears joe's "I need two return tickets" as "I need to return tickets": the paper's
    rule flags a whole reading; the prompt's first word is likely under the audio, so it passes."""
    text, heard = s12_readings
    transcript, edges = heard["good"]
    assert recording_qc.check(text, transcript).flags == ["start_differs"], transcript
    qc = recording_qc.check(text, transcript, edges=edges, settings=recording_qc.second_opinion({}))
    assert qc.status == "passed" and qc.forgiven == ["start_differs"], (edges, transcript)


@pytest.mark.parametrize(
    "kind",
    [
        "cut_start_0.5s",
        # issue 50, point 7: the defaults chosen on the new texts' tune starters (first word
        # p >= 0.05) forgive tiny.en's "This has been Santa..." for the cut "I need two return
        # tickets" (first p 0.11, as many letters as the prompt's edge): a known miss of the
        # demo's readings (README, recording QC)
        pytest.param("cut_start_1.5s", marks=pytest.mark.xfail(strict=True, reason="first-word p 0.11 >= 0.05")),
        "cut_end_0.5s",
        "cut_end_1.5s",
        "other_starter",
        "first_word_left_out",
        "last_word_left_out",
        "first_two_swapped",
        "pause_then_end_cut",
    ],
)
def test_each_bad_kind_stays_flagged_with_the_second_opinion(s12_readings, kind):
    text, heard = s12_readings
    transcript, edges = heard[kind]
    assert edges is not None
    qc = recording_qc.check(text, transcript, edges=edges, settings=recording_qc.second_opinion({}))
    assert qc.status == "flagged", (kind, edges, transcript)


def test_a_reading_over_one_whisper_window_gets_its_second_opinion(tmp_path):
    """Whisper hears 30 s at a time: the demo's s04 read slowly (espeak-ng en-us at 130 words a
    minute) lasts 30.1 s, and tiny.en hears its phone number as "I'm hundred twelve...". Its
    first word is scored on the first window, its last on the last one, so the good reading
    passes; the same reading without its last word stays flagged."""
    import csv

    from benchmarks.usability import qc_flags
    from harness.demo import DEMO_ASSETS

    with open(DEMO_ASSETS / "starters.csv", newline="", encoding="utf-8") as f:
        text = next(r["text"] for r in csv.DictReader(f) if r["id"] == "s04")
    asr = systems.build_asr(recording_qc.DEFAULT_QC_ASR, CACHE)
    tts = qc_flags.voice("espeak-en-us-slow")
    good = qc_flags.read_and_score(asr, text, *qc_flags.speech(tts, text), tmp_path, "good")
    short = qc_flags.read_and_score(asr, text, *qc_flags.speech(tts, " ".join(text.split()[:-1])), tmp_path, "short")
    assert good["audio_s"] > 30.0 and good["edges"] is not None, good
    assert good["edges"]["first_word"] == "I" and good["edges"]["last_word"] == "678"
    settings = recording_qc.second_opinion({})
    assert recording_qc.check(text, good["transcript"]).flags, "the paper's rule alone passes it: not the case tested"
    assert recording_qc.check(text, good["transcript"], edges=good["edges"], settings=settings).status == "passed"
    assert recording_qc.check(text, short["transcript"], edges=short["edges"], settings=settings).status == "flagged"
    # score() (a transcript that came from elsewhere) reads the two windows the same way
    assert recording_qc.edge_probabilities(asr.score(good["path"], text)) == good["edges"]
