"""The README's settings table and command-line reference are generated from the code (cli.py docs):
these tests fail when either differs from what the code generates (as sqlite-utils checks its docs).
Regenerate with `python app.py docs settings` / `python app.py docs cli` and paste between the markers."""
import re
from pathlib import Path

import pytest

import cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def section(name: str) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", README, re.S)
    assert found, f"README.md has no <!-- {name} --> ... <!-- /{name} --> section"
    return found.group(1)


@pytest.mark.parametrize("name, generate", [("settings", cli.settings_markdown), ("cli", cli.cli_markdown)])
def test_readme_section_is_the_generated_text(name, generate):
    assert section(name) == generate(), f"README.md's {name} section is stale: run `python app.py docs {name}`"


def test_docs_command_prints_both_sections(capsys):
    assert cli.main(["docs"]) == 0
    out = capsys.readouterr().out
    assert cli.settings_markdown() in out and cli.cli_markdown() in out


def test_every_setting_has_a_variable_a_default_and_a_meaning():
    from dataclasses import fields

    from services.common.settings import Settings

    documented = [f for f in fields(Settings) if "env" in f.metadata]
    assert [f.name for f in fields(Settings) if f.name != "environ"] == [f.name for f in documented]
    assert all(f.metadata["env"] and f.metadata["help"] and "default" in f.metadata for f in documented)
    assert len({f.metadata["env"] for f in documented}) == len(documented)
