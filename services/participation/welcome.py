"""The welcome at the top of a participant's page: what the role does and about how
long it takes, before consent and the first item, as survey platforms show it.

The minutes are the study's `[study] expected_minutes` for the role where it sets them (a table,
role = minutes), else an estimate: the role's items times its Role.seconds_per_item (each
protocol's spec), rounded up to whole minutes. Only paper 002 gives a time (about 10 minutes
for the semantic differential, its `sd.expected_seconds`: Role.minutes); the other seconds per
item are this project's estimates: a study that measured its own pilot sets expected_minutes.

A participant's page names the items they hold where their role counts them (Role.held_items:
a HIT of whole documents), else the study-wide Role.items."""

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


def held_items(database, study: StudyRow, participant: ParticipantRow) -> int:
    """The items this participant holds, by their role's Role.held_items, else items_of."""
    held = protocols.role(participant["role"]).held_items
    return held(database, study, participant) if held else items_of(study, participant["role"])


def expected_minutes(study: StudyRow, role: str, items: int | None = None) -> int:
    """The welcome's minutes; items: the participant's own count (held_items), else items_of."""
    given = (study["config"]["study"].get("expected_minutes") or {}).get(role)
    if given:
        return int(math.ceil(given))
    spec = protocols.role(role)
    if spec.minutes is not None:
        return int(math.ceil(spec.minutes(study["config"])))
    n = items_of(study, role) if items is None else items
    return max(1, int(math.ceil(n * spec.seconds_per_item / 60)))


def welcome(study: StudyRow, role: str, lang: str, items: int | None = None) -> str:
    """The role's welcome in the page's language (assets/texts/<language>.toml welcome_<role>);
    items: a participant's own count (held_items), else the role's study-wide one."""
    n = items_of(study, role) if items is None else items
    return Voice(lang, study)(f"welcome_{role}", items=n, minutes=expected_minutes(study, role, n))


def page_welcome(database, participant: ParticipantRow, lang: str) -> str:
    """The welcome of a participant's page while they have answered nothing yet ("" after): the
    time is what they decide to start on; after their first item the progress line says the rest."""
    phases = tuple(ph for tab in protocols.role(participant["role"]).tabs for ph in protocols.tab(tab).phases)
    if assignments.counts(database, participant["id"], phases)["done"]:
        return ""
    study = required(studies.get_study(database, participant["study_id"]), "study of a participant")
    return welcome(study, participant["role"], lang, held_items(database, study, participant))
