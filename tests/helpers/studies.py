"""The demo study copied with extra [study] keys, its own scales, or consent sections."""

from __future__ import annotations

import shutil

from harness.demo import DEMO

CONSENT_MD = "# Information\n\nYou will record short requests. Your voice is stored for research.\n"

SECTIONS = """
[consent]
file = "consent.md"
agree = "Concordo / I agree"
decline = "Não concordo / I do not agree"
roles = ["sender", "receiver"]

[demographics]
submit = "Continuar"

[[demographics.fields]]
id = "age"
label = "Age in years"
kind = "number"
min = 18
max = 99

[[demographics.fields]]
id = "first_language"
label = "First language"
kind = "choice"
choices = ["English", "Portuguese", "Other"]

[[demographics.fields]]
id = "comments"
label = "Anything else?"
kind = "text"
required = false
max_chars = 20
roles = ["receiver"]
"""


def study_with_keys(tmp_path, extra: str):
    """The demo study with extra [study] keys (put after self_enrol)."""
    dest = tmp_path / "study"
    shutil.copytree(DEMO, dest)
    toml = dest / "study.toml"
    text = toml.read_text(encoding="utf-8")
    anchor = 'self_enrol = ["sender", "receiver", "validator", "rater", "da", "sd"]\n'
    assert anchor in text
    toml.write_text(text.replace(anchor, anchor + extra + "\n", 1), encoding="utf-8")
    return dest


def study_with_scales(tmp_path, scales: str):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    (folder / "scales.toml").write_text(scales, encoding="utf-8")
    return folder


def study_with_consent(tmp_path, extra=SECTIONS, consent_md=CONSENT_MD):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    (folder / "study.toml").write_text((DEMO / "study.toml").read_text() + extra)
    if consent_md is not None:
        (folder / "consent.md").write_text(consent_md)
    return folder
