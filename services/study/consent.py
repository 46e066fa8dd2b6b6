"""Consent and demographics: what comes before a participant's first item.

A study's [consent] section (text inline or from a Markdown file; `roles`, empty = every role)
and its [demographics] fields (each with `roles`, empty = every role) decide the stages.
pending_stage() is the one gate: items.get_view shows no item and submissions.submit saves
nothing while it returns a stage; exports keep only participants who agreed
(export.exportable_participants). The consent text's hash is stored with the decision, so a
later change of wording is visible in the data.

    [consent]
    file = "consent.md"
    agree = "I agree to take part in this study."   # empty or left out: in the page's language
    decline = "I do not agree."

    [[demographics.fields]]
    id = "age"
    label = "Your age in years"
    kind = "number"          # number | choice | text
    min = 18
    max = 99
    roles = ["sender", "receiver"]
"""

from __future__ import annotations

import hashlib
import math

from services.common import protocols
from services.common.vocabulary import ID_RE
from services.study.texts import refusal, refusals
from storage import consent as store
from storage import studies
from storage.db import required
from storage.rows import ParticipantRow, StudyRow

KINDS = ("number", "choice", "text")
FIELD_KEYS = {"id", "label", "kind", "choices", "min", "max", "required", "roles", "max_chars"}
MAX_FIELDS = 20
MAX_TEXT = 500


class ConsentError(ValueError):
    """A consent decision or a demographics answer that cannot be saved; the message says why."""


def _roles_ok(roles) -> bool:
    return isinstance(roles, list) and all(r in protocols.roles() for r in roles)


def config_problems(cfg: dict) -> list[tuple[str, str]]:
    """(key, message) for every problem in the [consent] and [demographics] sections."""
    out = []
    c = cfg.get("consent")
    if c is not None:
        for k in ("text", "file", "agree", "decline"):
            if not isinstance(c.get(k), str):
                out.append((f"consent.{k}", "must be a string"))
        if isinstance(c.get("text"), str) and not c["text"].strip():
            out.append(("consent.text", 'give the consent text (text = "..." or file = "consent.md")'))
        if not _roles_ok(c.get("roles")):
            out.append(("consent.roles", f"must be a list of roles ({', '.join(protocols.roles())})"))
    d = cfg.get("demographics")
    if d is not None:
        if not isinstance(d.get("submit"), str):
            out.append(
                (
                    "demographics.submit",
                    "must be the label of the form's button (empty: the page language's \"Continue\")",
                )
            )
        fields = d.get("fields")
        if not isinstance(fields, list) or not fields:
            return out + [("demographics.fields", "must be a non-empty list of [[demographics.fields]]")]
        if len(fields) > MAX_FIELDS:
            out.append(("demographics.fields", f"at most {MAX_FIELDS} fields"))
        seen = set()
        for n, f in enumerate(fields, start=1):
            key = f"demographics.fields[{n}]"
            if not isinstance(f, dict):
                out.append((key, "must be a table"))
                continue
            for k in sorted(set(f) - FIELD_KEYS):
                out.append((f"{key}.{k}", f"unknown key (expected {', '.join(sorted(FIELD_KEYS))})"))
            fid = f.get("id")
            if not isinstance(fid, str) or not ID_RE.match(fid):
                out.append((f"{key}.id", "must be 1-64 letters, digits, '_', '-' or '.'"))
            elif fid in seen:
                out.append((f"{key}.id", f"'{fid}' is used twice"))
            seen.add(fid)
            if not isinstance(f.get("label"), str) or not f["label"].strip():
                out.append((f"{key}.label", "must be a non-empty string"))
            kind = f.get("kind")
            if kind not in KINDS:
                out.append((f"{key}.kind", f"must be one of {', '.join(KINDS)}"))
            if kind == "choice":
                ch = f.get("choices")
                if (
                    not isinstance(ch, list)
                    or len(ch) < 2
                    or len(set(map(str, ch))) != len(ch)
                    or not all(isinstance(x, str) and x.strip() for x in ch)
                ):
                    out.append((f"{key}.choices", "a choice field needs a list of at least two distinct strings"))
            elif "choices" in f:
                out.append((f"{key}.choices", "only a choice field has choices"))
            if kind == "number":
                for b in ("min", "max"):
                    v = f.get(b)
                    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                        out.append((f"{key}.{b}", "must be a number"))
                if (
                    isinstance(f.get("min"), (int, float))
                    and isinstance(f.get("max"), (int, float))
                    and f["min"] > f["max"]
                ):
                    out.append((f"{key}.min", "is larger than max"))
            if "required" in f and not isinstance(f["required"], bool):
                out.append((f"{key}.required", "must be true or false"))
            if "max_chars" in f and (not isinstance(f["max_chars"], int) or not 1 <= f["max_chars"] <= MAX_TEXT):
                out.append((f"{key}.max_chars", f"must be an integer 1..{MAX_TEXT}"))
            if not _roles_ok(f.get("roles", [])):
                out.append((f"{key}.roles", f"must be a list of roles ({', '.join(protocols.roles())})"))
    return out


def _for_role(roles, role: str) -> bool:
    return not roles or role in roles


def consent_config(study: StudyRow, role: str) -> dict | None:
    c = study["config"].get("consent")
    return c if c and _for_role(c.get("roles"), role) else None


def form_fields(study: StudyRow, role: str) -> list[dict]:
    """The demographics fields a role answers, with defaults filled in."""
    fields = (study["config"].get("demographics") or {}).get("fields") or []
    return [
        {
            "id": f["id"],
            "label": f["label"],
            "kind": f["kind"],
            "choices": list(f.get("choices") or []),
            "min": f.get("min"),
            "max": f.get("max"),
            "required": f.get("required", True),
            "max_chars": f.get("max_chars", MAX_TEXT),
        }
        for f in fields
        if _for_role(f.get("roles"), role)
    ]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pending_stage(database, participant: ParticipantRow, study: StudyRow | None = None) -> str | None:
    """ "consent", "declined" or "demographics" while the participant may not see items; else None."""
    study = study or required(studies.get_study(database, participant["study_id"]), "study of a participant")
    if consent_config(study, participant["role"]):
        row = store.get(database, participant["id"])
        if row is None:
            return "consent"
        if not row["agreed"]:
            return "declined"
    if form_fields(study, participant["role"]) and store.demographics(database, participant["id"]) is None:
        return "demographics"
    return None


def page(study: StudyRow, role: str, stage: str) -> dict:
    """What the consent / demographics page shows (nothing of any item)."""
    c = consent_config(study, role) or {}
    out: dict = {"stage": stage}
    if stage in ("consent", "declined"):
        out.update(text=c.get("text", ""), agree=c.get("agree", ""), decline=c.get("decline", ""))
    else:
        out["fields"] = form_fields(study, role)
        out["submit"] = study["config"]["demographics"]["submit"]
    return out


def record_consent(database, participant: ParticipantRow, agreed: bool, actor: str | None = None) -> str | None:
    """Saves the decision; returns the next pending stage. Agreeing twice (a double click, a
    reload) changes nothing; an agreement cannot be turned into a decline here."""
    if not isinstance(agreed, bool):
        raise refusal(ConsentError, "consent_bad_decision")
    study = required(studies.get_study(database, participant["study_id"]), "study of a participant")
    c = consent_config(study, participant["role"])
    if c is None:
        raise refusal(ConsentError, "consent_none_for_role")
    with database.write() as db:
        before = store.get(database, participant["id"])
        if before and before["agreed"] and not agreed:
            raise refusal(ConsentError, "consent_already_agreed")
        store.record(db, participant["id"], study["id"], agreed, text_hash(c["text"]))
        if not before or before["agreed"] != int(agreed):
            database.log(
                actor or f"participant:{participant['id']}",
                "agree" if agreed else "decline",
                "consent",
                participant["id"],
                {"text_hash": text_hash(c["text"])},
            )
    return pending_stage(database, participant, study)


def _clean_answer(f: dict, value):
    label = f["label"]
    if value is None or (isinstance(value, str) and not value.strip()):
        if f["required"]:
            raise refusal(ConsentError, "demographics_required", label=label)
        return None
    if f["kind"] == "number":
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise refusal(ConsentError, "demographics_number", label=label)
        if not math.isfinite(x):
            raise refusal(ConsentError, "demographics_number", label=label)
        lo, hi = f["min"], f["max"]
        if (lo is not None and x < lo) or (hi is not None and x > hi):
            raise refusal(
                ConsentError,
                "demographics_range",
                label=label,
                lo=lo if lo is not None else "-∞",
                hi=hi if hi is not None else "∞",
            )
        return int(x) if x == int(x) else x
    value = str(value).strip()
    if f["kind"] == "choice":
        if value not in f["choices"]:
            raise refusal(ConsentError, "demographics_choice", label=label, choices=", ".join(f["choices"]))
        return value
    if len(value) > f["max_chars"]:
        raise refusal(ConsentError, "demographics_too_long", label=label, n=f["max_chars"])
    return value


def submit_demographics(database, participant: ParticipantRow, answers: dict, actor: str | None = None) -> str | None:
    """Validates every field, then saves them all at once; returns the next pending stage.
    A second submission (a double click, a reconnect) keeps the first answers."""
    study = required(studies.get_study(database, participant["study_id"]), "study of a participant")
    stage = pending_stage(database, participant, study)
    if stage in ("consent", "declined"):
        raise refusal(ConsentError, stage)  # the stage's words (assets/texts/<language>.toml)
    fields = form_fields(study, participant["role"])
    if not fields:
        raise refusal(ConsentError, "demographics_none_for_role")
    if not isinstance(answers, dict):
        raise refusal(ConsentError, "demographics_bad_form")
    unknown = sorted(set(answers) - {f["id"] for f in fields})
    if unknown:
        raise refusal(ConsentError, "demographics_unknown_field", field=unknown[0])
    # every field's problem in one refusal (e.fields: {field id: its words}), so the page can mark
    # each field and one retry can fix them all
    clean: dict = {}
    problems: dict[str, Exception] = {}
    for f in fields:
        try:
            clean[f["id"]] = _clean_answer(f, answers.get(f["id"]))
        except ConsentError as e:
            problems[f["id"]] = e
    if problems:
        raise refusals(ConsentError, list(problems.values()), problems)
    with database.write() as db:
        if store.save_demographics(db, participant["id"], study["id"], clean):
            database.log(actor or f"participant:{participant['id']}", "submit", "demographics", participant["id"], {})
    return pending_stage(database, participant, study)


def consented_ids(database, study: StudyRow) -> set[int] | None:
    """Participants who agreed, or None when the study asks no role for consent."""
    if not study["config"].get("consent"):
        return None
    return store.agreed_ids(database, study["id"])
