"""The four-phase study's export tables (registered in protocol.py's export_tables): their storage
queries, data dictionary entries and row extras, and the documentation of the frame its analysis
reads (services/usability/export.py)."""

from __future__ import annotations

from pathlib import Path

from services.common import variants
from services.common.protocols import AudioMetadata, ExportTable
from services.models import systems as system_registry
from services.study.export import ExportContext
from storage import studies
from storage.usability import exports


def system_variants(database, study_id: str) -> dict[str, str]:
    """system id -> the Portuguese variant it produced for this study (services/common/variants.py):
    pt-PT, pt-BR, or "" where nothing named one (a prompt saying only "Portuguese", NLLB's
    por_Latn, translations imported from elsewhere)."""

    study = studies.get_study(database, study_id)
    target = variants.of_study(study["config"] if study else None)
    out = {}
    for row in studies.systems(database, study_id):
        cfg = row["config"]
        try:
            out[row["id"]] = system_registry.produced_variant(
                system_registry.study_system_config(cfg), cfg.get("target_variant") or target
            )
        except (KeyError, ValueError):  # a preset this version no longer has
            out[row["id"]] = ""
    return out


def exchange_extras(rows: list[dict], ctx: ExportContext) -> None:
    by_system = system_variants(ctx.database, ctx.study_id)
    for r in rows:
        r["origin"] = "recorded" if r["sender__pid"] is not None else "imported"
        r["target_variant"] = by_system.get(r["system"], "")


def system_extras(rows: list[dict], ctx: ExportContext) -> None:
    by_system = system_variants(ctx.database, ctx.study_id)
    for r in rows:
        r["target_variant"] = by_system.get(r["system"], "")


def _audio_source(stored: str, media_dir: Path | None) -> Path | None:
    """The stored 16 kHz file: looked up in the media folder first (the database may have moved
    with a relative or stale path), else the stored path when it lies inside the media folder."""
    if not stored or media_dir is None:
        return None
    media = Path(media_dir).resolve()
    candidate = media / "recordings" / Path(stored).name
    if candidate.is_file():
        return candidate
    p = Path(stored).resolve()
    return p if p.is_file() and p.is_relative_to(media) else None


def recording_extras(rows: list[dict], ctx: ExportContext) -> None:
    for r in rows:
        status = r["qc_status"]
        r["qc_result"] = "flagged" if status in ("accepted", "rejected") else status  # only flagged ones are reviewed
        r["review_decision"] = status if status in ("accepted", "rejected") else None
        r["file_name"] = None
        if not ctx.include_audio:
            continue
        src = _audio_source(r["path_16k"], ctx.media_dir)
        if src is None:
            ctx.missing_audio(r, r["recording_id"])
            continue
        name = ctx.names.get(r["sender__pid"], "unknown")
        r["file_name"] = f"audio/{name}-ex{r['exchange_id']}-rec{r['recording_id']}.wav"
        ctx.audio_file(r, src, r["file_name"])


def mixed_metric_models(rows) -> dict[str, list[str]]:
    """{metric: its distinct "version | model"} for each metric whose exchange scores among rows
    (dicts with metric, version, model) come from more than one model or version: a checkpoint
    changed mid-study (services/metrics/exchange.py: mixed_models, rescore_stale)."""
    seen: dict[str, set[str]] = {}
    for r in rows:
        seen.setdefault(str(r["metric"]), set()).add(f"{r['version']} | {r['model']}")
    return {k: sorted(v) for k, v in sorted(seen.items()) if len(v) > 1}


def metric_warnings(mixed: dict[str, list[str]]) -> list[str]:
    """One warning per metric whose scores mix models (see mixed_metric_models)."""
    return [
        f"metric {name!r} mixes scores of {len(models)} models (version | model: "
        f"{'; '.join(models)}): compare its scores only within one model (the model of each score is "
        "in its model column), or re-score the stale exchanges first (exchange_metrics.rescore_stale)"
        for name, models in mixed.items()
    ]


def metric_table_warnings(rows: list[dict]) -> list[str]:
    """The export's warnings of its exchange_metrics rows (as exported)."""
    return metric_warnings(mixed_metric_models(rows))


TABLES: dict[str, ExportTable] = {
    "exchanges": ExportTable(
        exports.exchange_rows,
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
        extras=exchange_extras,
    ),
    "recordings": ExportTable(
        exports.recording_rows,
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
            "review_reason": ("string", "why the reviewer rejected it, as the sender was shown; empty if none given"),
            "qc_transcript": ("string", "the ASR transcript the quality check compared with the starter"),
            "wer": ("number", "word error rate of qc_transcript against the starter text"),
            "qc_flags": ("json", "list of the quality check's flags (e.g. high_wer, start_differs)"),
            "created_at": ("timestamp", "when the recording was submitted"),
        },
        extras=recording_extras,
    ),
    "answers": ExportTable(
        exports.answer_rows,
        "One row per receiver answer to a comprehension question (Portuguese).",
        {
            "answer_id": ("integer", "the answer"),
            "answer_set": ("integer", "the receiver's assignment: all answers to one exchange share it"),
            "exchange_id": ("integer", "the exchange whose translation was read"),
            "receiver": ("string", "pseudonym of the receiver"),
            "question_idx": ("integer", "the question (see questions: starter_id + question_idx)"),
            "text": ("string", "the answer as typed"),
            "unanswerable": ("boolean", "1: the receiver ticked 'cannot be answered from the text'"),
            "repeat_starter": (
                "boolean",
                "1: the receiver had read another exchange of this starter (its questions) before; given "
                "only after the exchange waited [usability] receiver_repeat_after_minutes for anyone else",
            ),
            "created_at": ("timestamp", "when the answers were saved"),
        },
    ),
    "validations": ExportTable(
        exports.validation_rows,
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
    "validation_marks": ExportTable(
        exports.validation_mark_rows,
        "One row per answer marked by a validator.",
        {
            "validation_id": ("integer", "the validation (see validations)"),
            "exchange_id": ("integer", "the exchange"),
            "question_idx": ("integer", "the question whose answer was marked"),
            "correct": ("boolean", "1: marked correct"),
        },
    ),
    "surveys": ExportTable(
        exports.survey_rows,
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
    "exchange_metrics": ExportTable(
        exports.exchange_metric_rows,
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
        warnings=metric_table_warnings,
    ),
    "systems": ExportTable(
        exports.system_rows,
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
        extras=system_extras,
        content=True,
    ),
    "starters": ExportTable(
        exports.starter_rows,
        "The texts senders read (study content, not participant data).",
        {
            "starter_id": ("string", "the starter"),
            "domain": ("string", "health or everyday"),
            "source": ("string", "natural or synthetic"),
            "corpus": ("string", "where the text comes from"),
            "text": ("string", "the English text"),
            "key_spans": ("json", "list of the key information spans of the text"),
        },
        content=True,
    ),
    "reference_translations": ExportTable(
        exports.reference_translation_rows,
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
        content=True,
    ),
    "questions": ExportTable(
        exports.question_rows,
        "Comprehension questions per starter, in English and Portuguese.",
        {
            "starter_id": ("string", "the starter"),
            "question_idx": ("integer", "1-10"),
            "en": ("string", "the question in English (validators)"),
            "pt": ("string", "the question in Portuguese (receivers)"),
        },
        content=True,
    ),
    "question_drafts": ExportTable(
        exports.question_draft_rows,
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
        content=True,
    ),
}


# The table the usability analysis reads (services/usability/export.py), documented like the
# exported ones but not written by the export: its ids are the database's participant ids, not
# pseudonyms.
ANALYSIS_TABLE: tuple[str, dict[str, tuple[str, str]]] = (
    "services/usability/export.py: the input of `python app.py analyze usability` and of the analysis tab. "
    "One row per exchange with a validation and both surveys by the same respondent (the first validation "
    "when there are several). The exchange's speaker (sender_id, group, gender) and the survey's respondent "
    "(respondent_*) are kept apart: the analysis's group x gender effects are the speaker's, also on "
    "third-person rows.",
    {
        "exchange_id": ("integer", "the exchange"),
        "sender_id": (
            "integer",
            "the speaker: the exchange's sender (participant id); empty for an exchange without a sender (imported)",
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
)

# Columns of the analysis table named after something in the data, one per automatic metric the
# study's exchanges were scored with (<name>: the metric's name with "-" as "_", e.g. cometkiwi_23_xl).
ANALYSIS_PATTERN_COLUMNS: dict[str, tuple[str, str]] = {
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
}

AUDIO_METADATA_COLUMNS = {
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
}


def audio_metadata_rows(tables: dict) -> list[dict]:
    """The audiofolder view: one row per exported recording that has its audio file."""
    exchanges = {r["exchange_id"]: r for r in tables["exchanges"]}
    people = {r["participant"]: r for r in tables["participants"]}
    starters = {r["starter_id"]: r for r in tables["starters"]}
    out = []
    for rec in tables["recordings"]:
        if not rec["file_name"]:
            continue
        ex = exchanges[rec["exchange_id"]]
        person = people.get(rec["sender"], {})
        st = starters.get(ex["starter_id"], {})
        out.append(
            {
                "file_name": rec["file_name"],
                "recording_id": rec["recording_id"],
                "exchange_id": rec["exchange_id"],
                "sender": rec["sender"],
                "sender_group": person.get("group"),
                "sender_gender": person.get("gender"),
                "starter_id": ex["starter_id"],
                "domain": st.get("domain"),
                "starter_source": st.get("source"),
                "prompt": st.get("text"),
                "duration_s": rec["duration_s"],
                "qc_result": rec["qc_result"],
                "review_decision": rec["review_decision"],
                "qc_transcript": rec["qc_transcript"],
                "wer": rec["wer"],
                "system": ex["system"],
                "translation": ex["translation"],
                "translation_transcript": ex["translation_transcript"],
            }
        )
    assert all(list(r) == list(AUDIO_METADATA_COLUMNS) for r in out)
    return out


# the hf-audio format's train/metadata.jsonl (Protocol.audio_metadata)
AUDIO_METADATA = AudioMetadata(
    audio_metadata_rows,
    "hf-audio only (train/metadata.jsonl): one row per exported recording, the Hugging Face audiofolder "
    "metadata; file_name links the row to its audio file.",
    AUDIO_METADATA_COLUMNS,
)
