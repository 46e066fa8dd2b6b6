"""services.metrics.context: the paper's context concatenation (none / mon / bil)."""

from __future__ import annotations

import math

import pytest

from services.metrics import context as C


class CountingMT:
    """A stand-in translator: records every call, 'translates' by upper-casing."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return [t.upper() for t in texts]


def test_none_returns_the_segments_unchanged():
    s, h = C.contextualise(["a source"], ["a hypothesis"], ["some context"], "none")
    assert (s, h) == (["a source"], ["a hypothesis"])
    assert C.contextualise(["x"], ["y"], None, "none") == (["x"], ["y"])


def test_mon_prepends_the_context_with_one_space():
    s, h = C.contextualise(
        ["She is a doctor.", "He writes."],
        ["Ela é médica.", "Ele escreve."],
        ["  Ana studied medicine. ", "Rui is a poet."],
        "mon",
    )
    assert s == ["Ana studied medicine. She is a doctor.", "Rui is a poet. He writes."]
    assert h == ["Ana studied medicine. Ela é médica.", "Rui is a poet. Ele escreve."]
    assert C.SEPARATOR == " "


def test_blank_or_missing_context_leaves_the_segment_alone():
    s, h = C.contextualise(["s1", "s2", "s3"], ["h1", "h2", "h3"], ["", None, math.nan], "mon")
    assert (s, h) == (["s1", "s2", "s3"], ["h1", "h2", "h3"])


def test_bil_translates_each_distinct_context_once():
    mt = CountingMT()
    contexts = ["ctx one", "ctx two", "ctx one", "", "ctx two", "ctx one"]
    sources = [f"s{i}" for i in range(6)]
    hyps = [f"h{i}" for i in range(6)]
    s, h = C.contextualise(sources, hyps, contexts, "bil", translate=mt)
    assert mt.calls == [["ctx one", "ctx two"]]  # one call, deduplicated, first-seen order
    assert s == ["ctx one s0", "ctx two s1", "ctx one s2", "s3", "ctx two s4", "ctx one s5"]
    assert h == ["CTX ONE h0", "CTX TWO h1", "CTX ONE h2", "h3", "CTX TWO h4", "CTX ONE h5"]


def test_bil_without_any_context_does_not_call_the_translator():
    mt = CountingMT()
    assert C.contextualise(["s"], ["h"], [""], "bil", translate=mt) == (["s"], ["h"])
    assert mt.calls == []


def test_errors():
    with pytest.raises(ValueError, match="unknown context mode"):
        C.contextualise(["s"], ["h"], ["c"], "both")
    with pytest.raises(ValueError, match="needs a translate"):
        C.contextualise(["s"], ["h"], ["c"], "bil")
    with pytest.raises(ValueError, match="needs contexts"):
        C.contextualise(["s"], ["h"], None, "mon")
    with pytest.raises(ValueError, match="2 sources but 1 hypotheses"):
        C.contextualise(["s", "t"], ["h"], None, "none")
    with pytest.raises(ValueError, match="1 sources but 2 contexts"):
        C.contextualise(["s"], ["h"], ["a", "b"], "mon")
    with pytest.raises(ValueError, match="returned 1 translations for 2"):
        C.contextualise(["s", "t"], ["h", "i"], ["a", "b"], "bil", translate=lambda xs: ["only one"])
