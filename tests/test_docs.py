"""docs/reference.md's settings table and command-line reference are generated from the code (cli.py docs):
these tests fail when either differs from what the code generates (as sqlite-utils checks its docs).
Regenerate with `python app.py docs settings` / `python app.py docs cli` and paste between the markers."""

import re
from pathlib import Path

import pytest

import cli

README = (Path(__file__).resolve().parent.parent / "docs" / "reference.md").read_text()


def section(name: str) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", README, re.S)
    assert found, f"docs/reference.md has no <!-- {name} --> ... <!-- /{name} --> section"
    return found.group(1)


@pytest.mark.parametrize("name, generate", [("settings", cli.settings_markdown), ("cli", cli.cli_markdown)])
def test_readme_section_is_the_generated_text(name, generate):
    assert section(name) == generate(), f"docs/reference.md's {name} section is stale: run `python app.py docs {name}`"


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


def test_only_the_settings_module_reads_the_environment():
    """Issue 19: one source of settings. The two exceptions write variables for other libraries
    (gradio's analytics interval; libgomp's OMP_* around the e5 engine's load, put back after)."""
    root = Path(__file__).resolve().parent.parent
    allowed = {"services/common/settings.py", "services/metrics/registry.py", "web/serving.py"}
    files = [p for top in ("services", "storage", "tabs", "web") for p in (root / top).rglob("*.py")]
    files += [root / name for name in ("app.py", "cli.py")]
    readers = sorted(
        str(p.relative_to(root))
        for p in files
        if re.search(r"os\.environ|getenv\(", p.read_text()) and str(p.relative_to(root)) not in allowed
    )
    assert readers == []
    assert 'os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY"' in (root / "web/serving.py").read_text()
    assert len(re.findall(r"os\.environ", (root / "web/serving.py").read_text())) == 1


def test_the_readmes_links_to_the_docs_resolve():
    """README.md is a page of links to docs/: each names a file that exists."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)\)", readme)
    assert len(links) >= 10, links
    assert [p for p in links if not (root / p).is_file()] == []
