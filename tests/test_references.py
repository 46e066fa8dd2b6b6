"""Human reference translations apart from the participant flow (usability.references):
the references file is validated like the other corpus files, imported into its own table
(replaced on re-import), read by the reference-based metrics (chrF, BLEU; several references
per starter as one multi-reference cell), never an item for a receiver or validator and never
a system; a study without references for a starter falls back to a listed `human` system."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import sacrebleu

from harness.demo import DEMO_ASSETS, demo_with_exchanges
from services.metrics import exchange as exchange_metrics
from services.participation.items import get_view
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError, load_study
from storage import studies
from storage.usability import corpus as usability_corpus
from storage.usability import exchange_metrics as metric_store
from storage.usability import exchanges, recordings

HYPOTHESIS = (
    "Olá, bom dia. Preciso de ver um médico hoje. A minha filha Sofia, de sete anos, tem febre de 39 "
    "graus há três dias e dou-lhe 250 miligramas de paracetamol."
)
OTHER_REFERENCE = (
    "Bom dia. Queria ver um médico hoje, se possível: a Sofia, a minha filha de sete anos, tem 39 "
    "graus de febre há três dias. Dou-lhe paracetamol, 250 miligramas de seis em seis horas."
)


# -- helpers -------------------------------------------------------------------------------------


@pytest.fixture
def study(tmp_path) -> Path:
    """A private copy of the bundled demo: references.csv, no exchanges, no human system."""
    dest = tmp_path / "study"
    shutil.copytree(DEMO_ASSETS, dest)
    return dest


def read_rows(folder: Path, name: str = "references.csv") -> list[list[str]]:
    with open(folder / name, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def write_rows(folder: Path, rows: list[list[str]], name: str = "references.csv") -> None:
    with open(folder / name, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def reference_of(folder: Path, starter: str) -> str:
    return next(r[1] for r in read_rows(folder)[1:] if r[0] == starter)


def edit_toml(folder: Path, old: str, new: str) -> None:
    path = folder / "study.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def add_exchange(db, starter: str, system: str, text: str, study_id: str = "demo") -> int:
    """An exchange with its translation, as the pipeline stores one (without the models)."""
    with db.write() as w:
        eid = exchanges.insert_exchange(w, study_id, starter, system, None, import_key=f"test:{starter}:{system}")
        recordings.insert_translation(w, eid, system, text)
    return eid


def errors_of(folder: Path):
    with pytest.raises(StudyValidationError) as exc:
        load_study(folder)
    return exc.value.errors


# -- the references file -------------------------------------------------------------------------


def _dup_with_translator(d):
    rows = read_rows(d)
    write_rows(d, [rows[0] + ["translator"]] + [r + ["ana"] for r in rows[1:]] + [rows[1] + ["ana"]])


def _jsonl_unknown_field(d):
    (d / "references.jsonl").write_text(
        json.dumps({"starter_id": "s01", "translation": "x", "system": "h"}) + "\n", encoding="utf-8"
    )
    edit_toml(d, 'references = "references.csv"', 'references = "references.jsonl"')


CASES = [
    pytest.param(
        lambda d: write_rows(d, read_rows(d) + [["s99", "Olá."]]),
        "references.csv",
        14,
        "starter_id",
        "unknown starter 's99'",
        id="unknown-starter",
    ),
    pytest.param(
        lambda d: write_rows(d, read_rows(d)[:3] + [["s03", " "]] + read_rows(d)[4:]),
        "references.csv",
        4,
        "translation",
        "must not be empty",
        id="empty-translation",
    ),
    pytest.param(
        lambda d: write_rows(d, read_rows(d) + [read_rows(d)[2]]),
        "references.csv",
        14,
        "translator",
        "duplicate reference for starter 's02'",
        id="duplicate-without-translator",
    ),
    pytest.param(
        _dup_with_translator,
        "references.csv",
        14,
        "translator",
        "duplicate reference for starter 's01' by translator 'ana'",
        id="duplicate-translator",
    ),
    pytest.param(
        lambda d: write_rows(d, [["starter_id", "text"]] + read_rows(d)[1:]),
        "references.csv",
        1,
        "translation",
        "missing column",
        id="missing-column",
    ),
    pytest.param(
        lambda d: write_rows(d, [r + ["x"] for r in read_rows(d)]),
        "references.csv",
        1,
        "x",
        "unknown column",
        id="unknown-column",
    ),
    pytest.param(
        lambda d: write_rows(d, read_rows(d)[:1]), "references.csv", None, None, "has no references", id="no-rows"
    ),
    pytest.param(
        lambda d: (d / "references.csv").unlink(), "references.csv", None, None, "file not found", id="file-missing"
    ),
    pytest.param(
        lambda d: edit_toml(d, 'references = "references.csv"', 'references = "../references.csv"'),
        "study.toml",
        None,
        "usability.references",
        "outside the study folder",
        id="outside-folder",
    ),
    pytest.param(_jsonl_unknown_field, "references.jsonl", 1, "system", "unknown field", id="jsonl-unknown-field"),
]


@pytest.mark.parametrize("mutate, file, row, field, message", CASES)
def test_invalid_references_name_file_row_and_field(database, study, mutate, file, row, field, message):
    mutate(study)
    errors = errors_of(study)
    hits = [e for e in errors if (e.file, e.row, e.field) == (file, row, field)]
    assert hits and message in hits[0].message, "\n".join(map(str, errors))
    with pytest.raises(StudyValidationError):
        import_study(database, study)
    assert database.scalar("SELECT COUNT(*) FROM studies") == 0
    assert database.scalar("SELECT COUNT(*) FROM reference_translations") == 0


def test_the_references_key_is_optional(database, study):
    edit_toml(study, 'references = "references.csv"\n', "")
    (study / "references.csv").unlink()
    result = import_study(database, study)
    assert result.counts["references"] == 0
    assert usability_corpus.reference_translations(database, "demo") == []


def test_references_import_into_their_own_table(database, study):
    result = import_study(database, study)
    assert result.status == "created" and result.counts["references"] == 12
    rows = usability_corpus.reference_translations(database, "demo")
    assert [r["starter_id"] for r in rows] == [f"s{i:02d}" for i in range(1, 13)]
    assert all(r["idx"] == 1 and r["translator"] == "" for r in rows)
    assert rows[0]["text"] == reference_of(study, "s01")
    # not an exchange, not a translation, not a system
    assert database.scalar("SELECT COUNT(*) FROM exchanges") == 0
    assert database.scalar("SELECT COUNT(*) FROM translations") == 0
    assert [s["id"] for s in studies.systems(database, "demo")] == ["cascade-beam", "cascade-greedy"]


def test_jsonl_references_with_several_per_starter(database, study):
    lines = [
        {"starter_id": "s01", "translation": "Primeira.", "translator": "ana"},
        {"starter_id": "s01", "translation": "Segunda.", "translator": "rui"},
        {"starter_id": "s02", "translation": "Outra."},
    ]
    (study / "references.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    edit_toml(study, 'references = "references.csv"', 'references = "references.jsonl"')
    import_study(database, study)
    rows = usability_corpus.reference_translations(database, "demo")
    assert [(r["starter_id"], r["idx"], r["translator"], r["text"]) for r in rows] == [
        ("s01", 1, "ana", "Primeira."),
        ("s01", 2, "rui", "Segunda."),
        ("s02", 1, "", "Outra."),
    ]


def test_reimport_replaces_the_references(database, study):
    import_study(database, study)
    assert import_study(database, study).status == "unchanged"
    rows = read_rows(study)
    write_rows(study, [rows[0]] + [["s01", "Nova referência."]] + rows[2:5])
    result = import_study(database, study)
    assert result.status == "updated" and result.counts["references"] == 4
    got = {r["starter_id"]: r["text"] for r in usability_corpus.reference_translations(database, "demo")}
    assert got == {"s01": "Nova referência.", "s02": rows[2][1], "s03": rows[3][1], "s04": rows[4][1]}
    # without the key, the study has none left
    edit_toml(study, 'references = "references.csv"\n', "")
    assert import_study(database, study).counts["references"] == 0
    assert database.scalar("SELECT COUNT(*) FROM reference_translations") == 0


def test_reimport_keeps_other_studies_references(database, study, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(study, other)
    edit_toml(other, 'id = "demo"', 'id = "other"')
    import_study(database, other)
    import_study(database, study)
    write_rows(study, read_rows(study)[:2])
    import_study(database, study)
    assert len(usability_corpus.reference_translations(database, "demo")) == 1
    assert len(usability_corpus.reference_translations(database, "other")) == 12


# -- the metrics read them -----------------------------------------------------------------------


def test_chrf_and_bleu_of_an_exchange_use_the_reference(database, study):
    import_study(database, study)
    ref = reference_of(study, "s01")
    eid = add_exchange(database, "s01", "cascade-beam", HYPOTHESIS)
    assert metric_store.reference_translation(database, "demo", "s01", "cascade-beam") == ref
    got = exchange_metrics.score_exchange(database, eid, names=["chrf", "bleu"])
    assert got["chrf"] == pytest.approx(sacrebleu.sentence_chrf(HYPOTHESIS, [ref]).score)
    assert got["bleu"] == pytest.approx(sacrebleu.sentence_bleu(HYPOTHESIS, [ref]).score)
    assert 0 < got["chrf"] < 100
    stored = {r["metric"]: r["score"] for r in metric_store.exchange_metric_rows(database, "demo")}
    assert stored == pytest.approx(got)


def test_several_references_are_one_multi_reference_cell(database, study):
    rows = read_rows(study)
    write_rows(
        study,
        [rows[0] + ["translator"]]
        + [rows[1] + ["ana"], ["s01", OTHER_REFERENCE, "rui"]]
        + [r + [""] for r in rows[2:]],
    )
    import_study(database, study)
    refs = [rows[1][1], OTHER_REFERENCE]
    assert metric_store.reference_translation(database, "demo", "s01", "cascade-beam") == refs
    assert metric_store.reference_translation(database, "demo", "s02", "cascade-beam") == rows[2][1]
    eid = add_exchange(database, "s01", "cascade-beam", HYPOTHESIS)
    got = exchange_metrics.score_exchange(database, eid, names=["chrf", "bleu"])
    assert got["chrf"] == pytest.approx(sacrebleu.sentence_chrf(HYPOTHESIS, refs).score)
    assert got["bleu"] == pytest.approx(sacrebleu.sentence_bleu(HYPOTHESIS, refs).score)
    # a second reference changes the score: it is read
    assert got["chrf"] != pytest.approx(sacrebleu.sentence_chrf(HYPOTHESIS, refs[:1]).score)


def test_without_references_a_listed_human_system_is_the_reference(database, tmp_path):
    folder = demo_with_exchanges(tmp_path / "with-human")  # no references.csv
    import_study(database, folder)
    human = database.scalar(
        "SELECT t.text FROM exchanges e JOIN translations t ON t.exchange_id = e.id "
        "WHERE e.starter_id = 's01' AND e.system_id = 'human-reference'"
    )
    assert metric_store.reference_translation(database, "demo", "s01", "cascade-beam") == human
    # the human system's own exchange has no other reference
    assert metric_store.reference_translation(database, "demo", "s01", "human-reference") is None
    eid = add_exchange(database, "s01", "cascade-beam", HYPOTHESIS)
    got = exchange_metrics.score_exchange(database, eid, names=["chrf"])
    assert got["chrf"] == pytest.approx(sacrebleu.sentence_chrf(HYPOTHESIS, [human]).score)


def test_references_come_first_and_the_human_system_fills_the_gaps(database, tmp_path):
    folder = demo_with_exchanges(tmp_path / "both", keep_references=True)
    rows = read_rows(folder)
    write_rows(folder, [rows[0], ["s01", OTHER_REFERENCE]])  # s01 only
    import_study(database, folder)
    assert metric_store.reference_translation(database, "demo", "s01", "cascade-beam") == OTHER_REFERENCE
    assert metric_store.reference_translation(database, "demo", "s01", "human-reference") == OTHER_REFERENCE
    human_s02 = database.scalar(
        "SELECT t.text FROM exchanges e JOIN translations t ON t.exchange_id = e.id "
        "WHERE e.starter_id = 's02' AND e.system_id = 'human-reference'"
    )
    assert metric_store.reference_translation(database, "demo", "s02", "cascade-beam") == human_s02


def test_no_reference_no_reference_based_score(database, study):
    edit_toml(study, 'references = "references.csv"\n', "")
    import_study(database, study)
    eid = add_exchange(database, "s01", "cascade-beam", HYPOTHESIS)
    assert metric_store.reference_translation(database, "demo", "s01", "cascade-beam") is None
    assert exchange_metrics.score_exchange(database, eid, names=["chrf", "bleu"]) == {}


# -- never a participant item --------------------------------------------------------------------


def test_receivers_and_validators_never_get_references(database, study, tmp_path):
    import_study(database, study)
    people = [add_participants(database, "demo", role, 2)[0] for role in ("receiver", "validator")]
    for person, tab in zip(people, ("receiver", "validator")):
        view = get_view(database, person.token, tab, media_dir=tmp_path / "media")
        assert view.status == "waiting", (tab, view)
    assert database.scalar("SELECT COUNT(*) FROM assignments WHERE phase IN ('receive', 'validate')") == 0
    assert database.scalar("SELECT COUNT(*) FROM exchanges") == 0
    texts = {r["text"] for r in usability_corpus.reference_translations(database, "demo")}
    assert not texts & {r["text"] for r in database.query("SELECT text FROM translations")}
