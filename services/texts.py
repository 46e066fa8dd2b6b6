"""Participant-facing wording (assets/scales.toml), overridable per study folder."""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"


@functools.lru_cache(maxsize=1)
def texts() -> dict:
    return tomllib.loads((ASSETS / "scales.toml").read_text(encoding="utf-8"))


def sqm_label(score: float) -> str:
    """The DA+SQM label nearest below a 0-100 score (ticks 0, 2, 4, 6 carry labels)."""
    labels = sorted(texts()["sqm"], key=lambda s: s["value"])
    chosen = labels[0]
    for s in labels:
        if score + 1e-9 >= s["value"]:
            chosen = s
    return chosen["label"]
