"""The data dictionary of a study export: every exported table, its columns in order, their
types and meanings; the common tables here, each protocol's in its spec (ExportTable). The
export writes exactly these columns in this order (so column names are stable across exports
and versions) and the README.md inside the export is generated from here, so the documentation
and the files never disagree (tests/test_export.py checks every exported column against it)."""

from __future__ import annotations

import json

from services.common import protocols

# Types as written: integer and number cells are plain numbers (empty in CSV / null in JSON
# when missing); boolean is 0 or 1; timestamp is ISO 8601 in UTC; json is a JSON document in a
# string cell; string is text.
TYPES = {
    "string": "text",
    "integer": "whole number",
    "number": "real number",
    "boolean": "0 or 1",
    "timestamp": "ISO 8601 date and time, UTC (e.g. 2026-03-01T09:30:12.345+00:00)",
    "json": "a JSON document stored as text",
}

PARTICIPANT = "pseudonym of the participant (see 'Pseudonyms'); stable across exports of the study"

# table -> (description, {column: (type, meaning)})
TABLES: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "participants": (
        "One row per participant slot of the study (every role) whose data may be exported: where the study "
        "asks a role for consent, only those who agreed (see 'Who is exported').",
        {
            "participant": ("string", PARTICIPANT),
            "role": ("string", "sender, receiver, validator, rater (third-person surveys), da or sd"),
            "group": ("string", "the sender's group (e.g. USW, USB, Hindi); empty for other roles"),
            "gender": ("string", "the gender the participant was enrolled under; empty when not asked"),
            "design_index": (
                "integer",
                "a sender's design block within its group x gender cell (the k-th sender "
                "of every cell gets the same starters)",
            ),
            "status": (
                "string",
                "active, excluded (left out of the analyses, e.g. too many rejected recordings), "
                "dropped_out (a sender whose surveys went to third-person raters) or inactive",
            ),
            "dropped_out_at": ("timestamp", "when a sender was counted as dropped out; empty when not"),
            "dropped_out_reason": (
                "string",
                "why: deactivated by the study team, or not seen for the study's dropout_after_days with surveys open",
            ),
            "excluded_at": ("timestamp", "when the participant was excluded; empty when not"),
            "excluded_reason": ("string", "why the participant was excluded"),
            "self_enrolled": ("boolean", "1: the participant took this slot through a Prolific link"),
            "created_at": ("timestamp", "when the slot was created"),
            "claimed_at": ("timestamp", "when a self-enrolling participant took the slot"),
            "last_seen_at": ("timestamp", "when the participant last opened their link"),
            "completed_at": (
                "timestamp",
                "when the participant first reached the end of their role (the completion "
                "code was shown); empty when not yet",
            ),
            "external_id": (
                "string",
                "ONLY WITH --include-external-ids: the lab's own id of the person, as given "
                "to `participants add --csv`",
            ),
            "prolific_pid": ("string", "ONLY WITH --include-external-ids: the Prolific participant id"),
            "prolific_study_id": ("string", "ONLY WITH --include-external-ids: the Prolific study id"),
            "prolific_session_id": ("string", "ONLY WITH --include-external-ids: the last Prolific session id"),
        },
    ),
    "consents": (
        "One row per participant who answered the consent page (only those who agreed are exported).",
        {
            "participant": ("string", PARTICIPANT),
            "agreed": ("boolean", "1: the participant agreed to take part"),
            "text_hash": (
                "string",
                "SHA-256 of the consent text the participant was shown (a change of wording shows as a different hash)",
            ),
            "created_at": ("timestamp", "when the decision was saved"),
        },
    ),
    "demographics": (
        "The demographics form, one row per participant and question (the questions are the study's "
        "[[demographics.fields]]; a field left blank where it was optional has an empty value).",
        {
            "participant": ("string", PARTICIPANT),
            "field": ("string", "the field's id in study.toml"),
            "value": ("string", "the answer as given (a number field's value as text)"),
            "created_at": ("timestamp", "when the form was submitted"),
        },
    ),
    "assignments": (
        "One row per item in a participant's queue (what they were given, in which order, and their timing).",
        {
            "assignment_id": ("integer", "the assignment"),
            "participant": ("string", PARTICIPANT),
            "phase": ("string", "record, receive, validate, survey_baseline, survey_informed, da or sd"),
            "item_id": (
                "string",
                "the item: an exchange id (record, receive, surveys; a record item given back "
                "after a rejection is <exchange id>-<attempt>), the answer set's "
                "assignment id (validate), a DA HIT item, an SD page",
            ),
            "exchange_id": ("integer", "the exchange the item is about (usability phases)"),
            "position": ("number", "the random order key within the participant's queue (lower comes first)"),
            "status": ("string", "open, done or withdrawn"),
            "meta": ("json", "phase details: DA HIT and modality, SD sentence, page and pair layout"),
            "created_at": ("timestamp", "when the item was assigned"),
            "first_shown_at": ("timestamp", "when the item was first shown"),
            "submitted_at": ("timestamp", "when the answer was saved"),
            "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
        },
    ),
    "events": (
        "ONLY WITH --include-events: the study's audit-log events (every write). Job bookkeeping is left "
        "out; actors and participant entities are pseudonymised, staff and host names are not exported.",
        {
            "event_id": ("integer", "the event, in the order written"),
            "ts": ("timestamp", "when it happened"),
            "actor_kind": (
                "string",
                "participant, admin (the admin tab), cli (the command line), worker (background jobs) or other",
            ),
            "actor": ("string", "pseudonym of the acting participant; empty for other actors"),
            "action": (
                "string",
                "what was done: add, enrol, submit, review, exclude, reassign, translate, qc, "
                "feedback, import, reimport",
            ),
            "entity": ("string", "the kind of row acted on (a phase name for a submission)"),
            "entity_id": ("string", "its id (a participant's pseudonym when the entity is a participant)"),
            "detail": ("json", "details, reduced to fields that identify nobody"),
        },
    ),
}

# columns written only on request (--include-external-ids)
EXTERNAL_COLUMNS = {"participants": ("external_id", "prolific_pid", "prolific_study_id", "prolific_session_id")}
# tables written only on request, or only in one format
OPTIONAL_TABLES = {"events": "--include-events", protocols.AUDIO_METADATA: "--format hf-audio"}


def table_entry(table: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """(description, {column: (type, meaning)}) of an exported table: the common tables' here, a
    registered protocol's from its spec (services/common/protocols.py ExportTable, and
    AudioMetadata for the hf-audio format's metadata)."""
    if table in TABLES:
        return TABLES[table]
    audio = protocols.audio_metadata() if table == protocols.AUDIO_METADATA else None
    if audio is not None:
        return audio.description, dict(audio.columns)
    spec = protocols.export_tables()[table]
    return spec.description, dict(spec.columns)


def columns(table: str, include_external_ids: bool = False) -> list[str]:
    """The columns of a table as exported, in order."""
    hidden = () if include_external_ids else EXTERNAL_COLUMNS.get(table, ())
    return [c for c in table_entry(table)[1] if c not in hidden]


def column_type(table: str, column: str) -> str:
    return table_entry(table)[1][column][0]


# -- the README.md written into every export -------------------------------------------------


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _front_matter(study: dict) -> str:
    """The Hugging Face dataset card's YAML: one subset, the recordings as an audiofolder
    (train/metadata.jsonl + train/audio/). The tables stay side files: `datasets` infers one builder
    per dataset folder from its first subset, so json subsets beside an audiofolder would not load.
    The train/ folder is for `load_dataset("audiofolder", data_dir=...)`, which skips this card and
    infers splits from names (export.py: HF_SPLIT_DIR)."""
    return "\n".join(
        [
            "---",
            f"pretty_name: {json.dumps(study['name'], ensure_ascii=False)}",
            "configs:",
            "- config_name: default",
            "  drop_labels: true",
            "  data_files:",
            "  - split: train",
            "    path:",
            '    - "train/metadata.jsonl"',
            '    - "train/audio/*.wav"',
            "---",
            "",
            "",
        ]
    )


def readme(
    study: dict,
    files: dict[str, str],
    counts: dict[str, int],
    options: dict,
    exported_at: str,
    audio_files: int,
    missing_audio: list[int],
    warnings: list[str] | None = None,
) -> str:
    """The export's README.md: what each file holds, each column's type and meaning, and the
    rules the export followed (pseudonyms, who is exported, CSV formula neutralising)."""
    fmt, external = options["format"], options["include_external_ids"]
    out = [_front_matter(study)] if fmt == "hf-audio" else []
    out += [
        f"# Data export of study `{study['id']}`: {study['name']}",
        "",
        f"Exported {exported_at} with `python app.py export` (format `{fmt}`; external ids "
        f"{'INCLUDED' if external else 'not included'}; audit-log events "
        f"{'included' if options['include_events'] else 'not included'}; audio "
        f"{'included' if options['include_audio'] else 'not included'}). `manifest.json` repeats these "
        "options with the row counts.",
        "",
    ]
    if study.get("target_variant"):
        out += [
            f"The study targets `{study['target_variant']}` Portuguese (its `[usability] target_variant`: what "
            "its receivers are meant to read, and what the LLM prompts and the systems that take a variant "
            "were asked for); the variant each system produced is in `systems.target_variant` and "
            "`exchanges.target_variant`.",
            "",
        ]
    if warnings:
        out += ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]
    out += ["## Files", "", "| file | rows | what |", "| --- | --- | --- |"]
    for table, rel in files.items():
        out.append(f"| `{rel}` | {counts[table]} | {_cell(table_entry(table)[0])} |")
    if options["include_audio"]:
        audio_dir = "train/audio/" if fmt == "hf-audio" else "audio/"
        out.append(
            f"| `{audio_dir}` | {audio_files} | the recordings as 16 kHz mono 16-bit WAV, named in "
            "recordings.file_name |"
        )
    out += ["| `manifest.json` | | study, options, files and row counts of this export |", ""]
    if missing_audio:
        out += [
            f"{len(missing_audio)} recordings' audio was missing from the media folder (recording ids "
            f"{', '.join(map(str, missing_audio))}): their file_name is empty.",
            "",
        ]
    if fmt == "hf-audio":
        out += [
            "Load with the `datasets` library: `load_dataset(FOLDER)` (or the Hub repository it is uploaded "
            'to) and `load_dataset("audiofolder", data_dir=FOLDER)` both give one `train` split: the '
            "recordings with their train/metadata.jsonl columns (its `audio` column needs torchcodec and "
            "FFmpeg, as `datasets` 4 and later read audio). A table of `tables/` loads with "
            '`load_dataset("json", data_files=FOLDER + "/tables/answers.jsonl")` or pandas '
            "`read_json(path, lines=True)`.",
            "",
        ]
    out += [
        "## Pseudonyms",
        "",
        "Participants appear only as `<role>-<n>` (e.g. `sender-001`): numbered by the order in which the "
        "participants of each role were created, counted over all participants of the study. Participants "
        "are never deleted, so a label stays the same in every export of this study; someone left out of an "
        "export keeps their number and leaves a gap. The same person enrolled in two roles has two labels. "
        "Participant link tokens are never exported; external and Prolific ids only with "
        "`--include-external-ids`.",
        "",
        "## Who is exported",
        "",
        "One function (`services/study/export.py: exportable_participants`) decides whose data is exported; a row "
        "is written only when every participant it involves is exportable: its author, the receiver whose "
        "answers a validation marks, and the sender of the exchange it is about (a translation, its answers, "
        "scores and surveys derive from the sender's recording). The audio follows the recordings table. "
        "Where the study asks a role for "
        "consent, a participant of that role is exported only after agreeing (consents.csv holds the hash of "
        "the text they agreed to); excluded participants are included and marked in participants.status.",
        "",
    ]
    if fmt == "csv":
        out += [
            "## CSV",
            "",
            "UTF-8, comma-separated, a header row, empty cell = missing. A text cell starting with `=`, `+`, "
            "`-`, `@`, a tab or a carriage return has a `'` put in front, so a spreadsheet shows it as text "
            "instead of running it as a formula; remove that first quote to get the text as typed "
            "(the jsonl and parquet formats keep it unchanged).",
            "",
        ]
    out += ["## Types", "", "| type | how it is written |", "| --- | --- |"]
    out += [f"| {t} | {_cell(m)} |" for t, m in TYPES.items()]
    out += ["", "## Columns", ""]
    for table, rel in files.items():
        description, cols = table_entry(table)
        out += [f"### `{rel}`", "", description, "", "| column | type | meaning |", "| --- | --- | --- |"]
        out += [f"| `{c}` | {cols[c][0]} | {_cell(cols[c][1])} |" for c in columns(table, external)]
        out.append("")
    return "\n".join(out)
