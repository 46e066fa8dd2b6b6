"""Gradio's import made lighter, before anything imports it (cli.main calls this first; it imports
nothing of Gradio itself, so it cannot come too late by being imported).

At import, Gradio's ComponentMeta rewrites the type-stub file (.pyi) of every component class it
defines: it reads the component's source, parses it and compares the stub beside it
(component_meta.create_or_modify_pyi), a help for Gradio's own developers' editors. In an
installed Gradio the stubs ship with the package, so this is reading and parsing a hundred files for
nothing: 2-3 s of each process's start on the 2-core reference machine (gradio's import 4.3-5.6 s,
2.2-2.6 s without it), in every server start, `make run` and a Space's cold start included.
Written for gradio>=6.21,<7 (requirements.txt); web/gradio_patches.py holds the other changes."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

META = "gradio.component_meta"


def _no_stub(*args, **kwargs) -> None:
    """create_or_modify_pyi's stand-in: the installed stubs stay as they are."""


class _StubsLeftAlone(importlib.abc.MetaPathFinder):
    """Finds gradio.component_meta once, for Python's own loader, and replaces its stub writer
    right after the module runs, before any component class is defined."""

    def find_spec(self, name, path, target=None):
        if name != META:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if callable(getattr(module, "create_or_modify_pyi", None)):
                module.create_or_modify_pyi = _no_stub

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def leave_stubs_alone() -> bool:
    """Install the finder unless Gradio's component_meta is imported already (then it is too
    late, and nothing changes). Idempotent; returns whether the finder is in place."""
    if META in sys.modules:
        return False
    if not any(isinstance(f, _StubsLeftAlone) for f in sys.meta_path):
        sys.meta_path.insert(0, _StubsLeftAlone())
    return True
