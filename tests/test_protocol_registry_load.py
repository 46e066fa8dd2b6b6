"""services/common/protocols.py: the registry's first load, asked for by two threads at once."""

from __future__ import annotations

import importlib
import threading
import time
import types
from pathlib import Path

from services.common import protocols

BUILTIN = (
    "services.usability.protocol:PROTOCOL",
    "services.da.protocol:PROTOCOL",
    "services.sd.protocol:PROTOCOL",
    "services.qe.protocol:PROTOCOL",
)


def _fresh_registry(monkeypatch, slow_s: float) -> threading.Event:
    """The registry as a new process has it, its first import slow; set once that import began.
    (The built-in modules are imported already, so the load registers their specs by name.)"""
    # loaded first, so that what monkeypatch puts back is a whole registry: restored unloaded, the
    # next load would import the built-in modules again, which Python does not re-run (they
    # register at import), and every later test of the process would find no protocol
    protocols.protocols()
    monkeypatch.setattr(protocols, "_registered", {})
    monkeypatch.setattr(protocols, "_cache", {})
    monkeypatch.setattr(protocols, "_rank", {})  # the order this load gives, put back after
    monkeypatch.setattr(protocols, "_loaded", False)
    monkeypatch.setattr(protocols, "_loading", False, raising=False)
    monkeypatch.setattr(protocols, "BUILTIN", BUILTIN)
    began = threading.Event()

    def slow(name, package=None):
        began.set()
        time.sleep(slow_s)
        return importlib.import_module(name, package)

    # the registry's own imports only, not the interpreter's
    monkeypatch.setattr(protocols, "importlib", types.SimpleNamespace(import_module=slow))
    return began


def test_a_thread_asking_during_the_first_load_gets_the_whole_registry(monkeypatch):
    began = _fresh_registry(monkeypatch, 0.05)
    first = threading.Thread(target=protocols.protocols)
    first.start()
    assert began.wait(5)
    # the first thread is importing the first module: this one waits for every protocol
    got = protocols.protocol("sd")
    first.join(5)
    assert got.name == "sd"
    assert {p.name for p in protocols.protocols()} >= {"usability", "da", "sd", "qe"}


def test_a_load_that_failed_is_tried_again(monkeypatch):
    _fresh_registry(monkeypatch, 0)
    monkeypatch.setattr(protocols, "BUILTIN", (*BUILTIN, "services.common.settings:current"))
    try:
        protocols.protocols()
    except TypeError as e:
        assert "services.common.settings:current is not a Protocol" in str(e)
    else:
        raise AssertionError("a plugin that is not a Protocol was taken")
    assert protocols._loaded is False and protocols._loading is False
    monkeypatch.setattr(protocols, "BUILTIN", BUILTIN)
    assert protocols.protocol("qe").name == "qe"


def test_built_ins_keep_their_order_whichever_module_is_imported_first():
    """A built-in protocol's module imported first registers after the load it starts; it had
    then come last, and a test run of a few files saw another order than the suite."""
    import subprocess
    import sys

    code = (
        "import {first}\nfrom services.common import protocols\nprint(','.join(p.name for p in protocols.protocols()))"
    )
    for first in (
        "services.da.protocol",
        "services.sd.protocol",
        "services.qe.protocol",
        "services.compare.protocol",
        "services.esa.protocol",
        "services.esa.mqm_protocol",
    ):
        run = subprocess.run(
            [sys.executable, "-c", code.format(first=first)],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert run.stdout.strip().splitlines()[-1] == "usability,da,sd,qe,sxs,esa,mqm,listening", (
            first,
            run.stdout,
            run.stderr[-500:],
        )
