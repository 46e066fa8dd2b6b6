"""Hugging Face ZeroGPU: `gpu(fn)` wraps fn with `spaces.GPU` on a ZeroGPU Space, else returns fn.

A ZeroGPU Space has no GPU of its own: one is attached only while a function decorated with
`spaces.GPU` runs. The platform marks such a Space with SPACES_ZERO_GPU=true (the `spaces`
package reads the same variable, as "1", "t" or "true"), and the `spaces` package is then
installed. Both must hold here; anywhere else (a laptop, a GPU machine, a CPU Space, Docker)
gpu() is the identity, so decorating costs nothing.

Decorate at import time (module level), as ZeroGPU requires, and only functions that a Gradio
event calls: the GPU is granted to a request's event, not to a background thread.

    @gpu
    def translate(...): ...

    @gpu(duration=180)          # seconds of GPU asked for each call (spaces' default: 60)
    def long_job(...): ...
"""

from __future__ import annotations

from typing import Callable, TypeVar

from services.common.settings import current as current_settings

ENV = "SPACES_ZERO_GPU"
F = TypeVar("F", bound=Callable)


def on_zerogpu(env: dict | None = None) -> bool:
    """SPACES_ZERO_GPU is set to a true value (what the `spaces` package itself checks)."""
    value = current_settings().zero_gpu if env is None else (env.get(ENV) or "")
    return value.strip().lower() in ("1", "t", "true", "yes")


def _spaces():
    """The `spaces` module on ZeroGPU, else None (never imported elsewhere)."""
    if not on_zerogpu():
        return None
    try:
        # lazy import (spaces): present on a ZeroGPU Space only
        import spaces
    except ImportError:
        return None
    return spaces


def gpu(fn: F | None = None, *, duration: int | None = None):
    """`spaces.GPU(fn)` on ZeroGPU, fn itself elsewhere; usable as @gpu or @gpu(duration=...)."""

    def wrap(f: F) -> F:
        spaces = _spaces()
        if spaces is None:
            return f
        if duration is None:
            return spaces.GPU(f)
        return spaces.GPU(duration=duration)(f)

    return wrap if fn is None else wrap(fn)
