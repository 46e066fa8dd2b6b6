"""Issue 53, point 2: MQM (services/esa/mqm_protocol.py) as a built-in protocol on ESA's queue,
tables' shape and page, in process: the example study imported with its taxonomy read into the
stored config, a bad taxonomy refused naming the field, the picker's categories (speech ones only
for audio outputs), a complete answer stored with its MQM score, a sixth error and a
Non-translation beside another error refused, a study's critical severity with its weight, the
weights of Freitag et al. (2021) on hand-made segments against a computation written out here,
the export with its dictionary and `app.py analyze mqm` on it."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import cli
from services.common import protocols
from services.esa import mqm, mqm_analysis
from services.esa.mqm_protocol import answer_words, check, offered, taxonomy_of
from services.esa.spans import Span
from services.esa.taxonomy import DEFAULT_PATH, load_taxonomy
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from services.study.files import StudyValidationError
from storage import open_database, protocol_rows, studies
from tests.helpers.sql_trace import Trace, scans

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "mqm"
STUDY = "mqm-example"
TAXONOMY = load_taxonomy()


@pytest.fixture
def db(tmp_path):
    database = open_database(tmp_path / "mqm.db", schemas=protocols.schemas())
    import_study(database, EXAMPLE)
    return database


def err(target: str, start: int, end: int, category: str, severity: str = "minor") -> dict:
    return {"start": start, "end": end, "text": target[start:end], "severity": severity, "category": category}


def first_item(db):
    (p,) = add_participants(db, STUDY, "mqm", 1)
    v = get_view(db, p.token, "mqm")
    assert v.status == "item"
    return p, v


def study_with(tmp_path, name: str, toml_extra: str = "", files: dict[str, str] | None = None) -> Path:
    folder = tmp_path / name
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text().replace('id = "mqm-example"', f'id = "{name}"')
    (folder / "study.toml").write_text(toml + toml_extra)
    for file, text in (files or {}).items():
        (folder / file).write_text(text, encoding="utf-8")
    return folder


# -- the spec, the study, the taxonomy --------------------------------------------------------


def test_registered_with_its_own_tables_and_esas_page():
    assert "mqm" in protocols.names() and protocols.names().index("mqm") > protocols.names().index("esa")
    assert {t.name for t in protocols.protocol("mqm").tables} == {
        "mqm_segments", "mqm_hits", "mqm_takers", "mqm_answers", "mqm_qc"
    }  # fmt: skip
    assert protocols.role_label("mqm") == "MQM annotator"
    scripts, styles = protocols.page_assets("mqm")
    assert [p.name for p in scripts] == ["wavesurfer.min.js", "regions.min.js", "esa.js"] and [
        p.name for p in styles
    ] == ["esa.css", "mqm.css"]


def test_the_example_imports_with_the_default_taxonomy_in_its_config(db):
    assert db.scalar("SELECT COUNT(*) FROM mqm_segments WHERE study_id = ?", [STUDY]) == 6
    assert db.scalar("SELECT COUNT(*) FROM mqm_hits WHERE study_id = ?", [STUDY]) == 2
    config = studies.get_study(db, STUDY)["config"]
    assert config["mqm"]["taxonomy"] == tomllib.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    assert taxonomy_of(config).weights.weight("Fluency/Punctuation", "minor") == 0.1
    assert import_study(db, EXAMPLE).status == "unchanged"


def test_a_bad_taxonomy_is_refused_naming_the_field(tmp_path):
    good = {
        "segments": "s.csv",
        "hit_size": 3,
        "context": "all",
        "taxonomy": {},
        "taxonomy_file": "",
        "instructions": "",
    }
    assert check(good) == []
    data = tomllib.loads(DEFAULT_PATH.read_text(encoding="utf-8"))
    no_minor = {**data, "weights": {k: v for k, v in data["weights"].items() if k != "minor"}}
    [(field, words)] = check({**good, "taxonomy": no_minor})
    assert field == "mqm.taxonomy" and "[weights] gives no weight for minor" in words
    both = check({**good, "taxonomy": data, "taxonomy_file": "t.toml"})
    assert both == [("mqm.taxonomy", "give the taxonomy inline or as taxonomy_file, not both")]
    # critical listed without a weight: the study cannot use it
    critical = (DEFAULT_PATH.read_text(encoding="utf-8")).replace(
        'names = ["major", "minor", "neutral"]', 'names = ["critical", "major", "minor", "neutral"]'
    )
    folder = study_with(tmp_path, "mqm-crit", files={"tax.toml": critical})
    toml = (folder / "study.toml").read_text().replace("hit_size = 3", 'hit_size = 3\ntaxonomy_file = "tax.toml"')
    (folder / "study.toml").write_text(toml)
    database = open_database(tmp_path / "bad.db", schemas=protocols.schemas())
    with pytest.raises(StudyValidationError) as e:
        import_study(database, folder)
    assert "mqm.taxonomy_file" in str(e.value) and "gives no weight for critical" in str(e.value)
    assert database.scalar("SELECT COUNT(*) FROM mqm_segments") == 0


def test_the_picker_offers_speech_categories_only_for_audio_and_no_source_side_one(db):
    text = [c["name"] for c in offered(TAXONOMY, audio=False)]
    speech = [c["name"] for c in offered(TAXONOMY, audio=True)]
    assert "Accuracy" in text and "Pronunciation" not in text and "Source error" not in text
    assert set(speech) - set(text) == {c.name for c in TAXONOMY.categories if c.audio}
    whole = [c for c in offered(TAXONOMY, audio=False) if c["whole"]]
    assert [(c["name"], c["severity"]) for c in whole] == [("Non-translation", "major")]
    _, v = first_item(db)
    assert [c["name"] for c in v.content["categories"]] == text
    assert v.content["severities"] == ["major", "minor", "neutral"] and v.content["max_errors"] == 5
    assert "system" not in json.dumps(v.content) and "score_labels" not in v.content


# -- the answer -------------------------------------------------------------------------------


def test_a_complete_answer_is_stored_with_its_mqm_score(db):
    p, v = first_item(db)
    t = v.content["target"]
    sent = [
        err(t, len(t) - 1, len(t), "Fluency/Punctuation", "minor"),
        err(t, 0, 1, "Fluency/Spelling", "minor"),
        err(t, 2, 7, "Accuracy/Mistranslation", "major"),
        {"start": len(t), "end": len(t), "text": "", "severity": "minor", "category": "Accuracy/Omission",
         "missing": True},
    ]  # fmt: skip
    assert submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(sent)}).saved
    row = protocol_rows.one(db, "mqm_answers", {"segment_row": int(v.item_id)})
    assert row["mqm"] == pytest.approx(1 + 5 + 0.1 + 1)  # spelling, mistranslation, punctuation, omission
    stored = json.loads(row["spans"])
    assert [(s["start"], s["end"], s["category"], s["severity"]) for s in stored] == [
        (0, 1, "Fluency/Spelling", "minor"),
        (2, 7, "Accuracy/Mistranslation", "major"),
        (len(t) - 1, len(t), "Fluency/Punctuation", "minor"),
        (len(t), len(t), "Accuracy/Omission", "minor"),
    ]
    assert all(s["text"] == t[s["start"] : s["end"]] for s in stored)
    assignment = db.one("SELECT * FROM assignments WHERE id = ?", [row["assignment_id"]])
    words = answer_words(db, assignment, {"spans": stored, "mqm": row["mqm"]})
    assert words.startswith("MQM 7.1; minor Fluency/Spelling 0-1 ") and words.endswith(
        "minor Accuracy/Omission [MISSING]"
    )
    # a double submit writes nothing more
    submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(sent)})
    assert db.scalar("SELECT COUNT(*) FROM mqm_answers") == 1


def test_bad_errors_are_refused_naming_them_and_nothing_is_stored(db):
    p, v = first_item(db)
    t = v.content["target"]
    words = [(i, i + 2) for i in range(0, 12, 2)]  # six spans side by side
    six = [err(t, a, b, "Fluency/Grammar") for a, b in words]
    whole = {"start": 0, "end": len(t), "text": t, "severity": "major", "category": "Non-translation"}
    cases = [
        (six, "6 errors marked; at most 5 per segment"),
        ([whole, err(t, 0, 2, "Style/Awkward")], "Non-translation replaces every other error"),
        ([{**whole, "end": 4, "text": t[:4]}], "Non-translation spans the whole output"),
        ([{**whole, "severity": "minor"}], "Non-translation is always major, not minor"),
        ([{**err(t, 0, 2, "Style/Awkward"), "category": None}], "span 0: pick its error category"),
        ([err(t, 0, 2, "Pronunciation/Emphasis")], "unknown category 'Pronunciation/Emphasis'"),  # text output
        ([err(t, 0, 2, "Style/Awkward", "critical")], "unknown severity 'critical'"),
        ([err(t, 0, 4, "Style/Awkward"), err(t, 2, 6, "Fluency/Grammar")], "overlaps span"),
    ]
    for spans, expected in cases:
        with pytest.raises(SubmissionError) as e:
            submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(spans)})
        assert expected in str(e.value), (spans, str(e.value))
        assert set(e.value.fields) == {"spans"}
    assert db.scalar("SELECT COUNT(*) FROM mqm_answers") == 0
    # five are accepted, and a Non-translation alone
    assert submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(six[:5])}).saved
    v2 = get_view(db, p.token, "mqm")
    t2 = v2.content["target"]
    whole2 = {"start": 0, "end": len(t2), "text": t2, "severity": "major", "category": "Non-translation"}
    assert submit(db, p.token, "mqm", v2.item_id, {"spans": json.dumps([whole2])}).saved
    assert [r["mqm"] for r in db.query("SELECT mqm FROM mqm_answers ORDER BY assignment_id")] == [5.0, 25.0]


def test_a_studys_critical_severity_is_weighted_as_it_says(tmp_path):
    text = (
        DEFAULT_PATH.read_text(encoding="utf-8")
        .replace('names = ["major", "minor", "neutral"]', 'names = ["critical", "major", "minor", "neutral"]')
        .replace("major = 5.0\n", "critical = 10.0\nmajor = 5.0\n")
    )
    folder = study_with(tmp_path, "mqm-critical", files={"tax.toml": text})
    toml = (folder / "study.toml").read_text().replace("hit_size = 3", 'hit_size = 3\ntaxonomy_file = "tax.toml"')
    (folder / "study.toml").write_text(toml)
    database = open_database(tmp_path / "crit.db", schemas=protocols.schemas())
    import_study(database, folder)
    (p,) = add_participants(database, "mqm-critical", "mqm", 1)
    v = get_view(database, p.token, "mqm")
    assert v.content["severities"] == ["critical", "major", "minor", "neutral"]
    t = v.content["target"]
    spans = [err(t, 0, 2, "Accuracy/Mistranslation", "critical"), err(t, 3, 5, "Style/Awkward", "neutral")]
    submit(database, p.token, "mqm", v.item_id, {"spans": json.dumps(spans)})
    assert database.scalar("SELECT mqm FROM mqm_answers") == 10.0  # critical 10 + neutral 0


# -- the weights (Freitag et al. 2021, section 3) -----------------------------------------------


def test_mqm_weights_on_hand_made_segments_against_a_written_out_sum():
    out = "Os bilhetes sao vendidos online ,"
    s = lambda a, b, cat, sev: Span.over(out, a, b, sev, cat)  # noqa: E731
    # the paper's weights: major 5, minor 1, neutral 0, minor Fluency/Punctuation 0.1 (major
    # punctuation keeps 5), Non-translation 25 ("equivalent to five Major errors")
    segments = {
        "mistranslation and two fluency slips": (
            [s(0, 2, "Accuracy/Mistranslation", "major"), s(3, 11, "Fluency/Spelling", "minor"),
             s(12, 15, "Fluency/Grammar", "minor"), s(32, 33, "Fluency/Punctuation", "minor")],
            5 + 1 + 1 + 0.1,
        ),
        "major punctuation": ([s(32, 33, "Fluency/Punctuation", "major")], 5),
        "neutral only": ([s(0, 2, "Style/Awkward", "neutral")], 0),
        "no errors": ([], 0),
        "non-translation": ([Span.over(out, 0, len(out), "major", "Non-translation")], 25),
        "five majors": ([s(a, a + 2, "Accuracy/Mistranslation", "major") for a in (0, 3, 12, 16, 25)], 5 * 5),
        "terminology and locale": (
            [s(0, 2, "Terminology/Inappropriate for context", "minor"),
             s(3, 11, "Locale convention/Date format", "major")],
            1 + 5,
        ),
    }  # fmt: skip
    for name, (spans, expected) in segments.items():
        assert mqm.check_mqm_spans(spans, out, TAXONOMY) == spans, name
        assert mqm.segment_score(spans, TAXONOMY.weights) == pytest.approx(expected), name
    # systems: the mean over segments of the mean over annotators, lower is better
    j = pd.DataFrame(
        [
            ("A", "s1", "r1", segments["no errors"][0]), ("A", "s1", "r2", segments["major punctuation"][0]),
            ("A", "s2", "r1", segments["neutral only"][0]),
            ("B", "s1", "r1", segments["non-translation"][0]), ("B", "s2", "r1", segments["five majors"][0]),
            ("B", "s2", "r2", segments["mistranslation and two fluency slips"][0]),
        ],
        columns=["system", "segment_id", "annotator", "spans"],
    )  # fmt: skip
    sy = mqm.system_scores(j, TAXONOMY.weights).set_index("system")
    assert sy.loc["A", "mqm"] == pytest.approx(((0 + 5) / 2 + 0) / 2)
    assert sy.loc["B", "mqm"] == pytest.approx((25 + (25 + 7.1) / 2) / 2)
    assert list(sy["rank"]) == [1, 2] and sy.index[0] == "A"


# -- the export and the analysis ----------------------------------------------------------------


def annotate_all(db, people):
    for k, p in enumerate(people):
        while True:
            v = get_view(db, p.token, "mqm")
            if v.status != "item":
                break
            t = v.content["target"]
            spans = [err(t, 0, 2, "Accuracy/Mistranslation", "major"), err(t, 3, 4, "Fluency/Punctuation", "minor")]
            submit(db, p.token, "mqm", v.item_id, {"spans": json.dumps(spans[: (k + len(t)) % 3])})


def test_export_has_the_scores_and_spans_and_analyze_ranks_the_systems(db, tmp_path):
    people = add_participants(db, STUDY, "mqm", 4)
    annotate_all(db, people)
    out = export_study(db, STUDY, tmp_path / "export")
    assert out.rows["mqm_answers"] == 12 and out.rows["mqm_segments"] == 6
    with open(out.folder / "mqm_answers.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "assignment_id", "participant", "hit", "segment_row", "doc_id", "segment_id", "system", "mqm", "spans",
        "n_major", "n_minor", "n_errors", "item_kind", "hit_qc", "active_seconds", "created_at",
    ]  # fmt: skip
    for r in rows:
        spans = json.loads(r["spans"])
        expected = sum(5 if s["severity"] == "major" else 0.1 for s in spans)  # the two kinds marked above
        assert float(r["mqm"]) == pytest.approx(expected)
        assert int(r["n_errors"]) == len(spans) == int(r["n_major"]) + int(r["n_minor"])
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert "`mqm_answers" in readme and "Non-translation spans the whole target" in readme
    args = argparse.Namespace(export=str(out.folder), study=None, out=str(tmp_path / "a1"), alpha=0.05, taxonomy=None)
    summary = mqm_analysis.run(args, None)
    assert summary.startswith("MQM: 12 judgments by 4 annotators, 2 systems (lower is better")
    stored = mqm_analysis.run(
        argparse.Namespace(export=None, study=STUDY, out=str(tmp_path / "a2"), alpha=0.05, taxonomy=None), lambda: db
    )
    systems_of = lambda text: text.splitlines()[1:3]  # noqa: E731 (the annotators: pseudonyms vs ids)
    assert systems_of(summary) == systems_of(stored) and "annotators (MQM mean, sd):" in summary
    # the systems' scores against pandas on the exported rows: per segment the mean, then the mean
    frame = pd.DataFrame(rows).astype({"mqm": float})
    by_hand = frame.groupby(["system", "doc_id", "segment_id"])["mqm"].mean().groupby("system").mean()
    systems = pd.read_csv(tmp_path / "a1" / "systems.csv").set_index("system")
    for system, value in by_hand.items():
        assert systems.loc[system, "mqm"] == pytest.approx(value)
    assert list(systems.sort_values("rank").index) == list(by_hand.sort_values().index)
    annotators = pd.read_csv(tmp_path / "a1" / "annotators.csv")
    assert sorted(annotators["n_judgments"]) == [3, 3, 3, 3]
    judgments = pd.read_csv(tmp_path / "a1" / "judgments.csv")
    for _, g in judgments.groupby("annotator"):  # z over each annotator's scores, sample sd
        if g["mqm"].std(ddof=1) > 0:
            assert list(g["z"]) == pytest.approx(list((g["mqm"] - g["mqm"].mean()) / g["mqm"].std(ddof=1)))
    categories = pd.read_csv(tmp_path / "a1" / "categories.csv")
    assert categories["n_errors"].sum() == sum(int(r["n_errors"]) for r in rows)
    # an export analysed with other weights is refused, naming the answers that differ
    other = tmp_path / "other.toml"
    other.write_text(DEFAULT_PATH.read_text(encoding="utf-8").replace("major = 5.0", "major = 4.0"))
    if any(int(r["n_major"]) for r in rows):
        with pytest.raises(ValueError, match="MQM scores differ from their spans"):
            mqm_analysis.run(argparse.Namespace(**{**vars(args), "taxonomy": str(other)}), None)


def test_analyze_mqm_is_a_command_of_the_app():
    args = cli.build_parser().parse_args(["analyze", "mqm", "--study", STUDY, "--out", "x"])
    assert args.analyze is mqm_analysis.run


def test_an_annotators_path_scans_no_study_sized_table(db):
    add_participants(db, STUDY, "mqm", 2)  # both HITs held
    with Trace(db) as t:
        (p,) = add_participants(db, STUDY, "mqm", 1)
    statements = list(t.sql)
    while True:  # a whole HIT: views, a refusal, submits (the study's taxonomy read by its id)
        with Trace(db) as t:
            v = get_view(db, p.token, "mqm")
            if v.status != "item":
                break
            with pytest.raises(SubmissionError):
                submit(db, p.token, "mqm", v.item_id, {"spans": "[{}]"})
            submit(db, p.token, "mqm", v.item_id, {"spans": "[]"})
        statements += t.sql
    assert any("mqm_answers" in s for s in statements) and any("mqm_takers" in s for s in statements)
    assert scans(db, statements) == []
