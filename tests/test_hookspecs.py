"""The protocols' hooks (services/common/hookspecs.py): docs/hooks.md is the text generated from
them (as docs/reference.md is, tests/test_docs.py), every hook field of the registry's
dataclasses has a spec, and mypy refuses a hook whose signature is not its spec's, so the typing
cannot rot unseen. Regenerate the page with `python app.py docs hooks > docs/hooks.md`."""

import dataclasses
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import cli
from services.common import hookspecs, protocols

ROOT = Path(__file__).resolve().parent.parent


def test_the_hooks_page_is_the_generated_text():
    page = (ROOT / "docs" / "hooks.md").read_text()
    assert page == protocols.hooks_markdown(), "docs/hooks.md is stale: run `python app.py docs hooks > docs/hooks.md`"


def test_docs_hooks_prints_the_page(capsys):
    assert cli.main(["docs", "hooks"]) == 0
    assert capsys.readouterr().out == protocols.hooks_markdown()


def test_every_callable_field_has_a_spec_with_a_docstring():
    found = {(owner, name): spec for owner, name, spec, _, _ in protocols.hooks()}
    callables = {
        (owner.__name__, f.name)
        for owner in protocols.HOOK_OWNERS
        for f in dataclasses.fields(owner)
        if "Callable" in str(f.type) or "hookspecs." in str(f.type)
    }
    assert set(found) == callables
    specs = {c for _, c in inspect.getmembers(hookspecs, inspect.isclass) if c.__module__ == hookspecs.__name__}
    assert set(found.values()) == specs  # no spec left without its field
    for spec in specs:
        assert spec.__doc__ and "__call__" in vars(spec), spec
        params = list(inspect.signature(spec.__call__).parameters.values())[1:]
        # the core passes them by position: a hook names its own parameters as it likes
        assert all(p.kind is p.POSITIONAL_ONLY for p in params), spec
    assert ("Phase", "save") in found and found["Phase", "save"] is hookspecs.PhaseSave
    assert [x[3] for x in protocols.hooks() if x[:2] == ("Phase", "content")] == [False]  # required
    assert [x[4] for x in protocols.hooks() if x[:2] == ("Protocol", "repair")] == [True]  # "module:name" too


def test_mypy_refuses_a_hook_that_does_not_match_its_spec(tmp_path):
    """A content function missing media_dir, a stored answer that is a list, a role's items
    that are words: each one an error; the right signatures pass."""
    snippet = tmp_path / "wrong_hooks.py"
    snippet.write_text(
        textwrap.dedent(
            """
            from services.common.protocols import Phase, Role


            def content(database, study, participant, assignment) -> dict:
                return {}


            def right_content(database, study, participant, assignment, media_dir=None) -> dict:
                return {}


            def save(tx, study, participant, assignment, data) -> None: ...


            def stored(database, assignment) -> list:
                return []


            WRONG = Phase("x", content, None, save, stored)
            RIGHT = Phase("y", right_content, None, save, lambda database, assignment: {})
            ROLE = Role("x", ("x",), "X", items=lambda cfg: "many")
            """
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(errors) == 3, done.stdout
    assert 'Argument 2 to "Phase" has incompatible type' in errors[0] and "PhaseContent" in errors[0]
    assert 'Argument 5 to "Phase"' in errors[1] and "PhaseStored" in errors[1]
    assert 'Argument "items" to "Role"' in errors[2] and "RoleItems" in errors[2]
