"""Which of the markers `app` and `browser` a test earns by what it starts: its function and its
fixtures, and the repository's own functions and classes they name, followed transitively. `make
test-fast` leaves those tests out; conftest.py adds the markers at collection."""

from __future__ import annotations

from harness.app import ROOT, RunningApp

APP_NAMES = {"RunningApp", "LoadApp", "prepared_app"}
BROWSER_NAMES = {"sync_playwright", "chromium", "browser"}
_REACHES: dict = {}


def reaches(fn) -> frozenset:
    """The markers ("app", "browser") a function's code reaches, through the repository's own
    functions and classes it names (a name imported inside a function counts too)."""
    code = getattr(fn, "__code__", None)
    if (
        code is None
        or not code.co_filename.startswith(str(ROOT))
        or "/.venv/" in code.co_filename
        or code.co_filename == __file__
    ):  # this module names RunningApp but starts nothing
        return frozenset()
    if code in _REACHES:
        return _REACHES[code]
    _REACHES[code] = frozenset()  # a cycle adds nothing
    found: set = set()
    codes = [code]
    while codes:
        c = codes.pop()
        codes += [k for k in c.co_consts if hasattr(k, "co_names")]  # nested functions, lambdas
        names = set(c.co_names)
        if names & APP_NAMES:
            found.add("app")
        if names & BROWSER_NAMES or "playwright.sync_api" in names:
            found.add("browser")
        for name in names:
            obj = fn.__globals__.get(name)
            if isinstance(obj, type) and issubclass(obj, RunningApp):
                found.add("app")
            elif callable(obj) and hasattr(obj, "__code__") and obj is not fn:
                found |= reaches(obj)
    _REACHES[code] = frozenset(found)
    return _REACHES[code]


def markers_for(item) -> set[str]:
    """The markers a collected test earns: from its function, every fixture it uses, and the
    `browser` and `page` fixtures by name."""
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        funcs += [d.func for defs in info.name2fixturedefs.values() for d in defs]
    found = set().union(*(reaches(f) for f in funcs if f is not None))
    if {"browser", "page"} & set(item.fixturenames):
        found.add("browser")
    return found
