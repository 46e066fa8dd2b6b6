"""The hook specifications: every function a protocol gives the registry
(services/common/protocols.py), as a typing.Protocol whose __call__ is the call the core makes,
so that mypy checks each spec's functions against it (`make lint`) and a reader sees what a hook
is given and returns. docs/hooks.md is generated from this module (`python app.py docs hooks`).

The core passes every argument by position: the parameters are positional-only, named as the
core names what it passes, and a hook may name its own as it likes (a role's setup takes `pid`).
A hook whose first parameter is `tx` runs inside the caller's write: tx is its
storage.db.Transaction (tx.db for storage's writes, tx.database for reads and log()), passed on
to whatever else writes rather than another write opened.

A field typed `Hook | str` also takes "module:name", imported on first use by
protocols.resolve() (web's tab_builder for Tab.build), so that the registry never imports what
sits above it (services.report, tabs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeAlias

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from storage.db import Database, Transaction
    from storage.rows import AssignmentRecord, AssignmentRow, ParticipantRow, StudyRow

# The types of the layers above services.common, which it may not import, not even for mypy (the
# services-layers contract and tools/import_graph.py count TYPE_CHECKING imports): Any to mypy,
# named here for the reader (and docs/hooks.md) with where each lives.
StudyBundle: TypeAlias = Any  # services.study.files.StudyBundle
StudyErrors: TypeAlias = Any  # services.study.files' collector: err.add(file, row, field, message)
ExportContext: TypeAlias = Any  # services.study.export.ExportContext
Reassignment: TypeAlias = Any  # services.participation.reassignment.Reassignment
Voice: TypeAlias = Any  # services.study.texts.Voice
ModelCache: TypeAlias = Any  # services.models.cache.ModelCache
ReportPart: TypeAlias = Any  # services.report.sections.Part
TabContext: TypeAlias = Any  # tabs.common.Ctx
TabUI: TypeAlias = Any  # tabs.common.TabUI
Panel: TypeAlias = Any  # tabs.analysis_common.Panel
ReportInputs: TypeAlias = Any  # tabs.analysis_common.ReportInputs
SectionUI: TypeAlias = Any  # tabs.admin_common.SectionUI


# -- Phase: one kind of item ------------------------------------------------------------------


class PhaseContent(Protocol):
    """The item's fields as the page shows them (only what the role may see), or None while it
    is not ready (the page waits, saying the phase's `not_ready`)."""

    def __call__(
        self,
        database: Database,
        study: StudyRow,
        participant: ParticipantRow,
        assignment: AssignmentRow,
        media_dir: Path | None,
        /,
    ) -> dict | None: ...


class PhaseValidate(Protocol):
    """The data to save, from the submitted payload; raises
    services.participation.submissions.SubmissionError naming what to fix. None in the spec
    when the phase has an intake, which replaces it."""

    def __call__(self, database: Database, assignment: AssignmentRow, payload: dict, /) -> dict: ...


class PhaseCheck(Protocol):
    """Refuses (SubmissionError) an answer the item cannot take yet, before validate (a DA
    candidate whose audio is not played)."""

    def __call__(
        self, database: Database, study: StudyRow, assignment: AssignmentRow, media_dir: Path | None, /
    ) -> None: ...


class PhaseSave(Protocol):
    """Writes the data (validate's or intake's) inside the submit's write, through storage's
    functions only; the item is marked done after it."""

    def __call__(
        self, tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data: dict, /
    ) -> None: ...


class PhaseStored(Protocol):
    """The saved answer of a done item, as a submit returns it."""

    def __call__(self, database: Database, assignment: AssignmentRow, /) -> dict: ...


class PhaseIntake(Protocol):
    """The data to save, made outside the line of participant actions before the save (a
    recording's decoding); it replaces validate. Raises SubmissionError as validate does."""

    def __call__(
        self, database: Database, study: StudyRow, assignment: AssignmentRow, payload: dict, media_dir: Path | None, /
    ) -> dict: ...


class PhaseDiscard(Protocol):
    """The intake's data when its save did not take it (a double submit, a refusal or a failure
    in the write), called in the line of participant actions (no save runs meanwhile): removes
    what the intake made outside the database (a recording's staged files)."""

    def __call__(self, database: Database, data: dict, /) -> None: ...


class PhaseAfterSave(Protocol):
    """Inside the submit's write, after the item is marked done (a DA rater's finished HIT is
    judged)."""

    def __call__(self, tx: Transaction, study: StudyRow, assignment: AssignmentRow, /) -> None: ...


class PhaseAnswerWords(Protocol):
    """A done item's answer in words, as the admin's "A participant" page lists it beside the
    item (services/admin/participant_view.py): `stored` is what the phase's stored returns for the
    item. Without one the page shows that stored answer as compact JSON. A phase of the built-in
    protocols is said by that module's own queries, one per kind of answer."""

    def __call__(self, database: Database, assignment: AssignmentRow, stored: dict, /) -> str: ...


# -- Tab: a participant's tab -----------------------------------------------------------------


class TabBuild(Protocol):
    """The tab's Gradio builder in tabs/ (or a plugin's module), called by web only when the page
    is built: services never import tabs. Every tab is one item form,
    tabs.item_form.form_tab(ctx, name, label, body_html, payload_of), with what sits beside it (DA's
    feedback box, the sender's recorder) as its `beside` (tests/test_item_form_path.py)."""

    def __call__(self, ctx: TabContext, /) -> TabUI: ...


class TabOnSubmit(Protocol):
    """Inside the answer's write, after the phase's save and after_save: the downstream work the
    answer opens (the usability study's next phase); its result is ignored. A tab with one also
    readies the participant's next item in that write (the item a pool gives, its first-shown
    time), so that the view after the submit writes nothing."""

    def __call__(self, tx: Transaction, study: StudyRow, assignment: AssignmentRow, /) -> object: ...


class TabTotal(Protocol):
    """The number of items the tab's progress counts; counts is {"open", "done"} of the
    participant's items of the tab. Without one: done + open."""

    def __call__(
        self, database: Database, participant: ParticipantRow, study: StudyRow, counts: dict[str, int], /
    ) -> int: ...


class TabWaiting(Protocol):
    """Why the tab waits, when that is the participant's to know, in the page's voice (None:
    the common words)."""

    def __call__(self, database: Database, participant: ParticipantRow, voice: Voice | None, /) -> str | None: ...


# -- Pool: a role's work taken one item at a time ---------------------------------------------


class PoolMayTake(Protocol):
    """Whether taking an item is worth the write lock (the participant has room and something
    they may take waits); cheap reads only: a page polling while it waits writes nothing."""

    def __call__(self, database: Database, participant: ParticipantRow, study: StudyRow, /) -> bool: ...


class PoolReady(Protocol):
    """How many more items the participant could take now (the page's "n ready"); None: nothing
    comes from the pool for them."""

    def __call__(self, database: Database, participant: ParticipantRow, study: StudyRow, /) -> int | None: ...


class PoolTake(Protocol):
    """The assignment taken (storage's row) inside the caller's write, or None when there is no
    room or nothing they may take."""

    def __call__(self, tx: Transaction, participant: ParticipantRow, study: StudyRow, /) -> AssignmentRow | None: ...


# -- Role: a participant's role ---------------------------------------------------------------


class RoleSetup(Protocol):
    """The role's queue, made at enrolment inside its write (design_index None: the next one of
    the participant's cell). Without one the items come later, e.g. from a pool."""

    def __call__(
        self,
        tx: Transaction,
        study: StudyRow,
        participant_id: int,
        group: str | None,
        gender: str | None,
        design_index: int | None,
        /,
    ) -> None: ...


class RoleItems(Protocol):
    """The number of items the role's welcome names (services/participation/welcome.py), from
    the study's config."""

    def __call__(self, config: dict, /) -> int: ...


class RoleHeldItems(Protocol):
    """The number of items one participant's welcome names, from what they hold (their own
    queue), where the protocol knows it better than Role.items' study-wide count: a HIT made
    of whole documents may hold more or fewer items than the study's HIT size. The welcome's
    minutes follow it."""

    def __call__(self, database: Database, study: StudyRow, participant: ParticipantRow, /) -> int: ...


class RoleMinutes(Protocol):
    """The welcome's minutes where the protocol gives them, from the study's config (without
    one: the items times seconds_per_item)."""

    def __call__(self, config: dict, /) -> float: ...


class RoleOnLeave(Protocol):
    """A participant of the role leaves (deactivated and reassigned, dropped out, excluded):
    `withdrawn` are their open items, already withdrawn, inside the caller's write; it hands on
    what it can and says so in `out` (moved, waiting, dropped). Without one nothing is handed on
    (each item is dropped, with its phase's not_handed_on)."""

    def __call__(
        self,
        tx: Transaction,
        study: StudyRow,
        participant: ParticipantRow,
        withdrawn: list[AssignmentRecord],
        actor: str,
        out: Reassignment,
        /,
    ) -> None: ...


class RoleQC(Protocol):
    """The quality-control outcome of each of `rows` (finished participants of the role, as the
    Finished list reads them: their id, excluded_at and excluded_reason among the columns), by id,
    in the words a payer acts on ("passed", "failed reliability test (p = 0.41); HIT re-run").
    Read from what the protocol's own QC decided or computes, never a statistic of its own; called
    once per page or CSV with all of the role's rows. Without one the list says "no QC for this
    role"."""

    def __call__(self, database: Database, study: StudyRow, rows: list[dict], /) -> dict[int, str]: ...


# -- ExportTable and AudioMetadata: what the export writes ------------------------------------


class TableQuery(Protocol):
    """The table's rows (storage's); a column holding an internal participant id ends in `__pid`
    and is exported as the pseudonym column without it."""

    def __call__(self, database: Database, study_id: str, /) -> list[dict]: ...


class TableExtras(Protocol):
    """Fills the columns the query does not give, on the rows as queried, before the rows of
    participants not exported are dropped; ctx holds the pseudonyms, the media folder, the rows
    of the tables built before and the audio files to copy."""

    def __call__(self, rows: list[dict], ctx: ExportContext, /) -> None: ...


class TableWarnings(Protocol):
    """What the README and manifest warn of, from the rows as exported (a metric whose scores
    mix two models)."""

    def __call__(self, rows: list[dict], /) -> list[str]: ...


class AudioMetadataRows(Protocol):
    """One row per exported recording that has its audio file (the hf-audio format's
    train/metadata.jsonl), made from the exported tables ({table: rows}; file_name as in its
    table, relative to train/)."""

    def __call__(self, tables: dict[str, list[dict]], /) -> list[dict]: ...


# -- Protocol: the protocol's study section, corpus, upkeep, report ---------------------------


class SectionCheck(Protocol):
    """Problems of the study's merged [<protocol>] section, as (key, message); the key is the
    setting's full name (`da.hit_size`)."""

    def __call__(self, section: dict, /) -> list[tuple[str, str]]: ...


class CorpusLoad(Protocol):
    """Reads and checks the corpus files the section names into the bundle, errors through
    err.add(file, row, field, message)."""

    def __call__(
        self, folder: Path, config: dict, systems: list[dict], bundle: StudyBundle, err: StudyErrors, /
    ) -> None: ...


class Prepare(Protocol):
    """At import, before anything is stored, what the protocol builds from its checked files
    (DA's HITs) into the bundle; raises StudyValidationError to refuse the import."""

    def __call__(self, bundle: StudyBundle, /) -> None: ...


class StoreCorpus(Protocol):
    """Inside the import's write, the protocol's corpus stored in its tables (its own,
    Protocol.tables, through storage/protocol_rows.py insert_many; a built-in's through its
    storage module): `corpus` is what its load (and prepare) put in bundle.corpus[<protocol>].
    When a study's content is replaced (a re-import that changes it), first called with None for
    every registered protocol (remove the study's corpus: a protocol's own tables are emptied of
    the study's rows by the core before its call with the corpus), then with the corpus for each
    protocol the study lists."""

    def __call__(self, tx: Transaction, study_id: str, corpus: Any, /) -> None: ...


class CountCorpus(Protocol):
    """{label: n} of the study's stored corpus (`my_items`: 12), shown after the study's systems
    in the import's summary (`app.py import`, the admin's import box) and kept in its audit-log
    row; a label the summary already has is shown as `<protocol>.<label>`."""

    def __call__(self, database: Database, study_id: str, /) -> dict[str, int]: ...


class CountCollected(Protocol):
    """{label: n} of what the study's participants gave the protocol (`my answers`: 40), for the
    team's progress tab (Collected), after each earlier listed protocol's."""

    def __call__(self, database: Database, study_id: str, /) -> dict[str, int]: ...


class MetricsReport(Protocol):
    """Which automatic metrics ran on a study of the protocol, in which mode, and what each
    skipped (services/metrics/exchange.py's shape): the export manifest's `metrics` and the
    report's versions."""

    def __call__(self, database: Database, study_id: str, /) -> dict: ...


class SystemsReport(Protocol):
    """{system id: how its outputs were made}: a line per system for the report's versions (the
    usability study: the precision each stage ran in, how many outputs, how many a guard cut)."""

    def __call__(self, database: Database, study_id: str, /) -> dict[str, str]: ...


class ReportSection(Protocol):
    """The protocol's part of the per-study report (services/report/build.py); inputs are the
    report's extra inputs ({"qe_audits": [folders]}). The function's module holds TITLE and
    ITEMS, the part's title and numbered items, which a failed analysis fills with its reason."""

    def __call__(self, database: Database, study_id: str, out_dir: Path, inputs: dict, /) -> ReportPart: ...


class Forget(Protocol):
    """Inside a study's deletion's write, before the core deletes the study's rows from every
    table that holds its id: what the protocol keeps that the core cannot find by the study's id
    (jobs whose payload names only its items) deleted; returns its media files that no other
    study's row names, removed after the commit (services/study/lifecycle.delete)."""

    def __call__(self, db: Any, study_id: str, /) -> list[str]: ...


class DropInactive(Protocol):
    """The ids of the participants dropped out for not coming back (its own study setting):
    the worker's upkeep, run before the repair."""

    def __call__(self, database: Database, study_id: str, /) -> list[int]: ...


class Repair(Protocol):
    """The protocol's periodic repair, adding what its events should have opened (idempotent;
    the count of things it added or changed, 0: none missing): run by the worker's upkeep
    (services/participation/maintenance.py) and after a study's import, for every registered
    protocol that has one (a study without the protocol: 0)."""

    def __call__(self, database: Database, study_id: str, /) -> int: ...


class Plan(Protocol):
    """Whether a study of the protocol can finish, in the designer's words: before anyone
    enrolled, what its design needs (the import's result shows it); while it runs, what keeps
    work from anyone who could take it and what would release it (the admin's dashboard). []
    when nothing is wanting."""

    def __call__(self, database: Database, study_id: str, /) -> list[str]: ...


class DashboardPart(Protocol):
    """The admin dashboard's part of the protocol for one study: its cards (title, figure, the
    note under it, whether it asks for the team's attention), shown after the core's first card,
    and its lines of what waits on the study team or the worker, listed before the core's. The
    dashboard re-reads it every few seconds: indexed aggregates only. ([], []) for a study
    without the protocol, so another protocol's study shows none of its cards."""

    def __call__(self, database: Database, study_id: str, /) -> tuple[list[tuple[str, int, str, bool]], list[str]]: ...


class QuestionsChanged(Protocol):
    """A starter's accepted comprehension questions changed (services/questions/review.py),
    inside the caller's write."""

    def __call__(self, tx: Transaction, study_id: str, starter_id: str, /) -> None: ...


class AdminSection(Protocol):
    """The protocol's own sections of the team's Admin tab (accordions between the progress
    tables and the background jobs), built inside the admin panel: given the tab's context, the
    admin's auth, the session and the study dropdown, it builds its components and wires its
    events (each behind tabs.admin_common.admin_only) and returns a tabs.admin_common.SectionUI:
    its inputs, outputs, the inputs' values on login, and refresh(study_id, *values) -> {component:
    value}, which login, Refresh and a change of study call (the usability study's exchanges and
    recording review, tabs/admin_usability.py)."""

    def __call__(self, ctx: TabContext, auth: Any, session: Any, study: Any, /) -> SectionUI: ...


class ParticipantItems(Protocol):
    """The admin's "A participant" page: each of the participant's items of the protocol in the
    team's words, {assignment id: (what it was, the answer)}, in one query per kind of answer (not
    one per item). `items` are their assignment rows, each with its `meta` parsed; an item left
    out is "item <id>" with its phase's answer_words (or its stored answer as compact JSON)."""

    def __call__(
        self, database: Database, participant: ParticipantRow, items: list[dict], /
    ) -> dict[int, tuple[str, str]]: ...


class Demo(Protocol):
    """The protocol's people in the demo study (`app.py --demo` on a new database): whoever one
    person needs to play every role to the end, and their work so far; returns what was done,
    in words, as the start prints it. Without one the demo enrols one participant per role."""

    def __call__(self, database: Database, study_id: str, media_dir: Path, /) -> str: ...


class AnalysisPanel(Protocol):
    """The protocol's panel of the Analysis tab, built in tabs/ (resolved by the tab: services
    never import tabs); it returns what the report button needs of the panel, else None."""

    def __call__(self, shared: Panel, /) -> ReportInputs | None: ...


class Jobs(Protocol):
    """The background jobs its events queue, {kind: handler(payload)}, which the app's worker
    runs (services/participation/worker_jobs.py). Two protocols never name the same kind."""

    def __call__(
        self, database: Database, cache: ModelCache, media_dir: Path | None, /
    ) -> dict[str, Callable[[dict], object]]: ...


class AnalyzeCommand(Protocol):
    """`python app.py analyze <name>`: adds the protocol's analysis command(s) to analyze's
    subparsers, `analyze.add_parser(name, help=...)` with its arguments, each with
    set_defaults(analyze=run): run(args, open_database) returns the summary the command prints
    and raises ValueError or FileNotFoundError naming what is wrong (printed as a refusal, exit
    status 2); open_database() opens the app's database, for a stored study's analysis."""

    def __call__(self, analyze: argparse._SubParsersAction, /) -> None: ...


class CliCommands(Protocol):
    """The protocol's commands of `python app.py` (cli.build_parser, after the built-in ones):
    adds its parsers to the command line's subparsers, `subparsers.add_parser(name, help=...)`,
    each with set_defaults(func=handler); handler(args, settings) returns the exit status, the
    database opened as every command opens it (cli.open_db), storage.open_database(settings.db_path,
    settings.journal_mode, protocols.schemas()): without the schemas a database that has not
    had the protocol's tables yet is not given them. A name another command has is refused with
    the protocol's name.
    docs/reference.md's CLI section (cli.cli_markdown) lists them while the protocol is loaded."""

    def __call__(self, subparsers: argparse._SubParsersAction, /) -> None: ...
