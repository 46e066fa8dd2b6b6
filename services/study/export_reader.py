"""Reading an export back (services/study/export.py wrote it): which export a path belongs to and
its tables as text frames, whatever its format (csv, jsonl, parquet, hf-audio's tables/). The
analyses (`python app.py analyze da|sd|usability`) read a study's export through this, so an
export needs no conversion before it is analysed.

Cells come back as strings ('' for an empty cell), as the analyses read a CSV: one parser for
every format. The CSV's formula guard (a leading single quote, export.neutralise) is undone."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from services.common.analysis_input import InputError
from services.study import export_dictionary as dictionary
from services.study.export import FORMULA_START, TEXT_TYPES

MANIFEST = "manifest.json"


class ExportReadError(InputError):
    """An export that cannot be read back; the message names the file and what is missing."""


@dataclass(frozen=True)
class Export:
    folder: Path
    manifest: dict
    table: str | None = None  # the table the given path is, None when a folder was given

    @property
    def study(self) -> str:
        return str(self.manifest.get("study") or self.folder.name)

    @property
    def format(self) -> str:
        return str(self.manifest.get("format", "csv"))

    def has(self, table: str) -> bool:
        return table in self.manifest.get("files", {})

    def path(self, table: str) -> Path:
        return self.folder / self.manifest["files"][table]


def _manifest(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def find(path) -> Export | None:
    """The export `path` is (a folder with manifest.json) or is a table of (its folder, or the
    hf-audio format's tables/ folder, holds the manifest that lists the file); None otherwise."""
    path = Path(path)
    if path.is_dir():
        manifest = _manifest(path)
        return Export(path, manifest) if manifest is not None else None
    for folder in (path.parent, path.parent.parent):
        manifest = _manifest(folder)
        if manifest is None:
            continue
        for table, rel in manifest["files"].items():
            if (folder / rel).resolve() == path.resolve():
                return Export(folder, manifest, table)
    return None


def require(path) -> Export:
    """find(path), or an error saying what an export folder is."""
    found = find(path)
    if found is None:
        raise ExportReadError(
            path, None, None, f"not an export of this app (a folder with {MANIFEST}, or one of its tables)"
        )
    return found


def _text(value) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def _unguard(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:2] != "" and cell[1] in FORMULA_START else cell


def read_table(export: Export, table: str, needed: tuple[str, ...] = ()) -> pd.DataFrame:
    """An exported table as strings; ExportReadError when the export lacks the table or one of
    the needed columns (naming them all)."""
    if not export.has(table):
        raise ExportReadError(
            export.folder / MANIFEST, None, None, f"the export of study {export.study!r} has no {table} table"
        )
    path = export.path(table)
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path).astype(object).map(_text)
        elif path.suffix == ".jsonl":
            with open(path, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
            frame = pd.DataFrame(rows, columns=list(rows[0]) if rows else dictionary.columns(table)).map(_text)
        else:
            frame = read_csv(path, table)
    except (OSError, ValueError) as e:
        raise ExportReadError(path, None, None, f"not readable ({e})") from None
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ExportReadError(path, 1, missing[0], f"missing column(s) {', '.join(missing)} of the {table} table")
    return frame


def read_csv(path, table: str) -> pd.DataFrame:
    """One exported CSV table as strings, its text cells without the formula guard
    (export.write_csv); also a table copied out of its export folder."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    for c in frame.columns:
        if c in dictionary.columns(table) and _kind(table, c) in TEXT_TYPES:
            frame[c] = frame[c].map(_unguard)
    return frame


def _kind(table: str, column: str) -> str:
    try:
        return dictionary.column_type(table, column)
    except KeyError:
        return "string"
