"""Graham et al. (2017)'s degradation of an MT output, as WMT's DA bad references use it and ESA's
attention items borrow it: how many words of an output of n words are replaced by a run from
another segment, and where the run starts (the first and last word kept from five words on)."""

from __future__ import annotations


def span_length(n: int) -> int:
    """Words replaced in an MT output of n words."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"an output to degrade needs at least one word (n={n!r})")
    if n <= 3:
        return 1
    if n <= 5:
        return 2
    if n <= 7:
        return 3
    if n <= 14:
        return 4
    if n <= 19:
        return 5
    return n // 4


def span_start(n: int, rng) -> int:
    """Where the span starts (0-based): fixed for n <= 4, random for n >= 5 with the first and
    last word kept (start in 1 .. n - 1 - length)."""
    length = span_length(n)
    if n <= 4:
        return {1: 0, 2: 1, 3: 1, 4: 1}[n]
    return rng.randint(1, n - 1 - length)
