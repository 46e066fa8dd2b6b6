"""Issue 53, point 5: quality control of ESA (and MQM) as WMT ran it (services/esa/attention.py,
docs/esa.md "Quality control"): attention items with an injected error built at import, the HIT
judged per annotator when its last item is saved, a failed HIT re-run by a fresh annotator and
left out of the analysis, a tutorial with feedback before the HIT, and the outcome in the admin's
Finished list and the export."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from services.admin import participants as participant_admin
from services.common import protocols
from services.esa import attention, mqm_analysis, study_analysis
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.report import esa as esa_report
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from services.study.files import StudyValidationError
from storage import open_database
from tests.helpers.sql_trace import Trace, scans

ROOT = Path(__file__).resolve().parents[1]
STUDY = "esa-example"


def study_folder(tmp_path, name: str = "esa", **settings) -> Path:
    """The example study (docs/examples/<name>) with settings added to its section."""
    folder = tmp_path / f"{name}-study"
    shutil.copytree(ROOT / "docs" / "examples" / name, folder)
    toml = folder / "study.toml"
    kept = [ln for ln in toml.read_text(encoding="utf-8").splitlines() if ln.split(" =")[0] not in settings]
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    toml.write_text("\n".join(kept).replace(f"[{name}]\n", f"[{name}]\n{lines}") + "\n", encoding="utf-8")
    return folder


def imported(tmp_path, name: str = "esa", **settings):
    db = open_database(tmp_path / "qc.db", schemas=protocols.schemas())
    study = import_study(db, study_folder(tmp_path, name, **settings))
    return db, study.study_id


def seg(db, name: str, study_id: str, item_id) -> dict:
    return db.one(f"SELECT * FROM {name}_segments WHERE study_id = ? AND segment_row = ?", [study_id, int(item_id)])


def answer(db, study_id: str, person, careful: bool, name: str = "esa") -> int:
    """Annotates the person's whole queue: each practice item's known error is marked; a careful
    annotator marks each attention item's injected error and scores it lower, a careless one gives
    every other segment the same answer. Returns the items."""
    n = 0
    while (v := get_view(db, person.token, name)).status == "item":
        s = seg(db, name, study_id, v.item_id)
        spans, score = [], 90
        checked = (careful and s["kind"] == "attention") or s["kind"] == "tutorial"
        if checked and s["error_end"] > s["error_start"]:
            a, b = s["error_start"], s["error_end"]
            spans = [{"start": a, "end": b, "text": s["target"][a:b], "severity": "major", "missing": False}]
            if name == "mqm":
                spans[0]["category"] = "Accuracy/Mistranslation"
            score = 40
        payload = {"spans": json.dumps(spans)} | ({"score": score} if name == "esa" else {})
        submit(db, person.token, name, v.item_id, payload)
        n += 1
    return n


# -- the pure rules ---------------------------------------------------------------------------


def test_injection_replaces_a_run_of_words_deterministically_and_says_where():
    target = "The council approved the new budget on Monday after a long debate."
    donor = "Os parques da cidade ficam abertos até tarde no verão."
    out, start, end = attention.inject(target, donor, random.Random(3))
    assert (out, start, end) == attention.inject(target, donor, random.Random(3))  # same seed, same error
    assert out != target and out[start:end] in donor and out[:start] == target[:start]
    n = len(target.split())  # 12 words: 4 replaced (Graham et al., as WMT's bad references)
    assert attention.span_length(n) == 4 and len(out[start:end].split()) == 4
    assert out.split()[0] == "The" and out.split()[-1] == "debate."  # the first and last word kept
    assert [attention.span_length(k) for k in (1, 3, 4, 6, 10, 16, 40)] == [1, 1, 2, 3, 4, 5, 10]


def test_attention_copies_follow_their_originals_document_in_the_same_hit():
    segs = [
        {"doc_id": d, "segment_id": str(i), "system": "s", "target": f"word{i} a b c d e f"}
        for i, d in enumerate("aaabbbcccc")
    ]
    hits = [list(range(10))]
    copies, out = attention.add_attention(segs, hits, 0.2, 7, "esa")
    assert len(copies) == 2 and len(out[0]) == 12  # floor(0.2 x 10)
    for j, c in enumerate(copies):
        place, orig = out[0].index(10 + j), out[0].index(c["original_row"])
        doc_end = max(i for i, r in enumerate(out[0]) if r < 10 and segs[r]["doc_id"] == c["doc_id"])
        assert place > orig and place > doc_end  # after the original's whole document
        assert c["kind"] == "attention" and c["target"] != segs[c["original_row"]]["target"]
    assert attention.add_attention(segs, hits, 0.2, 7, "esa") == (copies, out)
    assert attention.add_attention(segs, [list(range(9))], 0.1, 7, "esa")[0] == []  # floor(0.9): none
    audio = [{**s, "target_audio": "speech/x.wav"} for s in segs]
    assert attention.add_attention(audio, hits, 0.5, 7, "esa")[0] == []  # an output with audio is never copied


def test_the_pass_rule_per_item_and_per_hit():
    marked = [{"start": 4, "end": 9, "severity": "minor", "missing": False}]
    beside = [{"start": 20, "end": 25, "severity": "major", "missing": False}]
    assert attention.item_passes(marked, 60, 80, 6, 12)  # both: marked and lower
    assert not attention.item_passes(marked, 80, 80, 6, 12)  # not lower
    assert not attention.item_passes(beside, 10, 80, 6, 12)  # lower but not marked
    assert attention.item_passes(beside, 10, 80, 6, 12, rule="either")
    assert attention.item_passes(marked, 80, 80, 6, 12, rule="span")
    assert not attention.item_passes(marked, 75, 80, 6, 12, min_drop=10)
    assert attention.item_passes(marked, 6.0, 1.0, 6, 12, higher_is_better=False)  # MQM: more error weight
    assert not attention.item_passes(marked, None, 80, 6, 12)  # no score: not lower
    assert attention.hit_verdict([True, False], 0.5) == {"n_checks": 2, "n_passed": 1, "passed": True}
    assert not attention.hit_verdict([True, False, False], 0.5)["passed"]
    assert attention.hit_verdict([], 0.5)["passed"]  # nothing to judge


def test_practice_feedback_says_what_was_missed_once_unless_it_blocks():
    s = {"target": "Das Museum öffnet jeden Abend.", "error_start": 24, "error_end": 29}
    s |= {"error_severity": "major", "error_note": "evening, not morning"}
    right, words = attention.practice_result(s, [], "0", blocks=False)
    assert not right and words == (
        'Practice: you missed an error. "Abend" is a major error (evening, not morning). Mark it, then submit.'
    )
    assert attention.practice_result(s, [], "1", blocks=False) == (False, None)  # seen: goes on
    assert attention.practice_result(s, [], "1", blocks=True)[1] == words
    hit = [{"start": 24, "end": 29, "severity": "minor", "missing": False}]
    assert attention.practice_result(s, hit, None, blocks=False) == (True, None)
    correct = {**s, "error_start": 0, "error_end": 0, "error_note": ""}
    assert (
        "has no major error"
        in attention.practice_result(correct, hit[:0] + [{**hit[0], "severity": "major"}], 0, False)[1]
    )


def test_bad_settings_are_refused_naming_the_field(tmp_path):
    with pytest.raises(StudyValidationError) as e:
        import_study(
            open_database(tmp_path / "bad.db", schemas=protocols.schemas()),
            study_folder(tmp_path, attention_share=0.9, attention_rule="some", tutorial_blocks="yes"),
        )
    words = str(e.value)
    assert "esa.attention_share" in words and "esa.attention_rule" in words and "esa.tutorial_blocks" in words
    folder = study_folder(tmp_path / "t", tutorial="practice.csv")
    (folder / "practice.csv").write_text("source,target,error,severity\nHello.,Hallo.,Welt,major\n", encoding="utf-8")
    with pytest.raises(StudyValidationError, match="'Welt' is not in the target"):
        import_study(open_database(tmp_path / "bad2.db", schemas=protocols.schemas()), folder)


# -- the protocol ------------------------------------------------------------------------------


def test_a_careless_annotators_hit_fails_is_left_out_and_goes_to_a_fresh_annotator(tmp_path):
    db, sid = imported(tmp_path, hit_size=5, attention_share=0.5)
    hits = db.query("SELECT hit, n_segments FROM esa_hits WHERE study_id = ? ORDER BY hit", [sid])
    copies = db.query("SELECT * FROM esa_segments WHERE study_id = ? AND kind = 'attention'", [sid])
    assert len(hits) == 2 and len(copies) >= 2
    careful, careless = add_participants(db, sid, "esa", 2)  # HIT 0, HIT 1
    answer(db, sid, careful, careful=True)
    answer(db, sid, careless, careful=False)
    outcomes = {r["participant_id"]: r for r in db.query("SELECT * FROM esa_qc WHERE kind = 'attention'")}
    assert outcomes[careful.id]["passed"] == 1 and outcomes[careless.id]["passed"] == 0
    assert outcomes[careless.id]["rerun"] == 1 and outcomes[careless.id]["hit"] == 1
    # the failed HIT no longer counts its annotator: the next one gets HIT 1, not HIT 0
    (fresh,) = add_participants(db, sid, "esa", 1)
    assert db.scalar("SELECT hit FROM esa_takers WHERE participant_id = ?", [fresh.id]) == 1
    # the Finished list, where payments are approved
    page = participant_admin.completion_page(db, sid)
    qc = {int(r["id"]): r["qc"] for r in page.rows.to_dict("records")}
    n = outcomes[careless.id]["n_checks"]
    assert qc[careless.id] == f"failed (0 of {n} attention items passed); answers not analysed; HIT re-run"
    assert qc[careful.id].startswith("passed (")
    # the analysis reads neither the attention copies nor the failed HIT's answers
    rows = study_analysis.stored_rows(db, sid)
    assert {r["participant__pid"] for r in rows} == {careful.id}
    assert all(r["item_kind"] == "" for r in rows)
    part = esa_report.build(db, sid, tmp_path / "report")  # the report's and the Analysis tab's notes
    assert part.notes[0] == (
        "Quality control: 2 HITs judged on their attention items, 1 failed; their answers are not analysed "
        "(keep_failed = true keeps them). Attention items and practice items are never analysed."
    )
    out = export_study(db, sid, tmp_path / "export")
    assert out.rows["esa_qc"] == 2
    assert {r["hit_qc"] for r in study_analysis.export_rows(out.folder)} == {"passed"}


def test_reruns_are_bounded_and_keep_failed_keeps_the_answers(tmp_path):
    db, sid = imported(tmp_path, hit_size=10, attention_share=0.2, reruns=0, keep_failed=True)
    (p,) = add_participants(db, sid, "esa", 1)
    answer(db, sid, p, careful=False)
    row = db.one("SELECT * FROM esa_qc WHERE participant_id = ?", [p.id])
    assert row["passed"] == 0 and row["rerun"] == 0
    assert {r["hit_qc"] for r in study_analysis.stored_rows(db, sid)} == {"failed (kept)"}


def test_the_tutorial_comes_first_with_feedback_and_is_recorded_not_analysed(tmp_path):
    db, sid = imported(tmp_path, tutorial="default")
    (p,) = add_participants(db, sid, "esa", 1)
    v = get_view(db, p.token, "esa")
    assert v.content["practice"] and v.content["instructions"].startswith("**Practice.**")
    assert v.content["target"] == attention.DEFAULT_TUTORIAL[0]["target"]
    with pytest.raises(SubmissionError, match='you missed an error. "Abend" is a major error'):
        submit(db, p.token, "esa", v.item_id, {"spans": "[]", "score": 90})
    submit(db, p.token, "esa", v.item_id, {"spans": "[]", "score": 90, "practice_tries": "1"})  # seen: goes on
    answer(db, sid, p, careful=True)  # the other two practice items right, then the HIT
    row = db.one("SELECT * FROM esa_qc WHERE participant_id = ? AND kind = 'tutorial'", [p.id])
    assert (row["n_checks"], row["n_passed"], row["passed"]) == (3, 2, 0)
    assert all(r["item_kind"] == "" for r in study_analysis.stored_rows(db, sid))
    words = participant_admin.completion_page(db, sid).rows.to_dict("records")[0]["qc"]
    assert words.endswith("; tutorial failed (2 of 3 right at first try)")


def test_a_blocking_tutorial_refuses_until_the_error_is_marked(tmp_path):
    db, sid = imported(tmp_path, tutorial="default", tutorial_blocks=True)
    (p,) = add_participants(db, sid, "esa", 1)
    v = get_view(db, p.token, "esa")
    for tries in ("0", "1", "2"):
        with pytest.raises(SubmissionError, match="you missed an error"):
            submit(db, p.token, "esa", v.item_id, {"spans": "[]", "score": 90, "practice_tries": tries})


def test_mqm_gets_the_same_quality_control(tmp_path):
    db, sid = imported(tmp_path, "mqm", hit_size=100, attention_share=0.3, tutorial="default")
    careful, careless = add_participants(db, sid, "mqm", 2)
    answer(db, sid, careful, careful=True, name="mqm")
    answer(db, sid, careless, careful=False, name="mqm")
    rows = {r["participant_id"]: r for r in db.query("SELECT * FROM mqm_qc WHERE kind = 'attention'")}
    assert rows[careful.id]["passed"] == 1 and rows[careless.id]["passed"] == 0
    kept = mqm_analysis.stored_rows(db, sid)
    assert {r["participant__pid"] for r in kept} == {careful.id} and all(r["item_kind"] == "" for r in kept)


def test_an_annotators_path_with_quality_control_scans_no_study_sized_table(tmp_path):
    db, sid = imported(tmp_path, hit_size=10, attention_share=0.2, tutorial="default")
    add_participants(db, sid, "esa", 2)
    with Trace(db) as t:
        (p,) = add_participants(db, sid, "esa", 1)
    statements = list(t.sql)
    with Trace(db) as t:
        answer(db, sid, p, careful=False)  # the practice, the HIT, its last item judged
    statements += t.sql
    assert any("esa_qc" in s for s in statements)
    assert scans(db, statements) == []
