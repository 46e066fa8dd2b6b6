"""The study's vocabulary, defined once: the id pattern, the most questions a starter has (the
roles are the registered protocols': services/common/protocols.py)."""

from __future__ import annotations

import re

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_QUESTIONS = 10


def count(n: int, one: str, many: str | None = None) -> str:
    """'1 rater', '2 raters': a number with its noun in the right number (many: an irregular
    plural, else one + 's')."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
