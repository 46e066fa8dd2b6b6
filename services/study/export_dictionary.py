"""The data dictionary of a study export: every exported table, its columns in order, their
types and meanings. The export writes exactly these columns in this order (so column names
are stable across exports and versions) and the README.md inside the export is generated
from here, so the documentation and the files never disagree (tests/test_export.py checks
every exported column against this dict)."""

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
    "exchanges": (
        "One row per exchange of the four-phase study: a starter read by a sender (or imported with an "
        "existing translation) and its translation by a system.",
        {
            "exchange_id": ("integer", "the exchange"),
            "starter_id": ("string", "the starter text read (see starters)"),
            "system": ("string", "the speech-translation system (see systems)"),
            "sender": ("string", "pseudonym of the sender; empty for an imported exchange"),
            "origin": ("string", "recorded (a sender read it) or imported (a translation that already existed)"),
            "created_at": ("timestamp", "when the exchange was created"),
            "translation": ("string", "the Portuguese translation receivers read; empty until translated"),
            "target_variant": (
                "string",
                "the Portuguese variant the exchange's system produces (see systems.target_variant)",
            ),
            "translation_transcript": (
                "string",
                "the system's own English transcript of the recording "
                "(cascades); empty for direct systems and imported exchanges",
            ),
            "translation_meta": ("json", "models used, seconds per stage and audio length (or the origin)"),
            "translated_at": ("timestamp", "when the translation was stored"),
        },
    ),
    "recordings": (
        "One row per sender recording. The audio is the 16 kHz mono 16-bit WAV the systems translated.",
        {
            "recording_id": ("integer", "the recording"),
            "exchange_id": ("integer", "the exchange recorded (see exchanges)"),
            "sender": ("string", "pseudonym of the sender"),
            "file_name": (
                "string",
                "path of the audio file inside this export (audio/..., train/audio/... in "
                "hf-audio); empty when the export "
                "was made without audio or the file is missing from the media folder",
            ),
            "duration_s": ("number", "length of the recording in seconds"),
            "qc_result": ("string", "automatic quality check: pending, passed or flagged (held for review)"),
            "review_decision": (
                "string",
                "a reviewer's decision on a flagged recording: accepted or rejected; empty when not reviewed",
            ),
            "reviewed_at": ("timestamp", "when it was reviewed"),
            "qc_transcript": ("string", "the ASR transcript the quality check compared with the starter"),
            "wer": ("number", "word error rate of qc_transcript against the starter text"),
            "qc_flags": ("json", "list of the quality check's flags (e.g. high_wer, start_differs)"),
            "created_at": ("timestamp", "when the recording was submitted"),
        },
    ),
    "answers": (
        "One row per receiver answer to a comprehension question (Portuguese).",
        {
            "answer_id": ("integer", "the answer"),
            "answer_set": ("integer", "the receiver's assignment: all answers to one exchange share it"),
            "exchange_id": ("integer", "the exchange whose translation was read"),
            "receiver": ("string", "pseudonym of the receiver"),
            "question_idx": ("integer", "the question (see questions: starter_id + question_idx)"),
            "text": ("string", "the answer as typed"),
            "unanswerable": ("boolean", "1: the receiver ticked 'cannot be answered from the text'"),
            "created_at": ("timestamp", "when the answers were saved"),
        },
    ),
    "validations": (
        "One row per validation of an answer set: the DA+SQM slider on the translation and the QA score.",
        {
            "validation_id": ("integer", "the validation"),
            "assignment_id": ("integer", "the validator's assignment"),
            "exchange_id": ("integer", "the exchange validated"),
            "validator": ("string", "pseudonym of the validator"),
            "answer_set": ("integer", "the answer set validated (see answers)"),
            "receiver": ("string", "pseudonym of the receiver whose answers were validated"),
            "translation_score": ("number", "the DA+SQM slider value, 0-100"),
            "qa_score": ("number", "share of the answers marked correct, 0-1"),
            "created_at": ("timestamp", "when the validation was saved"),
        },
    ),
    "validation_marks": (
        "One row per answer marked by a validator.",
        {
            "validation_id": ("integer", "the validation (see validations)"),
            "exchange_id": ("integer", "the exchange"),
            "question_idx": ("integer", "the question whose answer was marked"),
            "correct": ("boolean", "1: marked correct"),
        },
    ),
    "surveys": (
        "One row per sender survey (or third-person rater survey): satisfaction, trust and reliance on a "
        "5-point scale, at baseline and after seeing the outcome (informed).",
        {
            "survey_id": ("integer", "the survey answer"),
            "assignment_id": ("integer", "the respondent's assignment"),
            "exchange_id": ("integer", "the exchange rated"),
            "respondent": ("string", "pseudonym of the respondent (the sender, or a rater)"),
            "stage": ("string", "baseline (before the outcome) or informed (after the validation was shown)"),
            "perspective": ("string", "first (the sender rates their own exchange) or third (a rater)"),
            "satisfaction": ("integer", "1-5"),
            "trust": ("integer", "1-5"),
            "reliance": ("integer", "1-5"),
            "created_at": ("timestamp", "when the survey was saved"),
        },
    ),
    "exchange_metrics": (
        "One row per automatic metric score of an exchange's translation.",
        {
            "exchange_id": ("integer", "the exchange"),
            "metric": ("string", "the metric (e.g. e5-cosine, bt-chrf, chrf, bleu)"),
            "version": ("string", "the metric implementation's version"),
            "model": (
                "string",
                "the model behind the metric (a learned metric's checkpoint and a fingerprint of its "
                "weights): a metric whose rows name more than one model (or version) mixes two "
                "models' numbers, which the README's Warnings section then names; compare scores "
                "only within one model",
            ),
            "score": ("number", "the score; empty when the metric cannot score this exchange"),
            "created_at": ("timestamp", "when the score was computed"),
        },
    ),
    "da_judgments": (
        "One row per direct-assessment judgment (text or audio modality).",
        {
            "judgment_id": ("integer", "the judgment"),
            "assignment_id": ("integer", "the rater's assignment"),
            "rater": ("string", "pseudonym of the DA rater"),
            "hit": ("integer", "the HIT (1-based index within the study)"),
            "run": (
                "integer",
                "the run of the campaign the rater's HIT belongs to (1, 2, ...: the study's [da] runs; "
                "a rater of run 2 rates a HIT another rater rated in run 1, paper 001's "
                "self-replication); 1 for a study with one run",
            ),
            "pos": ("integer", "position of the item within the HIT"),
            "item_type": ("string", "system, bad_reference, ask_again (repeat) or reference (quality controls)"),
            "of_pos": ("integer", "for a control item: the position of the item it controls"),
            "modality": ("string", "text or audio"),
            "segment_id": ("string", "the segment (see da_segments)"),
            "system": ("string", "the MT system of the segment"),
            "doc_id": ("string", "the document of the segment"),
            "score": ("number", "the slider value, 0-100"),
            "first_shown_at": ("timestamp", "when the item was first shown"),
            "submitted_at": ("timestamp", "when the judgment was saved"),
            "active_seconds": ("number", "seconds between first shown and submitted, clamped at 600"),
            "created_at": ("timestamp", "when the judgment was stored"),
            "tts_engine": (
                "string",
                "audio modality: the TTS engine that spoke the candidate (google, piper, "
                "espeak-ng; paper 001 used Google); empty for text items or audio not yet "
                "rendered",
            ),
            "tts_voice": ("string", "audio modality: that engine's voice (default: the engine's default voice)"),
        },
    ),
    "da_feedback": (
        "Free-text feedback of DA raters at the end of their HIT.",
        {
            "participant": ("string", PARTICIPANT),
            "text": ("string", "the feedback"),
            "updated_at": ("timestamp", "when it was last saved"),
        },
    ),
    "sd_ratings": (
        "One row per semantic-differential rating (one adjective pair on one sentence).",
        {
            "assignment_id": ("integer", "the page's assignment"),
            "participant": ("string", PARTICIPANT),
            "sentence_id": ("string", "the sentence rated (see sd_sentences)"),
            "page": ("integer", "the page of the sentence's pairs"),
            "pair_id": ("string", "the adjective pair (see sd_pairs)"),
            "is_repeat": ("boolean", "1: a repeated pair of the test condition"),
            "value": ("integer", "-3..3, canonical: +3 = the positive adjective, whichever side it was shown on"),
            "positive_left": ("boolean", "1: the positive adjective was shown on the left"),
            "created_at": ("timestamp", "when the page was saved"),
        },
    ),
    "sd_suitability": (
        "Preliminary SD mode: how suitable each adjective pair is (1-5).",
        {
            "assignment_id": ("integer", "the page's assignment"),
            "participant": ("string", PARTICIPANT),
            "pair_id": ("string", "the adjective pair"),
            "suitability": ("integer", "1-5"),
            "created_at": ("timestamp", "when it was saved"),
        },
    ),
    "sd_suggestions": (
        "Preliminary SD mode: adjective pairs participants suggested.",
        {
            "assignment_id": ("integer", "the page's assignment"),
            "participant": ("string", PARTICIPANT),
            "text": ("string", "the suggestion"),
            "created_at": ("timestamp", "when it was saved"),
        },
    ),
    "systems": (
        "The study's speech-translation systems.",
        {
            "system": ("string", "the system id"),
            "label": ("string", "its description"),
            "kind": ("string", "cascade, direct, remote or human"),
            "target_variant": (
                "string",
                "the Portuguese variant the system produces: pt-PT (European) or pt-BR "
                "(Brazilian), the study's target variant where the system's prompt asks "
                "for it, the model's own where it has only one (Bergamot en-pt: "
                "pt-BR); empty where nothing names one (a prompt saying only "
                '"Portuguese", NLLB\'s por_Latn, human translations): the model '
                "chose. The study's own target variant is in manifest.json and the "
                "README's first lines",
            ),
        },
    ),
    "starters": (
        "The texts senders read (study content, not participant data).",
        {
            "starter_id": ("string", "the starter"),
            "domain": ("string", "health or everyday"),
            "source": ("string", "natural or synthetic"),
            "corpus": ("string", "where the text comes from"),
            "text": ("string", "the English text"),
            "key_spans": ("json", "list of the key information spans of the text"),
        },
    ),
    "reference_translations": (
        "Human reference translations of the starters (the study's references file; study content, not "
        "participant data), read by the reference-based metrics (chrF, BLEU) of exchange_metrics. They are "
        "never shown to participants and are not a system: they appear in no other table.",
        {
            "starter_id": ("string", "the starter translated (see starters)"),
            "reference_idx": (
                "integer",
                "the starter's reference, numbered from 1 in file order (a starter may have several)",
            ),
            "translator": ("string", "who translated it, as given in the references file; empty when not given"),
            "translation": ("string", "the Portuguese reference translation"),
        },
    ),
    "questions": (
        "Comprehension questions per starter, in English and Portuguese.",
        {
            "starter_id": ("string", "the starter"),
            "question_idx": ("integer", "1-10"),
            "en": ("string", "the question in English (validators)"),
            "pt": ("string", "the question in Portuguese (receivers)"),
        },
    ),
    "question_drafts": (
        "Every comprehension question written by the LLM or imported for review (admin tab), with its review "
        "status; the accepted ones are the questions table.",
        {
            "draft_id": ("integer", "the draft"),
            "starter_id": ("string", "the starter"),
            "position": ("integer", "order within the starter (accepted drafts are numbered in it)"),
            "en": ("string", "the question in English"),
            "pt": ("string", "the question in Portuguese"),
            "answer_en": ("string", "the reference answer the LLM read from the starter"),
            "status": ("string", "draft, accepted or rejected"),
            "origin": ("string", "generated (by the LLM), imported (from the study folder or a CSV) or edited"),
            "model": ("string", "the LLM (and MT system) that wrote it"),
            "created_at": ("timestamp", "when the draft was made"),
            "updated_at": ("timestamp", "its last change"),
        },
    ),
    "da_segments": (
        "The DA corpus: one row per segment and system.",
        {
            "segment_id": ("string", "the segment"),
            "system": ("string", "the MT system"),
            "doc_id": ("string", "the document"),
            "position": ("integer", "position of the segment in the document"),
            "source": ("string", "the source text"),
            "reference": ("string", "the reference translation"),
            "output": ("string", "the system's output"),
            "domain": ("string", "the segment's domain (paper 001, Table 1); empty when the corpus names none"),
        },
    ),
    "da_hit_items": (
        "The DA HITs as built at import: one row per item.",
        {
            "hit": ("integer", "the HIT (1-based)"),
            "pos": ("integer", "position within the HIT"),
            "item_type": ("string", "system, bad_reference, ask_again or reference"),
            "of_pos": ("integer", "for a control item: the position it controls"),
            "segment_id": ("string", "the segment"),
            "system": ("string", "the MT system"),
            "candidate": ("string", "the text shown (or synthesised) as the candidate"),
        },
    ),
    "sd_sentences": (
        "The sentences of the semantic-differential study.",
        {
            "sentence_id": ("string", "the sentence"),
            "text": ("string", "the text"),
            "source": ("string", "where it comes from"),
        },
    ),
    "sd_pairs": (
        "The adjective pairs, per language.",
        {
            "pair_id": ("string", "the pair"),
            "language": ("string", "language of the adjectives"),
            "positive": ("string", "the positive adjective"),
            "negative": ("string", "the negative adjective"),
            "note": ("string", "a note on the pair"),
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
    "metadata": (
        "hf-audio only (train/metadata.jsonl): one row per exported recording, the Hugging Face audiofolder "
        "metadata; file_name links the row to its audio file.",
        {
            "file_name": ("string", "the audio file, relative to this file's folder (train/), as datasets reads it"),
            "recording_id": ("integer", "the recording (see recordings)"),
            "exchange_id": ("integer", "the exchange (see exchanges)"),
            "sender": ("string", "pseudonym of the sender"),
            "sender_group": ("string", "the sender's group"),
            "sender_gender": ("string", "the sender's gender"),
            "starter_id": ("string", "the starter read"),
            "domain": ("string", "the starter's domain: health or everyday"),
            "starter_source": ("string", "the starter's source: natural or synthetic"),
            "prompt": ("string", "the English text the sender read"),
            "duration_s": ("number", "length of the recording in seconds"),
            "qc_result": ("string", "pending, passed or flagged"),
            "review_decision": ("string", "accepted or rejected after review; empty when not reviewed"),
            "qc_transcript": ("string", "the ASR transcript of the quality check"),
            "wer": ("number", "word error rate of qc_transcript against the prompt"),
            "system": ("string", "the speech-translation system"),
            "translation": ("string", "its Portuguese translation"),
            "translation_transcript": ("string", "the system's own English transcript (cascades)"),
        },
    ),
}

# Tables the app builds for its analyses, documented like the exported ones but not written by
# the export: their ids are the database's participant ids, not pseudonyms.
ANALYSIS_TABLES: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "usability": (
        "services/usability/export.py: the input of `python app.py analyze usability` and of the analysis tab. "
        "One row per exchange with a validation and both surveys by the same respondent (the first validation "
        "when there are several). The exchange's speaker (sender_id, group, gender) and the survey's respondent "
        "(respondent_*) are kept apart: the analysis's group x gender effects are the speaker's, also on "
        "third-person rows.",
        {
            "exchange_id": ("integer", "the exchange"),
            "sender_id": (
                "integer",
                "the speaker: the exchange's sender (participant id); empty for an exchange "
                "without a sender (imported)",
            ),
            "receiver_id": ("integer", "the receiver whose answers were validated"),
            "validator_id": ("integer", "the validator"),
            "group": ("string", "the speaker's language group; empty when the exchange has no sender"),
            "gender": ("string", "the speaker's gender; empty when the exchange has no sender or it was not asked"),
            "system": ("string", "the speech-translation system"),
            "topic": ("string", "the starter's domain (health or everyday)"),
            "source": ("string", "the starter's source (natural or synthetic)"),
            "satisfaction": ("integer", "informed survey, 1-5"),
            "trust": ("integer", "informed survey, 1-5"),
            "reliance": ("integer", "informed survey, 1-5"),
            "satisfaction_b": ("integer", "baseline survey, 1-5"),
            "trust_b": ("integer", "baseline survey, 1-5"),
            "reliance_b": ("integer", "baseline survey, 1-5"),
            "translation_score": ("number", "the validator's DA+SQM score, 0-100"),
            "qa_score": ("number", "share of the receiver's answers marked correct, 0-1"),
            "perspective": ("string", "first (the speaker answered the surveys) or third (a rater did)"),
            "starter_id": ("string", "the starter read (see starters)"),
            "respondent_id": ("integer", "who answered both surveys (participant id): the sender, or a rater"),
            "respondent_role": ("string", "the respondent's role: sender or rater"),
            "respondent_group": (
                "string",
                "the respondent's own language group; empty when none (e.g. a rater enrolled without one)",
            ),
            "respondent_gender": ("string", "the respondent's own gender; empty when none"),
            "corpus": (
                "string",
                "the starter's corpus (e.g. BConTrasT, MED-MT, Gemini, Qwen 3): the models' "
                "Source factor, as in paper 000's Table 4",
            ),
        },
    ),
}

# Columns of an analysis table named after something in the data, one per automatic metric the
# study's exchanges were scored with (<name>: the metric's name with "-" as "_", e.g. cometkiwi_23_xl).
ANALYSIS_PATTERN_COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "usability": {
        "metric_<name>": (
            "number",
            "the metric's score of the exchange's translation (exchange_metrics.score); empty when it was not scored",
        ),
        "<name>_model": (
            "string",
            "the model that produced that score (exchange_metrics.model: a learned metric's "
            "checkpoint and weight fingerprint). When a metric's scores come from more than "
            "one model (a checkpoint changed mid-study), its metric_<name> column mixes "
            "models: the frame's attrs['warnings'] names it, and its scores should be "
            "compared only within one model or re-scored (exchange_metrics.rescore_stale). "
            "Not a metric_ column, so the analysis does not read it as a signal",
        ),
    },
}

# columns written only on request (--include-external-ids)
EXTERNAL_COLUMNS = {"participants": ("external_id", "prolific_pid", "prolific_study_id", "prolific_session_id")}
# tables written only on request, or only in one format
OPTIONAL_TABLES = {"events": "--include-events", "metadata": "--format hf-audio"}


def table_entry(table: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """(description, {column: (type, meaning)}) of an exported table: the common tables' here, a
    registered protocol's from its spec (services/common/protocols.py ExportTable)."""
    if table in TABLES:
        return TABLES[table]
    spec = protocols.export_tables()[table]
    return spec.description, dict(spec.columns)


def columns(table: str, include_external_ids: bool = False) -> list[str]:
    """The columns of a table as exported, in order."""
    hidden = () if include_external_ids else EXTERNAL_COLUMNS.get(table, ())
    return [c for c in table_entry(table)[1] if c not in hidden]


def column_type(table: str, column: str) -> str:
    return table_entry(table)[1][column][0]


def analysis_columns(table: str) -> list[str]:
    """The columns of an analysis table (ANALYSIS_TABLES), in order."""
    return list(ANALYSIS_TABLES[table][1])


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
