"""Versioned schema migrations (sqlite-utils Migrations): append new functions, never edit
an applied one."""

from __future__ import annotations

import hashlib
import json

from sqlite_utils import Migrations

migrations = Migrations("tradlab")


@migrations()
def m001_initial_schema(db) -> None:
    _run_script(
        db,
        """
        CREATE TABLE studies (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            config TEXT NOT NULL,             -- the validated study.toml as JSON
            content_hash TEXT NOT NULL,       -- hash of study.toml + corpus files
            created_at TEXT NOT NULL
        );
        CREATE TABLE systems (
            study_id TEXT NOT NULL REFERENCES studies(id),
            id TEXT NOT NULL,
            label TEXT NOT NULL,
            kind TEXT NOT NULL,
            config TEXT NOT NULL,
            PRIMARY KEY (study_id, id)
        );
        CREATE TABLE starters (
            study_id TEXT NOT NULL REFERENCES studies(id),
            id TEXT NOT NULL,
            domain TEXT NOT NULL CHECK (domain IN ('health', 'everyday')),
            source TEXT NOT NULL CHECK (source IN ('natural', 'synthetic')),
            corpus TEXT NOT NULL,
            text TEXT NOT NULL,
            key_spans TEXT NOT NULL,          -- JSON list of substrings of text
            PRIMARY KEY (study_id, id)
        );
        CREATE TABLE questions (
            study_id TEXT NOT NULL,
            starter_id TEXT NOT NULL,
            idx INTEGER NOT NULL CHECK (idx BETWEEN 1 AND 10),
            en TEXT NOT NULL,
            pt TEXT NOT NULL,
            PRIMARY KEY (study_id, starter_id, idx),
            FOREIGN KEY (study_id, starter_id) REFERENCES starters(study_id, id)
        );
        CREATE TABLE da_segments (
            id INTEGER PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES studies(id),
            segment_id TEXT NOT NULL,
            system TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            source TEXT NOT NULL,
            reference TEXT NOT NULL,
            output TEXT NOT NULL,
            UNIQUE (study_id, segment_id, system)
        );
        CREATE TABLE sd_sentences (
            study_id TEXT NOT NULL REFERENCES studies(id),
            id TEXT NOT NULL,
            text TEXT NOT NULL,
            source TEXT,
            PRIMARY KEY (study_id, id)
        );
        CREATE TABLE sd_pairs (
            study_id TEXT NOT NULL REFERENCES studies(id),
            id TEXT NOT NULL,
            language TEXT NOT NULL,
            positive TEXT NOT NULL,
            negative TEXT NOT NULL,
            note TEXT,
            PRIMARY KEY (study_id, id, language)
        );
        CREATE TABLE participants (
            id INTEGER PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES studies(id),
            role TEXT NOT NULL CHECK (role IN ('sender', 'receiver', 'validator', 'rater', 'da', 'sd')),
            grp TEXT,
            gender TEXT,
            external_id TEXT,
            token TEXT NOT NULL UNIQUE,
            design_index INTEGER,             -- a sender's design block within its group x gender cell
            prolific_pid TEXT,
            prolific_study_id TEXT,
            prolific_session_id TEXT,
            claimed_at TEXT,                  -- when a self-enrolling newcomer took this slot
            last_seen_at TEXT,
            active INTEGER NOT NULL DEFAULT 1,
            created_at TEXT NOT NULL,
            UNIQUE (study_id, role, prolific_pid)
        );
        CREATE INDEX participants_study_role ON participants(study_id, role);
        CREATE TABLE exchanges (
            id INTEGER PRIMARY KEY,
            study_id TEXT NOT NULL,
            starter_id TEXT NOT NULL,
            system_id TEXT NOT NULL,
            sender_id INTEGER REFERENCES participants(id),   -- NULL: imported, no sender
            import_key TEXT UNIQUE,
            created_at TEXT NOT NULL,
            UNIQUE (sender_id, starter_id),
            FOREIGN KEY (study_id, starter_id) REFERENCES starters(study_id, id),
            FOREIGN KEY (study_id, system_id) REFERENCES systems(study_id, id)
        );
        CREATE TABLE assignments (
            id INTEGER PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES studies(id),
            participant_id INTEGER NOT NULL REFERENCES participants(id),
            phase TEXT NOT NULL CHECK (phase IN ('record', 'receive', 'validate',
                'survey_baseline', 'survey_informed', 'da', 'sd')),
            item_id TEXT NOT NULL,            -- exchange id, receive assignment id, segment id ...
            exchange_id INTEGER REFERENCES exchanges(id),
            position REAL NOT NULL,           -- random order key per participant
            status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done', 'withdrawn')),
            meta TEXT,                        -- JSON: e.g. pair order and polarity
            created_at TEXT NOT NULL,
            first_shown_at TEXT,
            submitted_at TEXT,
            active_seconds REAL,
            UNIQUE (participant_id, phase, item_id)
        );
        CREATE INDEX assignments_queue ON assignments(participant_id, status, position);
        CREATE INDEX assignments_item ON assignments(study_id, phase, item_id);
        CREATE TABLE recordings (
            id INTEGER PRIMARY KEY,
            assignment_id INTEGER NOT NULL UNIQUE REFERENCES assignments(id),
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            sha256 TEXT NOT NULL,
            path_original TEXT NOT NULL,
            path_16k TEXT NOT NULL,
            duration_s REAL NOT NULL,
            qc_status TEXT NOT NULL DEFAULT 'pending'
                CHECK (qc_status IN ('pending', 'passed', 'flagged', 'accepted', 'rejected')),
            transcript TEXT,
            wer REAL,
            qc_flags TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE translations (
            id INTEGER PRIMARY KEY,
            exchange_id INTEGER NOT NULL UNIQUE REFERENCES exchanges(id),
            system_id TEXT NOT NULL,
            text TEXT NOT NULL,
            transcript TEXT,
            meta TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE answers (
            id INTEGER PRIMARY KEY,
            assignment_id INTEGER NOT NULL REFERENCES assignments(id),
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            question_idx INTEGER NOT NULL,
            text TEXT NOT NULL,
            unanswerable INTEGER NOT NULL CHECK (unanswerable IN (0, 1)),
            created_at TEXT NOT NULL,
            UNIQUE (assignment_id, question_idx)
        );
        CREATE TABLE validations (
            id INTEGER PRIMARY KEY,
            assignment_id INTEGER NOT NULL UNIQUE REFERENCES assignments(id),
            receive_assignment_id INTEGER NOT NULL REFERENCES assignments(id),
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            translation_score REAL NOT NULL CHECK (translation_score BETWEEN 0 AND 100),
            qa_score REAL NOT NULL CHECK (qa_score BETWEEN 0 AND 1),
            created_at TEXT NOT NULL
        );
        CREATE TABLE validation_marks (
            validation_id INTEGER NOT NULL REFERENCES validations(id),
            question_idx INTEGER NOT NULL,
            correct INTEGER NOT NULL CHECK (correct IN (0, 1)),
            PRIMARY KEY (validation_id, question_idx)
        );
        CREATE TABLE surveys (
            id INTEGER PRIMARY KEY,
            assignment_id INTEGER NOT NULL UNIQUE REFERENCES assignments(id),
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            stage TEXT NOT NULL CHECK (stage IN ('baseline', 'informed')),
            perspective TEXT NOT NULL CHECK (perspective IN ('first', 'third')),
            satisfaction INTEGER NOT NULL CHECK (satisfaction BETWEEN 1 AND 5),
            trust INTEGER NOT NULL CHECK (trust BETWEEN 1 AND 5),
            reliance INTEGER NOT NULL CHECK (reliance BETWEEN 1 AND 5),
            created_at TEXT NOT NULL
        );
        CREATE TABLE da_judgments (
            id INTEGER PRIMARY KEY,
            assignment_id INTEGER NOT NULL UNIQUE REFERENCES assignments(id),
            segment_row INTEGER NOT NULL REFERENCES da_segments(id),
            score REAL NOT NULL CHECK (score BETWEEN 0 AND 100),
            created_at TEXT NOT NULL
        );
        CREATE TABLE sd_ratings (
            assignment_id INTEGER NOT NULL REFERENCES assignments(id),
            pair_id TEXT NOT NULL,
            is_repeat INTEGER NOT NULL DEFAULT 0 CHECK (is_repeat IN (0, 1)),
            value INTEGER NOT NULL CHECK (value BETWEEN -3 AND 3),   -- canonical: +3 = positive
            positive_left INTEGER NOT NULL CHECK (positive_left IN (0, 1)),
            created_at TEXT NOT NULL,
            PRIMARY KEY (assignment_id, pair_id, is_repeat)
        );
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            payload TEXT NOT NULL,
            dedupe_key TEXT UNIQUE,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL DEFAULT 3,
            last_error TEXT,
            run_after TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            entity TEXT NOT NULL,
            entity_id TEXT,
            detail TEXT
        );
        """,
    )


@migrations()
def m002_recording_review_and_exclusion(db) -> None:
    _run_script(
        db,
        """
        ALTER TABLE participants ADD COLUMN excluded_at TEXT;
        ALTER TABLE participants ADD COLUMN excluded_reason TEXT;
        ALTER TABLE recordings ADD COLUMN reviewed_by TEXT;
        ALTER TABLE recordings ADD COLUMN reviewed_at TEXT;
        ALTER TABLE jobs ADD COLUMN started_at TEXT;
        ALTER TABLE jobs ADD COLUMN finished_at TEXT;
        CREATE INDEX jobs_runnable ON jobs (status, run_after);
        CREATE INDEX recordings_qc ON recordings (qc_status)
        """,
    )


@migrations()
def m003_da_campaigns(db) -> None:
    _run_script(
        db,
        """
        CREATE TABLE da_hits (
            id INTEGER PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES studies(id),
            idx INTEGER NOT NULL,
            UNIQUE (study_id, idx)
        );
        CREATE TABLE da_hit_items (
            id INTEGER PRIMARY KEY,
            hit_id INTEGER NOT NULL REFERENCES da_hits(id),
            pos INTEGER NOT NULL,
            type TEXT NOT NULL CHECK (type IN ('system', 'bad_reference', 'ask_again', 'reference')),
            segment_row INTEGER NOT NULL REFERENCES da_segments(id),
            of_pos INTEGER,
            candidate TEXT NOT NULL,
            UNIQUE (hit_id, pos)
        );
        ALTER TABLE da_judgments ADD COLUMN hit_item_id INTEGER REFERENCES da_hit_items(id);
        ALTER TABLE da_judgments ADD COLUMN modality TEXT;
        CREATE TABLE da_feedback (
            id INTEGER PRIMARY KEY,
            participant_id INTEGER NOT NULL UNIQUE REFERENCES participants(id),
            text TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """,
    )


@migrations()
def m004_sd_suitability(db) -> None:
    _run_script(
        db,
        """
        CREATE TABLE sd_suitability (
            assignment_id INTEGER NOT NULL REFERENCES assignments(id),
            pair_id TEXT NOT NULL,
            suitability INTEGER NOT NULL CHECK (suitability BETWEEN 1 AND 5),
            created_at TEXT NOT NULL,
            PRIMARY KEY (assignment_id, pair_id)
        );
        CREATE TABLE sd_suggestions (
            assignment_id INTEGER NOT NULL PRIMARY KEY REFERENCES assignments(id),
            text TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
    )


@migrations()
def m005_metric_cache(db) -> None:
    # metric scores memoised by input hash (storage/metric_cache.py, services/metrics/registry.py)
    _run_script(
        db,
        """
        CREATE TABLE metric_scores (
            metric TEXT NOT NULL,
            version TEXT NOT NULL,
            model TEXT NOT NULL,
            input_hash TEXT NOT NULL,         -- sha256 of the inputs the metric reads
            score REAL,                       -- NULL: the metric cannot score this input
            created_at TEXT NOT NULL,
            PRIMARY KEY (metric, version, model, input_hash)
        )
        """,
    )


@migrations()
def m006_exchange_metrics(db) -> None:
    _run_script(
        db,
        """
        CREATE TABLE exchange_metrics (
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            metric TEXT NOT NULL,
            version TEXT NOT NULL,
            model TEXT NOT NULL,
            score REAL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (exchange_id, metric)
        )
        """,
    )


@migrations()
def m007_consent_demographics_completion(db) -> None:
    # consent and demographics come before a participant's first item;
    # completed_at is set once, when a participant first reaches the end of their role
    _run_script(
        db,
        """
        CREATE TABLE consents (
            participant_id INTEGER NOT NULL PRIMARY KEY REFERENCES participants(id),
            study_id TEXT NOT NULL REFERENCES studies(id),
            agreed INTEGER NOT NULL CHECK (agreed IN (0, 1)),
            text_hash TEXT NOT NULL,          -- sha256 of the consent text the participant saw
            created_at TEXT NOT NULL
        );
        CREATE TABLE demographics (
            participant_id INTEGER NOT NULL PRIMARY KEY REFERENCES participants(id),
            study_id TEXT NOT NULL REFERENCES studies(id),
            answers TEXT NOT NULL,            -- JSON {field id: answer}
            created_at TEXT NOT NULL
        );
        ALTER TABLE participants ADD COLUMN completed_at TEXT
        """,
    )


def _run_script(db, script: str) -> None:
    # executescript() would COMMIT the migration's transaction first; run statement by statement.
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def migrate(database) -> list[str]:
    """Apply pending migrations; returns the names applied. Nothing pending (the usual case):
    a read only, so a command-line call beside a busy app does not queue for the write lock."""
    if not migrations.pending(database.db):
        return []
    with database.write() as db:
        pending = [m.name for m in migrations.pending(db)]
        migrations.apply(db)
    return pending


@migrations()
def m008_question_drafts(db) -> None:
    # Comprehension questions written by an LLM (or imported) wait here for review; only
    # accepted ones are copied into `questions`. No foreign key to starters: a re-import of an
    # unchanged-id study replaces its starters, and drafts must not block that.
    _run_script(
        db,
        """
        CREATE TABLE question_drafts (
            id INTEGER PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES studies(id),
            starter_id TEXT NOT NULL,
            position INTEGER NOT NULL,        -- order within the starter: accepted ones are numbered by it
            en TEXT NOT NULL CHECK (length(trim(en)) > 0),
            pt TEXT NOT NULL DEFAULT '',
            answer_en TEXT,                   -- reference answer, read from the starter
            status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'accepted', 'rejected')),
            origin TEXT NOT NULL CHECK (origin IN ('generated', 'imported', 'edited')),
            model TEXT,                       -- the LLM (and MT) that wrote it
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            CHECK (status != 'accepted' OR length(trim(pt)) > 0)
        );
        CREATE INDEX question_drafts_starter ON question_drafts (study_id, starter_id, status)
        """,
    )


@migrations()
def m009_work_pool(db) -> None:
    # Items waiting for people (receive, validate, third-person baseline surveys, a withdrawn
    # recording waiting for a sender of its cell): a participant who needs work picks one here
    # (services/usability/workflow.next_item), so no request scans the study. need = people still to
    # assign; stratum = what allocation balances over (the speaker's group and the system; for
    # 'record', the sender cell group|gender); rkey = seeded random order. The other indexes
    # serve the per-exchange checks that a submit runs (no SCAN of a study-sized table).
    _run_script(
        db,
        """
        CREATE TABLE work_pool (
            study_id TEXT NOT NULL REFERENCES studies(id),
            phase TEXT NOT NULL CHECK (phase IN ('record', 'receive', 'validate', 'survey_baseline')),
            item_id TEXT NOT NULL,
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            stratum TEXT NOT NULL,
            producers TEXT NOT NULL DEFAULT '[]',   -- JSON identity keys that may not take it
            need INTEGER NOT NULL CHECK (need >= 0),
            rkey REAL NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (study_id, phase, item_id)
        );
        CREATE INDEX work_pool_open ON work_pool (study_id, phase, stratum, need, rkey) WHERE need > 0;
        CREATE INDEX work_pool_exchange ON work_pool (exchange_id);
        CREATE INDEX assignments_exchange ON assignments (exchange_id, phase, status);
        CREATE INDEX validations_exchange ON validations (exchange_id);
        CREATE INDEX validations_receive ON validations (receive_assignment_id);
        CREATE INDEX recordings_exchange ON recordings (exchange_id);
        CREATE INDEX exchanges_starter ON exchanges (study_id, starter_id);
        ALTER TABLE participants ADD COLUMN dropped_out_at TEXT;
        ALTER TABLE participants ADD COLUMN dropped_out_reason TEXT
        """,
    )


@migrations()
def m010_reference_translations(db) -> None:
    # Human reference translations of the starters (the study's references.csv): a corpus for
    # reference-based metrics, apart from the participant flow (never an exchange, never a
    # system). idx numbers a starter's references in file order; translator tells several apart
    # ('' for one unnamed reference).
    _run_script(
        db,
        """
        CREATE TABLE reference_translations (
            study_id TEXT NOT NULL,
            starter_id TEXT NOT NULL,
            idx INTEGER NOT NULL CHECK (idx >= 1),
            translator TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL CHECK (length(trim(text)) > 0),
            PRIMARY KEY (study_id, starter_id, idx),
            UNIQUE (study_id, starter_id, translator),
            FOREIGN KEY (study_id, starter_id) REFERENCES starters(study_id, id)
        )
        """,
    )


@migrations()
def m011_link_secret_and_slots(db) -> None:
    # Signed Prolific enrolment URLs (services/setup/enrolment.py): the HMAC key, made once here
    # (TRADLAB_LINK_SECRET, when set, is used instead). participants.self_enrol = 1 marks the
    # slots made for Prolific self-enrolment; only these are ever claimed from a Prolific URL
    # (private-link slots never are). Slots already claimed through Prolific count as such.
    import secrets as _secrets
    from datetime import datetime, timezone

    _run_script(
        db,
        """
        CREATE TABLE app_secrets (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        ALTER TABLE participants ADD COLUMN self_enrol INTEGER NOT NULL DEFAULT 0;
        UPDATE participants SET self_enrol = 1 WHERE prolific_pid IS NOT NULL;
        CREATE INDEX participants_prolific ON participants (study_id, prolific_pid);
        CREATE INDEX participants_claimed ON participants (study_id, claimed_at)
        """,
    )
    db.execute(
        "INSERT INTO app_secrets (name, value, created_at) VALUES (?, ?, ?)",
        ["link_secret", _secrets.token_hex(32), datetime.now(timezone.utc).isoformat(timespec="milliseconds")],
    )


@migrations()
def m012_da_hit_outcomes_tts_and_domain(db) -> None:
    # Paper 001 (section 2.2.3, Ethics): a rater's HIT that fails quality control is rejected
    # and "rescheduled to obtain fresh judgments". One row per DA rater, written when the rater's
    # last item is saved: the reliability test, the speed check and whether the HIT went back to
    # the pool (rerun = 1: the rater's hold no longer counts as coverage, assignments.da_hit_loads).
    # The TTS engine and voice that spoke each audio item (a study without Google
    # credentials falls back to Piper or espeak-ng), and the domain of a DA segment (Table 1).
    _run_script(
        db,
        """
        CREATE TABLE da_hit_outcomes (
            participant_id INTEGER NOT NULL PRIMARY KEY REFERENCES participants(id),
            study_id TEXT NOT NULL REFERENCES studies(id),
            hit_id INTEGER NOT NULL REFERENCES da_hits(id),
            modality TEXT NOT NULL,
            run INTEGER NOT NULL,
            p_value REAL,
            reliable INTEGER NOT NULL CHECK (reliable IN (0, 1)),
            fast INTEGER NOT NULL CHECK (fast IN (0, 1)),
            median_item_s REAL,
            rerun INTEGER NOT NULL CHECK (rerun IN (0, 1)),
            decided_at TEXT NOT NULL
        );
        CREATE INDEX da_hit_outcomes_rerun ON da_hit_outcomes (hit_id, modality, run) WHERE rerun = 1;
        CREATE INDEX da_hit_outcomes_study ON da_hit_outcomes (study_id);
        ALTER TABLE da_hit_items ADD COLUMN tts_engine TEXT;
        ALTER TABLE da_hit_items ADD COLUMN tts_voice TEXT;
        ALTER TABLE da_segments ADD COLUMN domain TEXT NOT NULL DEFAULT ''
        """,
    )


@migrations()
def m013_enrolment_returns_and_refusal_counts(db) -> None:
    # services/setup/enrolment.py: the team's "New link" also closes the Prolific
    # way back into a slot (prolific_return_revoked_at); refused enrolments are counted per
    # (study, role, reason, minute) instead of one audit row each (a page load of a hostile
    # client cost a write under the answers' lock and 500 bytes). Unsigned requests count under
    # study '' and role '' (their fields are the caller's to invent).
    _run_script(
        db,
        """
        ALTER TABLE participants ADD COLUMN prolific_return_revoked_at TEXT;
        CREATE TABLE enrol_refusals (
            study_id TEXT NOT NULL,
            role TEXT NOT NULL,
            reason TEXT NOT NULL,
            minute TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (study_id, role, reason, minute)
        )
        """,
    )


@migrations()
def m014_translations_of_rejected_recordings(db) -> None:
    # A recording rejected in review goes back to its sender, who records the same
    # exchange again; its translation (one per exchange) moves here so that the new recording
    # gets its own, and nothing made from the rejected one is lost.
    _run_script(
        db,
        """
        CREATE TABLE superseded_translations (
            id INTEGER PRIMARY KEY,
            exchange_id INTEGER NOT NULL REFERENCES exchanges(id),
            recording_id INTEGER NOT NULL UNIQUE REFERENCES recordings(id),
            system_id TEXT NOT NULL,
            text TEXT NOT NULL,
            transcript TEXT,
            meta TEXT,
            created_at TEXT NOT NULL,
            superseded_at TEXT NOT NULL
        );
        CREATE INDEX superseded_translations_exchange ON superseded_translations (exchange_id)
        """,
    )


@migrations()
def m015_recording_qc_edge_probabilities(db) -> None:
    # services/usability/recording_qc.py: the QC ASR's second opinion, the prompt's
    # edge words' probabilities under the audio and the flags they removed (JSON; NULL where
    # the prompt was not scored), shown to the reviewer beside the word diff.
    _run_script(db, "ALTER TABLE recordings ADD COLUMN qc_edges TEXT")


# The column checks that enumerate the built-in roles and phases, as m001 wrote them; m016
# makes them checks of a name, so that a registered protocol's own (services/common/protocols.py)
# can be stored without a migration of its own.
_ENUMERATED = {
    "participants": (r"CHECK \(role IN \([^)]*\)\)", "CHECK (length(role) BETWEEN 1 AND 32)"),
    "assignments": (r"CHECK \(phase IN \([^)]*\)\)", "CHECK (length(phase) BETWEEN 1 AND 32)"),
}


@migrations()
def m016_registered_protocols(db) -> None:
    # SQLite cannot alter a CHECK; SQLite's own procedure for a change that leaves the stored
    # format as it is (https://www.sqlite.org/lang_altertable.html, "other kinds of table schema
    # changes") edits the table's CREATE statement in sqlite_schema and bumps the schema version,
    # in this migration's transaction. Rebuilding the two tables instead would mean rebuilding
    # every table whose foreign keys point at them.
    import re

    version = db.execute("PRAGMA schema_version").fetchone()[0]
    db.execute("PRAGMA writable_schema = ON")
    try:
        for table, (pattern, replacement) in _ENUMERATED.items():
            sql = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table]).fetchone()[0]
            new, n = re.subn(pattern, replacement, sql)
            if n != 1:
                raise RuntimeError(f"m016: the {table} table's check is not the one m001 wrote")
            db.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", [new, table])
        db.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        db.execute("PRAGMA writable_schema = OFF")
    # the answers of a registered protocol's phase that has no table of its own: the data its
    # validation returned, as JSON (storage/responses.py)
    _run_script(
        db,
        """
        CREATE TABLE responses (
            assignment_id INTEGER PRIMARY KEY REFERENCES assignments(id),
            data TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
    )


@migrations()
def m017_recordings_by_content(db) -> None:
    # a discarded intake's files are removed only when no row names their content
    # (services/usability/audio_intake.discard), looked up on every double submit of a recording
    db.execute("CREATE INDEX IF NOT EXISTS recordings_sha256 ON recordings (sha256)")


@migrations()
def m018_study_lifecycle_and_review_reasons(db) -> None:
    # corpus_hash: each corpus part's hash at import (JSON), so a re-import that changes only
    # settings that touch no collected item updates the study in place (services/study/lifecycle.py);
    # archived_at: an archived study leaves the dropdowns and its links say it is closed;
    # review_reason: why a reviewer rejected a recording, shown to its sender and exported
    _run_script(
        db,
        """
        ALTER TABLE studies ADD COLUMN corpus_hash TEXT;
        ALTER TABLE studies ADD COLUMN archived_at TEXT;
        ALTER TABLE recordings ADD COLUMN review_reason TEXT
        """,
    )


@migrations()
def m019_protocol_schemas(db) -> None:
    # a protocol's own tables (storage/protocol_schema.py): the schema version each registered
    # protocol's tables are at in this file, and the tables it made (JSON list)
    _run_script(
        db,
        """
        CREATE TABLE protocol_schemas (
            protocol TEXT PRIMARY KEY,
            version INTEGER NOT NULL CHECK (version >= 1),
            tables TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """,
    )


# the corpus parts' hashes as the built-in protocols name them since their corpora moved into
# bundle.corpus (services/study/lifecycle.corpus_parts); an empty part is no part any more
_CORPUS_PART_NAMES = {
    "starters": "usability.starters",
    "questions": "usability.questions",
    "exchanges": "usability.exchanges",
    "references": "usability.references",
    "da_segments": "da.segments",
    "da_hits": "da.hits",
    "sd_sentences": "sd.sentences",
    "sd_pairs": "sd.pairs",
}
_EMPTY_PART = hashlib.sha256(b"[]").hexdigest()


@migrations()
def m020_corpus_parts_by_protocol(db) -> None:
    # a study imported before keeps comparing equal on a settings-only re-import
    for sid, stored in db.execute("SELECT id, corpus_hash FROM studies WHERE corpus_hash IS NOT NULL").fetchall():
        old = json.loads(stored)
        new = {
            _CORPUS_PART_NAMES.get(k, k): v
            for k, v in old.items()
            if not (k in _CORPUS_PART_NAMES and v == _EMPTY_PART)
        }
        db.execute("UPDATE studies SET corpus_hash = ? WHERE id = ?", [json.dumps(new), sid])
