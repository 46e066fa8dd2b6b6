"""The study's vocabulary, defined once: the roles, the id pattern, the most questions a starter has."""

from __future__ import annotations

import re

ROLES = ("sender", "receiver", "validator", "rater", "da", "sd")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_QUESTIONS = 10
