"""The in-process model cache: every backend gets its loaded model from here.

- get(key, loader) loads once; a per-key lock makes concurrent callers wait for that one load.
- The device (CUDA when present) is chosen once per process; dtype() maps a config's
  "bfloat16" to torch's dtype on CUDA ("auto": the checkpoint's own) and to float32 on CPU,
  where bf16 is slow.
- Least-recently-used entries are evicted when the loaded total passes the memory budget
  (GPU memory on CUDA, RAM otherwise); unload() frees GPU memory.
- report() says what is loaded, where, and how big (the admin tab shows it).
- exclusive() serialises model work on a GPU: the job worker and the Gradio events that
  run models (concurrency_id MODEL_QUEUE) take turns instead of oversubscribing it.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Callable

from services.common.settings import current as current_settings

MODEL_QUEUE = "models"  # Gradio concurrency_id shared by every event that runs a model


def _torch():
    try:
        # lazy import (torch): heavy model library; loaded only when a model runs
        import torch

        return torch
    except ImportError:
        return None


def _rss() -> int:
    # lazy import (psutil): needed only when memory is measured
    import psutil

    return psutil.Process().memory_info().rss


def _module_bytes(obj) -> int | None:
    """Parameter + buffer bytes of a torch module, or of the modules an object holds."""
    torch = _torch()
    if torch is None:
        return None
    mods = (
        [obj]
        if isinstance(obj, torch.nn.Module)
        else [v for v in vars(obj).values() if isinstance(v, torch.nn.Module)]
        if hasattr(obj, "__dict__")
        else []
    )
    if not mods:
        return None
    total = 0
    for m in mods:
        total += sum(t.numel() * t.element_size() for t in m.parameters())
        total += sum(t.numel() * t.element_size() for t in m.buffers())
    return total


@dataclass
class Entry:
    key: str
    value: Any
    device: str
    size_bytes: int
    load_seconds: float
    loaded_at: float
    last_used: float
    hits: int = 0


class ModelCache:
    def __init__(self, budget_bytes: int | None = None, device: str | None = None):
        self._entries: "OrderedDict[str, Entry]" = OrderedDict()
        self._lock = threading.Lock()  # guards _entries and _key_locks
        self._key_locks: dict[str, threading.Lock] = {}
        self._gpu_lock = threading.RLock()
        self._device = device
        self._budget = budget_bytes
        self.loads = 0  # how many loader calls ran (tests, report)

    # -- device and dtype, chosen once ---------------------------------------------------
    @property
    def device(self) -> str:
        if self._device is None:
            wanted = current_settings().device
            torch = _torch()
            cuda = bool(torch and torch.cuda.is_available())
            if wanted == "cuda" and not cuda:
                raise RuntimeError("TRADLAB_DEVICE=cuda but torch sees no CUDA device")
            self._device = "cuda" if (wanted == "cuda" or (wanted == "auto" and cuda)) else "cpu"
        return self._device

    def dtype(self, requested: str | None = None):
        """torch dtype for a config's dtype name: float32 on CPU (bf16 is slow there); on CUDA as
        asked, and "auto" (or none) the checkpoint's own, as its config gives it (transformers'
        dtype="auto"): what the paper ran where it names no precision."""
        torch = _torch()
        if torch is None:
            return None
        if self.device == "cpu":
            return torch.float32
        if not requested or requested == "auto":
            return "auto"
        return {
            "bfloat16": torch.bfloat16,
            "bf16": torch.bfloat16,
            "float16": torch.float16,
            "fp16": torch.float16,
            "float32": torch.float32,
        }[requested]

    @property
    def budget_bytes(self) -> int:
        if self._budget is None:
            mb = current_settings().model_memory_mb
            if mb:
                self._budget = int(float(mb) * 2**20)
            elif self.device == "cuda":
                self._budget = int(_torch().cuda.get_device_properties(0).total_memory * 0.9)
            else:
                # lazy import (psutil): needed only when memory is measured
                import psutil

                self._budget = int(psutil.virtual_memory().total * 0.5)
        return self._budget

    # -- the cache -------------------------------------------------------------------------
    def get(
        self, key: str, loader: Callable[[], Any], *, device: str | None = None, size_bytes: int | None = None
    ) -> Any:
        with self._lock:
            e = self._hit(key)
            if e is not None:
                return e.value
            klock = self._key_locks.setdefault(key, threading.Lock())
        with klock:  # one load per key; others wait here
            with self._lock:
                e = self._hit(key)
                if e is not None:
                    return e.value
            dev = device or self.device
            value, size, secs = self._load(loader, dev, size_bytes)
            now = time.time()
            with self._lock:
                self._entries[key] = Entry(key, value, dev, size, secs, now, now)
                self.loads += 1
                self._evict_over_budget(keep=key)
            return value

    def _hit(self, key: str) -> Entry | None:
        """The entry, marked most recently used (call with self._lock held)."""
        e = self._entries.get(key)
        if e is not None:
            self._entries.move_to_end(key)
            e.last_used, e.hits = time.time(), e.hits + 1
        return e

    def _load(self, loader, dev, size_bytes):
        torch = _torch()
        on_cuda = dev.startswith("cuda") and torch is not None and torch.cuda.is_available()
        before = torch.cuda.memory_allocated() if on_cuda else _rss()
        t0 = time.perf_counter()
        try:
            value = loader()
        except Exception as e:
            if on_cuda and isinstance(e, torch.cuda.OutOfMemoryError) and len(self._entries):
                self.clear()  # make room once, then try again
                before = torch.cuda.memory_allocated()
                value = loader()
            else:
                raise
        secs = time.perf_counter() - t0
        if size_bytes is None:
            size_bytes = _module_bytes(value)
        if size_bytes is None:
            after = torch.cuda.memory_allocated() if on_cuda else _rss()
            size_bytes = max(0, after - before)
        return value, int(size_bytes), secs

    def _evict_over_budget(self, keep: str) -> None:
        while sum(e.size_bytes for e in self._entries.values()) > self.budget_bytes:
            victim = next((k for k in self._entries if k != keep), None)
            if victim is None:
                return
            self._drop(victim)

    def _drop(self, key: str) -> None:
        e = self._entries.pop(key)
        close = getattr(e.value, "close", None) or getattr(e.value, "unload", None)
        if callable(close):
            try:
                close()
            except Exception:
                pass
        del e
        gc.collect()
        torch = _torch()
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()

    def unload(self, key: str) -> bool:
        with self._lock:
            if key not in self._entries:
                return False
            self._drop(key)
            return True

    def clear(self) -> None:
        with self._lock:
            for key in list(self._entries):
                self._drop(key)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def report(self) -> list[dict]:
        with self._lock:
            return [
                {
                    "model": e.key,
                    "device": e.device,
                    "size_mb": round(e.size_bytes / 2**20, 1),
                    "load_s": round(e.load_seconds, 2),
                    "uses": e.hits + 1,
                    "last_used": time.strftime("%H:%M:%S", time.localtime(e.last_used)),
                }
                for e in reversed(self._entries.values())
            ]

    def exclusive(self):
        """Hold while running a model on the GPU; a no-op on CPU, where threads share cores."""
        return self._gpu_lock if self.device == "cuda" else nullcontext()


CACHE = ModelCache()
