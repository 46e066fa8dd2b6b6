"""The welcome at the top of a participant's page: what the role does and about how
long it takes, before consent and the first item, as survey platforms show it.

The minutes are the study's `[study] expected_minutes` for the role where it sets them (a table,
role = minutes), else an estimate: the role's items times SECONDS_PER_ITEM, rounded up to whole
minutes. Only paper 002 gives a time (about 10 minutes for the semantic differential, its
`sd.expected_seconds`); the other seconds per item are this project's estimates: a study that
measured its own pilot sets expected_minutes."""

from __future__ import annotations

import math

from services.common import protocols
from services.study.texts import Voice
from storage import assignments, studies
from storage.db import required

# the project's estimates (no paper gives one): reading and recording a 40-60 word starter, up to
# two tries, and its two surveys; reading a translation and answering up to 10 short questions;
# reading source and translation, a score and up to 10 marks; two surveys of someone else's
# message; one DA segment (paper 001: 100 per HIT)
SECONDS_PER_ITEM = {"sender": 150, "receiver": 150, "validator": 180, "rater": 60, "da": 10}


def items_of(study: dict, role: str) -> int:
    """The items a role's participant answers, by the study's settings."""
    cfg = study["config"]
    us, da = cfg.get("usability") or {}, cfg.get("da") or {}
    return {
        "sender": us.get("items_per_sender", 0),
        "receiver": us.get("items_per_receiver", 0),
        "validator": us.get("items_per_validator", 0),
        "rater": us.get("items_per_sender", 0),
        "da": da.get("hit_size", 0),
        "sd": (cfg.get("sd") or {}).get("sentences_per_participant", 0),
    }.get(role, 0)


def expected_minutes(study: dict, role: str) -> int:
    given = (study["config"]["study"].get("expected_minutes") or {}).get(role)
    if given:
        return int(math.ceil(given))
    if role == "sd":
        return int(math.ceil(study["config"]["sd"]["expected_seconds"] / 60))
    return max(1, int(math.ceil(items_of(study, role) * SECONDS_PER_ITEM.get(role, 60) / 60)))


def welcome(study: dict, role: str, lang: str) -> str:
    """The role's welcome in the page's language (assets/texts/<language>.toml welcome_<role>)."""
    return Voice(lang, study)(f"welcome_{role}", items=items_of(study, role), minutes=expected_minutes(study, role))


def page_welcome(database, participant: dict, lang: str) -> str:
    """The welcome of a participant's page while they have answered nothing yet ("" after): the
    time is what they decide to start on; after their first item the progress line says the rest."""
    phases = tuple(ph for tab in protocols.role(participant["role"]).tabs for ph in protocols.tab(tab).phases)
    if assignments.counts(database, participant["id"], phases)["done"]:
        return ""
    return welcome(
        required(studies.get_study(database, participant["study_id"]), "study of a participant"),
        participant["role"],
        lang,
    )
