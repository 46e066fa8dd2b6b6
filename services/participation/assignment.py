"""Who gets which item: pure functions over plain data, reproducible from the study seed.

- sender_design: a sender's starters, stratified over domain x source, with systems
  balanced within the sender; design block i is the same in every group x gender cell, so
  the stimuli are shared across groups (between-subjects on the cell, within on starters).
- (receivers, validators and raters take items from the work pool: services/usability/workflow.next_item)
- order_key (services/common/seeded.py): a per-participant random order of items.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
from typing import Sequence

from services.common.seeded import seeded_rng


def _strata(starters: Sequence[dict], seed: int) -> dict[tuple[str, str], list[str]]:
    strata: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in sorted(starters, key=lambda s: s["id"]):
        strata[(s["domain"], s["source"])].append(s["id"])
    for key, ids in strata.items():
        seeded_rng("strata", seed, *key).shuffle(ids)
    return dict(sorted(strata.items()))


def _quotas(cells: list[tuple[str, str]], n: int, index: int) -> dict[tuple[str, str], int]:
    """Items per (domain, source) cell for design block `index`: n // C each, and the
    remainder on a set of cells that keeps the domain and source marginals as even as
    possible; successive blocks rotate through all such sets, so over a cycle every cell
    gets the same total."""
    base, extra = divmod(n, len(cells))
    quota = {c: base for c in cells}
    if extra:

        def spread(subset):
            doms, srcs = Counter(c[0] for c in subset), Counter(c[1] for c in subset)
            dom_vals = [doms.get(d, 0) for d in {c[0] for c in cells}]
            src_vals = [srcs.get(s, 0) for s in {c[1] for c in cells}]
            return (max(dom_vals) - min(dom_vals)) + (max(src_vals) - min(src_vals))

        subsets = list(combinations(cells, extra))
        best = min(map(spread, subsets))
        chosen = [s for s in subsets if spread(s) == best]
        for c in chosen[index % len(chosen)]:
            quota[c] += 1
    return quota


def sender_design(
    starters: Sequence[dict], systems: Sequence[str], n: int, seed: int, index: int
) -> list[tuple[str, str]]:
    """(starter_id, system_id) pairs of design block `index` (the index-th sender of a cell).

    Each stratum is a seeded shuffle of its starters consumed cyclically by successive
    blocks, so starter use stays within one across senders; systems follow a cycle with a
    per-block offset, so each sender sees every system n/S times (within one).
    """
    if not systems:
        raise ValueError("no systems to assign")
    if n > len(starters):
        raise ValueError(f"{n} starters per sender but only {len(starters)} starters")
    strata = _strata(starters, seed)
    cells = list(strata)
    used = {c: 0 for c in cells}  # how many items each stratum handed out before this block
    for i in range(index):
        q = _quotas(cells, n, i)
        for c in cells:
            used[c] += q[c]
    quota = _quotas(cells, n, index)
    # a stratum smaller than its quota lends the shortfall to the others
    shortfall = 0
    for c in cells:
        if quota[c] > len(strata[c]):
            shortfall += quota[c] - len(strata[c])
            quota[c] = len(strata[c])
    while shortfall:
        for c in sorted(cells, key=lambda c: len(strata[c]) - quota[c], reverse=True):
            if shortfall and quota[c] < len(strata[c]):
                quota[c] += 1
                shortfall -= 1
    chosen: list[str] = []
    for c in cells:
        ids = strata[c]
        chosen += [ids[(used[c] + k) % len(ids)] for k in range(quota[c])]
    cycle = list(systems)
    seeded_rng("systems", seed).shuffle(cycle)
    # The offset advances once per full rotation of the quota pattern, so that over
    # len(cells) x len(systems) blocks each stratum meets each system equally often.
    offset = index // len(cells)
    return [(sid, cycle[(offset + k) % len(cycle)]) for k, sid in enumerate(chosen)]
