"""The web server is the web/ package: small modules, every change to Gradio's (and uvicorn's) own
modules in web/gradio_patches.py, written for the Gradio range requirements.txt pins."""

import ast
import re
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PATCHED_LIBRARIES = ("gradio", "gradio_client", "uvicorn")


def project_files(*tops: str) -> list[Path]:
    return sorted(p for top in tops for p in (ROOT / top).rglob("*.py"))


def library_names(tree: ast.AST) -> set[str]:
    """The names a file binds to a module (or a name) of the patched libraries, anywhere in it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {
                (a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in PATCHED_LIBRARIES
            }
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PATCHED_LIBRARIES:
            names |= {a.asname or a.name for a in node.names}
    return names


def library_patches(path: Path) -> list[str]:
    """`module.attribute` for each assignment to an attribute of a library name (a monkeypatch)."""
    tree = ast.parse(path.read_text())
    names = library_names(tree)
    out = []
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in names:
                out.append(f"{t.value.id}.{t.attr}")
    return out


def test_the_server_is_the_web_package_and_nothing_imports_the_old_module():
    assert not (ROOT / "server.py").exists()
    assert (ROOT / "web" / "__init__.py").is_file()
    importers = []
    for path in project_files("web", "tabs", "services", "storage", "tests", "benchmarks", "tools") + [
        ROOT / "app.py",
        ROOT / "cli.py",
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Import)
                and any(a.name == "server" for a in node.names)
                or isinstance(node, ast.ImportFrom)
                and node.module == "server"
                and not node.level
            ):
                importers.append(str(path.relative_to(ROOT)))
    assert importers == []


def test_each_web_module_stays_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in project_files("web")}
    assert len(sizes) >= 8, sizes
    assert {name: n for name, n in sizes.items() if n > 400} == {}


def test_only_gradio_patches_changes_gradio_or_uvicorn():
    found = {str(p.relative_to(ROOT)): library_patches(p) for p in project_files("web", "tabs", "services")}
    assert {path: patches for path, patches in found.items() if patches and path != "web/gradio_patches.py"} == {}
    # the check sees the patches where they are
    assert {
        "route_utils.GradioMultiPartParser",
        "route_utils.SessionState",
        "routes.StateHolder",
        "networking.url_ok",
        "processing_utils.async_move_files_to_cache",
        "uvicorn.Config",
    } <= set(found["web/gradio_patches.py"])


def test_the_patches_name_the_gradio_range_requirements_pins_and_the_installed_one_is_in_it():
    import gradio

    pin = re.search(r"^gradio([<>=!~][^\s;#]*)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    header = ast.get_docstring(ast.parse((ROOT / "web" / "gradio_patches.py").read_text()))
    assert f"gradio{pin}" in header
    assert Version(gradio.__version__) in SpecifierSet(pin)
