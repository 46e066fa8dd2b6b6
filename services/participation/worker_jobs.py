"""The app's worker's job table: the study upkeep (services/participation/maintenance.py) and
every registered protocol's own jobs (Protocol.jobs), so a protocol's background work runs
without the worker naming the protocol."""

from __future__ import annotations

from typing import Callable

from services.common import protocols
from services.models.cache import CACHE
from services.participation import maintenance


def handlers(database, cache=CACHE, media_dir=None) -> dict:
    """{kind: handler(payload)} for every job kind the worker runs. Two protocols that name the
    same kind are a programming error, refused here rather than one silently shadowing the other."""
    table: dict[str, Callable[[dict], object]] = {
        maintenance.KIND: lambda payload: maintenance.run(database, payload["study_id"])
    }
    for protocol, make in protocols.with_hook("jobs"):
        for kind, handler in make(database, cache, media_dir).items():
            if kind in table:
                raise ValueError(f"protocol '{protocol.name}': job kind {kind!r} is already taken")
            table[kind] = handler
    return table
