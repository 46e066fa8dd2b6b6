"""Randomness reproducible from a study's seed: the same parts give the same draws on every
machine and run (sha256 of the parts, not Python's salted hash)."""

from __future__ import annotations

import hashlib
import random
from typing import Hashable


def seeded_rng(*parts: Hashable) -> random.Random:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def order_key(seed: int, participant_id: Hashable, item_id: Hashable) -> float:
    """A stable pseudo-random position: sorting a participant's items by it shuffles them."""
    return seeded_rng("order", seed, participant_id, item_id).random()
