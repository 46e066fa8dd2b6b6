"""The model cache: one load per key under concurrency, LRU eviction under a budget, unload."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest
import torch

from services.models.cache import ModelCache

pytestmark = pytest.mark.slow  # out of `make test-fast` (docs/development.md)


class Model:
    def __init__(self, name):
        self.name = name
        self.closed = False

    def close(self):
        self.closed = True


def test_loads_once_and_returns_the_same_object():
    cache = ModelCache(budget_bytes=10**9, device="cpu")
    a = cache.get("m", lambda: Model("m"), size_bytes=10)
    b = cache.get("m", lambda: Model("other"))
    assert a is b and cache.loads == 1
    [row] = cache.report()
    assert row["model"] == "m" and row["device"] == "cpu" and row["uses"] == 2


def test_two_threads_one_load():
    cache = ModelCache(budget_bytes=10**9, device="cpu")
    started = threading.Event()
    calls = []

    def slow_loader():
        calls.append(threading.get_ident())
        started.set()
        time.sleep(0.3)
        return Model("slow")

    got = []
    threads = [
        threading.Thread(target=lambda: got.append(cache.get("slow", slow_loader, size_bytes=1))) for _ in range(2)
    ]
    threads[0].start()
    started.wait(2)
    threads[1].start()
    for t in threads:
        t.join(5)
    assert len(calls) == 1 and cache.loads == 1
    assert len(got) == 2 and got[0] is got[1]


def test_different_keys_load_in_parallel():
    """Per-key locks: a slow load does not block another model's."""
    cache = ModelCache(budget_bytes=10**9, device="cpu")
    gate = threading.Event()

    def blocked():
        gate.wait(5)
        return Model("a")

    t = threading.Thread(target=lambda: cache.get("a", blocked, size_bytes=1))
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    cache.get("b", lambda: Model("b"), size_bytes=1)
    assert time.perf_counter() - t0 < 1.0
    gate.set()
    t.join(5)
    assert cache.loads == 2


def test_least_recently_used_is_evicted_under_the_budget():
    cache = ModelCache(budget_bytes=250, device="cpu")
    a = cache.get("a", lambda: Model("a"), size_bytes=100)
    cache.get("b", lambda: Model("b"), size_bytes=100)
    cache.get("a", lambda: Model("a2"))  # a is now the most recently used
    cache.get("c", lambda: Model("c"), size_bytes=100)
    assert "b" not in cache and "a" in cache and "c" in cache
    assert [r["model"] for r in cache.report()] == ["c", "a"]
    # a model bigger than the budget is still served, alone
    cache.get("huge", lambda: Model("huge"), size_bytes=1000)
    assert [r["model"] for r in cache.report()] == ["huge"] and a.closed


def test_unload_releases_the_model():
    cache = ModelCache(budget_bytes=10**9, device="cpu")
    m = cache.get("m", lambda: torch.nn.Linear(256, 256))
    ref = weakref.ref(m)
    assert cache.report()[0]["size_mb"] == pytest.approx((256 * 256 + 256) * 4 / 2**20, abs=0.05)
    del m
    assert cache.unload("m") and not cache.unload("m")
    gc.collect()
    assert ref() is None and cache.report() == []
    cache.get("m", lambda: torch.nn.Linear(2, 2))
    assert cache.loads == 2


def test_size_of_a_torch_module_and_of_an_object_holding_one():
    cache = ModelCache(budget_bytes=10**9, device="cpu")

    class Holder:
        def __init__(self):
            self.model = torch.nn.Linear(100, 10, bias=False).to(torch.bfloat16)

    cache.get("h", Holder)
    assert cache.report()[0]["size_mb"] == pytest.approx(1000 * 2 / 2**20, abs=0.01)


def test_a_failed_load_is_not_cached_and_can_be_retried():
    cache = ModelCache(budget_bytes=10**9, device="cpu")

    def broken():
        raise OSError("weights not found")

    with pytest.raises(OSError):
        cache.get("x", broken)
    assert "x" not in cache
    assert cache.get("x", lambda: Model("x"), size_bytes=1).name == "x"


def test_device_and_dtype_chosen_once(monkeypatch):
    monkeypatch.setenv("TRADLAB_DEVICE", "cpu")
    cache = ModelCache()
    assert cache.device == "cpu"
    monkeypatch.setenv("TRADLAB_DEVICE", "auto")
    assert cache.device == "cpu"  # chosen once per process
    assert cache.dtype("bfloat16") == torch.float32  # bf16 only where it is fast (CUDA)
    gpu = ModelCache(device="cuda")
    assert gpu.dtype("bfloat16") == torch.bfloat16
    # the checkpoint's own where nothing is asked (transformers reads it from the config)
    assert gpu.dtype(None) == gpu.dtype("auto") == "auto" and cache.dtype("auto") == torch.float32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_unload_frees_gpu_memory():
    cache = ModelCache(device="cuda")
    before = torch.cuda.memory_allocated()
    cache.get("big", lambda: torch.nn.Linear(4096, 4096).cuda())
    assert torch.cuda.memory_allocated() - before >= 4096 * 4096 * 4
    assert cache.report()[0]["device"] == "cuda"
    cache.unload("big")
    assert torch.cuda.memory_allocated() - before < 1024 * 1024
