"""Read and validate a study folder (study.toml + corpus files) without touching storage.

Every problem is collected as a StudyError naming file, row and field, so a designer
fixes a file in one pass; load_study raises them all at once and nothing is imported.
Rows are numbered as a spreadsheet shows them (CSV header = row 1) and JSONL by line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.common import protocols, variants
from services.common.settings import Settings
from services.common.vocabulary import ID_RE
from services.comprehension import settings as question_settings
from services.models import llm as llm_settings
from services.models import systems as system_registry
from services.models.backends.remote import endpoint_problems
from services.study import consent, texts

SYSTEM_KINDS = ("cascade", "direct", "remote", "human")


@dataclass(frozen=True)
class StudyError:
    file: str
    row: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class StudyValidationError(Exception):
    def __init__(self, errors: list[StudyError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


@dataclass
class StudyBundle:
    id: str
    name: str
    config: dict
    content_hash: str
    systems: list[dict] = field(default_factory=list)
    # each protocol's corpus, by its name: what its load (and prepare) put here, stored in its
    # tables by its store_corpus at import (services/common/protocols.py)
    corpus: dict[str, Any] = field(default_factory=dict)


# Defaults for every optional key; a key not listed here is an error (catches typos).
# each section's keys with their defaults (None: required); each protocol's section comes from
# its spec (services/common/protocols.py) and sits after [study] (sections())
DEFAULTS: dict[str, dict[str, Any]] = {
    "study": {
        "id": None,
        "name": None,
        "protocols": None,
        "seed": 0,
        "completion_code": "",
        "redirect_url": "",
        "groups": [],
        "genders": [],
        "self_enrol": [],
        "description": "",
        # how participants reach the team (an e-mail address or a URL): said wherever a page
        # tells them to contact the study team
        "contact": "",
        # Prolific self-enrolment: role -> its Prolific STUDY_ID (or a list of them); a URL
        # arriving with another STUDY_ID is refused. Roles not listed are not bound.
        "prolific_study_ids": {},
        # new self-enrolments taken per minute in this study, at most (0: no limit)
        "enrol_per_minute": 60,
        # new self-enrolments one client (address) takes per minute, at most (0: no limit)
        "enrol_per_client_per_minute": 3,
        # ... and per hour, at most (0: no limit): the minute's cap alone allowed about 150 an hour
        "enrol_per_client_per_hour": 10,
        # role -> minutes the role's welcome says it takes (services/study/welcome.py);
        # a role not listed gets the estimate from its number of items
        "expected_minutes": {},
    },
    # before a participant's first item (services/study/consent.py checks these sections)
    # empty labels: the page's language's (assets/texts: consent_agree, consent_decline, demographics_submit)
    "consent": {"text": "", "file": "", "agree": "", "decline": "", "roles": []},
    "demographics": {"fields": [], "submit": ""},
    # comprehension questions: the LLM and the question settings (services/models/llm.py,
    # services/comprehension/settings.py)
    "llm": dict(llm_settings.DEFAULTS),
    "questions": dict(question_settings.DEFAULTS),
}
SYSTEM_KEYS = {"id", "label", "kind", "assign", "params"}


def sections() -> dict[str, dict[str, Any]]:
    """Every section of study.toml with its defaults: [study], each registered protocol's, the rest."""
    out = {"study": DEFAULTS["study"]}
    out.update({p.name: dict(p.defaults) for p in protocols.protocols() if p.in_studies})
    out.update({k: v for k, v in DEFAULTS.items() if k != "study"})
    return out


class _Collector:
    def __init__(self):
        self.errors: list[StudyError] = []

    def add(self, file, row, fld, message):
        self.errors.append(StudyError(file, row, fld, message))


def read_rows(path: Path, columns: tuple[list[str], list[str]], err: _Collector) -> list[tuple[int, dict]]:
    """Rows of a CSV or JSONL corpus file as (row number, dict of stripped strings); columns:
    (required, optional), the file's own (each protocol's loader names them)."""
    name = path.name
    if not path.is_file():
        err.add(name, None, None, "file not found")
        return []
    required, optional = columns
    rows: list[tuple[int, dict]] = []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        err.add(
            name,
            None,
            None,
            f"not UTF-8 text ({e.reason} at byte {e.start}): save it as UTF-8 (in Excel: Save As, "
            "CSV UTF-8 (Comma delimited); in LibreOffice: Character set Unicode (UTF-8))",
        )
        return []
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                err.add(name, lineno, None, f"invalid JSON ({e.msg})")
                continue
            if not isinstance(obj, dict):
                err.add(name, lineno, None, "each line must be a JSON object")
                continue
            missing = [c for c in required if c not in obj]
            for c in missing:
                err.add(name, lineno, c, "missing")
            unknown = sorted(set(obj) - set(required) - set(optional))
            for c in unknown:
                err.add(name, lineno, c, f"unknown field (expected {', '.join(required + optional)})")
            if missing or unknown:
                continue
            row: dict[str, Any] = {}
            for k, v in obj.items():
                if k == "key_spans" and isinstance(v, list):
                    row[k] = v
                elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
                    row[k] = str(v).strip()
                elif v is None:
                    row[k] = ""
                else:
                    err.add(name, lineno, k, "must be a string or a number")
            rows.append((lineno, row))
        return rows
    if path.suffix.lower() != ".csv":
        err.add(name, None, None, "unsupported file type (use .csv or .jsonl)")
        return []
    # StringIO keeps line breaks inside quoted cells (spreadsheets export them)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        err.add(name, None, None, "empty file (a header row is required)")
        return []
    if len(header) == 1 and header[0] not in required + optional:
        # one column whose name holds the others': another separator (a spreadsheet set to ; or tab)
        sep = next((d for d in (";", "\t", "|") if d in header[0]), None)
        if sep is not None:
            shown = {"\t": "tabs", ";": "semicolons", "|": "bars"}[sep]
            err.add(
                name,
                1,
                None,
                f"the columns are separated by {shown}, not commas: save it as CSV with commas (in Excel: "
                "CSV UTF-8 (Comma delimited); in LibreOffice: Field delimiter ,)",
            )
            return []
    missing = [c for c in required if c not in header]
    unknown = [c for c in header if c not in required + optional]
    for c in missing:
        err.add(name, 1, c, "missing column")
    for c in unknown:
        err.add(name, 1, c, f"unknown column (expected {', '.join(required + optional)})")
    if len(set(header)) != len(header):
        err.add(name, 1, None, "duplicate column names")
    if missing or unknown:
        return []
    for rowno, values in enumerate(reader, start=2):
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            err.add(name, rowno, None, f"has {len(values)} cells, the header has {len(header)}")
            continue
        rows.append((rowno, {h: v.strip() for h, v in zip(header, values)}))
    return rows


def require_text(err, name, rowno, row, *cols):
    ok = True
    for c in cols:
        if not isinstance(row.get(c), str) or not row[c]:
            err.add(name, rowno, c, "must not be empty")
            ok = False
    return ok


def whole_number(err, name, rowno, fld, value, lo=None, hi=None):
    try:
        n = int(str(value).strip())
    except ValueError:
        err.add(name, rowno, fld, f"'{value}' is not a whole number")
        return None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        err.add(name, rowno, fld, f"{n} is out of range ({rng})")
        return None
    return n


def _check_config(raw: dict, err: _Collector) -> dict:
    f = "study.toml"
    cfg: dict = {}
    known = sections()
    roles = protocols.roles()
    for key in raw:
        if key not in known and key != "systems":
            err.add(f, None, key, f"unknown section (expected {', '.join(list(known) + ['systems'])})")
    for section, defaults in known.items():
        given = raw.get(section)
        if given is None:
            if section == "study":
                err.add(f, None, "study", "missing section [study]")
            continue
        if not isinstance(given, dict):
            err.add(f, None, section, "must be a table")
            continue
        for k in given:
            if k not in defaults:
                err.add(f, None, f"{section}.{k}", "unknown key")
        merged = {}
        for k, d in defaults.items():
            if k in given:
                merged[k] = given[k]
            elif d is None:
                err.add(f, None, f"{section}.{k}", "missing")
            else:
                merged[k] = d
        cfg[section] = merged
    st = cfg.get("study", {})
    if "id" in st and (not isinstance(st["id"], str) or not ID_RE.match(st["id"])):
        err.add(f, None, "study.id", "must be 1-64 letters, digits, '_', '-' or '.'")
    if "name" in st and (not isinstance(st["name"], str) or not st["name"].strip()):
        err.add(f, None, "study.name", "must be a non-empty string")
    listed = st.get("protocols")
    names = protocols.names()
    if listed is not None:
        unlisted = {spec.name for spec in protocols.protocols()} - set(names)
        elsewhere = [p for p in (listed if isinstance(listed, list) else []) if isinstance(p, str) and p in unlisted]
        if elsewhere:
            # a registered protocol that keeps no study data (paper 003's audit runs on files)
            err.add(
                f,
                None,
                "study.protocols",
                f"'{elsewhere[0]}' keeps no study data and is not listed (its part of the report comes "
                f"from its own runs); list only {', '.join(names)}",
            )
        elif not isinstance(listed, list) or not listed or any(p not in names for p in listed):
            import difflib

            wrong = [p for p in listed if p not in names] if isinstance(listed, list) else []
            hints = [
                f"'{w}' is not one (did you mean '{close[0]}'?)" if close else f"'{w}' is not one"
                for w in wrong
                for close in [difflib.get_close_matches(str(w), names, n=1)]
            ]
            err.add(
                f,
                None,
                "study.protocols",
                f"must be a non-empty list of {', '.join(names)}" + (f": {'; '.join(hints)}" if hints else ""),
            )
        else:
            for p in listed:
                if p not in cfg:
                    err.add(f, None, p, f"protocol '{p}' is listed but section [{p}] is missing")
            for p in names:
                if p in cfg and p not in listed:
                    err.add(f, None, p, f"section [{p}] given but '{p}' is not in study.protocols")
    if "seed" in st and (not isinstance(st["seed"], int) or isinstance(st["seed"], bool)):
        err.add(f, None, "study.seed", "must be an integer")
    for k in ("groups", "genders", "self_enrol"):
        v = st.get(k, [])
        if not isinstance(v, list) or any(not isinstance(x, str) or not x.strip() for x in v):
            err.add(f, None, f"study.{k}", "must be a list of non-empty strings")
        elif len(set(v)) != len(v):
            err.add(f, None, f"study.{k}", "has duplicates")
    if isinstance(st.get("self_enrol"), list):
        for r in st["self_enrol"]:
            if r not in roles:
                err.add(f, None, "study.self_enrol", f"'{r}' is not a role ({', '.join(roles)})")
    psi = st.get("prolific_study_ids", {})
    if not isinstance(psi, dict):
        err.add(f, None, "study.prolific_study_ids", 'must be a table: role = "STUDY_ID" (or a list of ids)')
    else:
        for r, v in psi.items():
            ids = v if isinstance(v, list) else [v]
            if r not in (st.get("self_enrol") or []):
                err.add(f, None, "study.prolific_study_ids", f"'{r}' is not a role in study.self_enrol")
            if not ids or any(not isinstance(x, str) or not x.strip() for x in ids):
                err.add(f, None, f"study.prolific_study_ids.{r}", "must be a non-empty string or list of strings")
    em = st.get("expected_minutes", {})
    if not isinstance(em, dict) or any(
        r not in roles or isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 600
        for r, v in em.items()
    ):
        err.add(
            f, None, "study.expected_minutes", f"must be a table of role = minutes (1-600; roles: {', '.join(roles)})"
        )
    for key in ("enrol_per_minute", "enrol_per_client_per_minute", "enrol_per_client_per_hour"):
        epm = st.get(key, 0)
        if not isinstance(epm, int) or isinstance(epm, bool) or epm < 0:
            err.add(f, None, f"study.{key}", "must be an integer >= 0 (0: no limit)")
    for k in ("completion_code", "redirect_url", "description"):
        if k in st and not isinstance(st[k], str):
            err.add(f, None, f"study.{k}", "must be a string")
    contact = st.get("contact", "")
    if not isinstance(contact, str) or len(contact) > 200 or re.search(r"[<>\[\]\n\r]", contact):
        err.add(f, None, "study.contact", "must be an e-mail address or URL of at most 200 characters, no markup")
    url = st.get("redirect_url", "")
    if isinstance(url, str) and url and not re.match(r"^https?://", url):
        err.add(f, None, "study.redirect_url", "must start with http:// or https://")
    for spec in protocols.protocols():
        if spec.check is not None and cfg.get(spec.name):
            for key, message in spec.check(cfg[spec.name]):
                err.add(f, None, key, message)
    return cfg


def _check_system_params(f, where, kind, params, err) -> None:
    """Model settings are checked at import, not when the first recording needs them."""

    if kind == "human":
        return
    params = dict(params)
    preset = params.pop("preset", None)
    if preset is not None:
        if preset not in system_registry.presets():
            err.add(
                f,
                None,
                f"{where}.params.preset",
                f"unknown preset '{preset}' (known: {', '.join(system_registry.presets())})",
            )
            return
        if system_registry.presets()[preset]["kind"] != kind:
            err.add(
                f,
                None,
                f"{where}.kind",
                f"preset '{preset}' is a {system_registry.presets()[preset]['kind']} system, not {kind}",
            )
            return
    for field_, message in system_registry.problems(system_registry.resolve(kind, params, preset)):
        err.add(f, None, f"{where}.params.{field_}", message)
    _check_system_trust(f, where, params, err)


def _check_system_trust(f, where, params, err) -> None:
    """What a study file itself sets (a preset's own values come from the server): remote URLs
    only to allowed hosts, an API-key variable with the server's prefix, and no
    trust_remote_code unless the server allows it (TRADLAB_ALLOW_REMOTE_CODE)."""

    urls = {k: params[k] for k in ("base_url", "asr_base_url", "mt_base_url") if isinstance(params.get(k), str)}
    key = params.get("api_key_env")
    for field_, message in endpoint_problems(urls, key if isinstance(key, str) else None):
        err.add(f, None, f"{where}.params.{field_}", message)
    if "api_key_env" in params and not isinstance(key, str):
        err.add(f, None, f"{where}.params.api_key_env", "must be the name of an environment variable")
    if params.get("trust_remote_code") not in (None, False) and not Settings.from_env().allow_remote_code:
        err.add(
            f,
            None,
            f"{where}.params.trust_remote_code",
            "a study file may not run a model's own code: the server must allow it (TRADLAB_ALLOW_REMOTE_CODE=1)",
        )


def _check_systems(raw: dict, cfg: dict, err: _Collector) -> list[dict]:
    f = "study.toml"
    systems = raw.get("systems", [])
    if not isinstance(systems, list):
        err.add(f, None, "systems", "must be an array of tables ([[systems]])")
        return []
    out, seen = [], set()
    for i, s in enumerate(systems, start=1):
        where = f"systems[{i}]"
        if not isinstance(s, dict):
            err.add(f, None, where, "must be a table")
            continue
        for k in s:
            if k not in SYSTEM_KEYS:
                err.add(f, None, f"{where}.{k}", f"unknown key (expected {', '.join(sorted(SYSTEM_KEYS))})")
        sid = s.get("id")
        if not isinstance(sid, str) or not ID_RE.match(sid):
            err.add(f, None, f"{where}.id", "must be 1-64 letters, digits, '_', '-' or '.'")
            continue
        if sid in seen:
            err.add(f, None, f"{where}.id", f"duplicate system id '{sid}'")
        seen.add(sid)
        kind = s.get("kind")
        if kind not in SYSTEM_KINDS:
            err.add(f, None, f"{where}.kind", f"must be one of {', '.join(SYSTEM_KINDS)}")
            continue
        label = s.get("label", sid)
        if not isinstance(label, str) or not label.strip():
            err.add(f, None, f"{where}.label", "must be a non-empty string")
        assign = s.get("assign", kind != "human")
        if not isinstance(assign, bool):
            err.add(f, None, f"{where}.assign", "must be true or false")
        params = s.get("params", {})
        if not isinstance(params, dict):
            err.add(f, None, f"{where}.params", "must be a table")
            params = {}
        _check_system_params(f, where, kind, params, err)
        out.append({"id": sid, "label": str(label), "kind": kind, "assign": bool(assign), "params": params})
    for spec in protocols.protocols():
        if spec.assigned_systems and spec.name in cfg and not any(s["assign"] for s in out):
            err.add(
                f,
                None,
                "systems",
                f"the {spec.name} protocol needs at least one [[systems]] entry that "
                f"{spec.assigned_systems} are assigned to",
            )
    return out


def _hash_inputs(folder: Path, cfg: dict) -> str:
    h = hashlib.sha256()
    h.update((folder / "study.toml").read_bytes())
    for spec in protocols.protocols():  # the corpus files each protocol's section names
        for k in spec.corpus_files:
            name = cfg.get(spec.name, {}).get(k)
            if name and (folder / name).is_file():
                h.update(name.encode())
                h.update((folder / name).read_bytes())
    consent_file = cfg.get("consent", {}).get("file")
    if consent_file and (folder / consent_file).is_file():
        h.update(consent_file.encode())
        h.update((folder / consent_file).read_bytes())
    prompts = cfg.get("questions", {}).get("prompts")
    if prompts:
        h.update(json.dumps(prompts, sort_keys=True).encode())
    if (folder / "scales.toml").is_file():
        h.update(b"scales.toml")
        h.update((folder / "scales.toml").read_bytes())
    return h.hexdigest()


def safe_file(folder: Path, value, key: str, err: _Collector) -> Path | None:
    if not isinstance(value, str) or not value:
        err.add("study.toml", None, key, "must name a file in the study folder")
        return None
    p = (folder / value).resolve()
    if folder.resolve() not in p.parents:
        err.add("study.toml", None, key, f"'{value}' is outside the study folder")
        return None
    return p


def _load_texts(folder: Path, cfg: dict, err: _Collector) -> None:
    """An optional scales.toml in the study folder replaces the default participant wording."""

    path = folder / "scales.toml"
    if not path.is_file():
        return
    try:
        override = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        err.add("scales.toml", None, None, f"not valid TOML: {e}")
        return
    for key, message in texts.problems(override):
        err.add("scales.toml", None, key, message)
    cfg["texts"] = override


def _load_consent(folder: Path, cfg: dict, err: _Collector) -> None:
    """[consent] (its text inline or from a Markdown file, read in now so the stored config
    holds the words participants see) and [demographics] fields."""

    c = cfg.get("consent")
    if c is not None and isinstance(c.get("file"), str) and c["file"]:
        path = safe_file(folder, c["file"], "consent.file", err)
        if path is not None:
            try:
                c["text"] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                err.add("study.toml", None, "consent.file", f"cannot read '{c['file']}' as UTF-8 text ({e})")
    for key, message in consent.config_problems(cfg):
        err.add("study.toml", None, key, message)


def _load_questions(folder: Path, cfg: dict, err: _Collector) -> None:
    """[llm] and [questions] checked; the prompt files [questions] names are read in now, so
    the stored config holds the prompts used."""
    for name, check in (("llm", llm_settings.problems), ("questions", question_settings.problems)):
        for key, message in check(cfg[name]) if name in cfg else []:
            err.add("study.toml", None, f"{name}.{key}", message)
    if "questions" in cfg:
        resolve = lambda file, key: safe_file(folder, file, f"questions.{key}", err)  # noqa: E731
        for key, message in question_settings.read_prompts(cfg["questions"], resolve):
            err.add("study.toml", None, f"questions.{key}", message)


def load_study(folder: str | Path) -> StudyBundle:
    """Parse and validate a study folder; raises StudyValidationError listing every problem."""
    folder = Path(folder)
    err = _Collector()
    toml_path = folder / "study.toml"
    if not toml_path.is_file():
        raise StudyValidationError([StudyError("study.toml", None, None, f"not found in {folder}")])
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise StudyValidationError([StudyError("study.toml", None, None, f"not valid TOML: {e}")])
    cfg = _check_config(raw, err)
    systems = _check_systems(raw, cfg, err)
    if "llm" in cfg:  # where the study may send requests and which key (services/models/llm.py)
        for key, message in llm_settings.study_problems(cfg["llm"]):
            err.add("study.toml", None, f"llm.{key}", message)
    st = cfg.get("study", {})
    bundle = StudyBundle(
        id=str(st.get("id", "")), name=str(st.get("name", "")), config=cfg, content_hash="", systems=systems
    )
    if err.errors:  # the corpus cannot be checked against a broken config
        raise StudyValidationError(err.errors)
    for spec in protocols.protocols():
        if spec.load is not None and spec.name in cfg:
            spec.load(folder, cfg, systems, bundle, err)
    _load_texts(folder, cfg, err)
    _load_consent(folder, cfg, err)
    _load_questions(folder, cfg, err)
    if err.errors:
        raise StudyValidationError(err.errors)
    cfg["systems"] = systems
    for s in systems:  # what the worker builds each system for (services/models/systems.py)
        s["target_variant"] = variants.of_study(cfg)
    bundle.content_hash = _hash_inputs(folder, cfg)
    return bundle
