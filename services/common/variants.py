"""The Portuguese variant a study targets: European (pt-PT) or Brazilian (pt-BR).

Paper 000's receivers are L1 Portuguese speakers in Portugal, its cascade asks Tower+ for
"Portuguese (Portugal)" and it calls its language pair "English - European Portuguese": a
study's `[usability] target_variant` defaults to "pt-PT" (any protocol whose section has a
`target_variant` setting sets its studies' variant: declared()). The setting is what the study's
receivers read; it reaches
- the LLM prompts (services/comprehension/settings.py fills the placeholders below), so generated
  questions are translated into that variant;
- the systems whose prompt or language code can name a variant (services/models/systems.py fills the
  placeholders in `prompt` / `mt_prompt`); a model that produces one variant only (Bergamot
  en-pt: Brazilian) keeps producing it, and the export marks which variant each system produced.

Placeholders a prompt may hold: {target_language} ("Portuguese (Portugal)", the paper's Tower+
wording), {target_language_pt} (the variant's name in Portuguese) and {target_variant} (the tag).
"""

from __future__ import annotations

import re

VARIANTS = ("pt-PT", "pt-BR")
DEFAULT = "pt-PT"
NAMES = {"pt-PT": "Portuguese (Portugal)", "pt-BR": "Portuguese (Brazil)"}
NAMES_PT = {"pt-PT": "português europeu (de Portugal)", "pt-BR": "português do Brasil"}
PLACEHOLDERS = ("{target_language}", "{target_language_pt}", "{target_variant}")
# a protocol whose section has this setting (a key of its defaults) sets its studies' variant
SETTING = "target_variant"


def declared(study_config: dict | None) -> str | None:
    """The target variant the section of a protocol the study lists sets (a section with a
    target_variant setting; the stored config has each section's defaults); None when none of
    the study's protocols has the setting. Read from the config alone: the model backends' venvs
    import this module without the registry (or sqlite-utils)."""
    cfg = study_config or {}
    listed = (cfg.get("study") or {}).get("protocols") or list(cfg)
    for name in listed:
        section = cfg.get(name)
        if isinstance(section, dict) and SETTING in section:
            return section[SETTING]
    return None


def of_study(study_config: dict | None) -> str:
    """The study's target variant (a listed protocol's target_variant; the default without one)."""
    v = declared(study_config)
    return v if v in VARIANTS else DEFAULT


def check(value) -> str | None:
    """Why `value` is not a target variant, or None."""
    return None if value in VARIANTS else f"must be one of {', '.join(VARIANTS)}"


def values(variant: str) -> dict[str, str]:
    return {"target_language": NAMES[variant], "target_language_pt": NAMES_PT[variant], "target_variant": variant}


def fill(text: str, variant: str) -> str:
    """text with the variant placeholders replaced (str.replace: other braces, e.g. {text}, stay)."""
    for key, value in values(variant).items():
        text = text.replace("{" + key + "}", value)
    return text


def asks_for_variant(prompt: str | None) -> bool:
    return prompt is not None and any(p in prompt for p in PLACEHOLDERS)


_PT_PT = re.compile(r"Portugal|European Portuguese|portugu[eê]s europeu|\bpt[-_]PT\b", re.I)
_PT_BR = re.compile(r"Brazil|Brasil|Brazilian|\bpt[-_]BR\b", re.I)


def named_in(text: str | None) -> str:
    """The variant a fixed prompt or language code names ("" when it names none or both)."""
    text = text or ""
    pt, br = bool(_PT_PT.search(text)), bool(_PT_BR.search(text))
    return "pt-PT" if pt and not br else "pt-BR" if br and not pt else ""
