"""Fixed-redundancy assignment by slots, for protocols where each item gets a set number of
judges (side by side's annotators_per_item, the listening test's listeners_per_item): the items
are shuffled once into a sequence read cyclically, and the k-th judge to enrol holds the slots
k x per_judge onwards, so the items the fewest judges hold go next and none gets more than
per_item. Who holds which slot is a row of the protocol's takers table (study_id, slot); slots
are taken in order and never freed, so the next free one is found by indexed look-ups."""

from __future__ import annotations

from storage import protocol_rows


def slots(k: int, per_judge: int, n_items: int, per_item: int) -> list[tuple[int, int]]:
    """The k-th judge's (sequence place, round) pairs: the slots k*ipj .. k*ipj+ipj-1 of the cyclic
    sequence, those before n*per_item only (the round: how many times the sequence came round)."""
    ipj = min(per_judge, n_items)
    end = n_items * per_item
    return [(s % n_items, s // n_items) for s in range(k * ipj, min((k + 1) * ipj, end))]


def judges_needed(n_items: int, per_judge: int, per_item: int) -> int:
    """How many judges give every item per_item judgments."""
    ipj = min(per_judge, n_items)
    return -(-n_items * per_item // ipj) if ipj else 0


def next_slot(database, takers: str, study_id: str) -> int:
    """The first slot of the study nobody holds in the takers table: found by doubling then halving
    over indexed look-ups, so enrolment reads no whole study's rows."""

    def taken(slot: int) -> bool:
        return protocol_rows.one(database, takers, {"study_id": study_id, "slot": slot}) is not None

    if not taken(0):
        return 0
    hi = 1
    while taken(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if taken(mid) else (lo, mid)
    return hi
