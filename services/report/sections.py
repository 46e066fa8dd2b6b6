"""The report's building blocks: a numbered, captioned section (a table, a figure or the
sentence saying what is missing and what would fill it) and a protocol's part of the report."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Section:
    number: str  # as the paper numbers it: "Table 1", "Figure 2a"
    caption: str  # the paper's caption (shortened), with what the app computes
    table: pd.DataFrame | None = None
    figure: object = None  # a plotly figure
    missing: str = ""  # why there is no content and what would fill it
    decimals: int | dict = 2  # the paper's precision: one for every float column, or per column
    where: str = ""  # the paper section the item is in ("4.1", "appendix C.2")

    @property
    def filled(self) -> bool:
        return self.table is not None or self.figure is not None


@dataclass
class Part:
    protocol: str  # usability | da | sd | qe
    title: str  # "Usability of the four-phase study (paper 000)"
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # departures from the paper and the analysis's notes
    summary: str = ""  # one line at the top of the part
    files: list = field(default_factory=list)  # the analysis's own output files (CSV, ...)
    # the analysis itself (what the protocol's study_analysis.analyse returned: its result or the
    # message saying why there is none), so the Analysis tab shows its own tables without a rerun
    detail: object = None


def _sentence(text: str) -> str:
    """A why-missing text as a sentence (an analysis's error message has no full stop)."""
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def fill(items: list[tuple[str, str, str]], content: dict, missing: str, decimals: dict | None = None) -> list[Section]:
    """Sections for (number, caption, where) in order: content[number] is a DataFrame, a figure,
    a (content, why-missing) pair or absent (then `missing` is the sentence)."""
    decimals = decimals or {}
    out = []
    for number, caption, where in items:
        c = content.get(number)
        s = Section(number, caption, where=where, decimals=decimals.get(number, 2))
        if isinstance(c, str):
            s.missing = _sentence(c)
        elif isinstance(c, pd.DataFrame):
            if c.empty:
                s.missing = missing
            else:
                s.table = c
        elif c is not None:
            s.figure = c
        else:
            s.missing = missing
        out.append(s)
    return out
