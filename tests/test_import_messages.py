"""Import messages a newcomer can act on (issue 51, point 10): one real error is one line, not
eight follow-ons; a wrong encoding or separator says how to save the file; a misspelt protocol
gets a suggestion. Nothing is imported in any of them."""

from __future__ import annotations

import csv
import shutil

import pytest

from harness.demo import DEMO_ASSETS
from services.study.files import StudyValidationError, load_study


def _copy(tmp_path):
    return shutil.copytree(DEMO_ASSETS, tmp_path / "study")


def _errors(folder) -> list[str]:
    with pytest.raises(StudyValidationError) as e:
        load_study(folder)
    return [str(x) for x in e.value.errors]


def test_a_starters_file_in_another_encoding_is_one_error_saying_how_to_save_it(tmp_path):
    folder = _copy(tmp_path)
    text = (folder / "starters.csv").read_text(encoding="utf-8").replace("a", "á", 3)
    (folder / "starters.csv").write_bytes(text.encode("latin-1", errors="replace"))
    errors = _errors(folder)
    assert errors[0].startswith("starters.csv: not UTF-8 text") and "CSV UTF-8" in errors[0]
    # the files naming starters say once that they were not checked (before: 120 'unknown starter')
    assert errors[1:] == [
        "questions.csv, field 'starter_id': not checked: starters.csv could not be read (see above)",
        "references.csv, field 'starter_id': not checked: starters.csv could not be read (see above)",
    ]


def test_semicolons_get_a_hint_about_the_separator(tmp_path):
    folder = _copy(tmp_path)
    rows = list(csv.reader((folder / "starters.csv").open(encoding="utf-8")))
    with (folder / "starters.csv").open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, delimiter=";").writerows(rows)
    errors = _errors(folder)
    assert "separated by semicolons, not commas" in errors[0] and len(errors) == 3


def test_one_bad_starter_is_reported_once_not_again_for_each_of_its_questions(tmp_path):
    folder = _copy(tmp_path)
    rows = list(csv.DictReader((folder / "starters.csv").open(encoding="utf-8")))
    rows[0]["text"] += " And thank you so much again for all of your help today, I really do appreciate it a lot." * 2
    with (folder / "starters.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    errors = _errors(folder)
    assert len(errors) == 1 and errors[0].startswith("starters.csv, row 2, field 'text': has 8"), errors


def test_a_misspelt_protocol_is_echoed_with_a_suggestion(tmp_path):
    folder = _copy(tmp_path)
    toml = (folder / "study.toml").read_text(encoding="utf-8")
    line = next(x for x in toml.splitlines() if x.startswith("protocols = "))
    (folder / "study.toml").write_text(toml.replace(line, 'protocols = ["usabilty", "da"]'), encoding="utf-8")
    [error] = _errors(folder)
    assert "'usabilty' is not one (did you mean 'usability'?)" in error
