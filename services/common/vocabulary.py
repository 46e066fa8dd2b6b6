"""The study's vocabulary, defined once: the id pattern, the most questions a starter has (the
roles are the registered protocols': services/common/protocols.py)."""

from __future__ import annotations

import re

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_QUESTIONS = 10
