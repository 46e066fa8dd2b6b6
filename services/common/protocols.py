"""The registry of protocols: one Protocol per evaluation protocol, registered once.

A Protocol says what the shared packages need of it (its roles, their tabs, each tab's phases,
each phase's content, validation, save and stored answer, its study.toml section with its
defaults and checks, its corpus files, its export tables with their data dictionary), so that
services.participation, services.study, services.setup, storage and web iterate the registry
instead of naming phases, and never import a protocol package: each spec names its functions.

The built-in protocols register from their packages (services/usability/protocol.py,
services/da/protocol.py, services/sd/protocol.py, services/qe/protocol.py), imported on first use by module path (as
the metric registry imports its metrics); more come from the modules named in the
TRADLAB_PLUGINS environment variable, read on first use too, so that a launched app (and each
command of cli.py) sees the same protocols as the process that started it: comma-separated
entries, each a module path (a module that calls register() when imported) or
"module:attribute" (a module's Protocol, registered here). The recipe is in
docs/development.md, "Add a protocol".

A hook whose signature starts with `tx` runs inside the caller's write: tx is its
storage.db.Transaction (tx.db for storage's writes, tx.database for reads and log()), passed on
to whatever else writes rather than another write opened.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from services.common import settings

# the order of registration is the order roles, tabs, sections and tables are listed in
BUILTIN = ("services.usability.protocol", "services.da.protocol", "services.sd.protocol", "services.qe.protocol")
PLUGINS_ENV = "TRADLAB_PLUGINS"  # read through services/common/settings.py (Settings.plugins)
# a role, tab or phase name: a URL path (/<role>/), an API name (/<tab>_submit) and a stored value
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
AUDIO_METADATA = "metadata"  # the export's name of the hf-audio format's metadata.jsonl


@dataclass(frozen=True)
class Phase:
    """One kind of item: what a participant sees of it and what answering it stores.

    content(database, study, participant, assignment, media_dir) -> the item's fields as the
        page shows them (only what the role may see), or None while it is not ready (the page
        waits, saying `not_ready`)
    validate(database, assignment, payload) -> the data to save; raises
        services.participation.submissions.SubmissionError naming what to fix
    check(database, study, assignment, media_dir), optional: refuses (SubmissionError) an answer
        the item cannot take yet, before validate (a DA candidate whose audio is not played)
    save(tx, study, participant, assignment, data): the data written inside the
        submit's write (storage functions only)
    stored(database, assignment) -> the saved answer, as a submit returns it
    intake(database, study, assignment, payload, media_dir) -> data, optional: work done outside
        the line of participant actions before the save (a recording's decoding); it replaces
        validate
    discard(database, data), optional: the intake's data when its save did not take it (a
        double submit, a refusal or a failure in the write), called in the line of participant
        actions (no save runs meanwhile): removes what the intake made outside the database (a
        recording's staged files)
    after_save(tx, study, assignment), optional: inside the write, after the item is
        marked done (a DA rater's finished HIT is judged)
    not_handed_on: why an open item of the phase is withdrawn, not handed on, when its
        participant leaves and their role's on_leave does not hand it on (the reassignment's
        summary; default: the phase's name)
    served_last: the tab shows the phase's open items after those of its other phases, whatever
        their random positions (the usability study's informed surveys, after the baselines)
    """

    name: str
    content: Callable[..., dict | None]
    validate: Callable[..., dict] | None
    save: Callable[..., None]
    stored: Callable[..., dict]
    check: Callable[..., None] | None = None
    intake: Callable[..., dict] | None = None
    discard: Callable[..., None] | None = None
    after_save: Callable[..., None] | None = None
    not_ready: str = ""
    not_handed_on: str = ""
    served_last: bool = False


@dataclass(frozen=True)
class Tab:
    """A participant's tab: the phases whose items it shows, in one queue.

    build: the tab's builder in tabs/ (ctx -> tabs.common.TabUI), a callable or "module:name"
        (imported by web only: services never import tabs)
    label: the tab's name as the other tab of the same role names it ("your Survey tab")
    on_submit(tx, study, assignment), optional: inside the answer's write, after the
        phase's save and after_save: the downstream work the answer opens (the usability study's
        next phase); a tab with one also readies the participant's next item in that write (the
        item a pool gives, its first-shown time), so that the view after the submit writes nothing
    instruction_items: item ids that are instructions, not work (not counted, no "Saved.")
    total(database, participant, study, counts) -> the items the progress counts (default:
        done + open)
    waiting(database, participant, voice) -> why the tab waits, when that is the
        participant's to know (None: the common words)
    refusal_out_of_order: the texts key of a submit that is not the next open item
    """

    name: str
    phases: tuple[str, ...]
    build: Callable[..., Any] | str
    label: str = ""
    on_submit: Callable[..., Any] | None = None
    instruction_items: tuple[str, ...] = ()
    total: Callable[..., int] | None = None
    waiting: Callable[..., str | None] | None = None
    refusal_out_of_order: str = "out_of_order"
    lang: str = "en"  # the language of the page (a role's page speaks its first tab's)


@dataclass(frozen=True)
class Pool:
    """How a role takes its work from a pool shared by the study, one item at a time as its page
    asks for work, rather than from a queue made at enrolment.

    tab: the role's tab whose items come from the pool
    may_take(database, participant, study) -> bool: whether taking an item is worth the write
        lock (the participant has room and something they may take waits); cheap reads only
    ready(database, participant, study) -> int | None: how many more items the participant could
        take now (the page's "n ready"); None: nothing comes from the pool for them
    take(tx, participant, study) -> the assignment taken (storage's row), or None when
        there is no room or nothing they may take; inside the caller's write
    """

    tab: str
    may_take: Callable[..., bool]
    ready: Callable[..., int | None]
    take: Callable[..., dict | None]


@dataclass(frozen=True)
class Role:
    """A participant's role: their page (/<name>/, titled page_title) and its tabs.

    setup(tx, study, participant_id, group, gender, design_index): the role's queue
        made at enrolment (None: the items come later, e.g. from a pool)
    grouped: enrolled per group x gender cell of the study (a sender: study.groups, genders)
    items(config) -> the number of items the role's welcome names (services/participation/welcome.py)
    seconds_per_item: the estimate of the welcome's minutes, per item
    minutes(config) -> the welcome's minutes where the protocol gives them (None: the estimate)
    pool: a Pool when the role takes its work one item at a time from the study's pool (None:
        its items are in its queue)
    on_leave(tx, study, participant, withdrawn, actor, out), optional: a participant
        of the role leaves (deactivated and reassigned, dropped out, excluded): `withdrawn` are
        their open items, already withdrawn, inside the caller's write; it hands on what it can
        and says so in `out` (services/participation/reassignment.py Reassignment: moved,
        waiting, dropped). None: nothing is handed on (each item is dropped, with its phase's
        not_handed_on)
    The welcome's words are the page text `welcome_<role>` (Protocol.texts for a new role)."""

    name: str
    tabs: tuple[str, ...]
    page_title: str
    setup: Callable[..., None] | None = None
    grouped: bool = False
    items: Callable[[dict], int] | None = None
    seconds_per_item: int = 60
    minutes: Callable[[dict], float] | None = None
    pool: Pool | None = None
    on_leave: Callable[..., None] | None = None


@dataclass(frozen=True)
class ExportTable:
    """One exported table: query(database, study_id) -> rows (storage's; a column holding an
    internal participant id ends in `__pid` and is exported as the pseudonym column without
    it), its description and {column: (type, meaning)} in the order written
    (services/study/export_dictionary.py TYPES).

    extras(rows, ctx), optional: fills the columns the query does not give, on the rows as
        queried, before the rows of participants not exported are dropped; ctx is a
        services/study/export.py ExportContext (pseudonyms, the media folder, the rows of the
        tables built before, the audio files to copy)
    warnings(rows) -> [text], optional: what the README and manifest warn of, from the rows as
        exported (a metric whose scores mix two models)
    content: study content (its corpus, systems, questions), not participants' data: listed
        after every protocol's data tables, as the README groups them
    """

    query: Callable[..., list[dict]]
    description: str
    columns: Mapping[str, tuple[str, str]]
    extras: Callable[..., None] | None = None
    warnings: Callable[[list[dict]], list[str]] | None = None
    content: bool = False


@dataclass(frozen=True)
class AudioMetadata:
    """The hf-audio export format's train/metadata.jsonl, the Hugging Face audiofolder view of a
    protocol's recordings: rows(tables) -> one row per exported recording that has its audio
    file, made from the exported tables ({table: rows}; file_name as in its table, relative to
    train/), with its README description and {column: (type, meaning)} in the order written.
    The export names it "metadata", one file: two protocols never both have one."""

    rows: Callable[[dict], list[dict]]
    description: str
    columns: Mapping[str, tuple[str, str]]


@dataclass(frozen=True)
class Protocol:
    """One protocol, named as study.protocols lists it and as its study.toml section.

    defaults: the section's keys with their defaults (None: required; a key not listed is an
        error)
    check(section) -> [(key, message)]: problems of the merged section (key relative to it)
    load(folder, cfg, systems, bundle, err): reads and checks the corpus files the section
        names into the StudyBundle (services/study/files.py), errors through err.add
    corpus_files: the section's keys that name corpus files (their bytes are part of the study's
        content hash: a changed file is a changed study)
    prepare(bundle): at import, before anything is stored, what the protocol builds from its
        checked files (DA's HITs); raises StudyValidationError to refuse the import
    export_tables: the protocol's tables written by the export, beside the common ones
    texts: {language: {key: words}}: page words the protocol adds to assets/texts/<language>.toml
        (a new role's welcome_<role>, its refusals); a key the assets have keeps theirs
    in_studies: a study lists it in study.protocols, with its [<name>] section (False: the
        protocol keeps no study data, as paper 003's QE audit, which runs on files; it has no
        roles, tabs or phases, and its report section is made from the report's inputs)
    assigned_systems: who is assigned one of the study's [[systems]] (a study of the protocol
        needs one with assign = true); "": the protocol assigns no system
    metrics_report: (database, study_id) -> which automatic metrics ran on a study of the
        protocol, in which mode, and what each skipped (services/metrics/exchange.py's shape),
        a callable or "module:function": the export manifest's `metrics` and the report's versions
    systems_report: (database, study_id) -> {system id: how its outputs were made}, optional: a
        line per system for the report's versions (the usability study: the precision each stage
        ran in, how many outputs, how many a guard cut); a callable or "module:function"
    report_section: its part of the per-study report (services/report/build.py), a callable or
        "module:function" (resolve(); services.common imports no protocol or report module):
        (database, study_id, out_dir, inputs) -> services.report.sections.Part, where inputs is
        the report's extra inputs ({"qe_audits": [folders]}); the function's module holds TITLE
        and ITEMS, the part's title and numbered items, which a failed analysis fills with its
        reason. None: no part in the report
    drop_inactive(database, study_id) -> [participant ids], optional: the upkeep's drop-out of
        participants who stopped coming back (its own study setting; run before the repair). A
        callable or "module:function" (resolve())
    repair(database, study_id) -> int, optional: the protocol's periodic repair, adding what its
        events should have opened (idempotent; the count of things it added or changed, 0: none
        missing); run by the worker's upkeep (services/participation/maintenance.py) and after a
        study's import, for every registered protocol that has one (a study without the
        protocol: 0). A callable or "module:function" (resolve())
    plan(database, study_id) -> [str], optional: whether a study of the protocol can finish, in
        the designer's words: before anyone enrolled, what its design needs (the import's result
        shows it); while it runs, what keeps work from anyone who could take it and what would
        release it (the admin's dashboard). [] when nothing is wanting. A callable or
        "module:function" (resolve())
    questions_changed(tx, study_id, starter_id), optional: inside the caller's write,
        a starter's accepted comprehension questions changed (services/questions/review.py); a
        callable or "module:function" (resolve())
    analysis_panel: its panel of the Analysis tab, a "module:function" in tabs/ (resolved by the
        tab: services never import tabs) taking a tabs.analysis_common.Panel; "": no panel
    audio_metadata: its recordings' hf-audio metadata (AudioMetadata), optional; the export's
        hf-audio format needs a protocol that has it
    jobs(database, cache, media_dir) -> {kind: handler(payload)}, optional: the background jobs
        its events queue, which the app's worker runs (services/participation/worker_jobs.py); a
        callable or "module:function" (resolve()). Two protocols never name the same kind
    """

    name: str
    roles: tuple[Role, ...] = ()
    tabs: tuple[Tab, ...] = ()
    phases: tuple[Phase, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[dict], list[tuple[str, str]]] | None = None
    load: Callable[..., None] | None = None
    prepare: Callable[..., None] | None = None
    corpus_files: tuple[str, ...] = ()
    export_tables: Mapping[str, ExportTable] = field(default_factory=dict)
    texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    in_studies: bool = True
    assigned_systems: str = ""
    metrics_report: Callable[..., dict] | str | None = None
    systems_report: Callable[..., dict] | str | None = None
    report_section: Callable[..., Any] | str | None = None
    drop_inactive: Callable[..., list[int]] | str | None = None
    repair: Callable[..., int] | str | None = None
    plan: Callable[..., list[str]] | str | None = None
    questions_changed: Callable[..., None] | str | None = None
    analysis_panel: str = ""
    jobs: Callable[..., dict] | str | None = None
    audio_metadata: AudioMetadata | None = None


class UnknownName(KeyError):
    """A role, tab or phase no registered protocol has."""


_lock = threading.RLock()
_registered: dict[str, Protocol] = {}
_rank: dict[str, int] = {}  # a protocol's place: its module's in BUILTIN, plugins after


def _builtin_rank(module: str) -> int:
    modules = [entry.partition(":")[0] for entry in BUILTIN]
    return modules.index(module) if module in modules else len(BUILTIN)


_loaded = False  # every built-in and plugin module imported, its protocols registered
_loading = False  # the first load under way: its modules' own register() calls come back to _load


def register(protocol: Protocol) -> Protocol:
    """Adds a protocol (the same spec again is a no-op). Its roles, tabs and phases must be new:
    two protocols never share one, so each name dispatches to one spec. The built-in protocols
    are registered first, so a plugin's come after them wherever protocols are listed."""
    _load()
    with _lock:
        old = _registered.get(protocol.name)
        if old is not None and old == protocol:
            return protocol
        if old is not None:
            del _registered[protocol.name]  # a module imported again (a reload): its new spec
        for kind in ("roles", "tabs", "phases"):
            for x in getattr(protocol, kind):
                if not NAME_RE.match(x.name):
                    raise ValueError(
                        f"protocol '{protocol.name}': {kind} name {x.name!r} is not lower-case letters, digits, _"
                    )
        taken = {
            kind: {x.name for p in _registered.values() for x in getattr(p, kind)}
            for kind in ("roles", "tabs", "phases")
        }
        # an exported table is one file: two protocols never write the same one
        taken["export tables"] = {t for p in _registered.values() for t in _tables_written(p)}
        for kind in ("roles", "tabs", "phases", "export tables"):
            mine = (
                set(_tables_written(protocol)) if kind == "export tables" else {x.name for x in getattr(protocol, kind)}
            )
            clash = mine & taken[kind]
            if clash:
                if old is not None:
                    _registered[protocol.name] = old
                raise ValueError(f"protocol '{protocol.name}': {kind} {', '.join(sorted(clash))} already registered")
        _registered[protocol.name] = protocol
        # built-ins in BUILTIN's order, then plugins as registered: a module imported first (a
        # test's `import services.da.protocol`) registers after the load it starts, and had come last
        _rank[protocol.name] = _builtin_rank(sys._getframe(1).f_globals.get("__name__", ""))
        ordered = sorted(_registered.items(), key=lambda item: _rank.get(item[0], len(BUILTIN)))
        _registered.clear()
        _registered.update(ordered)
        _cache.clear()
    return protocol


def _tables_written(protocol: Protocol) -> list[str]:
    return [*protocol.export_tables, *([AUDIO_METADATA] if protocol.audio_metadata else [])]


def unregister(name: str) -> None:
    """Removes a protocol (a test's own, after the test); its studies' data stays in storage."""
    with _lock:
        _registered.pop(name, None)
        _cache.clear()


def _load() -> None:
    """Imports the built-in and plugin protocols' modules once. Another thread that asks meanwhile
    waits for the whole registry (the lock is held throughout): it once saw a part of it, and a
    study naming a protocol not yet registered was refused (two simulations importing their
    studies at once, benchmarks/usability/study_sim.py pair)."""
    global _loaded, _loading
    if _loaded:
        return
    with _lock:
        if _loaded or _loading:
            return  # loaded meanwhile, or a module this load imports registering itself
        _loading = True
        try:
            plugins = tuple(m.strip() for m in settings.current().plugins.split(",") if m.strip())
            for entry in BUILTIN + plugins:
                module, _, attribute = entry.partition(":")
                imported = importlib.import_module(module)
                if attribute:
                    spec = getattr(imported, attribute)
                    if not isinstance(spec, Protocol):
                        raise TypeError(f"{PLUGINS_ENV}: {entry} is not a Protocol")
                    register(spec)
            _loaded = True
        finally:
            _loading = False


_cache: dict[str, Any] = {}


def protocols() -> tuple[Protocol, ...]:
    _load()
    return tuple(_registered.values())


def _index(kind: str) -> dict:
    key = kind
    found = _cache.get(key)
    if found is None:
        found = {x.name: (p, x) for p in protocols() for x in getattr(p, kind)}
        _cache[key] = found
    return found


def protocol(name: str) -> Protocol:
    _load()
    try:
        return _registered[name]
    except KeyError:
        raise UnknownName(name) from None


def names() -> tuple[str, ...]:
    """The protocols a study may list in study.protocols, in registration order."""
    return tuple(p.name for p in protocols() if p.in_studies)


def resolve(ref: Callable[..., Any] | str) -> Callable[..., Any]:
    """A spec's callable, or the one its "module:name" names (imported on first use, so the
    registry never imports what sits above it)."""
    if callable(ref):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def roles() -> tuple[str, ...]:
    return tuple(_index("roles"))


def role(name: str) -> Role:
    try:
        return _index("roles")[name][1]
    except KeyError:
        raise UnknownName(name) from None


def protocol_of_role(name: str) -> Protocol:
    try:
        return _index("roles")[name][0]
    except KeyError:
        raise UnknownName(name) from None


def tab(name: str) -> Tab:
    try:
        return _index("tabs")[name][1]
    except KeyError:
        raise UnknownName(name) from None


def tabs() -> tuple[str, ...]:
    return tuple(_index("tabs"))


def phase(name: str) -> Phase:
    try:
        return _index("phases")[name][1]
    except KeyError:
        raise UnknownName(name) from None


def phases() -> tuple[str, ...]:
    return tuple(_index("phases"))


def served_last(phases: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the phases whose open items come after the others' (Phase.served_last)."""
    return tuple(p for p in phases if phase(p).served_last)


def role_tabs() -> dict[str, tuple[str, ...]]:
    """role -> its tabs, in order (the first is the page's language's)."""
    return {r: role(r).tabs for r in roles()}


def tab_phases() -> dict[str, tuple[str, ...]]:
    return {t: tab(t).phases for t in tabs()}


def with_hook(hook: str) -> tuple[tuple[Protocol, Callable[..., Any]], ...]:
    """(protocol, its resolved callable) of every registered protocol that has the hook (a
    field of Protocol: "repair", "questions_changed"), in registration order."""
    return tuple((p, resolve(getattr(p, hook))) for p in protocols() if getattr(p, hook) is not None)


def audio_metadata() -> AudioMetadata | None:
    """The registered protocols' hf-audio metadata (at most one protocol has it)."""
    return next((p.audio_metadata for p in protocols() if p.audio_metadata is not None), None)


def export_tables() -> dict[str, ExportTable]:
    return {name: t for p in protocols() for name, t in p.export_tables.items()}
