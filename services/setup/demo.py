"""The demo study's people (`app.py --demo` on a new database), so that one person can play every
role to the end: each protocol the study lists adds its own through its spec's demo hook
(Protocol.demo: the usability study's, with a sender who dropped out, is
services/setup/usability_demo.py), or one participant per role without one."""

from __future__ import annotations

from pathlib import Path

from services.common import protocols
from services.setup.enrolment import add_participants
from storage import studies
from storage.db import required


def add_demo_participants(database, study_id: str, media_dir: Path) -> str:
    """Every listed protocol's demo people; what was done, in words, as the start prints it."""
    study = required(studies.get_study(database, study_id), "demo study")
    said = []
    for p in protocols.protocols():
        if p.name not in study["config"]["study"]["protocols"]:
            continue
        if p.demo is not None:
            said.append(protocols.resolve(p.demo)(database, study_id, media_dir))
        else:
            for role in p.roles:
                add_participants(database, study_id, role.name, 1, actor="demo")
    return "; ".join(s for s in said if s) or "one participant per role"
