"""Issue 54, point 2: the listening protocol (services/listening/protocol.py) in process: the
[listening] section's and the stimuli file's checks (every bad field named), the audio copied and
the checks' clips made at import, the listening checks before the first clip (a pass enrols, a
failure ends the session politely and is stored), every clip played before an answer is taken, the
gold and trapping clips judged, answers idempotent and reload-safe, CCR's order and sign, the
Finished list's words, the export read back by `app.py analyze listening` with the MOS checked
against an independent computation, and a listener's path that scans no study-sized table."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import shutil
import statistics
import wave
from pathlib import Path

import pytest
from scipy import stats

import cli
from services.admin import participants as participant_admin
from services.common import protocols
from services.listening import stimuli as stimuli_module
from services.listening import study_analysis
from services.listening.protocol import answer_words, qc
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.report import listening as listening_report
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from services.study.files import StudyValidationError
from storage import open_database
from storage.studies import get_study
from tests.helpers.sql_trace import Trace, scans

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "listening"
STUDY = "listening-example"
TAB = "listening"


@pytest.fixture
def media(tmp_path, monkeypatch):
    folder = tmp_path / "media"
    monkeypatch.setenv("TRADLAB_MEDIA", str(folder))
    return folder


def study_folder(tmp_path, name: str, section: str, rows: list[list[str]] | None = None) -> Path:
    """The example study with its [listening] settings replaced (and its stimuli, when given)."""
    folder = tmp_path / name
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    head = toml[: toml.index("[listening]")]
    (folder / "study.toml").write_text(head + '[listening]\nstimuli = "stimuli.csv"\n' + section, encoding="utf-8")
    if rows is not None:
        with open(folder / "stimuli.csv", "w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows(rows)
    return folder


def opened(tmp_path, folder: Path):
    database = open_database(tmp_path / f"{folder.name}.db", schemas=protocols.schemas())
    import_study(database, folder)
    return database


@pytest.fixture
def db(tmp_path, media):
    return opened(tmp_path, EXAMPLE)


def screens(db) -> dict[str, dict]:
    return {r["screen"]: r for r in db.query("SELECT * FROM listening_screens")}


def listened(db, pid: int) -> None:
    """As if the listener's shown page had been open for a minute (the clips' time to play)."""
    past = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=60)).isoformat()
    with db.write() as w:
        w.execute(
            "UPDATE assignments SET first_shown_at = ? WHERE participant_id = ? AND first_shown_at IS NOT NULL",
            [past, pid],
        )


def check_answer_of(s: dict, right: bool = True) -> dict:
    if s["test"] == "device":
        return {"side": s["expected"] if right else ("left" if s["expected"] == "right" else "right")}
    return {"digits": " ".join(s["expected"]) if right else "000"}


def check_answer(db, v, right: bool) -> dict:
    return check_answer_of(screens(db)[v.item_id.split(":", 1)[1]], right)


def take_checks(db, p, right: bool = True):
    while (v := get_view(db, p.token, TAB)).status == "item" and v.phase == "listening_check":
        listened(db, p.id)
        submit(db, p.token, TAB, v.item_id, {"played": ["clip"], **check_answer(db, v, right)})
    return v


def rate_all(db, p, rating) -> None:
    """Every clip rated: rating(stimulus row) gives the answer."""
    while (v := get_view(db, p.token, TAB)).status == "item":
        listened(db, p.id)
        st = db.one(
            "SELECT s.* FROM listening_stimuli s JOIN assignments a ON a.study_id = s.study_id "
            "AND CAST(a.item_id AS INTEGER) = s.item WHERE a.participant_id = ? AND a.status = 'open' "
            "ORDER BY a.position, a.id LIMIT 1",
            [p.id],
        )
        keys = [c["key"] for c in v.content["clips"]]
        submit(db, p.token, TAB, v.item_id, {"played": keys, "rating": rating(st)})


# -- the section and the stimuli -----------------------------------------------------------------


def test_registered_with_its_own_tables_and_page():
    assert "listening" in protocols.names()
    assert protocols.BUILTIN[-1] == "services.listening.protocol"
    spec = protocols.protocol("listening")
    sized = {t.name for t in spec.tables if t.study_sized}
    assert {"listening_stimuli", "listening_answers", "listening_outcomes", "listening_takers"} <= sized
    scripts, styles = protocols.page_assets("listening")
    assert [p.name for p in scripts] == ["listening.js"] and [p.name for p in styles] == ["listening.css"]


def test_import_copies_the_audio_and_makes_the_checks_clips(db, media):
    stim = db.query("SELECT * FROM listening_stimuli ORDER BY item")
    assert len(stim) == 8 and [s["kind"] for s in stim[-2:]] == ["gold", "trap"]
    first = stim[0]
    assert first["audio"].startswith("listening/") and first["engine"] == "espeak-ng 1.51"
    assert (media / first["audio"]).read_bytes() == (EXAMPLE / "audio" / "s1_normal.wav").read_bytes()
    assert sorted(s["seq"] for s in stim if s["kind"] == "rating") == list(range(6))
    checks = db.query("SELECT * FROM listening_screens ORDER BY place")
    assert [c["test"] for c in checks] == ["device"] * 2 + ["hearing"] * 4
    assert sorted(c["expected"] for c in checks[:2]) == ["left", "right"]
    for c in checks[2:]:
        assert len(c["expected"]) == 3 and len(set(c["expected"])) == 3 and c["expected"].isdigit()
        assert (media / c["audio"]).is_file() and c["audio_s"] > 0.5
    with wave.open(str(media / checks[0]["audio"]), "rb") as w:  # a tone on one channel only
        assert w.getnchannels() == 2
        frames = w.readframes(w.getnframes())
    left = sum(abs(int.from_bytes(frames[i : i + 2], "little", signed=True)) for i in range(0, len(frames), 4))
    right = sum(abs(int.from_bytes(frames[i : i + 2], "little", signed=True)) for i in range(2, len(frames), 4))
    assert (left == 0) != (right == 0) and ("left" if right == 0 else "right") == checks[0]["expected"]


def test_a_bad_section_or_stimuli_file_is_refused_naming_every_field(tmp_path, media, monkeypatch):
    section = 'method = "mos"\nhearing_triplets = 2\nhearing_pass = 3\ndevice_check = "yes"\ntts_backend = "google"\n'
    with pytest.raises(StudyValidationError) as e:
        opened(tmp_path, study_folder(tmp_path, "sec", section))
    text = str(e.value)
    for field in ("listening.method", "listening.hearing_pass", "listening.device_check", "listening.tts_backend"):
        assert field in text

    def no_voice(lang, backend=None, voice=None):
        raise RuntimeError("espeak-ng is not installed")

    with monkeypatch.context() as m:  # the digits are spoken at import: a missing voice is said at once
        m.setattr(stimuli_module.tts, "choose", no_voice)
        with pytest.raises(StudyValidationError, match="listening.tts_backend.*espeak-ng is not installed"):
            opened(tmp_path, study_folder(tmp_path, "voice", ""))
    rows = [
        ["stimulus_id", "condition", "audio", "reference_audio", "kind", "expected"],
        ["a", "c1", "audio/s1_normal.wav", "", "", ""],  # dcr: no reference
        ["a", "c1", "audio/s1_fast.wav", "audio/s1_normal.wav", "", ""],  # a second 'a'
        ["b", "c1", "audio/nothere.wav", "audio/s1_normal.wav", "", ""],
        ["c", "c1", "study.toml", "audio/s1_normal.wav", "", ""],  # not audio
        ["d", "gold", "audio/gold_noisy.wav", "audio/s1_normal.wav", "gold", "9"],
        ["e", "x", "audio/s2_fast.wav", "audio/s2_normal.wav", "golden", ""],
        ["f", "c1", "audio/s2_fast.wav", "audio/s2_normal.wav", "", "3"],
        ["g", "", "audio/s2_fast.wav", "audio/s2_normal.wav", "", ""],
    ]
    with pytest.raises(StudyValidationError) as e:
        opened(tmp_path, study_folder(tmp_path, "rows", 'method = "dcr"\n', rows))
    text = str(e.value)
    assert "row 2" in text and "reference_audio" in text and "method dcr compares each clip" in text
    assert "'a' is on row 2 too" in text
    assert "'audio/nothere.wav' is not in the study folder" in text
    assert "'study.toml' is not audio the server can read" in text
    assert "a gold clip needs its expected answer, one of [5, 4, 3, 2, 1]" in text
    assert "'golden' must be empty, gold or trap" in text
    assert "condition" in text and "must not be empty" in text
    assert "only a gold or trap clip has an expected answer" in text


# -- the listener's path ----------------------------------------------------------------------------


def test_a_listener_passes_the_checks_then_rates_every_clip_played(db):
    (p,) = add_participants(db, STUDY, "listening", 1)
    v = get_view(db, p.token, TAB)
    assert (v.phase, v.item_id, v.progress) == ("listening_check", "listening_check:device-0", "0 / 14")
    assert not db.query("SELECT * FROM assignments WHERE phase = 'listening'")  # the clips come after the checks
    # refused, every field named: the clip not played, no side chosen
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, TAB, v.item_id, {"played": []})
    assert set(e.value.fields) == {"played", "side"} and "not played yet: The tone" in str(e.value)
    # played in the page but too soon after it was shown: the server's own clock refuses it
    with pytest.raises(SubmissionError, match="listen to every recording"):
        submit(db, p.token, TAB, v.item_id, {"played": ["clip"], **check_answer(db, v, True)})
    assert get_view(db, p.token, TAB).item_id == v.item_id  # a reload shows the same check
    v = take_checks(db, p)
    assert v.phase == "listening" and v.progress == "6 / 14"
    assert v.content["method"] == "acr" and [w for _, w in v.content["points"]] == [
        "Excellent", "Good", "Fair", "Poor", "Bad",
    ]  # fmt: skip
    assert "condition" not in str(v.content) and "gold" not in str(v.content)
    listened(db, p.id)
    with pytest.raises(SubmissionError) as e:
        submit(db, p.token, TAB, v.item_id, {"played": ["clip"], "rating": "6"})
    assert set(e.value.fields) == {"rating"}
    res = submit(db, p.token, TAB, v.item_id, {"played": ["clip"], "rating": "4"})
    assert res.saved and res.stored == {"rating": 4}
    done = db.one(
        "SELECT * FROM assignments WHERE participant_id = ? AND phase = 'listening' AND status = 'done'", [p.id]
    )
    assert answer_words(db, {**done, "meta": None}, res.stored).startswith("rated 4 (Good)")
    again = submit(db, p.token, TAB, v.item_id, {"played": ["clip"], "rating": "1"})  # a double submit
    assert again.stored == {"rating": 4}
    assert db.scalar("SELECT COUNT(*) FROM listening_answers WHERE kind NOT IN ('device', 'hearing')") == 1
    rate_all(db, p, lambda st: st["expected"] if st["kind"] != "rating" else 3)
    assert get_view(db, p.token, TAB).status == "complete"
    out = {r["test"]: (r["passed"], r["n_right"], r["n_total"]) for r in db.query("SELECT * FROM listening_outcomes")}
    assert out == {"device": (1, 2, 2), "hearing": (1, 4, 4), "gold": (1, 1, 1), "trap": (1, 1, 1)}
    study = get_study(db, STUDY)
    assert qc(db, study, [{"id": p.id}]) == {p.id: "passed (device 2/2, gold 1/1, hearing 4/4, trap 1/1)"}
    # the gold and trap clips sit among the rated ones, never first
    order = db.query(
        "SELECT s.kind FROM assignments a JOIN listening_stimuli s ON CAST(a.item_id AS INTEGER) = s.item "
        "WHERE a.phase = 'listening' AND a.participant_id = ? ORDER BY a.position",
        [p.id],
    )
    assert order[0]["kind"] == "rating" and sorted(o["kind"] for o in order).count("rating") == 6


def test_a_failed_hearing_test_ends_the_session_politely_and_is_stored(db):
    (p,) = add_participants(db, STUDY, "listening", 1)
    v = take_checks(db, p, right=False)
    assert v.status == "waiting" and "so it ends here for you" in v.message and "return the study" in v.message
    assert v.progress == "6 / 7"  # no completion code: not complete
    assert not db.query("SELECT * FROM assignments WHERE phase = 'listening'")
    assert not db.query("SELECT * FROM listening_takers")  # no listener slot used
    words = qc(db, get_study(db, STUDY), [{"id": p.id}])[p.id]
    assert "failed device (0/2" in words and "failed hearing (0/4; needs at least 3 triplets" in words
    assert words.endswith("excluded from the MOS")


def test_failed_gold_or_trap_clips_are_stored_and_excluded_from_the_mos(db, tmp_path):
    good, careless = add_participants(db, STUDY, "listening", 2)
    for p in (good, careless):
        take_checks(db, p)
    rate_all(db, good, lambda st: st["expected"] if st["kind"] != "rating" else 4)
    rate_all(db, careless, lambda st: 5)  # the noisy gold rated Excellent, the trap's Poor ignored
    words = qc(db, get_study(db, STUDY), [{"id": careless.id}])[careless.id]
    assert "failed gold (0/1" in words and "failed trap (0/1" in words
    # where payments are approved: the admin's Finished list (and its CSV) says each listener's outcome
    listed = {int(r["id"]): r["qc"] for r in participant_admin.completion_page(db, STUDY).rows.to_dict("records")}
    assert listed == {good.id: "passed (device 2/2, gold 1/1, hearing 4/4, trap 1/1)", careless.id: words}
    args = argparse.Namespace(export=None, study=STUDY, out=str(tmp_path / "a"), keep_failed=False)
    said = study_analysis.run(args, lambda: db)
    assert "6 rating(s) of 1 listener(s); 1 listener(s) failed a check (left out)" in said
    kept = study_analysis.run(argparse.Namespace(**{**vars(args), "keep_failed": True}), lambda: db)
    assert "12 rating(s) of 2 listener(s); 1 listener(s) failed a check (kept)" in kept


def test_ccr_shows_both_orders_and_turns_the_sign_of_a_clip_played_first(tmp_path, media):
    rows = [["stimulus_id", "condition", "audio", "reference_audio"]] + [
        [f"s{k}", "fast", f"audio/s{k}_fast.wav", f"audio/s{k}_normal.wav"] for k in (1, 2, 3)
    ]
    section = 'method = "ccr"\ndevice_check = false\nhearing_test = false\nitems_per_listener = 3\n'
    db = opened(tmp_path, study_folder(tmp_path, "ccr", section, rows))
    people = add_participants(db, STUDY, "listening", 4)
    for p in people:
        v = get_view(db, p.token, TAB)
        assert [c["label"] for c in v.content["clips"]] == ["A (first)", "B (second)"]
        assert "compared to the quality of the first" in v.content["question"]
        with pytest.raises(SubmissionError, match="not played yet: B \\(second\\)"):
            first = v.content["clips"][0]["key"]
            submit(db, p.token, TAB, v.item_id, {"played": [first], "rating": 1})
        rate_all(db, p, lambda st: 2)  # "Better": the second better than the first
    rows = db.query("SELECT value, score, first_played FROM listening_answers")
    assert {r["first_played"] for r in rows} == {"reference-first", "clip-first"}
    for r in rows:  # the clip against its reference: better when it came second
        assert r["score"] == (2 if r["first_played"] == "reference-first" else -2) and r["value"] == 2


# -- the export and the analysis ------------------------------------------------------------------


def test_export_is_read_back_by_analyze_and_the_mos_matches_an_independent_computation(db, tmp_path):
    people = add_participants(db, STUDY, "listening", 4)
    for k, p in enumerate(people):
        take_checks(db, p, right=k != 3)  # the fourth fails: left out
        if k != 3:
            rate_all(db, p, lambda st, k=k: st["expected"] if st["kind"] != "rating" else (1 + (k + st["item"]) % 5))
    out = export_study(db, STUDY, tmp_path / "export")
    assert out.rows["listening_answers"] == 3 * 14 + 6 and out.rows["listening_outcomes"] == 3 * 4 + 2
    with open(out.folder / "listening_answers.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert not any(r["participant"].isdigit() for r in rows)
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert all(f"`{t}" in readme for t in ("listening_answers", "listening_outcomes", "listening_stimuli"))
    # the MOS by hand: mean, sample sd, 1.96 * sd / sqrt(n) (the P.808 toolkit's z)
    by_condition: dict[str, list[int]] = {}
    for r in rows:
        if r["kind"] == "rating":
            by_condition.setdefault(r["condition"], []).append(int(r["score"]))
    analysed = tmp_path / "a"
    said = study_analysis.run(
        argparse.Namespace(export=str(out.folder), study=None, out=str(analysed), keep_failed=False), lambda: db
    )
    assert said.startswith("Listening test (ACR): MOS of 2 condition(s) from 18 rating(s) of 3 listener(s); 1 listener")
    with open(analysed / "listening_mos.csv", encoding="utf-8") as f:
        mos = {r["condition"]: r for r in csv.DictReader(f)}
    assert set(mos) == set(by_condition)
    for cond, values in by_condition.items():
        mean, sd = statistics.mean(values), statistics.stdev(values)
        assert float(mos[cond]["mean"]) == pytest.approx(mean)
        assert float(mos[cond]["std"]) == pytest.approx(sd)
        assert float(mos[cond]["ci"]) == pytest.approx(1.96 * sd / math.sqrt(len(values)), rel=1e-4)
    with open(analysed / "listening_excluded.csv", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == 1
    from_study = study_analysis.run(
        argparse.Namespace(export=None, study=STUDY, out=str(tmp_path / "b"), keep_failed=False), lambda: db
    )
    assert from_study.splitlines()[1:] == said.splitlines()[1:]
    args = cli.build_parser().parse_args(["analyze", "listening", str(out.folder), "--out", "x"])
    assert args.analyze is study_analysis.run
    # the report's part (and the Analysis tab's panel, which shows it): the same figures
    part = listening_report.build(db, STUDY, tmp_path / "report")
    assert [x.filled for x in part.sections] == [True, True, True]
    assert part.summary == from_study.splitlines()[0].split("; tables in")[0]
    assert list(part.sections[0].table["condition"]) == sorted(by_condition)
    assert (tmp_path / "report" / "listening" / "listening_mos.csv").is_file()


def test_a_listeners_path_scans_no_study_sized_table(db):
    add_participants(db, STUDY, "listening", 2)
    with Trace(db) as t:
        (p,) = add_participants(db, STUDY, "listening", 1)
    statements = list(t.sql)
    expected = {k: check_answer_of(s) for k, s in screens(db).items()}
    for k in range(9):
        with Trace(db) as t:
            v = get_view(db, p.token, TAB)
        statements += t.sql
        if v.status != "item":
            break
        listened(db, p.id)
        answer = expected[v.item_id.split(":", 1)[1]] if v.phase == "listening_check" else {"rating": 3}
        with Trace(db) as t:
            if k == 0:
                with pytest.raises(SubmissionError):
                    submit(db, p.token, TAB, v.item_id, {"played": []})
            submit(db, p.token, TAB, v.item_id, {"played": [c["key"] for c in v.content["clips"]], **answer})
        statements += t.sql
    assert any("listening_takers" in s for s in statements) and any("listening_outcomes" in s for s in statements)
    assert any("listening_answers" in s for s in statements) and any("listening_stimuli" in s for s in statements)
    assert scans(db, statements) == []
    assert scans(db, ["SELECT * FROM listening_answers WHERE kind = 'gold'"])  # the check can fail


# -- MUSHRA ---------------------------------------------------------------------------------------

MUSHRA_ROWS = [["item_id", "stimulus_id", "condition", "audio", "reference_audio", "kind"]] + [
    row
    for k in (1, 2)
    for row in (
        [f"i{k}", f"i{k}-fast", "fast", f"audio/s{k}_fast.wav", f"audio/s{k}_normal.wav", ""],
        [f"i{k}", f"i{k}-anchor", "anchor", "audio/gold_noisy.wav", f"audio/s{k}_normal.wav", "anchor"],
    )
]
MUSHRA = 'method = "mushra"\ndevice_check = false\nhearing_test = false\nitems_per_listener = 2\n'


def test_a_bad_mushra_file_is_refused_naming_every_field(tmp_path, media):
    rows = [
        MUSHRA_ROWS[0],
        ["", "a", "fast", "audio/s1_fast.wav", "audio/s1_normal.wav", ""],
        ["i1", "b", "fast", "audio/s1_fast.wav", "audio/s1_normal.wav", ""],
        ["i1", "c", "fast", "audio/s2_fast.wav", "audio/s2_normal.wav", "gold"],
        ["i1", "d", "hidden_reference", "audio/s2_fast.wav", "audio/s1_normal.wav", ""],
    ]
    with pytest.raises(StudyValidationError) as e:
        opened(tmp_path, study_folder(tmp_path, "m", MUSHRA, rows))
    text = str(e.value)
    assert "row 2, field 'item_id': method mushra shows the rows of one item_id on one page" in text
    assert "'gold' must be empty or anchor (method mushra)" in text
    assert "'hidden_reference' is the name of the hidden reference" in text
    assert "item 'i1' has no anchor" in text


def mushra_db(tmp_path):
    return opened(tmp_path, study_folder(tmp_path, "mushra", MUSHRA, MUSHRA_ROWS))


def test_a_mushra_page_refuses_a_submit_before_every_stimulus_is_played_and_scored(tmp_path, media):
    db = mushra_db(tmp_path)
    (p,) = add_participants(db, STUDY, "listening", 1)
    v = get_view(db, p.token, TAB)
    labels = [c["label"] for c in v.content["clips"]]
    assert labels == ["Reference", "Sample 1", "Sample 2", "Sample 3"] and v.progress == "0 / 2"
    listened(db, p.id)
    with pytest.raises(SubmissionError) as e:  # two samples not played, none scored
        submit(db, p.token, TAB, v.item_id, {"played": ["reference", "s0"], "score-0": 80, "score-1": None})
    assert "not played yet: Sample 2, Sample 3" in str(e.value)
    assert set(e.value.fields) == {"played", "score-1", "score-2"}
    keys = ["reference", "s0", "s1", "s2"]
    res = submit(db, p.token, TAB, v.item_id, {"played": keys, "score-0": 80, "score-1": 0, "score-2": 55.4})
    assert res.saved and res.stored == {"scores": {"Sample 1": 80, "Sample 2": 0, "Sample 3": 55}}
    rows = db.query("SELECT condition, position, score FROM listening_scores ORDER BY position")
    assert sorted(r["condition"] for r in rows) == ["anchor", "fast", "hidden_reference"]
    # the order is the listener's own, seeded: the hidden reference is not always last
    meta = db.query("SELECT meta FROM assignments WHERE participant_id = ?", [p.id])
    assert len(meta) == 2


def test_mushra_post_screening_and_statistics_against_an_independent_computation(tmp_path, media):
    db = mushra_db(tmp_path)
    people = add_participants(db, STUDY, "listening", 4)
    wanted = {"hidden_reference": 95, "fast": 60, "anchor": 20}
    for k, p in enumerate(people):
        while (v := get_view(db, p.token, TAB)).status == "item":
            listened(db, p.id)
            order = db.one("SELECT meta FROM assignments WHERE participant_id = ? AND status = 'open' "
                           "ORDER BY position LIMIT 1", [p.id])["meta"]  # fmt: skip
            names = {r["item"]: r["condition"] for r in db.query("SELECT item, condition FROM listening_stimuli")}
            conditions = [names[i] for i in json.loads(order)["order"]]
            # the fourth listener rates the hidden reference 50: excluded by the post-screening
            scores = {
                f"score-{j}": (50 if k == 3 and c == "hidden_reference" else wanted[c] + k)
                for j, c in enumerate(conditions)
            }
            submit(db, p.token, TAB, v.item_id, {"played": ["reference", "s0", "s1", "s2"], **scores})
    out = export_study(db, STUDY, tmp_path / "export")
    assert out.rows["listening_scores"] == 4 * 2 * 3
    said = study_analysis.run(
        argparse.Namespace(export=str(out.folder), study=None, out=str(tmp_path / "a"), keep_failed=False, anchor=""),
        lambda: db,
    )
    assert "1 listener(s) excluded by BS.1534-3's post-screening" in said and "18 score(s) of 3 listener(s)" in said
    with open(tmp_path / "a" / "listening_mushra.csv", encoding="utf-8") as f:
        table = {r["condition"]: r for r in csv.DictReader(f)}
    for cond, base in wanted.items():  # listeners 0-2, two items each
        values = [base + k for k in range(3) for _ in range(2)]
        mean, sd = statistics.mean(values), statistics.stdev(values)
        half = stats.t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
        assert float(table[cond]["mean"]) == pytest.approx(mean) and float(table[cond]["ci"]) == pytest.approx(half)
        assert float(table[cond]["median"]) == pytest.approx(statistics.median(values))
    with open(tmp_path / "a" / "listening_screening.csv", encoding="utf-8") as f:
        screening = list(csv.DictReader(f))
    assert [r["excluded"] for r in screening].count("True") == 1
    # the Finished list says it, where payments are approved
    words = qc(db, get_study(db, STUDY), [{"id": p.id} for p in people])
    assert words[people[3].id].startswith("excluded by post-screening: rated the hidden reference below 90 on 2 of 2")
    assert {words[p.id] for p in people[:3]} == {"passed (BS.1534-3's post-screening)"}
    assert from_study_lines(db, tmp_path) == said.splitlines()[1:]


def from_study_lines(db, tmp_path) -> list[str]:
    args = argparse.Namespace(export=None, study=STUDY, out=str(tmp_path / "b"), keep_failed=False, anchor="")
    return study_analysis.run(args, lambda: db).splitlines()[1:]


def test_a_mushra_listeners_path_scans_no_study_sized_table(tmp_path, media):
    db = mushra_db(tmp_path)
    add_participants(db, STUDY, "listening", 1)
    with Trace(db) as t:
        (p,) = add_participants(db, STUDY, "listening", 1)
    statements = list(t.sql)
    keys = {"played": ["reference", "s0", "s1", "s2"], "score-0": 10, "score-1": 20, "score-2": 30}
    for _ in range(3):
        with Trace(db) as t:
            v = get_view(db, p.token, TAB)
        statements += t.sql
        if v.status != "item":
            break
        listened(db, p.id)
        with Trace(db) as t:
            submit(db, p.token, TAB, v.item_id, keys)
        statements += t.sql
    assert v.status == "complete"
    assert any("listening_scores" in s for s in statements) and any("group_id" in s for s in statements)
    assert scans(db, statements) == []


def test_dcr_plays_the_reference_first_and_rates_the_degradation(tmp_path, media):
    rows = [["stimulus_id", "condition", "audio", "reference_audio"]] + [
        [f"s{k}", "fast", f"audio/s{k}_fast.wav", f"audio/s{k}_normal.wav"] for k in (1, 2)
    ]
    section = 'method = "dcr"\ndevice_check = false\nhearing_test = false\nitems_per_listener = 2\n'
    db = opened(tmp_path, study_folder(tmp_path, "dcr", section, rows))
    (p,) = add_participants(db, STUDY, "listening", 1)
    v = get_view(db, p.token, TAB)
    assert [(c["key"], c["label"]) for c in v.content["clips"]] == [
        ("reference", "A (reference)"),
        ("clip", "B (sample)"),
    ]
    assert v.content["points"][0] == [5, "Degradation is inaudible"] and v.content["points"][-1][0] == 1
    rate_all(db, p, lambda st: 4)
    assert [r["score"] for r in db.query("SELECT score FROM listening_answers")] == [4, 4]
