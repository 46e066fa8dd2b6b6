"""Study folder validation (services.study.files) and import (services.setup.importer).

Every test works on its own copy of the demo study, a valid study, and mutates it: the copy
(tests/conftest.py demo_with_exchanges) also lists a `human` system with imported exchanges,
so the exchanges file is checked too. tests/test_references.py checks the references file.
CSV rows are numbered as a spreadsheet shows them: the header is row 1, so the first data
row is row 2; JSONL rows are line numbers.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from harness.demo import DEMO_ASSETS as DEMO
from harness.demo import demo_with_exchanges
from services.setup.enrolment import add_participants
from services.setup.importer import import_study
from services.study.files import StudyValidationError, load_study
from storage.db import open_database

ALL_TABLES = (
    "studies",
    "systems",
    "starters",
    "questions",
    "participants",
    "exchanges",
    "assignments",
    "recordings",
    "translations",
    "answers",
    "validations",
    "validation_marks",
    "surveys",
    "da_segments",
    "da_judgments",
    "sd_sentences",
    "sd_pairs",
    "sd_ratings",
    "jobs",
    "events",
    "da_hits",
    "da_hit_items",
    "da_feedback",
    "reference_translations",
)


# -- fixtures and helpers ------------------------------------------------------------------


@pytest.fixture
def study(tmp_path) -> Path:
    """A private, mutable copy of the demo study, with exchanges of a human system and references."""
    return demo_with_exchanges(tmp_path / "study", keep_references=True)


@pytest.fixture(scope="module")
def migrated_template(tmp_path_factory) -> Path:
    """A freshly migrated database file, copied for each test (faster than migrating each time)."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    d = open_database(path, journal_mode="delete")
    d.close()
    return path


@pytest.fixture
def database(tmp_path, monkeypatch, migrated_template):
    monkeypatch.delenv("SPACE_ID", raising=False)
    path = tmp_path / "db" / "test.db"
    path.parent.mkdir()
    shutil.copy(migrated_template, path)
    d = open_database(path)
    yield d
    d.close()


def snapshot(database) -> dict[str, int]:
    return {t: database.scalar(f"SELECT COUNT(*) FROM {t}") for t in ALL_TABLES}


def read_csv(folder: Path, name: str) -> list[list[str]]:
    with open(folder / name, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def write_csv(folder: Path, name: str, rows: list[list[str]]) -> None:
    with open(folder / name, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def set_cell(folder: Path, name: str, row: int, column: str, value: str) -> None:
    """Set a cell; `row` is the spreadsheet row number (first data row = 2)."""
    rows = read_csv(folder, name)
    rows[row - 1][rows[0].index(column)] = value
    write_csv(folder, name, rows)


def get_cell(folder: Path, name: str, row: int, column: str) -> str:
    rows = read_csv(folder, name)
    return rows[row - 1][rows[0].index(column)]


def append_copy_of_row(folder: Path, name: str, row: int) -> None:
    rows = read_csv(folder, name)
    rows.append(list(rows[row - 1]))
    write_csv(folder, name, rows)


def drop_column(folder: Path, name: str, column: str) -> None:
    rows = read_csv(folder, name)
    i = rows[0].index(column)
    write_csv(folder, name, [r[:i] + r[i + 1 :] for r in rows])


def add_column(folder: Path, name: str, column: str, value: str = "x") -> None:
    rows = read_csv(folder, name)
    write_csv(folder, name, [rows[0] + [column]] + [r + [value] for r in rows[1:]])


def keep_rows(folder: Path, name: str, keep) -> None:
    rows = read_csv(folder, name)
    write_csv(folder, name, [rows[0]] + [r for r in rows[1:] if keep(dict(zip(rows[0], r)))])


def edit_toml(folder: Path, old: str, new: str, count: int = 1) -> None:
    path = folder / "study.toml"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= count, f"{old!r} not in study.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")


def append_toml(folder: Path, extra: str) -> None:
    path = folder / "study.toml"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + extra + "\n", encoding="utf-8")


def cut_toml_section(folder: Path, header: str) -> None:
    """Remove a [section] (up to the next top-level table) from study.toml."""
    path = folder / "study.toml"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        if line.startswith("["):
            skipping = line.strip() == header
        if not skipping:
            out.append(line)
    path.write_text("".join(out), encoding="utf-8")


def words(n: int, first: str = "Sofia") -> str:
    return " ".join([first] + ["word"] * (n - 1))


def starters_to_jsonl(folder: Path, name: str = "starters.jsonl") -> list[dict]:
    rows = read_csv(folder, "starters.csv")
    objs = []
    for r in rows[1:]:
        o = dict(zip(rows[0], r))
        o["key_spans"] = [s.strip() for s in o["key_spans"].split("|") if s.strip()]
        objs.append(o)
    (folder / name).write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    edit_toml(folder, 'starters = "starters.csv"', f'starters = "{name}"')
    return objs


def find_error(errors, file, row, field):
    return [e for e in errors if e.file == file and e.row == row and e.field == field]


# -- the valid demo ------------------------------------------------------------------------

EXPECTED_COUNTS = {
    "starters": 12,
    "questions": 109,
    "systems": 3,
    "exchanges": 12,
    "references": 12,
    "da_segments": 36,
    "da_hits": 2,
    "sd_sentences": 6,
    "sd_pairs": 40,
}


def test_demo_study_loads():
    bundle = load_study(DEMO)
    assert bundle.id == "demo"
    assert len(bundle.corpus["usability"]["starters"]) == 12
    # the human translations are references, not a system, and no exchange is imported
    assert [s["id"] for s in bundle.systems] == ["cascade-beam", "cascade-greedy"]
    assert [s["assign"] for s in bundle.systems] == [True, True]
    assert bundle.corpus["usability"]["exchanges"] == []
    assert len(bundle.corpus["usability"]["references"]) == 12 and {
        r["starter_id"] for r in bundle.corpus["usability"]["references"]
    } == {s["id"] for s in bundle.corpus["usability"]["starters"]}
    assert bundle.content_hash and len(bundle.content_hash) == 64
    # defaults are filled in and the systems are part of the stored config
    assert bundle.config["study"]["seed"] == 20261130
    assert [s["id"] for s in bundle.config["systems"]] == [s["id"] for s in bundle.systems]


def test_demo_imports(database, study):
    result = import_study(database, study)
    assert result.study_id == "demo"
    assert result.status == "created"
    assert result.counts == EXPECTED_COUNTS
    counts = snapshot(database)
    assert counts["studies"] == 1
    for table in ("starters", "questions", "systems", "da_segments", "sd_sentences", "sd_pairs"):
        assert counts[table] == EXPECTED_COUNTS[table], table
    # imported exchanges carry their translation and have no sender
    assert counts["exchanges"] == 12
    assert counts["translations"] == 12
    assert database.scalar("SELECT COUNT(*) FROM exchanges WHERE sender_id IS NOT NULL") == 0
    assert counts["participants"] == 0
    assert database.scalar("SELECT COUNT(*) FROM events WHERE action = 'import'") == 1
    # key spans are stored as a JSON list
    spans = json.loads(database.scalar("SELECT key_spans FROM starters WHERE id = 's01'"))
    assert spans[0] == "Sofia" and "allergic to penicillin" in spans
    assert counts["reference_translations"] == 12


def test_bundled_demo_imports_references_and_no_exchanges(database, tmp_path):
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    result = import_study(database, folder)
    assert result.counts == {**EXPECTED_COUNTS, "systems": 2, "exchanges": 0}
    counts = snapshot(database)
    assert (counts["exchanges"], counts["translations"], counts["reference_translations"]) == (0, 0, 12)
    assert database.scalar("SELECT COUNT(*) FROM systems WHERE kind = 'human'") == 0


def test_reimport_of_same_folder_is_unchanged_and_writes_nothing(database, study):
    import_study(database, study)
    before = snapshot(database)
    study_row = database.one("SELECT * FROM studies")
    result = import_study(database, study)
    assert result.status == "unchanged"
    assert result.counts == EXPECTED_COUNTS
    assert snapshot(database) == before
    assert database.one("SELECT * FROM studies") == study_row


def test_reimport_of_identical_copy_elsewhere_is_unchanged(database, study, tmp_path):
    import_study(database, study)
    before = snapshot(database)
    other = tmp_path / "elsewhere"
    shutil.copytree(study, other)
    assert import_study(database, other).status == "unchanged"
    assert snapshot(database) == before


def test_starter_word_bounds_are_inclusive(database, study):
    set_cell(study, "starters.csv", 2, "text", words(40))
    set_cell(study, "starters.csv", 2, "key_spans", "Sofia")
    set_cell(study, "starters.csv", 3, "text", words(60, "Lisinopril"))
    set_cell(study, "starters.csv", 3, "key_spans", "Lisinopril")
    assert import_study(database, study).status == "created"


def test_csv_with_bom_and_crlf_line_endings_imports(database, study):
    rows = read_csv(study, "starters.csv")
    with open(study / "starters.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f, lineterminator="\r\n").writerows(rows)
    result = import_study(database, study)
    assert result.counts["starters"] == 12
    assert database.scalar("SELECT COUNT(*) FROM starters WHERE id = 's01'") == 1


def test_blank_rows_are_skipped(database, study):
    rows = read_csv(study, "questions.csv")
    write_csv(study, "questions.csv", [rows[0], []] + rows[1:] + [[], ["", "", "", ""]])
    assert import_study(database, study).counts["questions"] == 109


def test_valid_jsonl_starters_import(database, study):
    objs = starters_to_jsonl(study)
    assert isinstance(objs[0]["key_spans"], list)
    (study / "starters.csv").unlink()
    result = import_study(database, study)
    assert result.status == "created"
    assert result.counts["starters"] == 12
    spans = json.loads(database.scalar("SELECT key_spans FROM starters WHERE id = 's01'"))
    assert spans == objs[0]["key_spans"]
    text = database.scalar("SELECT text FROM starters WHERE id = 's01'")
    assert text == objs[0]["text"]


def test_line_break_inside_quoted_cell_keeps_words_apart(database, study):
    original = get_cell(study, "starters.csv", 2, "text")
    assert "morning. I need" in original
    set_cell(study, "starters.csv", 2, "text", original.replace("morning. I need", "morning.\nI need"))
    import_study(database, study)
    stored = database.scalar("SELECT text FROM starters WHERE id = 's01'")
    assert stored.split() == original.split()


def test_all_problems_are_reported_at_once(database, study):
    set_cell(study, "starters.csv", 13, "domain", "legal")
    set_cell(study, "questions.csv", 3, "index", "x")
    set_cell(study, "da_segments.csv", 4, "position", "-1")
    set_cell(study, "sd_sentences.csv", 3, "sentence_id", "sd1")
    with pytest.raises(StudyValidationError) as exc:
        import_study(database, study)
    errors = exc.value.errors
    assert find_error(errors, "starters.csv", 13, "domain")
    assert find_error(errors, "questions.csv", 3, "index")
    assert find_error(errors, "da_segments.csv", 4, "position")
    assert find_error(errors, "sd_sentences.csv", 3, "sentence_id")
    assert database.scalar("SELECT COUNT(*) FROM studies") == 0


def test_error_message_names_file_row_and_field():
    from services.study.files import StudyError

    err = StudyValidationError(
        [StudyError("starters.csv", 5, "text", "too short"), StudyError("study.toml", None, None, "broken")]
    )
    lines = str(err).splitlines()
    assert lines == ["starters.csv, row 5, field 'text': too short", "study.toml: broken"]


def test_blank_line_counts_as_a_spreadsheet_row(database, study):
    rows = read_csv(study, "questions.csv")
    rows[1][rows[0].index("pt")] = ""
    write_csv(study, "questions.csv", [rows[0], []] + rows[1:])
    with pytest.raises(StudyValidationError) as exc:
        import_study(database, study)
    # header = row 1, blank line = row 2, the broken row = row 3
    assert find_error(exc.value.errors, "questions.csv", 3, "pt")


# -- every import error --------------------------------------------------------------------


def _toml_missing(d):
    (d / "study.toml").unlink()


def _toml_invalid(d):
    append_toml(d, "[[[not toml")


def _toml_not_utf8(d):
    path = d / "study.toml"
    path.write_bytes(path.read_bytes().replace(b'name = "Demo', b'name = "D\xe9mo'))


def _starters_outside(d):
    shutil.copy(d / "starters.csv", d.parent / "starters.csv")  # exists, but outside
    edit_toml(d, 'starters = "starters.csv"', 'starters = "../starters.csv"')


def _starters_absolute(d):
    shutil.copy(d / "starters.csv", d.parent / "abs.csv")
    edit_toml(d, 'starters = "starters.csv"', f'starters = "{(d.parent / "abs.csv").as_posix()}"')


def _questions_not_utf8(d):
    path = d / "questions.csv"
    path.write_bytes(path.read_text(encoding="utf-8").encode("latin-1"))


def _starters_not_utf8(d):
    path = d / "starters.csv"
    path.write_bytes(path.read_bytes() + b's13,health,natural,c,"caf\xe9",x\n')


def _starters_txt(d):
    shutil.copy(d / "starters.csv", d / "starters.txt")
    edit_toml(d, 'starters = "starters.csv"', 'starters = "starters.txt"')


def _jsonl_bad_line(d):
    starters_to_jsonl(d)
    path = d / "starters.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:-5]  # cut the closing of the object on line 3
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _jsonl_not_object(d):
    starters_to_jsonl(d)
    path = d / "starters.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = "[1, 2, 3]"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _jsonl_edit(line_no, fn):
    def mutate(d):
        starters_to_jsonl(d)
        path = d / "starters.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        obj = json.loads(lines[line_no - 1])
        fn(obj)
        lines[line_no - 1] = json.dumps(obj)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    return mutate


def _wrong_cell_count(d):
    rows = read_csv(d, "starters.csv")
    rows[3].append("extra")  # row 4
    write_csv(d, "starters.csv", rows)


def _too_few_cells(d):
    rows = read_csv(d, "questions.csv")
    rows[4] = rows[4][:3]  # row 5
    write_csv(d, "questions.csv", rows)


def _duplicate_header(d):
    rows = read_csv(d, "sd_sentences.csv")
    write_csv(d, "sd_sentences.csv", [rows[0] + ["text"]] + [r + ["again"] for r in rows[1:]])


def _header_only(name):
    def mutate(d):
        write_csv(d, name, read_csv(d, name)[:1])

    return mutate


def _empty_file(name):
    def mutate(d):
        (d / name).write_text("", encoding="utf-8")

    return mutate


def _no_assignable_system(d):
    edit_toml(d, 'kind = "cascade"', 'kind = "cascade"\nassign = false', count=2)


CASES = [
    # study.toml itself
    pytest.param(_toml_missing, "study.toml", None, None, id="toml-missing"),
    pytest.param(_toml_invalid, "study.toml", None, None, id="toml-invalid"),
    pytest.param(_toml_not_utf8, "study.toml", None, None, id="toml-not-utf8"),
    pytest.param(lambda d: edit_toml(d, "[study]\n", ""), "study.toml", None, "study", id="missing-study-section"),
    pytest.param(lambda d: append_toml(d, "[extra]\nfoo = 1"), "study.toml", None, "extra", id="unknown-section"),
    pytest.param(
        lambda d: edit_toml(d, "seed = 20261130", "seed = 20261130\ncolour = 'red'"),
        "study.toml",
        None,
        "study.colour",
        id="unknown-key-study",
    ),
    pytest.param(
        lambda d: edit_toml(d, "items_per_sender = 4", "items_per_sender = 4\nitems_per_sendr = 5"),
        "study.toml",
        None,
        "usability.items_per_sendr",
        id="unknown-key-usability",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'language = "en"', 'language = "en"\nlang = "de"'),
        "study.toml",
        None,
        "sd.lang",
        id="unknown-key-sd",
    ),
    pytest.param(
        lambda d: edit_toml(d, '\nid = "demo"\n', "\n"), "study.toml", None, "study.id", id="missing-study-id"
    ),
    pytest.param(
        lambda d: edit_toml(d, '\nname = "Demo', '\n# name = "Demo'),
        "study.toml",
        None,
        "study.name",
        id="missing-study-name",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'protocols = ["usability", "da", "sd"]\n', ""),
        "study.toml",
        None,
        "study.protocols",
        id="missing-protocols",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'starters = "starters.csv"\n', ""),
        "study.toml",
        None,
        "usability.starters",
        id="missing-usability-starters",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'segments = "da_segments.csv"\n', ""),
        "study.toml",
        None,
        "da.segments",
        id="missing-da-segments",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'id = "demo"', 'id = "bad id!"'), "study.toml", None, "study.id", id="bad-study-id-chars"
    ),
    pytest.param(
        lambda d: edit_toml(d, 'id = "demo"', 'id = "-demo"'),
        "study.toml",
        None,
        "study.id",
        id="bad-study-id-leading-dash",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'id = "demo"', f'id = "{"x" * 65}"'),
        "study.toml",
        None,
        "study.id",
        id="bad-study-id-too-long",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'id = "demo"', "id = 7"), "study.toml", None, "study.id", id="bad-study-id-not-string"
    ),
    pytest.param(
        lambda d: edit_toml(d, 'name = "Demo: English', 'name = "   "\n# "'),
        "study.toml",
        None,
        "study.name",
        id="blank-study-name",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'protocols = ["usability", "da", "sd"]', 'protocols = "usability"'),
        "study.toml",
        None,
        "study.protocols",
        id="protocols-not-list",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'protocols = ["usability", "da", "sd"]', "protocols = []"),
        "study.toml",
        None,
        "study.protocols",
        id="protocols-empty",
    ),
    pytest.param(
        lambda d: edit_toml(
            d, 'protocols = ["usability", "da", "sd"]', 'protocols = ["usability", "da", "sd", "pairwise"]'
        ),
        "study.toml",
        None,
        "study.protocols",
        id="unknown-protocol",
    ),
    pytest.param(lambda d: cut_toml_section(d, "[sd]"), "study.toml", None, "sd", id="protocol-listed-section-missing"),
    pytest.param(
        lambda d: edit_toml(d, 'protocols = ["usability", "da", "sd"]', 'protocols = ["usability", "da"]'),
        "study.toml",
        None,
        "sd",
        id="section-given-protocol-not-listed",
    ),
    pytest.param(
        lambda d: edit_toml(d, "seed = 20261130", 'seed = "abc"'), "study.toml", None, "study.seed", id="seed-string"
    ),
    pytest.param(
        lambda d: edit_toml(d, "seed = 20261130", "seed = 1.5"), "study.toml", None, "study.seed", id="seed-float"
    ),
    pytest.param(
        lambda d: edit_toml(d, "seed = 20261130", "seed = true"), "study.toml", None, "study.seed", id="seed-bool"
    ),
    pytest.param(
        lambda d: edit_toml(d, 'redirect_url = ""', 'redirect_url = "ftp://example.org"'),
        "study.toml",
        None,
        "study.redirect_url",
        id="redirect-url-scheme",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'redirect_url = ""', 'redirect_url = "app.prolific.com/x"'),
        "study.toml",
        None,
        "study.redirect_url",
        id="redirect-url-no-scheme",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'redirect_url = ""', "redirect_url = 5"),
        "study.toml",
        None,
        "study.redirect_url",
        id="redirect-url-not-string",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'completion_code = "DEMO-2026"', "completion_code = 2026"),
        "study.toml",
        None,
        "study.completion_code",
        id="completion-code-not-string",
    ),
    pytest.param(
        lambda d: edit_toml(d, "items_per_sender = 4", "items_per_sender = 0"),
        "study.toml",
        None,
        "usability.items_per_sender",
        id="items-per-sender-0",
    ),
    pytest.param(
        lambda d: edit_toml(d, "items_per_sender = 4", 'items_per_sender = "4"'),
        "study.toml",
        None,
        "usability.items_per_sender",
        id="items-per-sender-string",
    ),
    pytest.param(
        lambda d: edit_toml(d, "redundancy = 1", "redundancy = 0"),
        "study.toml",
        None,
        "usability.redundancy",
        id="redundancy-0",
    ),
    pytest.param(
        lambda d: edit_toml(d, "items_per_receiver = 6", "items_per_receiver = -1"),
        "study.toml",
        None,
        "usability.items_per_receiver",
        id="items-per-receiver-negative",
    ),
    pytest.param(
        lambda d: edit_toml(d, "starter_words = [40, 60]", "starter_words = [60, 40]"),
        "study.toml",
        None,
        "usability.starter_words",
        id="starter-words-reversed",
    ),
    pytest.param(
        lambda d: edit_toml(d, "starter_words = [40, 60]", "starter_words = [40]"),
        "study.toml",
        None,
        "usability.starter_words",
        id="starter-words-one",
    ),
    pytest.param(
        lambda d: edit_toml(d, "hit_size = 24", "hit_size = 0"), "study.toml", None, "da.hit_size", id="da-hit-size-0"
    ),
    pytest.param(
        lambda d: edit_toml(d, 'modality = "both"', 'modality = "video"'),
        "study.toml",
        None,
        "da.modality",
        id="da-modality",
    ),
    pytest.param(
        lambda d: edit_toml(d, "controls = 4", "controls = 30"),
        "study.toml",
        None,
        "da.controls",
        id="da-controls-fill-hit",
    ),
    pytest.param(
        lambda d: edit_toml(d, "reference_controls = 0", "reference_controls = 5"),
        "study.toml",
        None,
        "da.reference_controls",
        id="da-reference-controls-over-controls",
    ),
    pytest.param(
        lambda d: edit_toml(d, "expected_seconds = 600", "expected_seconds = 0"),
        "study.toml",
        None,
        "sd.expected_seconds",
        id="sd-expected-seconds-0",
    ),
    pytest.param(
        lambda d: edit_toml(d, '"da", "sd"]\n', '"da", "sd", "boss"]\n'),
        "study.toml",
        None,
        "study.self_enrol",
        id="self-enrol-unknown-role",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'groups = ["USW", "USB", "Hindi"]', 'groups = ["USW", "USW"]'),
        "study.toml",
        None,
        "study.groups",
        id="groups-duplicate",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'genders = ["Man", "Woman"]', 'genders = "Man"'),
        "study.toml",
        None,
        "study.genders",
        id="genders-not-list",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'groups = ["USW", "USB", "Hindi"]', 'groups = ["USW", ""]'),
        "study.toml",
        None,
        "study.groups",
        id="groups-empty-string",
    ),
    # [[systems]]
    pytest.param(
        lambda d: edit_toml(d, 'id = "cascade-greedy"', 'id = "cascade-beam"'),
        "study.toml",
        None,
        "systems[2].id",
        id="duplicate-system-id",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'kind = "human"', 'kind = "robot"'),
        "study.toml",
        None,
        "systems[3].kind",
        id="system-bad-kind",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'id = "cascade-beam"', 'id = "cascade beam"'),
        "study.toml",
        None,
        "systems[1].id",
        id="system-bad-id",
    ),
    pytest.param(
        lambda d: edit_toml(d, 'kind = "human"', 'kind = "human"\ncolour = "red"'),
        "study.toml",
        None,
        "systems[3].colour",
        id="system-unknown-key",
    ),
    pytest.param(
        lambda d: edit_toml(d, "assign = false", 'assign = "no"'),
        "study.toml",
        None,
        "systems[3].assign",
        id="system-assign-not-bool",
    ),
    pytest.param(_no_assignable_system, "study.toml", None, "systems", id="no-assignable-system"),
    # starters
    pytest.param(lambda d: (d / "starters.csv").unlink(), "starters.csv", None, None, id="starters-file-missing"),
    pytest.param(
        lambda d: drop_column(d, "starters.csv", "corpus"), "starters.csv", 1, "corpus", id="starters-missing-column"
    ),
    pytest.param(
        lambda d: add_column(d, "starters.csv", "notes"), "starters.csv", 1, "notes", id="starters-unknown-column"
    ),
    pytest.param(_header_only("starters.csv"), "starters.csv", None, None, id="starters-no-rows"),
    pytest.param(_empty_file("starters.csv"), "starters.csv", None, None, id="starters-empty-file"),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 2, "domain", "legal"),
        "starters.csv",
        2,
        "domain",
        id="starters-bad-domain",
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 5, "source", "invented"),
        "starters.csv",
        5,
        "source",
        id="starters-bad-source",
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 2, "text", words(39)), "starters.csv", 2, "text", id="starters-39-words"
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 2, "text", words(61)), "starters.csv", 2, "text", id="starters-61-words"
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 2, "key_spans", "Sofia | unicorn"),
        "starters.csv",
        2,
        "key_spans",
        id="starters-span-not-in-text",
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 3, "key_spans", " | "),
        "starters.csv",
        3,
        "key_spans",
        id="starters-no-spans",
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 3, "id", "s01"), "starters.csv", 3, "id", id="starters-duplicate-id"
    ),
    pytest.param(lambda d: set_cell(d, "starters.csv", 3, "id", "s 02"), "starters.csv", 3, "id", id="starters-bad-id"),
    pytest.param(_wrong_cell_count, "starters.csv", 4, None, id="starters-wrong-cell-count"),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 2, "text", "   "), "starters.csv", 2, "text", id="starters-empty-text"
    ),
    pytest.param(
        lambda d: set_cell(d, "starters.csv", 7, "corpus", ""), "starters.csv", 7, "corpus", id="starters-empty-corpus"
    ),
    pytest.param(_starters_not_utf8, "starters.csv", None, None, id="starters-not-utf8"),
    pytest.param(_starters_txt, "starters.txt", None, None, id="starters-unsupported-type"),
    pytest.param(_starters_outside, "study.toml", None, "usability.starters", id="starters-outside-folder"),
    pytest.param(_starters_absolute, "study.toml", None, "usability.starters", id="starters-absolute-path"),
    pytest.param(
        lambda d: edit_toml(d, 'starters = "starters.csv"', 'starters = ""'),
        "study.toml",
        None,
        "usability.starters",
        id="starters-empty-name",
    ),
    # starters as JSONL
    pytest.param(_jsonl_bad_line, "starters.jsonl", 3, None, id="jsonl-bad-json"),
    pytest.param(_jsonl_not_object, "starters.jsonl", 2, None, id="jsonl-not-object"),
    pytest.param(_jsonl_edit(4, lambda o: o.pop("corpus")), "starters.jsonl", 4, "corpus", id="jsonl-missing-field"),
    pytest.param(_jsonl_edit(5, lambda o: o.update(notes="x")), "starters.jsonl", 5, "notes", id="jsonl-unknown-field"),
    pytest.param(
        _jsonl_edit(6, lambda o: o.update(domain="legal")), "starters.jsonl", 6, "domain", id="jsonl-bad-domain"
    ),
    pytest.param(
        _jsonl_edit(2, lambda o: o.update(key_spans=["unicorn"])),
        "starters.jsonl",
        2,
        "key_spans",
        id="jsonl-span-not-in-text",
    ),
    pytest.param(
        _jsonl_edit(2, lambda o: o.update(text={"a": 1})), "starters.jsonl", 2, "text", id="jsonl-text-not-string"
    ),
    # questions
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 2, "starter_id", "s99"),
        "questions.csv",
        2,
        "starter_id",
        id="questions-unknown-starter",
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 2, "index", "0"), "questions.csv", 2, "index", id="questions-index-0"
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 2, "index", "11"), "questions.csv", 2, "index", id="questions-index-11"
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 2, "index", "x"), "questions.csv", 2, "index", id="questions-index-x"
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 2, "index", "1.5"),
        "questions.csv",
        2,
        "index",
        id="questions-index-fraction",
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 3, "index", "1"),
        "questions.csv",
        3,
        "index",
        id="questions-duplicate-index",
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 2, "pt", ""), "questions.csv", 2, "pt", id="questions-empty-pt"
    ),
    pytest.param(
        lambda d: set_cell(d, "questions.csv", 4, "en", " "), "questions.csv", 4, "en", id="questions-empty-en"
    ),
    pytest.param(
        lambda d: keep_rows(d, "questions.csv", lambda r: r["starter_id"] != "s12"),
        "questions.csv",
        None,
        "starter_id",
        id="starter-without-questions",
    ),
    pytest.param(
        lambda d: drop_column(d, "questions.csv", "pt"), "questions.csv", 1, "pt", id="questions-missing-column"
    ),
    pytest.param(_too_few_cells, "questions.csv", 5, None, id="questions-too-few-cells"),
    pytest.param(_questions_not_utf8, "questions.csv", None, None, id="questions-not-utf8"),
    pytest.param(lambda d: (d / "questions.csv").unlink(), "questions.csv", None, None, id="questions-file-missing"),
    pytest.param(
        lambda d: edit_toml(d, 'questions = "questions.csv"', 'questions = "../questions.csv"'),
        "study.toml",
        None,
        "usability.questions",
        id="questions-outside-folder",
    ),
    # exchanges
    pytest.param(
        lambda d: set_cell(d, "exchanges.csv", 2, "system", "nope"),
        "exchanges.csv",
        2,
        "system",
        id="exchanges-unknown-system",
    ),
    pytest.param(
        lambda d: set_cell(d, "exchanges.csv", 3, "starter_id", "s99"),
        "exchanges.csv",
        3,
        "starter_id",
        id="exchanges-unknown-starter",
    ),
    pytest.param(
        lambda d: append_copy_of_row(d, "exchanges.csv", 2), "exchanges.csv", 14, None, id="exchanges-duplicate"
    ),
    pytest.param(
        lambda d: set_cell(d, "exchanges.csv", 4, "translation", ""),
        "exchanges.csv",
        4,
        "translation",
        id="exchanges-empty-translation",
    ),
    pytest.param(lambda d: (d / "exchanges.csv").unlink(), "exchanges.csv", None, None, id="exchanges-file-missing"),
    # da_segments
    pytest.param(
        lambda d: set_cell(d, "da_segments.csv", 2, "position", "-1"),
        "da_segments.csv",
        2,
        "position",
        id="da-position-negative",
    ),
    pytest.param(
        lambda d: set_cell(d, "da_segments.csv", 3, "position", "first"),
        "da_segments.csv",
        3,
        "position",
        id="da-position-not-number",
    ),
    pytest.param(
        lambda d: append_copy_of_row(d, "da_segments.csv", 2),
        "da_segments.csv",
        38,
        None,
        id="da-duplicate-segment-system",
    ),
    pytest.param(
        lambda d: set_cell(d, "da_segments.csv", 5, "output", ""), "da_segments.csv", 5, "output", id="da-empty-output"
    ),
    pytest.param(_header_only("da_segments.csv"), "da_segments.csv", None, None, id="da-no-rows"),
    pytest.param(
        lambda d: add_column(d, "da_segments.csv", "score"), "da_segments.csv", 1, "score", id="da-unknown-column"
    ),
    # sd
    pytest.param(
        lambda d: set_cell(d, "sd_sentences.csv", 3, "sentence_id", "sd1"),
        "sd_sentences.csv",
        3,
        "sentence_id",
        id="sd-duplicate-sentence",
    ),
    pytest.param(_duplicate_header, "sd_sentences.csv", 1, None, id="sd-duplicate-column"),
    pytest.param(
        lambda d: edit_toml(d, 'language = "en"', 'language = "fr"'),
        "sd_pairs.csv",
        None,
        "language",
        id="sd-no-pairs-in-language",
    ),
    pytest.param(
        lambda d: keep_rows(d, "sd_pairs.csv", lambda r: r["language"] != "en"),
        "sd_pairs.csv",
        None,
        "language",
        id="sd-pairs-lack-configured-language",
    ),
    pytest.param(
        lambda d: append_copy_of_row(d, "sd_pairs.csv", 3), "sd_pairs.csv", 42, "pair_id", id="sd-duplicate-pair"
    ),
    pytest.param(
        lambda d: edit_toml(d, "sentences_per_participant = 3", "sentences_per_participant = 7"),
        "study.toml",
        None,
        "sd.sentences_per_participant",
        id="sd-more-sentences-than-corpus",
    ),
    # corpus size
    pytest.param(
        lambda d: edit_toml(d, "items_per_sender = 4", "items_per_sender = 13"),
        "study.toml",
        None,
        "usability.items_per_sender",
        id="items-per-sender-exceeds-corpus",
    ),
]


@pytest.mark.parametrize("mutate, file, row, field", CASES)
def test_invalid_study_is_rejected_and_nothing_imported(database, study, mutate, file, row, field):
    mutate(study)
    before = snapshot(database)
    with pytest.raises(StudyValidationError) as exc:
        import_study(database, study)
    errors = exc.value.errors
    assert errors, "a StudyValidationError must list its errors"
    assert find_error(errors, file, row, field), f"expected an error for ({file!r}, {row!r}, {field!r}); got:\n" + str(
        exc.value
    )
    for e in errors:
        assert e.message
        assert str(e).startswith(e.file)
    assert snapshot(database) == before
    assert database.scalar("SELECT COUNT(*) FROM studies") == 0


@pytest.mark.parametrize(
    "mutate, file, row, field",
    [
        CASES[[p.id for p in CASES].index(i)]
        for i in (
            "toml-invalid",
            "starters-bad-domain",
            "questions-duplicate-index",
            "da-duplicate-segment-system",
            "no-assignable-system",
        )
    ],
)
def test_invalid_new_version_leaves_the_imported_study_untouched(database, study, mutate, file, row, field):
    import_study(database, study)
    before = snapshot(database)
    study_row = database.one("SELECT * FROM studies")
    mutate(study)
    with pytest.raises(StudyValidationError) as exc:
        import_study(database, study)
    assert find_error(exc.value.errors, file, row, field)
    assert snapshot(database) == before
    assert database.one("SELECT * FROM studies") == study_row


def test_load_study_raises_the_same_errors_without_a_database(study):
    set_cell(study, "starters.csv", 2, "domain", "legal")
    with pytest.raises(StudyValidationError) as exc:
        load_study(study)
    assert find_error(exc.value.errors, "starters.csv", 2, "domain")


def test_config_errors_stop_before_the_corpus_is_read(study):
    # a broken config and a broken corpus: only the config is reported
    edit_toml(study, "seed = 20261130", 'seed = "x"')
    set_cell(study, "starters.csv", 2, "domain", "legal")
    with pytest.raises(StudyValidationError) as exc:
        load_study(study)
    assert find_error(exc.value.errors, "study.toml", None, "study.seed")
    assert all(e.file == "study.toml" for e in exc.value.errors)


# -- re-import with changed content --------------------------------------------------------


def _change_content(folder: Path) -> None:
    set_cell(folder, "questions.csv", 2, "pt", "Qual é o nome da filha?")


def test_changed_reimport_is_refused_once_there_are_participants(database, study):
    import_study(database, study)
    add_participants(database, "demo", "receiver", 1)
    before = snapshot(database)
    study_row = database.one("SELECT * FROM studies")
    _change_content(study)
    with pytest.raises(StudyValidationError) as exc:
        import_study(database, study)
    assert "demo" in str(exc.value)
    assert any(e.field == "study.id" and "demo" in e.message for e in exc.value.errors)
    assert snapshot(database) == before
    assert database.one("SELECT * FROM studies") == study_row


def test_unchanged_reimport_is_fine_with_participants(database, study):
    import_study(database, study)
    add_participants(database, "demo", "receiver", 1)
    before = snapshot(database)
    assert import_study(database, study).status == "unchanged"
    assert snapshot(database) == before


def test_changed_reimport_without_participants_replaces_content(database, study):
    import_study(database, study)
    _change_content(study)
    result = import_study(database, study)
    assert result.status == "updated"
    assert database.scalar("SELECT COUNT(*) FROM studies") == 1
    assert database.scalar("SELECT pt FROM questions WHERE starter_id = 's01' AND idx = 1") == "Qual é o nome da filha?"
    assert database.scalar("SELECT COUNT(*) FROM exchanges") == 12
    assert database.scalar("SELECT COUNT(*) FROM translations") == 12
    assert database.scalar("SELECT COUNT(*) FROM reference_translations") == 12


def test_changed_reimport_without_exchanges_replaces_content(database, study):
    # the same replacement path on a study whose usability protocol imports no exchanges
    edit_toml(study, 'exchanges = "exchanges.csv"', 'exchanges = ""')
    assert import_study(database, study).status == "created"
    old_hash = database.scalar("SELECT content_hash FROM studies")
    _change_content(study)
    keep_rows(study, "sd_sentences.csv", lambda r: r["sentence_id"] != "sd6")
    edit_toml(study, "items_per_receiver = 6", "items_per_receiver = 5")
    result = import_study(database, study)
    assert result.status == "updated"
    assert result.counts["sd_sentences"] == 5
    assert database.scalar("SELECT COUNT(*) FROM studies") == 1
    assert database.scalar("SELECT content_hash FROM studies") != old_hash
    assert database.scalar("SELECT pt FROM questions WHERE starter_id = 's01' AND idx = 1") == "Qual é o nome da filha?"
    assert database.scalar("SELECT COUNT(*) FROM questions") == 109
    assert database.scalar("SELECT COUNT(*) FROM sd_sentences") == 5
    assert database.scalar("SELECT COUNT(*) FROM starters") == 12
    config = json.loads(database.scalar("SELECT config FROM studies"))
    assert config["usability"]["items_per_receiver"] == 5
    assert database.scalar("SELECT COUNT(*) FROM events WHERE action = 'reimport'") == 1
    # and importing the new version again is a no-op
    assert import_study(database, study).status == "unchanged"


def test_changed_reimport_with_participants_of_another_study_is_allowed(database, study, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(study, other)
    edit_toml(other, 'id = "demo"', 'id = "other"')
    import_study(database, other)
    add_participants(database, "other", "receiver", 1)
    edit_toml(study, 'exchanges = "exchanges.csv"', 'exchanges = ""')
    import_study(database, study)
    _change_content(study)
    assert import_study(database, study).status == "updated"


def test_zip_upload_refuses_unsafe_paths_and_non_zips(database, tmp_path):
    import zipfile

    from services.setup.importer import import_zip

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.txt", "x")
        zf.writestr("study/study.toml", "[study]\n")
    with pytest.raises(StudyValidationError, match="unsafe path"):
        import_zip(database, evil)
    assert not (tmp_path.parent / "outside.txt").exists()
    notzip = tmp_path / "study.zip"
    notzip.write_text("hello")
    with pytest.raises(StudyValidationError, match="not a zip file"):
        import_zip(database, notzip)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("readme.txt", "x")
    with pytest.raises(StudyValidationError, match="no study.toml"):
        import_zip(database, empty)
