"""The welcome at the top of a participant's page: what the role does and about how
long it takes, before consent and the first item, as survey platforms show it.

The minutes are the study's `[study] expected_minutes` for the role where it sets them (a table,
role = minutes), else an estimate: the role's items times its Role.seconds_per_item (each
protocol's spec), rounded up to whole minutes. Only paper 002 gives a time (about 10 minutes
for the semantic differential, its `sd.expected_seconds`: Role.minutes); the other seconds per
item are this project's estimates: a study that measured its own pilot sets expected_minutes."""

from __future__ import annotations

import math

from services.common import protocols
from services.study.texts import Voice
from storage import assignments, studies
from storage.db import required
from storage.rows import ParticipantRow, StudyRow


def items_of(study: StudyRow, role: str) -> int:
    """The items a role's participant answers, by the study's settings (its protocol's Role.items)."""
    items = protocols.role(role).items
    return items(study["config"]) if items else 0


def expected_minutes(study: StudyRow, role: str) -> int:
    given = (study["config"]["study"].get("expected_minutes") or {}).get(role)
    if given:
        return int(math.ceil(given))
    spec = protocols.role(role)
    if spec.minutes is not None:
        return int(math.ceil(spec.minutes(study["config"])))
    return max(1, int(math.ceil(items_of(study, role) * spec.seconds_per_item / 60)))


def welcome(study: StudyRow, role: str, lang: str) -> str:
    """The role's welcome in the page's language (assets/texts/<language>.toml welcome_<role>)."""
    return Voice(lang, study)(f"welcome_{role}", items=items_of(study, role), minutes=expected_minutes(study, role))


def page_welcome(database, participant: ParticipantRow, lang: str) -> str:
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
