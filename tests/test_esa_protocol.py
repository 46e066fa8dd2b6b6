"""Issue 53, point 1: Error Span Annotation (services/esa/protocol.py) as a built-in protocol on
the plugin hooks, in process: the [esa] section's checks, the segments file read into its own
table, HITs of whole documents, one HIT per annotator (the least held), an item's content with its
document's context, spans checked against the exact output (refusals naming the span), the
answer stored with its offsets, the admin's words, the export with its data dictionary, the
analysis, and a participant's path that scans no study-sized table."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from pathlib import Path

import pytest

import cli
from services.common import protocols
from services.esa import corpus, study_analysis
from services.esa.protocol import answer_words, check
from services.participation.items import get_view
from services.participation.submissions import SubmissionError, submit
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.export import export_study
from services.study.files import StudyValidationError
from storage import open_database, protocol_rows
from tests.helpers.sql_trace import Trace, scans

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "esa"
STUDY = "esa-example"


@pytest.fixture
def db(tmp_path):
    database = open_database(tmp_path / "esa.db", schemas=protocols.schemas())
    import_study(database, EXAMPLE)
    return database


def segments(db) -> list[dict]:
    return db.query("SELECT * FROM esa_segments WHERE study_id = ? ORDER BY hit, pos", [STUDY])


def spans_json(*spans) -> str:
    return json.dumps(list(spans))


def span(target: str, start: int, end: int, severity: str = "minor") -> dict:
    return {"start": start, "end": end, "text": target[start:end], "severity": severity, "missing": False}


def omission(target: str, severity: str = "major") -> dict:
    return {"start": len(target), "end": len(target), "text": "", "severity": severity, "missing": True}


# -- the section, the corpus and its HITs -----------------------------------------------------


def test_registered_after_the_others_with_its_own_tables():
    names = list(protocols.names())  # MQM shares its package (services/esa/mqm_protocol.py)
    assert names[names.index("esa") + 1] == "mqm"
    assert protocols.BUILTIN[protocols.BUILTIN.index("services.esa.protocol") + 1] == "services.esa.mqm_protocol"
    sized = {t.name for t in protocols.protocol("esa").tables if t.study_sized}
    assert sized == {"esa_segments", "esa_takers", "esa_answers", "esa_prefill", "esa_qc"}
    assert protocols.role_label("esa") == "ESA annotator"
    scripts, styles = protocols.page_assets("esa")
    assert [p.name for p in scripts] == ["wavesurfer.min.js", "regions.min.js", "esa.js"] and [
        p.name for p in styles
    ] == ["esa.css"]


def test_the_sections_checks_name_each_mistake():
    good = {"segments": "s.csv", "hit_size": 100, "context": "all", "score_labels": {"0": "x"}, "instructions": ""}
    assert check(good) == []
    assert check({**good, "context": 2}) == []
    bad = check({**good, "hit_size": 0, "context": "some", "score_labels": {"120": "", "a": "b"}, "instructions": None})
    fields = [k for k, _ in bad]
    assert fields.count("esa.score_labels") == 3  # 120 out of range, its label empty, "a" no score
    assert {"esa.hit_size", "esa.context", "esa.instructions"} <= set(fields)


def test_import_counts_the_corpus_and_hits_keep_documents_together(db):
    rows = segments(db)
    assert len(rows) == 10
    assert corpus.count(db, STUDY) == {"esa_segments": 10, "esa_hits": 2}
    hits_of_doc: dict[tuple[str, str], set[int]] = {}
    for r in rows:
        hits_of_doc.setdefault((r["doc_id"], r["system"]), set()).add(r["hit"])
    assert len(hits_of_doc) == 4 and all(len(h) == 1 for h in hits_of_doc.values())
    # each document's segments in its order, together within its HIT
    for hit in (0, 1):
        seq = [(r["doc_id"], r["system"], r["doc_pos"]) for r in rows if r["hit"] == hit]
        docs = [d[:2] for d in seq]
        assert docs == sorted(docs, key=docs.index)  # contiguous
        for d in set(docs):
            assert [p for *k, p in seq if tuple(k) == d] == list(range(docs.count(d)))
    again = import_study(db, EXAMPLE)
    assert again.status == "unchanged" and again.counts["esa_segments"] == 10


def test_hits_fill_to_the_size_and_never_split_a_document():
    segs = [{"doc_id": f"d{d}", "system": "s"} for d, n in enumerate([3, 1, 5, 2, 2, 7, 1]) for _ in range(n)]
    for size in (1, 2, 4, 6, 100):
        hits = corpus.build_hits(segs, size, seed=5)
        assert sorted(r for h in hits for r in h) == list(range(len(segs)))
        for h in hits:  # a document's segments side by side in its HIT
            changes = sum(segs[a]["doc_id"] != segs[b]["doc_id"] for a, b in zip(h, h[1:]))
            assert changes == len({segs[r]["doc_id"] for r in h}) - 1
        docs = corpus.documents(segs)
        for doc in docs:
            assert sum(set(doc) <= set(h) for h in hits) == 1
        for h in hits[:-1]:  # a HIT closes once it holds hit_size, by its last document at most
            last = next(doc for doc in docs if h[-1] in doc)
            assert size <= len(h) < size + len(last)
    assert corpus.build_hits(segs, 4, seed=5) == corpus.build_hits(segs, 4, seed=5)
    assert corpus.build_hits(segs, 4, seed=5) != corpus.build_hits(segs, 4, seed=6)


def test_a_segments_file_with_mistakes_is_refused_naming_them(tmp_path):
    folder = tmp_path / "bad"
    shutil.copytree(EXAMPLE, folder)
    with open(folder / "esa_segments.csv", "a", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(
            [["news-1", "1", "sysA", "Again.", "De novo.", "en", "pt"], ["x", "1", "sysA", "", "y", "", ""]]
        )
    database = open_database(tmp_path / "bad.db", schemas=protocols.schemas())
    with pytest.raises(StudyValidationError) as e:
        import_study(database, folder)
    text = str(e.value)
    assert "duplicate output of system 'sysA' for segment '1' of 'news-1'" in text
    assert "source" in text and "must not be empty" in text


# -- the queue, the item, the answer ----------------------------------------------------------


def test_each_annotator_gets_the_least_held_hit_in_its_order(db):
    people = add_participants(db, STUDY, "esa", 3)
    held = [r["hit"] for r in db.query("SELECT hit FROM esa_takers ORDER BY participant_id")]
    assert held == [0, 1, 0]
    queue = db.query(
        "SELECT item_id, position FROM assignments WHERE participant_id = ? ORDER BY position", [people[1].id]
    )
    assert [int(q["item_id"]) for q in queue] == [r["segment_row"] for r in segments(db) if r["hit"] == 1]


def test_an_item_shows_its_document_around_it(db):
    (p,) = add_participants(db, STUDY, "esa", 1)
    v = get_view(db, p.token, "esa")
    first = segments(db)[0]
    assert v.status == "item" and v.content["target"] == first["target"]
    assert v.content["before"] == [] and v.content["doc_pos"] == 1
    assert len(v.content["after"]) == v.content["doc_len"] - 1
    labels = [tuple(x) for x in v.content["labels"]]
    assert labels == [(0, "Broken/poor"), (33, "Flawed"), (66, "Good"), (100, "Perfect")]
    assert "system" not in json.dumps(v.content)  # the annotator is not told which system


def test_context_limits_the_neighbours(tmp_path):
    folder = tmp_path / "ctx"
    shutil.copytree(EXAMPLE, folder)
    toml = (folder / "study.toml").read_text().replace("hit_size = 4", "hit_size = 4\ncontext = 1")
    (folder / "study.toml").write_text(toml.replace('id = "esa-example"', 'id = "esa-ctx"'))
    database = open_database(tmp_path / "ctx.db", schemas=protocols.schemas())
    import_study(database, folder)
    (p,) = add_participants(database, "esa-ctx", "esa", 1)
    seen = []
    while True:
        v = get_view(database, p.token, "esa")
        if v.status != "item":
            break
        seen.append((len(v.content["before"]), len(v.content["after"]), v.content["doc_pos"], v.content["doc_len"]))
        submit(database, p.token, "esa", v.item_id, {"spans": "[]", "score": 80})
    assert seen and all(b <= 1 and a <= 1 for b, a, _, _ in seen)
    assert any(b == 1 and a == 1 for b, a, _, _ in seen)  # a middle segment of a 3-segment document


def test_bad_spans_are_refused_naming_the_span_and_nothing_is_saved(db):
    (p,) = add_participants(db, STUDY, "esa", 1)
    v = get_view(db, p.token, "esa")
    t = v.content["target"]
    cases = [
        (spans_json({**span(t, 0, 3), "text": "zz"}), "its text does not match"),
        (spans_json(span(t, 0, 5), span(t, 3, 8)), "overlaps span"),
        (spans_json(omission(t), omission(t, "minor")), "more than one [MISSING] span"),
        (spans_json({"start": 0, "end": len(t) + 4, "text": t, "severity": "minor"}), "offsets out of range"),
        (spans_json(span(t, 0, 3, "critical")), "unknown severity 'critical'"),
        (spans_json({**omission(t), "start": 2}), "an omission must sit at"),
        (spans_json({"start": "a", "end": 2}), "span 0: not a start and an end"),
        ("[not json", "could not be read"),
    ]
    for raw, words in cases:
        with pytest.raises(SubmissionError) as e:
            submit(db, p.token, "esa", v.item_id, {"spans": raw, "score": 50})
        assert words in str(e.value), (raw, str(e.value))
        assert set(e.value.fields) == {"spans"}
    with pytest.raises(SubmissionError) as e:  # a slider not moved, and spans wrong: both at once
        submit(db, p.token, "esa", v.item_id, {"spans": spans_json(span(t, 0, 5), span(t, 4, 6)), "score": None})
    assert set(e.value.fields) == {"spans", "score"}
    assert "span 0 (0-5" in e.value.fields["spans"] and "Move the slider" in e.value.fields["score"]
    assert db.scalar("SELECT COUNT(*) FROM esa_answers") == 0


def test_good_spans_are_stored_with_their_offsets_and_said_in_words(db):
    (p,) = add_participants(db, STUDY, "esa", 1)
    v = get_view(db, p.token, "esa")
    t = v.content["target"]
    # touching spans are allowed; the omission goes last, whatever the order sent
    sent = [omission(t, "minor"), span(t, 4, 9, "major"), span(t, 0, 4)]
    res = submit(db, p.token, "esa", v.item_id, {"spans": spans_json(*sent), "score": 62.6})
    assert res.saved
    row = protocol_rows.one(db, "esa_answers", {"assignment_id": db.scalar("SELECT MIN(id) FROM assignments")})
    stored = json.loads(row["spans"])
    assert [(s["start"], s["end"], s["missing"]) for s in stored] == [
        (0, 4, False),
        (4, 9, False),
        (len(t), len(t), True),
    ]
    assert all(s["text"] == t[s["start"] : s["end"]] for s in stored)
    assert row["score"] == 63 and row["segment_row"] == int(v.item_id)
    assignment = db.one("SELECT * FROM assignments WHERE id = ?", [row["assignment_id"]])
    words = answer_words(db, assignment, {"spans": stored, "score": 63})
    assert words == f"score 63; minor 0-4 {json.dumps(t[:4])}, major 4-9 {json.dumps(t[4:9])}, minor [MISSING]"


def test_non_ascii_offsets_count_code_points(tmp_path):
    folder = tmp_path / "emoji"
    shutil.copytree(EXAMPLE, folder)
    (folder / "esa_segments.csv").write_text(
        "doc_id,segment_id,system,source,target\nd,1,s,Hi 👋 there,Olá 👋 ali açúcar\n", encoding="utf-8"
    )
    database = open_database(tmp_path / "e.db", schemas=protocols.schemas())
    import_study(database, folder)
    (p,) = add_participants(database, STUDY, "esa", 1)
    v = get_view(database, p.token, "esa")
    t = v.content["target"]
    assert t[4] == "👋"
    submit(database, p.token, "esa", v.item_id, {"spans": spans_json(span(t, 4, 5), span(t, 10, 16)), "score": 30})
    stored = json.loads(database.scalar("SELECT spans FROM esa_answers"))
    assert [s["text"] for s in stored] == ["👋", "açúcar"]


# -- the export, the analysis, the participant's path -----------------------------------------


def annotate_all(db, people, score_of=lambda i: 50 + i % 40):
    for p in people:
        i = 0
        while True:
            v = get_view(db, p.token, "esa")
            if v.status != "item":
                break
            t = v.content["target"]
            spans = [span(t, 0, min(3, len(t)), "major")] if i % 3 == 0 else []
            submit(db, p.token, "esa", v.item_id, {"spans": spans_json(*spans), "score": score_of(i)})
            i += 1


def test_export_writes_both_tables_with_their_dictionary_and_analyze_reads_it(db, tmp_path):
    people = add_participants(db, STUDY, "esa", 4)
    annotate_all(db, people)
    out = export_study(db, STUDY, tmp_path / "export")
    assert out.rows["esa_answers"] == 20 and out.rows["esa_segments"] == 10
    with open(out.folder / "esa_answers.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "assignment_id", "participant", "hit", "segment_row", "doc_id", "segment_id", "system", "score", "spans",
        "n_minor", "n_major", "omission", "prefill", "n_prefilled", "prefill_kept", "prefill_severity",
        "prefill_edited", "prefill_deleted", "n_added", "item_kind", "hit_qc", "active_seconds", "created_at",
    ]  # fmt: skip
    assert {r["participant"] for r in rows} and not any(r["participant"].isdigit() for r in rows)  # pseudonyms
    segs = {r["segment_row"]: r for r in csv.DictReader(open(out.folder / "esa_segments.csv", encoding="utf-8"))}
    for r in rows:
        for s in json.loads(r["spans"]):
            target = segs[r["segment_row"]]["target"]
            assert target[s["start"] : s["end"]] == s["text"]
    readme = (out.folder / "README.md").read_text(encoding="utf-8")
    assert "`esa_answers" in readme and "`esa_segments" in readme and "end exclusive" in readme
    # app.py analyze esa, on the export and on the stored study: the same ranking
    summary = study_analysis.run(
        argparse.Namespace(export=str(out.folder), study=None, out=str(tmp_path / "a1"), alpha=0.05, by="mean"), None
    )
    assert "20 judgments by 4 annotators, 2 systems" in summary
    stored = study_analysis.run(
        argparse.Namespace(export=None, study=STUDY, out=str(tmp_path / "a2"), alpha=0.05, by="mean"), lambda: db
    )
    assert summary.splitlines()[1:] == stored.splitlines()[1:]
    systems = list(csv.DictReader(open(tmp_path / "a1" / "systems.csv", encoding="utf-8")))
    assert {s["system"] for s in systems} == {"sysA", "sysB"}
    severities = list(csv.DictReader(open(tmp_path / "a1" / "severities.csv", encoding="utf-8")))
    assert sum(int(s["major"]) for s in severities) == sum(int(r["n_major"]) for r in rows) > 0


def test_analyze_esa_is_a_command_of_the_app():
    parser = cli.build_parser()
    args = parser.parse_args(["analyze", "esa", "--study", STUDY, "--out", "x"])
    assert args.analyze is study_analysis.run


def test_an_annotators_path_scans_no_study_sized_table(db):
    add_participants(db, STUDY, "esa", 3)  # HITs already held
    with Trace(db) as t:
        (p,) = add_participants(db, STUDY, "esa", 1)
    statements = list(t.sql)
    assert any("esa_takers" in s for s in statements)
    for k in range(5):  # a whole HIT: views, submits, a refusal, the last item
        with Trace(db) as t:
            v = get_view(db, p.token, "esa")
            if v.status != "item":
                break
            if k == 0:
                with pytest.raises(SubmissionError):
                    submit(db, p.token, "esa", v.item_id, {"spans": "[]", "score": None})
            submit(db, p.token, "esa", v.item_id, {"spans": "[]", "score": 70})
        statements += t.sql
    assert any("esa_answers" in s for s in statements) and any("esa_segments" in s for s in statements)
    assert scans(db, statements) == []
    # the check can fail on these tables: a read of the whole study's segments is a scan
    assert scans(db, ["SELECT * FROM esa_segments WHERE study_id = 'esa-example'"])
