"""How each system's stored translations were made, for the report's versions (the usability
protocol's systems_report): the precision each stage's weights ran in (paper 000, appendix B.4,
names bfloat16 for Whisper large-v3 and Voxtral only; assets/systems.toml), how many outputs,
and how many a guard cut where the model ran on into a new prompt turn (issue 50, points 1-2)."""

from __future__ import annotations

from services.common.vocabulary import count
from storage import studies
from storage.usability import recordings


def precision_text(precision: dict) -> str:
    """{"asr": "bfloat16", "mt": "float32"} as "asr bfloat16, mt float32"."""
    return ", ".join(f"{stage} {value or 'as served'}" for stage, value in precision.items())


def systems_report(database, study_id: str) -> dict[str, str]:
    """{system id: line} for the systems that run models (a human system's translations were
    made elsewhere: it has no precision and no guard)."""
    models = {s["id"] for s in studies.systems(database, study_id) if s["kind"] != "human"}
    out = {}
    for system, made in recordings.system_outputs(database, study_id).items():
        if system not in models:
            continue
        ran = "; ".join(precision_text(p) for p in made["precision"] if isinstance(p, dict)) or "not recorded"
        out[system] = (
            f"ran in {ran}; {count(made['n'], 'translation')}, {made['n'] - made['cut']} used whole as generated, "
            f"{made['cut']} cut where the model ran on into a new prompt turn (meta.cut)"
        )
    return out
