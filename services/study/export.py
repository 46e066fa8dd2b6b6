"""A study's data as tidy files: one table per entity, pseudonymous, with a data dictionary.

`python app.py export --study S --out DIR --format csv|jsonl|parquet|hf-audio`, or export_zip()
for the admin tab's download button.

- Who: exportable_participants() is the one place that decides whose data leaves the
  database; every table, the audio and the events follow it. A row is written only when every
  participant it involves is exportable (its author, the receiver whose answers a validation
  marks, and the sender of the exchange it is about: a translation, the answers to it and its
  scores all derive from the sender's voice).
- Pseudonyms: `<role>-<n>` numbered by creation order within the role over all the study's
  participants. Participants are never deleted, so a label never changes between exports;
  numbering over all of them (not only the exportable ones) keeps the others' labels when
  someone is left out. No secret is needed: an HMAC keyed by a secret kept in the same
  database would protect nothing from whoever holds the database, and readable labels serve
  papers better. They do reveal enrolment order within a role.
- Never exported: participant tokens (link secrets), the study config (its completion code),
  systems' settings, reviewers' names and hosts; external and Prolific ids only with
  include_external_ids.
- CSV cells of text columns that a spreadsheet would run as a formula (= + - @ tab CR) get a
  leading single quote; jsonl and parquet keep the text as it is.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import pandas as pd

from services.common import protocols, variants
from services.common.settings import Settings
from services.study import consent
from services.study import export_dictionary as dictionary
from storage import exports, studies
from storage.db import required

FORMATS = ("csv", "jsonl", "parquet", "hf-audio")
EXTENSION = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet", "hf-audio": "jsonl"}
# hf-audio: the recordings and their metadata.jsonl live in a folder named for their split.
# `load_dataset("audiofolder", data_dir=...)` ignores the dataset card and infers splits from
# names, folder names first: without this folder, tables/validation_marks.jsonl read as a
# "validation" split with no audio in it
HF_SPLIT_DIR = "train"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
TEXT_TYPES = ("string", "json", "timestamp")
# storage/exports.py names each column holding an internal participant id `<name>__pid`
# (double underscore: prolific_pid is an external id, not one of these)
PID = "__pid"
# event details keep only these fields: the rest may name a Prolific study/session or a host
SAFE_DETAIL_KEYS = {
    "role",
    "group",
    "gender",
    "item",
    "at",
    "decision",
    "status",
    "wer",
    "system",
    "reason",
    "new_exchange",
}

# the common tables -> storage query; each protocol's own are its spec's export_tables
QUERIES = {
    "participants": exports.participant_rows,
    "consents": exports.consent_rows,
    "demographics": exports.demographic_rows,
    "assignments": exports.assignment_rows,
    # a submit's event names its phase: every registered protocol's
    "events": lambda database, study_id: exports.event_rows(database, study_id, protocols.phases()),
}


def protocol_tables(listed: Iterable[str] | None = None) -> dict[str, protocols.ExportTable]:
    """The registered protocols' tables (listed: only those of these protocols, a study's
    study.protocols); a protocol's table may not take a common table's name (its file would
    replace the common one's)."""
    tables = protocols.export_tables()
    if listed is not None:
        keep = set(listed)
        tables = {t: spec for p in protocols.protocols() if p.name in keep for t, spec in p.export_tables.items()}
    clash = sorted(set(tables) & set(QUERIES))
    if clash:
        owner = next(p.name for p in protocols.protocols() if clash[0] in p.export_tables)
        raise ExportError(
            f"protocol '{owner}' exports a table named '{clash[0]}', the name of a common table: rename it"
        )
    return tables


def queries(listed: Iterable[str] | None = None) -> dict:
    """Every table's query, in the order of the files in the README: the common tables of the
    participants and their queues, every protocol's data tables, every protocol's study content
    (ExportTable.content), the events last. listed: only these protocols' tables (the study's
    study.protocols; None: every registered protocol's)."""
    specs = protocol_tables(listed)
    out = {t: q for t, q in QUERIES.items() if t != "events"}
    out.update({t: spec.query for t, spec in specs.items() if not spec.content})
    out.update({t: spec.query for t, spec in specs.items() if spec.content})
    out["events"] = QUERIES["events"]
    return out


class ExportError(ValueError):
    """The export cannot be made; the message says why."""


@dataclass
class ExportResult:
    folder: Path
    format: str
    rows: dict[str, int]
    audio_files: int = 0
    missing_audio: list[int] = field(default_factory=list)  # recording ids whose file is gone
    warnings: list[str] = field(default_factory=list)  # also in README.md and manifest.json

    def summary(self) -> str:
        counts = ", ".join(f"{t} {n}" for t, n in self.rows.items() if n)
        text = f"{self.folder} ({self.format}): {counts or 'no rows'}; {self.audio_files} audio files"
        if self.missing_audio:
            text += f"; {len(self.missing_audio)} recordings' audio missing from the media folder"
        for w in self.warnings:
            text += f"\nWARNING: {w}"
        return text


@dataclass
class ExportContext:
    """What a table's extras (services/common/protocols.py ExportTable.extras) read and add to."""

    database: object
    study_id: str
    names: dict[int, str]  # internal participant id -> pseudonym
    media_dir: Path | None
    include_audio: bool
    rows: dict[str, list[dict]] = field(default_factory=dict)  # the tables built before, as queried
    audio: list[tuple[dict, Path, str]] = field(default_factory=list)
    missing: list[tuple[dict, int]] = field(default_factory=list)

    def audio_file(self, row: dict, source: Path, file_name: str) -> None:
        """The row's audio, copied to file_name in the export when the row is exported."""
        self.audio.append((row, source, file_name))

    def missing_audio(self, row: dict, recording_id: int) -> None:
        """The row's audio is not in the media folder (named in the README when it is exported)."""
        self.missing.append((row, recording_id))


def study_protocols(database, study_id: str) -> list[str]:
    """The protocols the study lists (study.protocols): the export writes their tables only."""
    study = studies.get_study(database, study_id)
    if study is None:
        raise ExportError(f"unknown study '{study_id}'")
    return list(study["config"].get("study", {}).get("protocols", []))


def exportable_participants(database, study_id: str) -> set[int]:
    """The participants whose data may be exported: the one place that decides it.

    Where the study asks a role for consent, only those who agreed (services/study/consent.py); every
    table, the audio and the events follow. Excluded participants are exported too, marked in
    participants.status: exclusion is an analysis decision, not a withdrawal of consent."""

    study = studies.get_study(database, study_id)
    if study is None:
        raise ExportError(f"unknown study '{study_id}'")
    agreed = consent.consented_ids(database, study) or set()
    return {
        r["participant__pid"]
        for r in exports.participant_rows(database, study_id)
        if consent.consent_config(study, r["role"]) is None or r["participant__pid"] in agreed
    }


def pseudonyms(participant_rows: list[dict]) -> dict[int, str]:
    """`<role>-<n>` by creation order within the role (rows in id order, all participants)."""
    counters: dict[str, int] = {}
    names = {}
    for r in sorted(participant_rows, key=lambda r: r["participant__pid"]):
        counters[r["role"]] = counters.get(r["role"], 0) + 1
        names[r["participant__pid"]] = f"{r['role']}-{counters[r['role']]:03d}"
    return names


def neutralise(text: str) -> str:
    """A CSV cell a spreadsheet would run as a formula, made inert by a leading quote."""
    return "'" + text if text.startswith(FORMULA_START) else text


# -- building the tables -------------------------------------------------------------------


def _coerce(kind: str, value):
    if value is None:
        return None
    if kind in ("integer", "boolean"):
        return int(value)
    if kind == "number":
        value = float(value)
        return None if math.isnan(value) or math.isinf(value) else value
    return str(value)


def _exportable(row: dict, allowed: set[int]) -> bool:
    """Every participant the row involves (its *__pid columns) is exportable."""
    return all(row[k] is None or row[k] in allowed for k in row if k.endswith(PID))


def _finish(
    table: str, rows: list[dict], names: dict[int, str], allowed: set[int], include_external_ids: bool
) -> list[dict]:
    """Rows of one table as exported: those involving only exportable participants, every
    *__pid column turned into the pseudonym column of the same name, the dictionary's columns
    in its order and types."""
    cols = dictionary.columns(table, include_external_ids)
    out = []
    for r in rows:
        if not _exportable(r, allowed):
            continue
        for k in [k for k in r if k.endswith(PID)]:
            if k[: -len(PID)] in cols:
                r[k[: -len(PID)]] = names.get(r[k]) if r[k] is not None else None
        out.append({c: _coerce(dictionary.column_type(table, c), r[c]) for c in cols})
    return out


def _participant_extras(rows: list[dict]) -> None:
    for r in rows:
        r["status"] = (
            "excluded"
            if r["excluded_at"]
            else "dropped_out"
            if r.get("dropped_out_at")
            else "active"
            if r["active"]
            else "inactive"
        )
        r["self_enrolled"] = int(r["claimed_at"] is not None)


def _event_extras(rows: list[dict], names: dict[int, str]) -> None:
    for r in rows:
        actor = r["actor"] or ""
        r["actor__pid"] = None
        if actor.startswith("participant:"):
            r["actor_kind"] = "participant"
            r["actor__pid"] = int(actor.split(":", 1)[1]) if actor.split(":", 1)[1].isdigit() else -1
        elif actor.startswith("prolific:"):  # a self-enrolment: the actor is the slot's new holder
            r["actor_kind"], r["actor__pid"] = "participant", r["owner__pid"]
        elif actor.startswith("admin"):
            r["actor_kind"] = "admin"
        elif actor in ("cli", "demo"):
            r["actor_kind"] = "cli"
        elif actor == "worker":
            r["actor_kind"] = "worker"
        else:
            r["actor_kind"] = "other"
        if r["entity"] in ("participant", "participants", "da_feedback"):
            r["entity_id"] = names.get(r["owner__pid"])
        r["detail"] = _safe_detail(r, names)


def _safe_detail(r: dict, names: dict[int, str]):
    if not r["detail"]:
        return None
    detail = json.loads(r["detail"])
    if not isinstance(detail, dict):
        return None
    if r["entity"] == "study":  # an import: the content hash and row counts
        return json.dumps(detail, ensure_ascii=False)
    keep = {k: v for k, v in detail.items() if k in SAFE_DETAIL_KEYS}
    if "to" in detail:  # a reassignment names the new sender by internal id
        r["to__pid"] = detail["to"]
        keep["to"] = names.get(detail["to"])
    return json.dumps(keep, ensure_ascii=False) if keep else None


def build_tables(
    database,
    study_id: str,
    media_dir=None,
    include_external_ids: bool = False,
    include_events: bool = False,
    include_audio: bool = True,
) -> tuple[dict, list, list]:
    """({table: rows}, [(source audio, file name in the export)], [recording ids without audio])."""
    if not exports.study_exists(database, study_id):
        known = ", ".join(exports.study_ids(database)) or "none"
        raise ExportError(f"unknown study '{study_id}' (studies in this database: {known})")
    allowed = exportable_participants(database, study_id)
    names = pseudonyms(exports.participant_rows(database, study_id))
    ctx = ExportContext(database, study_id, names, media_dir, include_audio)
    listed = study_protocols(database, study_id)
    specs = protocol_tables(listed)
    common_extras = {
        "participants": lambda rows, ctx: _participant_extras(rows),
        "events": lambda rows, ctx: _event_extras(rows, ctx.names),
    }
    tables: dict[str, list[dict]] = {}
    for table, query in queries(listed).items():
        if table == "events" and not include_events:
            continue
        rows = query(database, study_id)
        extras = common_extras.get(table) or (specs[table].extras if table in specs else None)
        if extras is not None:
            extras(rows, ctx)
        ctx.rows[table] = rows
        tables[table] = _finish(table, rows, names, allowed, include_external_ids)
    # only the audio of rows that made it into their table (the same people rule)
    audio = [(src, name) for row, src, name in ctx.audio if _exportable(row, allowed)]
    return tables, audio, [rid for row, rid in ctx.missing if _exportable(row, allowed)]


def table_warnings(tables: dict) -> list[str]:
    """The warnings of the protocols' tables (ExportTable.warnings), in registration order."""
    out: list[str] = []
    for table, spec in protocol_tables().items():
        if spec.warnings is not None and table in tables:
            out += spec.warnings(tables[table])
    return out


# -- writing -------------------------------------------------------------------------------


def _csv_cell(kind: str, value) -> str:
    if value is None:
        return ""
    if kind in TEXT_TYPES:
        return neutralise(value)
    return repr(value) if isinstance(value, float) else str(value)


def write_csv(path: Path, table: str, rows: list[dict], cols: list[str]) -> None:
    kinds = [dictionary.column_type(table, c) for c in cols]
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([_csv_cell(k, r[c]) for k, c in zip(kinds, cols)])


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")


PANDAS_DTYPE = {
    "integer": "Int64",
    "boolean": "Int64",
    "number": "Float64",
    "string": "string",
    "json": "string",
    "timestamp": "string",
}


def write_parquet(path: Path, table: str, rows: list[dict], cols: list[str]) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ExportError("the parquet format needs pyarrow (pip install -r requirements.txt)") from None

    # typed columns, so an empty table still has its schema and a missing number stays null
    frame = pd.DataFrame(
        {c: pd.Series([r[c] for r in rows], dtype=PANDAS_DTYPE[dictionary.column_type(table, c)]) for c in cols}
    )
    frame.to_parquet(path, index=False, engine="pyarrow")


def _write_table(folder: Path, fmt: str, table: str, rows: list[dict], cols: list[str]) -> str:
    rel = f"tables/{table}.jsonl" if fmt == "hf-audio" else f"{table}.{EXTENSION[fmt]}"
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        write_csv(path, table, rows, cols)
    elif fmt == "parquet":
        write_parquet(path, table, rows, cols)
    else:
        write_jsonl(path, rows)
    return rel


def _new_folder(out: Path) -> Path:
    """A private temporary folder beside out, renamed into place when complete: a failed export
    leaves nothing half-written, and stale files (e.g. audio of someone since left out) of an
    earlier export can never mix in, hence a non-empty target is refused."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} already exists and is not empty: export into a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))  # 0700: personal data


def _private(folder: Path) -> None:
    """Folders 0700 and files 0600 under folder, whatever the umask: an export is personal data."""
    for path in folder.rglob("*"):
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    os.chmod(folder, 0o700)


def _study_variant(database, study_id: str) -> str:
    """The Portuguese variant the study targets (its receivers read), for the README and manifest."""

    study = studies.get_study(database, study_id)
    return variants.of_study(study["config"]) if study and variants.declared(study["config"]) is not None else ""


def export_study(
    database,
    study_id: str,
    out_dir,
    fmt: str = "csv",
    media_dir=None,
    include_external_ids: bool = False,
    include_events: bool = False,
    include_audio: bool = True,
) -> ExportResult:
    """Write the study's tables, audio, README.md (data dictionary) and manifest.json to out_dir.
    media_dir: where the recordings are (default: the TRADLAB_MEDIA setting)."""
    if media_dir is None:
        media_dir = Settings.from_env().media_dir
    if fmt not in FORMATS:
        raise ExportError(f"unknown format '{fmt}' (one of {', '.join(FORMATS)})")
    if fmt == "hf-audio" and not include_audio:
        raise ExportError("the hf-audio format is the audio itself: it cannot be made without audio")
    hf_audio = protocols.audio_metadata()
    if fmt == "hf-audio" and hf_audio is None:
        raise ExportError("the hf-audio format needs a protocol with recordings; none is registered")
    tables, audio, missing = build_tables(
        database, study_id, media_dir, include_external_ids, include_events, include_audio
    )
    if fmt == "hf-audio" and not audio:
        # an audiofolder of no audio is no dataset: say why, before a folder is made
        why = (
            f"none of its {len(missing)} recordings' files is in {media_dir}"
            if missing
            else "the study has no recordings to export"
        )
        raise ExportError(f"the hf-audio format is the audio itself: {why} (use csv, jsonl or parquet)")
    audio_dir = f"{HF_SPLIT_DIR}/" if fmt == "hf-audio" else ""
    out = Path(out_dir)
    tmp = _new_folder(out)
    try:
        files = {}
        for table, rows in tables.items():
            if audio_dir and "file_name" in dictionary.columns(table):  # where the file is inside this export
                rows = [
                    {**r, "file_name": audio_dir + r["file_name"] if r["file_name"] else r["file_name"]} for r in rows
                ]
            files[table] = _write_table(tmp, fmt, table, rows, dictionary.columns(table, include_external_ids))
        for src, name in audio:
            (tmp / audio_dir / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, tmp / audio_dir / name)
        counts = {t: len(r) for t, r in tables.items()}
        if fmt == "hf-audio":
            # file_name relative to metadata.jsonl, as datasets reads it
            meta = required(hf_audio, "audio metadata (checked above)").rows(tables)
            write_jsonl(tmp / HF_SPLIT_DIR / "metadata.jsonl", meta)
            files["metadata"], counts["metadata"] = f"{HF_SPLIT_DIR}/metadata.jsonl", len(meta)
        study = dict(required(exports.study_row(database, study_id), "study (checked above)"))
        study["target_variant"] = _study_variant(database, study_id)
        options = {
            "format": fmt,
            "include_external_ids": include_external_ids,
            "include_events": include_events,
            "include_audio": include_audio,
        }
        exported_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        warnings = table_warnings(tables)
        (tmp / "README.md").write_text(
            dictionary.readme(study, files, counts, options, exported_at, len(audio), missing, warnings),
            encoding="utf-8",
        )
        manifest = {
            "study": study_id,
            "name": study["name"],
            "target_variant": study["target_variant"],
            "exported_at": exported_at,
            **options,
            "files": files,
            "rows": counts,
            "audio_files": len(audio),
            "missing_audio": missing,
            "warnings": warnings,
        }
        # which metrics ran, in which mode, and how many exchanges each skipped and why
        config = required(studies.get_study(database, study_id), "study")["config"]
        for spec in protocols.protocols():
            if spec.metrics_report is not None and spec.name in config:
                manifest["metrics"] = protocols.resolve(spec.metrics_report)(database, study_id)
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        _private(tmp)
        if out.exists():
            out.rmdir()  # empty (checked): replaced by the finished folder
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportResult(out, fmt, counts, len(audio), missing, warnings)


def export_zip(
    database,
    study_id: str,
    media_dir=None,
    fmt: str = "csv",
    include_external_ids: bool = False,
    include_events: bool = False,
    include_audio: bool = True,
) -> Path:
    """The export as one .zip in a fresh private temporary folder (the admin tab's download
    button hands the path to gradio, which serves a copy); the folder is left to the caller."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", study_id)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    name = f"{safe}-export-{fmt}-{stamp}"
    work = Path(tempfile.mkdtemp(prefix="tradlab-export-"))
    try:
        res = export_study(
            database, study_id, work / name, fmt, media_dir, include_external_ids, include_events, include_audio
        )
        target = work / f"{name}.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(p for p in res.folder.rglob("*") if p.is_file()):
                zf.write(path, f"{name}/{path.relative_to(res.folder).as_posix()}")
        os.chmod(target, 0o600)
        shutil.rmtree(res.folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target
