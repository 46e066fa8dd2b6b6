"""Converters from published DA formats to the judgments schema of services.da.analysis
(worker_id, hit_id, modality, system, segment_id, item_type, score, run, duration_s).

* WMT DA TSV (e.g. WMT22 ad-deen-good-raw-reconstructed.tsv): columns HITId WorkerId Input.src
  Input.trg Input.item hit sys_id rid type sid score time raw. ``raw`` is the 0-100 score
  (``score`` there is WMT's z); sys_id is "<system>.<n>" except for references (HUMAN-B);
  ``time`` is the HIT's total seconds, repeated on each of its rows, so duration_s = time / rows
  of that HIT in the file.
* Appraise CSV export (``manage.py ExportSystemScoresToCSV``): no header; username, systemID,
  itemID, itemType (TGT|BAD|REF|CHK), source language, target language, score, then for
  segment-level DA start_time, end_time (Unix seconds) and, with --batch-info, batchNo, item_id;
  document-level DA inserts documentID, isCompleteDocument (and in newer versions mqm) before
  the times. A CSV with a header naming these columns is read by name.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from services.da.judgments import DAInputError, normalise

WMT_COLUMNS = [
    "HITId",
    "WorkerId",
    "Input.src",
    "Input.trg",
    "Input.item",
    "hit",
    "sys_id",
    "rid",
    "type",
    "sid",
    "score",
    "time",
    "raw",
]
WMT_TYPES = {"SYSTEM": "system", "REPEAT": "ask_again", "BAD_REF": "bad_reference", "REF": "reference"}
APPRAISE_TYPES = {"TGT": "system", "BAD": "bad_reference", "CHK": "ask_again", "REF": "reference"}
_SYS_SUFFIX = re.compile(r"\.\d+$")


def wmt_system_name(sys_id: str) -> str:
    """'Online-W.2' -> 'Online-W'; names without a numeric suffix (HUMAN-B) are kept."""
    return _SYS_SUFFIX.sub("", str(sys_id).strip())


def _first_bad(mask: pd.Series) -> int | None:
    hits = np.flatnonzero(np.asarray(mask))
    return int(hits[0]) if len(hits) else None


def from_wmt_tsv(path, modality: str = "text", run: int = 1) -> pd.DataFrame:
    """WMT DA TSV -> judgments (score = raw; REPEAT -> ask_again, BAD_REF -> bad_reference,
    REF -> reference, SYSTEM -> system; system = sys_id without its '.<n>' suffix)."""
    path = Path(path)
    try:
        d = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE)
    except FileNotFoundError:
        raise DAInputError(path, None, None, "file not found") from None
    except pd.errors.EmptyDataError:
        raise DAInputError(path, 1, None, "empty file") from None
    except pd.errors.ParserError as e:
        raise DAInputError(path, None, None, f"not a readable TSV ({e})") from None
    d.columns = [c.strip() for c in d.columns]
    for col in ("HITId", "WorkerId", "sys_id", "type", "sid", "raw"):
        if col not in d.columns:
            raise DAInputError(path, 1, col, "missing column (a WMT DA TSV has " + " ".join(WMT_COLUMNS) + ")")
    kind = d["type"].str.strip().str.upper()
    pos = _first_bad(~kind.isin(list(WMT_TYPES)))
    if pos is not None:
        raise DAInputError(
            path, pos + 2, "type", f"unknown type {d['type'].iloc[pos]!r} (expected {', '.join(WMT_TYPES)})"
        )
    raw = pd.to_numeric(d["raw"].str.strip(), errors="coerce")
    pos = _first_bad(~np.isfinite(raw) | (raw < 0) | (raw > 100))
    if pos is not None:
        raise DAInputError(path, pos + 2, "raw", f"raw {d['raw'].iloc[pos]!r} is not a number in 0-100")
    if "time" in d.columns:
        cells = d["time"].str.strip()
        time = pd.to_numeric(cells.where(cells != "", "nan"), errors="coerce")
        pos = _first_bad((cells != "") & (~np.isfinite(time) | (time < 0)))
        if pos is not None:
            raise DAInputError(path, pos + 2, "time", f"time {cells.iloc[pos]!r} is not a number of seconds")
        # `time` is the HIT's duration, repeated on its rows: spread it over the HIT's items
        duration = time / d.groupby("HITId")["HITId"].transform("size")
    else:
        duration = np.nan
    out = pd.DataFrame(
        {
            "worker_id": d["WorkerId"],
            "hit_id": d["HITId"],
            "modality": modality,
            "system": d["sys_id"].map(wmt_system_name),
            "segment_id": d["sid"].str.strip(),
            "item_type": kind.map(WMT_TYPES),
            "score": raw.astype(float),
            "run": run,
            "duration_s": duration,
        }
    )
    return normalise(out, str(path))


_APPRAISE_NAMES = {
    "worker_id": ("username", "user", "userid", "createdby__username"),
    "system": ("systemid", "system", "targetid", "item__targetid"),
    "segment_id": ("itemid", "segmentid", "item__itemid"),
    "item_type": ("itemtype", "item__itemtype"),
    "score": ("score",),
    "start": ("starttime", "start_time"),
    "end": ("endtime", "end_time"),
    "duration": ("durationinseconds", "duration"),
    "hit": ("taskid", "batchno", "task__batchno", "task__id"),
    "complete_doc": ("iscompletedocument", "item__iscompletedocument"),
}


def _epoch(cell: str) -> float | None:
    try:
        v = float(cell)
    except ValueError:
        return None
    return v if v > 1e8 else None  # Unix seconds (after 1973)


def from_appraise_csv(path, modality: str = "text", run: int = 1) -> pd.DataFrame:
    """Appraise DA export -> judgments (TGT -> system, BAD -> bad_reference, CHK -> ask_again,
    REF -> reference). Document-level score rows (isCompleteDocument True) are skipped; hit_id is
    the task/batch number when the export has one, else the username; duration_s = end - start."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = [r for r in csv.reader(f)]
    except FileNotFoundError:
        raise DAInputError(path, None, None, "file not found") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise DAInputError(path, None, None, f"not a readable CSV ({e})") from None
    numbered = [(i, r) for i, r in enumerate(rows, start=1) if any(c.strip() for c in r)]
    if not numbered:
        raise DAInputError(path, 1, None, "empty file")
    header = [c.strip().lower() for c in numbered[0][1]]
    named = "username" in header or "itemtype" in header
    col: dict[str, int] = {}
    if named:
        for key, names in _APPRAISE_NAMES.items():
            for n in names:
                if n in header:
                    col[key] = header.index(n)
                    break
        for key, label in (
            ("worker_id", "username"),
            ("system", "systemID"),
            ("segment_id", "itemID"),
            ("item_type", "itemType"),
            ("score", "score"),
        ):
            if key not in col:
                raise DAInputError(path, 1, label, "missing column")
        labels = {k: numbered[0][1][i].strip() for k, i in col.items()}
        numbered = numbered[1:]
    else:
        col = {"worker_id": 0, "system": 1, "segment_id": 2, "item_type": 3, "score": 6}
        labels = {
            "worker_id": "username (column 1)",
            "system": "systemID (column 2)",
            "segment_id": "itemID (column 3)",
            "item_type": "itemType (column 4)",
            "score": "score (column 7)",
        }
    records, lines = [], []
    for line, r in numbered:
        r = [c.strip() for c in r]
        if not named and len(r) < 7:
            raise DAInputError(
                path,
                line,
                None,
                f"{len(r)} fields; an Appraise export row has at least 7 "
                "(username, systemID, itemID, itemType, source, target, score, ...)",
            )

        def get(k):
            return r[col[k]] if k in col and col[k] < len(r) else ""

        kind = get("item_type").upper()
        if kind not in APPRAISE_TYPES:
            raise DAInputError(
                path,
                line,
                labels.get("item_type", "itemType"),
                f"unknown itemType {get('item_type')!r} (expected TGT, BAD, REF or CHK)",
            )
        try:
            score = float(get("score"))
        except ValueError:
            raise DAInputError(
                path, line, labels.get("score", "score"), f"score {get('score')!r} is not a number"
            ) from None
        if not (0 <= score <= 100):
            raise DAInputError(path, line, labels.get("score", "score"), f"score {score:g} is outside 0-100")
        duration, hit = np.nan, ""
        if named:
            if get("complete_doc").lower() == "true":
                continue
            start_s, end_s = _epoch(get("start")), _epoch(get("end"))
            if get("duration"):
                duration = float(get("duration"))
            elif start_s and end_s and end_s >= start_s:
                duration = end_s - start_s
            hit = get("hit")
        else:
            first = 7
            if len(r) > 8 and r[8].lower() in ("true", "false"):  # document-level layout
                if r[8].lower() == "true":
                    continue  # a score for the whole document, not a segment
                first = 9
            for i in range(first, len(r) - 1):
                start, end = _epoch(r[i]), _epoch(r[i + 1])
                if start is not None and end is not None:
                    duration = end - start if end >= start else np.nan
                    if i + 2 < len(r) and r[i + 2].isdigit():
                        hit = r[i + 2]  # --batch-info: batchNo
                    break
        records.append(
            (
                get("worker_id"),
                hit or get("worker_id"),
                modality,
                get("system"),
                get("segment_id"),
                APPRAISE_TYPES[kind],
                score,
                run,
                duration,
            )
        )
        lines.append(line)
    out = pd.DataFrame(
        records,
        columns=["worker_id", "hit_id", "modality", "system", "segment_id", "item_type", "score", "run", "duration_s"],
    )
    if out.empty:
        raise DAInputError(path, None, None, "no segment judgments found")
    try:
        return normalise(out, str(path))
    except DAInputError as e:  # report the file's row and column, not the converted table's
        row = lines[e.row - 2] if e.row and e.row >= 2 else e.row
        raise DAInputError(path, row, labels.get(e.column, e.column) if e.column else e.column, e.problem) from None
