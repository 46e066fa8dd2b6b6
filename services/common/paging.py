"""Paging of the admin tables: every table is paged, so no handler sends a whole table to the browser."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd


@dataclass
class Page:
    """One page of an admin table: its rows and where it stands (every table is paged, so
    no handler sends a whole table to the browser)."""

    rows: pd.DataFrame
    page: int
    pages: int
    total: int

    @property
    def label(self) -> str:
        return f"Page {self.page} of {self.pages} · {self.total} row{'' if self.total == 1 else 's'}"


def page_bounds(total: int, page, page_size: int) -> tuple[int, int, int]:
    """(page, pages, offset) with the asked page clamped into 1..pages (empty: page 1 of 1)."""
    pages = max(1, math.ceil(total / page_size))
    try:
        asked = int(page)
    except (TypeError, ValueError, OverflowError):
        asked = 1
    page = min(max(asked, 1), pages)
    return page, pages, (page - 1) * page_size
