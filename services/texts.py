"""Participant-facing wording (assets/scales.toml), overridable per study folder."""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"


@functools.lru_cache(maxsize=1)
def defaults() -> dict:
    return tomllib.loads((ASSETS / "scales.toml").read_text(encoding="utf-8"))


def problems(override: dict) -> list[tuple[str, str]]:
    """(key, message) for every key of a study's scales.toml that the app does not know."""
    base, out = defaults(), []
    for section, value in override.items():
        if section not in base:
            out.append((section, f"unknown section (expected {', '.join(base)})"))
        elif isinstance(base[section], dict):
            if not isinstance(value, dict):
                out.append((section, "must be a table"))
                continue
            for key, v in value.items():
                if key not in base[section]:
                    out.append((f"{section}.{key}", f"unknown key (expected {', '.join(base[section])})"))
                elif type(v) is not type(base[section][key]):
                    out.append((f"{section}.{key}", f"must be a {type(base[section][key]).__name__}"))
                elif isinstance(v, list) and len(v) != len(base[section][key]):
                    out.append((f"{section}.{key}", f"must have {len(base[section][key])} entries"))
        elif section == "sqm":
            ticks = sorted(e.get("tick") for e in value if isinstance(e, dict)) if isinstance(value, list) else []
            if ticks != [0, 2, 4, 6] or any(set(e) != {"tick", "value", "label", "description"} for e in value):
                out.append(("sqm", "must be four [[sqm]] tables (tick 0, 2, 4, 6) with tick, value, label, description"))
    return out


def texts(study: dict | None = None) -> dict:
    """The wording a study shows: the defaults, with the study's scales.toml over them."""
    base = defaults()
    override = ((study or {}).get("config") or {}).get("texts") or {}
    if not override:
        return base
    merged = dict(base)
    for section, value in override.items():
        merged[section] = {**base[section], **value} if isinstance(value, dict) else value
    return merged


def sqm_label(score: float, study: dict | None = None) -> str:
    """The DA+SQM label nearest to a 0-100 score (ticks 0, 2, 4, 6 carry labels; halfway
    between two labels, the lower one)."""
    labels = sorted(texts(study)["sqm"], key=lambda s: s["value"])
    return min(labels, key=lambda s: (abs(score - s["value"]), s["value"]))["label"]
