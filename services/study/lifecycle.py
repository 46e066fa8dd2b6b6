"""A study's life after its pilot: which settings a re-import may change in place (they touch no
collected item), and archiving or deleting a study (docs/running-a-study.md, "After the pilot").

A re-import of the same study id whose corpus is unchanged and whose changed settings are all in
SAFE_SETTINGS updates the stored config in place: every collected answer stays, and the audit log
gets one `setting_changed` row per setting (old and new value, who). Any other change, once the
study has participants, is refused naming the settings: the items people answered would no longer
be the ones stored (a new study id keeps both)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# setting (a dotted key of study.toml, or a prefix of them) -> why changing it touches no collected item
SAFE_SETTINGS: dict[str, str] = {
    "study.name": "the study's name, shown to the team",
    "study.description": "the study's description, shown on the welcome page",
    "study.completion_code": "the code shown when a participant finishes",
    "study.redirect_url": "where a participant who finishes is sent",
    "study.expected_minutes": "the time the welcome page announces",
    "study.enrol_per_minute": "a self-enrolment rate limit",
    "study.enrol_per_client_per_minute": "a self-enrolment rate limit",
    "study.enrol_per_client_per_hour": "a self-enrolment rate limit",
    "study.prolific_study_ids": "which Prolific studies may send newcomers",
    "texts": "participant-facing wording (scales.toml)",
    "consent.text": "the consent wording (who agreed to which version is in the audit log)",
    "consent.file": "the file the consent wording is read from",
    "consent.agree": "a button label",
    "consent.decline": "a button label",
    "demographics.submit": "a button label",
    "da.reliability_alpha": "the level of the DA reliability test (HITs judged from now on, the analysis)",
    "da.fast_item_s": "the DA speed check (HITs judged from now on, the analysis)",
    "da.keep_fast": "the DA speed check (HITs judged from now on, the analysis)",
    "sd.expected_seconds": "the time the welcome page announces",
}

# the imported content a study's items are made of (StudyBundle fields), each hashed on its own
CORPUS_PARTS = (
    "systems",
    "starters",
    "questions",
    "exchanges",
    "references",
    "da_segments",
    "da_hits",
    "sd_sentences",
    "sd_pairs",
)


def corpus_hashes(bundle) -> dict[str, str]:
    """Each part of the bundle's imported content, hashed: what a re-import compares."""
    return {
        part: hashlib.sha256(
            json.dumps(getattr(bundle, part), sort_keys=True, ensure_ascii=False, default=str).encode()
        ).hexdigest()
        for part in CORPUS_PARTS
    }


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    else:
        out[prefix] = value
    return out


def setting_changes(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    """(setting, old value, new value) for each setting that differs; lists compare whole."""
    # as stored (JSON): a tuple read from the folder equals the list it was saved as
    a, b = (_flat(json.loads(json.dumps(c, default=str)), "", {}) for c in (old, new))
    return [(k, a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]


def is_safe(setting: str) -> bool:
    return any(setting == s or setting.startswith(s + ".") for s in SAFE_SETTINGS)


def changed_parts(stored_hashes: str | None, bundle) -> list[str] | None:
    """The corpus parts that differ from the stored study's; None when the study was imported
    before their hashes were stored (nothing can be compared)."""
    if not stored_hashes:
        return None
    old = json.loads(stored_hashes)
    new = corpus_hashes(bundle)
    return [p for p in CORPUS_PARTS if old.get(p) != new[p]]


def refusals(changes: list[tuple[str, Any, Any]], parts: list[str] | None) -> list[str]:
    """Why a re-import cannot update a study with participants in place: one line per reason."""
    out = []
    if parts is None:
        out.append("the study was imported before in-place edits existed, so its corpus cannot be compared")
    else:
        out += [f"the corpus changed ({p}): collected answers refer to its items" for p in parts]
    out += [
        f"setting '{k}' changed ({_short(o)} -> {_short(n)}): it shapes the items people answer or who gets them"
        for k, o, n in changes
        if not is_safe(k)
    ]
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
