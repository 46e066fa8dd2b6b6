"""The pages' JavaScript and CSS live in files (assets/js, loaded by tabs/static.py; assets/css), not
in Python strings (issue 52, point 3): no string of the app's Python holds any, and every script
passes node's syntax check as the browser runs it (tools/check_scripts.py, also in `make lint`)."""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from tabs import static

ROOT = Path(__file__).resolve().parents[1]
# tools/ is no package: the check is loaded from its file, as make lint runs it
_spec = importlib.util.spec_from_file_location("check_scripts", ROOT / "tools" / "check_scripts.py")
check_scripts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_scripts)

PACKAGES = ("web", "tabs", "services", "storage")

# What reads as code in a string (docstrings are left out: they may name a script's parts).
# Written to find every snippet the app's Python held before the move and nothing after:
# tabs/preload.py's regexes that read Gradio's bundle hold "=>" only escaped (`\(\)=>\w`,
# `=>)`), and a <script>/<style> element with no text in the same string (a file's text, or
# plotly's bundle, put in it) is not code.
CODE = {
    "an arrow function": re.compile(r"=>\s*[\w{('\"\[`]"),
    "a DOM call": re.compile(r"\b(document|window|element)\.\w|addEventListener|querySelector"),
    "a declaration": re.compile(r"\b(const|let|var)\s+\w+\s*=|\bfunction\s+\w+\s*\([^)]*\)\s*\{"),
    "an inline script": re.compile(r"<script\b[^>]*>\s*[^<\s]", re.I),
    "an inline style": re.compile(r"<style\b[^>]*>\s*[^<\s]", re.I),
    "a CSS rule": re.compile(r"\{\s*[a-z-]+\s*:[^;{}]+;"),
}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    firsts = (n.body[0] for n in ast.walk(tree) if isinstance(n, kinds) and n.body)
    return {id(e.value) for e in firsts if isinstance(e, ast.Expr) and isinstance(e.value, ast.Constant)}


def code_in_strings(source: str, name: str = "<string>") -> list[str]:
    """'name:line: what' for each string (an f-string's literal parts included) that reads as code."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            found += [f"{name}:{n.lineno}: {what}" for what, rx in CODE.items() if rx.search(n.value)]
    return found


def test_no_python_module_holds_javascript_or_css():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += code_in_strings(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "JavaScript or CSS in a Python string (to assets/js, tabs/static.py):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "planted",
    [
        'X_JS = """() => { alert(1); }"""',
        'X_JS = """\nconst x = 1;\nelement.classList.add(\'y\');\n"""',
        "html = f'<script>const l = {lang!r};</script>'",
        'X = "(s) => s"',
        "X = '<style>.a{color:red}</style>'",
        "CSS = 'body{margin:0;padding:0}'",
        "X = \"document.addEventListener('click', f)\"",
    ],
)
def test_a_planted_snippet_is_found(planted):
    assert code_in_strings(planted)


def test_what_stays_in_python_is_not_taken_for_code():
    for fine in [
        '"""A docstring may name () => { the script } and document.body."""',
        "X = 'a function (first, repeat) -> float, of the document.'",
        'X = f\'<script data-lang="{lang}">{script("script/lang_pin")}</script>\'',
        "X = f'<style>{CSS}</style><script>{bundle}</script>'",
        "X = '{value:.2f} and {name}'",
        r"X = re.compile(r'component:\(\)=>\w+\(\(\)=>')",
    ]:
        assert not code_in_strings(fine), fine


def test_each_script_is_read_from_its_file_by_kind():
    assert static.script("function/keyboard") == (static.JS_DIR / "function" / "keyboard.js").read_text()
    with pytest.raises(ValueError):
        static.script("keyboard")
    kinds = {p.relative_to(static.JS_DIR).parts[0] for p in check_scripts.scripts()}
    assert kinds <= set(static.KINDS) and set(check_scripts.WRAP) == set(static.KINDS)


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed")
def test_every_script_passes_the_syntax_check():
    assert check_scripts.scripts()
    assert check_scripts.problems() == []


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed")
def test_the_check_finds_a_broken_script_of_each_kind(tmp_path):
    good = {"function": "() => { return 1; }\n", "on_load": "if (!element) return;\nwatch('value', () => {});\n"}
    bad = {"function": "() => { if (x { }\n", "on_load": "const a = ;\n", "script": "(() => {)();\n"}
    for kind, text in good.items():
        (tmp_path / kind).mkdir(exist_ok=True)
        (tmp_path / kind / "good.js").write_text(text)
    assert check_scripts.problems(tmp_path) == []
    for kind, text in bad.items():
        (tmp_path / kind).mkdir(exist_ok=True)
        (tmp_path / kind / "bad.js").write_text(text)
    (tmp_path / "loose.js").write_text("1;\n")  # outside the kinds' folders
    found = "\n".join(check_scripts.problems(tmp_path))
    assert all(f"{kind}/bad.js" in found for kind in bad) and "loose.js" in found and "good.js" not in found


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed")
def test_a_protocols_own_page_script_is_checked_too(tmp_path, monkeypatch):
    """Tab.scripts outside assets/js (a plugin's, the proof plugin's) go through node as well."""
    shown = {p.relative_to(ROOT).as_posix() for p in check_scripts.page_scripts()}
    assert "tests/plugins/proof/proof.js" in shown
    broken = tmp_path / "broken.js"
    broken.write_text("document.addEventListener('tradlab:item', (e) => { if (e { });\n")
    monkeypatch.setattr(check_scripts, "page_scripts", lambda: [ROOT / "tests" / "plugins" / "proof" / "proof.js"])
    assert check_scripts.problems() == []
    monkeypatch.setattr(check_scripts, "page_scripts", lambda: [broken])
    monkeypatch.setattr(check_scripts, "ROOT", tmp_path)  # named from the folder it is in
    (found,) = check_scripts.problems()
    assert found.startswith("broken.js:") and "SyntaxError" in found
