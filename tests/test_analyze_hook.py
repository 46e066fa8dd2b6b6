"""Protocol.analyze: a protocol's own `app.py analyze <name>` command, as the built-in protocols
give theirs (services/{usability,da,sd}/cli.py)."""

from __future__ import annotations

import argparse

import pytest

import cli
from services.common import protocols
from services.common.protocols import Protocol

NAME = "tally"


def add_tally(asub) -> None:
    p = asub.add_parser("tally", help="count the lines of a file")
    p.add_argument("path")
    p.set_defaults(analyze=run)


def run(args: argparse.Namespace, open_database) -> str:
    with open(args.path, encoding="utf-8") as f:  # a missing file: FileNotFoundError, a refusal
        lines = f.read().splitlines()
    if not lines:
        raise ValueError(f"{args.path} has no lines")
    return f"{len(lines)} lines"


@pytest.fixture
def registered():
    protocols.register(Protocol(NAME, analyze=add_tally))
    yield
    protocols.unregister(NAME)


def test_the_built_in_analyses_are_the_protocols_own():
    names = {p.name for p, _ in protocols.with_hook("analyze")}
    assert {"usability", "da", "sd"} <= names
    analyze = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[
        "analyze"
    ]
    (sub,) = [a for a in analyze._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices)[:3] == ["usability", "da", "sd"]  # registration order, then paper 003's
    assert {"qe-audit", "qe-rerank"} <= set(sub.choices)


def test_a_plugins_analysis_runs_and_refuses_by_name(registered, tmp_path, capsys):
    data = tmp_path / "lines.txt"
    data.write_text("a\nb\nc\n")
    assert cli.main(["analyze", NAME, str(data)]) == 0
    assert capsys.readouterr().out == "3 lines\n"
    (tmp_path / "empty.txt").write_text("")
    assert cli.main(["analyze", NAME, str(tmp_path / "empty.txt")]) == 2
    assert "empty.txt has no lines" in capsys.readouterr().err
    assert "### `python app.py analyze tally`" in cli.cli_markdown()


def test_an_analysis_name_taken_is_refused_with_the_protocols_name(registered):
    protocols.unregister(NAME)
    protocols.register(Protocol(NAME, analyze=lambda asub: asub.add_parser("da", help="a second da")))
    with pytest.raises(ValueError, match="protocol 'tally' adds an analysis `analyze` has: .*da"):
        cli.build_parser()
