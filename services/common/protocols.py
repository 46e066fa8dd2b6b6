"""The registry of protocols: one Protocol per evaluation protocol, registered once.

A Protocol says what the shared packages need of it (its roles, their tabs, each tab's phases,
each phase's content, validation, save and stored answer, its study.toml section with its
defaults and checks, its corpus files, its export tables with their data dictionary), so that
services.participation, services.study, services.setup, storage and web iterate the registry
instead of naming phases, and never import a protocol package: each spec names its functions.

The built-in protocols register from their packages (services/usability/protocol.py,
services/da/protocol.py, services/sd/protocol.py, services/qe/protocol.py,
services/compare/protocol.py, services/esa/protocol.py, services/esa/mqm_protocol.py,
services/listening/protocol.py), imported on first use by module path (as the metric registry
imports its metrics); more come from the modules named in the
TRADLAB_PLUGINS environment variable, read on first use too, so that a launched app (and each
command of cli.py) sees the same protocols as the process that started it: comma-separated
entries, each a module path (a module that calls register() when imported) or
"module:attribute" (a module's Protocol, registered here). The recipe is in
docs/development.md, "Add a protocol".

Every hook (a function a spec gives) is specified in services/common/hookspecs.py, a
typing.Protocol each that mypy checks the specs' functions against; docs/hooks.md lists them.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, TypeVar, overload

from services.common import hookspecs, settings
from storage.protocol_schema import AddColumn as AddColumn  # a protocol's own tables are declared with
from storage.protocol_schema import AddIndex as AddIndex  # storage's dataclasses (storage/protocol_schema.py)
from storage.protocol_schema import Column as Column
from storage.protocol_schema import Index as Index
from storage.protocol_schema import Schema, SchemaStep, Table, problems

# the order of registration is the order roles, tabs, sections and tables are listed in
BUILTIN = (
    "services.usability.protocol",
    "services.da.protocol",
    "services.sd.protocol",
    "services.qe.protocol",
    "services.compare.protocol",
    "services.esa.protocol",
    "services.esa.mqm_protocol",
    "services.listening.protocol",
)
PLUGINS_ENV = "TRADLAB_PLUGINS"  # read through services/common/settings.py (Settings.plugins)
# a role, tab or phase name: a URL path (/<role>/), an API name (/<tab>_submit) and a stored value
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
AUDIO_METADATA = "metadata"  # the export's name of the hf-audio format's metadata.jsonl
ROOT = Path(__file__).resolve().parents[2]  # a page asset's relative path is from here
PAGE_ASSET_SUFFIXES = {"scripts": ".js", "styles": ".css"}


@dataclass(frozen=True)
class Phase:
    """One kind of item: what a participant sees of it and what answering it stores. Its hooks
    (content, validate, check, save, stored, intake, discard, after_save) are specified in
    services/common/hookspecs.py (docs/hooks.md).

    not_ready: what the page says while content returns None (the item is not ready)
    not_handed_on: why an open item of the phase is withdrawn, not handed on, when its
        participant leaves and their role's on_leave does not hand it on (the reassignment's
        summary; default: the phase's name)
    served_last: the tab shows the phase's open items after those of its other phases, whatever
        their random positions (the usability study's informed surveys, after the baselines)
    label: the phase as the study team reads it (the admin's "A participant" items); default:
        its name humanised (phase_label())
    answer_words: a done item's stored answer in words for the admin's "A participant" page
        (default: the stored answer's JSON, compact)
    pool_taker: who takes a place of the phase left in the study's work pool, as the dashboard
        says it ("a receiver with room"); default: "someone for <name>"
    """

    name: str
    content: hookspecs.PhaseContent
    validate: hookspecs.PhaseValidate | None
    save: hookspecs.PhaseSave
    stored: hookspecs.PhaseStored
    check: hookspecs.PhaseCheck | None = None
    intake: hookspecs.PhaseIntake | None = None
    discard: hookspecs.PhaseDiscard | None = None
    after_save: hookspecs.PhaseAfterSave | None = None
    not_ready: str = ""
    not_handed_on: str = ""
    served_last: bool = False
    label: str = ""
    answer_words: hookspecs.PhaseAnswerWords | None = None
    pool_taker: str = ""


@dataclass(frozen=True)
class Tab:
    """A participant's tab: the phases whose items it shows, in one queue. Its hooks (build,
    on_submit, total, waiting) are specified in services/common/hookspecs.py (docs/hooks.md).

    label: the tab's name as the other tab of the same role names it ("your Survey tab")
    instruction_items: item ids that are instructions, not work (not counted, no "Saved.")
    refusal_out_of_order: the texts key of a submit that is not the next open item
    scripts, styles: the tab's own page code, static files (.js, .css) of its package or plugin
        folder (a relative path is from the repository's root, as assets/...; a plugin gives
        Path(__file__).with_name(...)): its role's page loads each once, in its head (a classic
        script) and its stylesheet, and no other page does (page_assets()). A script relies on
        the item-form contract of docs/plugins.md ("Its page code")
    """

    name: str
    phases: tuple[str, ...]
    build: hookspecs.TabBuild | str
    label: str = ""
    on_submit: hookspecs.TabOnSubmit | None = None
    instruction_items: tuple[str, ...] = ()
    total: hookspecs.TabTotal | None = None
    waiting: hookspecs.TabWaiting | None = None
    refusal_out_of_order: str = "out_of_order"
    lang: str = "en"  # the language of the page (a role's page speaks its first tab's)
    scripts: tuple[str | Path, ...] = ()
    styles: tuple[str | Path, ...] = ()


@dataclass(frozen=True)
class Pool:
    """How a role takes its work from a pool shared by the study, one item at a time as its page
    asks for work, rather than from a queue made at enrolment: on the role's tab `tab`, through
    may_take, ready and take (services/common/hookspecs.py, docs/hooks.md)."""

    tab: str
    may_take: hookspecs.PoolMayTake
    ready: hookspecs.PoolReady
    take: hookspecs.PoolTake


@dataclass(frozen=True)
class Role:
    """A participant's role: their page (/<name>/, titled page_title) and its tabs. Its hooks
    (setup, items, held_items, minutes, on_leave, qc) are specified in services/common/hookspecs.py
    (docs/hooks.md).

    grouped: enrolled per group x gender cell of the study (a sender: study.groups, genders)
    seconds_per_item: the estimate of the welcome's minutes, per item
    pool: a Pool when the role takes its work one item at a time from the study's pool (None:
        its items are in its queue)
    label: the role as the study team reads it (the admin's pages); default: its name humanised
        (role_label())
    The welcome's words are the page text `welcome_<role>` (Protocol.texts for a new role)."""

    name: str
    tabs: tuple[str, ...]
    page_title: str
    setup: hookspecs.RoleSetup | None = None
    grouped: bool = False
    items: hookspecs.RoleItems | None = None
    held_items: hookspecs.RoleHeldItems | None = None
    seconds_per_item: int = 60
    minutes: hookspecs.RoleMinutes | None = None
    pool: Pool | None = None
    on_leave: hookspecs.RoleOnLeave | None = None
    qc: hookspecs.RoleQC | None = None
    label: str = ""


@dataclass(frozen=True)
class ExportTable:
    """One exported table: its rows (query, then extras; warnings from them: hooks specified in
    services/common/hookspecs.py, docs/hooks.md), its description and {column: (type, meaning)}
    in the order written (services/study/export_dictionary.py TYPES).

    content: study content (its corpus, systems, questions), not participants' data: listed
        after every protocol's data tables, as the README groups them
    """

    query: hookspecs.TableQuery
    description: str
    columns: Mapping[str, tuple[str, str]]
    extras: hookspecs.TableExtras | None = None
    warnings: hookspecs.TableWarnings | None = None
    content: bool = False


@dataclass(frozen=True)
class AudioMetadata:
    """The hf-audio export format's train/metadata.jsonl, the Hugging Face audiofolder view of a
    protocol's recordings: its rows (services/common/hookspecs.py, docs/hooks.md), with its
    README description and {column: (type, meaning)} in the order written. The export names it
    "metadata", one file: two protocols never both have one."""

    rows: hookspecs.AudioMetadataRows
    description: str
    columns: Mapping[str, tuple[str, str]]


@dataclass(frozen=True)
class Protocol:
    """One protocol, named as study.protocols lists it and as its study.toml section. Its hooks
    (check, load, prepare, metrics_report, systems_report, report_section, drop_inactive, forget,
    repair, plan, dashboard, questions_changed, analysis_panel, jobs, demo, admin_section, cli) are specified in
    services/common/hookspecs.py (docs/hooks.md); those that also take "module:name" are
    imported on first use (resolve(); services.common imports no protocol, report or tab module).

    defaults: the section's keys with their defaults (None: required; a key not listed is an
        error)
    corpus_files: the section's keys that name corpus files (their bytes are part of the study's
        content hash: a changed file is a changed study)
    export_tables: the protocol's tables written by the export, beside the common ones
    texts: {language: {key: words}}: page words the protocol adds to assets/texts/<language>.toml
        (a new role's welcome_<role>, its refusals); a key the assets have keeps theirs
    in_studies: a study lists it in study.protocols, with its [<name>] section (False: the
        protocol keeps no study data, as paper 003's QE audit, which runs on files; it has no
        roles, tabs or phases, and its report section is made from the report's inputs)
    assigned_systems: who is assigned one of the study's [[systems]] (a study of the protocol
        needs one with assign = true); "": the protocol assigns no system
    analysis_panel: "": no panel in the Analysis tab
    admin_section: "": no section of its own in the Admin tab
    participant_items: its participants' items in words for the admin's "A participant" page
    analyze: its `app.py analyze <name>` command(s) (module:name, imported when the command line
        is built for analyze: an analysis brings its statistics libraries)
    audio_metadata: its recordings' hf-audio metadata (AudioMetadata), optional; the export's
        hf-audio format needs a protocol that has it
    tables: its own tables (storage/protocol_schema.py Table: columns, primary key, indexes), each
        named <protocol>_<name>, as its schema_version has them; the core creates them in the
        app's database at start and migrates them by schema_steps (each a SchemaStep to its
        version: new tables, columns, indexes), recording the version per protocol. Its hooks
        read and write them through storage/protocol_rows.py. (The built-in protocols' tables are
        the core's migrations, storage/migrations.py.)
    schema_version: the version tables describe (1 until a step is added)
    schema_steps: the steps from version 1 to schema_version, in order
    store_corpus, count_corpus: its corpus (what its load put in bundle.corpus[<name>]) stored
        in its tables at import, and counted for the import's summary
    count_collected: what its participants gave, counted for the team's progress tab
    """

    name: str
    roles: tuple[Role, ...] = ()
    tabs: tuple[Tab, ...] = ()
    phases: tuple[Phase, ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)
    check: hookspecs.SectionCheck | None = None
    load: hookspecs.CorpusLoad | None = None
    prepare: hookspecs.Prepare | None = None
    corpus_files: tuple[str, ...] = ()
    export_tables: Mapping[str, ExportTable] = field(default_factory=dict)
    texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    in_studies: bool = True
    assigned_systems: str = ""
    metrics_report: hookspecs.MetricsReport | str | None = None
    systems_report: hookspecs.SystemsReport | str | None = None
    report_section: hookspecs.ReportSection | str | None = None
    drop_inactive: hookspecs.DropInactive | str | None = None
    forget: hookspecs.Forget | str | None = None
    repair: hookspecs.Repair | str | None = None
    plan: hookspecs.Plan | str | None = None
    dashboard: hookspecs.DashboardPart | str | None = None
    questions_changed: hookspecs.QuestionsChanged | str | None = None
    analysis_panel: hookspecs.AnalysisPanel | str = ""
    jobs: hookspecs.Jobs | str | None = None
    demo: hookspecs.Demo | str | None = None
    admin_section: hookspecs.AdminSection | str = ""
    participant_items: hookspecs.ParticipantItems | None = None
    analyze: hookspecs.AnalyzeCommand | str | None = None
    audio_metadata: AudioMetadata | None = None
    tables: tuple[Table, ...] = ()
    schema_version: int = 1
    schema_steps: tuple[SchemaStep, ...] = ()
    store_corpus: hookspecs.StoreCorpus | None = None
    count_corpus: hookspecs.CountCorpus | None = None
    count_collected: hookspecs.CountCollected | None = None
    cli: hookspecs.CliCommands | str | None = None


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
        for t in protocol.tabs:
            for kind, suffix in PAGE_ASSET_SUFFIXES.items():
                for path in getattr(t, kind):
                    found = asset_path(path)
                    if found.suffix != suffix or not found.is_file():
                        raise ValueError(
                            f"protocol '{protocol.name}': tab {t.name}'s {kind} {str(path)!r} is not a {suffix} file"
                        )
        wrong = problems(schema(protocol))
        if wrong:
            if old is not None:
                _registered[protocol.name] = old
            raise ValueError(f"protocol '{protocol.name}': " + "; ".join(wrong))
        taken = {
            kind: {x.name for p in _registered.values() for x in getattr(p, kind)}
            for kind in ("roles", "tabs", "phases", "tables")
        }
        # an exported table is one file: two protocols never write the same one
        taken["export tables"] = {t for p in _registered.values() for t in _tables_written(p)}
        for kind in ("roles", "tabs", "phases", "tables", "export tables"):
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


def schema(protocol: Protocol) -> Schema:
    """The protocol's own tables as storage makes them (storage/protocol_schema.py)."""
    return Schema(protocol.name, protocol.schema_version, protocol.tables, protocol.schema_steps)


def schemas() -> tuple[Schema, ...]:
    """The registered protocols' own tables, for open_database (cli.open_db), in registration
    order: the core creates and migrates them where it migrates its own."""
    return tuple(schema(p) for p in protocols() if p.tables)


def tables() -> tuple[Table, ...]:
    """Every registered protocol's own tables (the participant-path plan checks read which are
    study_sized)."""
    return tuple(t for p in protocols() for t in p.tables)


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


H = TypeVar("H")


def resolve(ref: H | str) -> H:
    """A spec's callable, or the one its "module:name" names (imported on first use, so the
    registry never imports what sits above it)."""
    if not isinstance(ref, str):
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


def humanised(name: str) -> str:
    """A role's or phase's name as words: survey_baseline -> survey baseline."""
    return name.replace("_", " ")


def phase_label(name: str) -> str:
    """The phase as the study team reads it: its spec's label, else its name humanised (a phase
    no protocol registers any more, of a study stored before: its name humanised)."""
    try:
        return phase(name).label or humanised(name)
    except UnknownName:
        return humanised(name)


def pool_taker(phase_name: str) -> str:
    """Who takes a place of the phase left in the work pool, in the dashboard's words."""
    try:
        return phase(phase_name).pool_taker or f"someone for {phase_name}"
    except UnknownName:
        return f"someone for {phase_name}"


def role_label(name: str) -> str:
    """The role as the study team reads it: its spec's label, else its name humanised."""
    try:
        return role(name).label or humanised(name)
    except UnknownName:
        return humanised(name)


def asset_path(path: str | Path) -> Path:
    """A page asset's file: an absolute path as given, a relative one from the repository's root."""
    found = Path(path)
    return found if found.is_absolute() else ROOT / found


def page_assets(role_name: str) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(scripts, styles) of a role's page: its tabs' own page code (Tab.scripts, Tab.styles), in
    the tabs' order, each file once."""
    tabs_of = [tab(t) for t in role(role_name).tabs]
    scripts = dict.fromkeys(asset_path(p) for t in tabs_of for p in t.scripts)
    styles = dict.fromkeys(asset_path(p) for t in tabs_of for p in t.styles)
    return tuple(scripts), tuple(styles)


def served_last(phases: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the phases whose open items come after the others' (Phase.served_last)."""
    return tuple(p for p in phases if phase(p).served_last)


def role_tabs() -> dict[str, tuple[str, ...]]:
    """role -> its tabs, in order (the first is the page's language's)."""
    return {r: role(r).tabs for r in roles()}


def tab_phases() -> dict[str, tuple[str, ...]]:
    return {t: tab(t).phases for t in tabs()}


# with_hook's hooks, each with its spec, so that mypy checks the calls the core makes
@overload
def with_hook(hook: Literal["drop_inactive"]) -> tuple[tuple[Protocol, hookspecs.DropInactive], ...]: ...
@overload
def with_hook(hook: Literal["forget"]) -> tuple[tuple[Protocol, hookspecs.Forget], ...]: ...
@overload
def with_hook(hook: Literal["repair"]) -> tuple[tuple[Protocol, hookspecs.Repair], ...]: ...
@overload
def with_hook(hook: Literal["plan"]) -> tuple[tuple[Protocol, hookspecs.Plan], ...]: ...
@overload
def with_hook(hook: Literal["dashboard"]) -> tuple[tuple[Protocol, hookspecs.DashboardPart], ...]: ...
@overload
def with_hook(hook: Literal["questions_changed"]) -> tuple[tuple[Protocol, hookspecs.QuestionsChanged], ...]: ...
@overload
def with_hook(hook: Literal["jobs"]) -> tuple[tuple[Protocol, hookspecs.Jobs], ...]: ...
@overload
def with_hook(hook: Literal["cli"]) -> tuple[tuple[Protocol, hookspecs.CliCommands], ...]: ...
@overload
def with_hook(hook: Literal["analyze"]) -> tuple[tuple[Protocol, hookspecs.AnalyzeCommand], ...]: ...
def with_hook(hook: str) -> tuple[tuple[Protocol, Callable[..., Any]], ...]:
    """(protocol, its resolved callable) of every registered protocol that has the hook (a
    field of Protocol: "repair", "questions_changed"), in registration order."""
    return tuple((p, resolve(getattr(p, hook))) for p in protocols() if getattr(p, hook) is not None)


def audio_metadata() -> AudioMetadata | None:
    """The registered protocols' hf-audio metadata (at most one protocol has it)."""
    return next((p.audio_metadata for p in protocols() if p.audio_metadata is not None), None)


def export_tables() -> dict[str, ExportTable]:
    return {name: t for p in protocols() for name, t in p.export_tables.items()}


# the specs' dataclasses in the order docs/hooks.md lists their hooks
HOOK_OWNERS = (Phase, Tab, Pool, Role, ExportTable, AudioMetadata, Protocol)


def hooks() -> list[tuple[str, str, type, bool, bool]]:
    """(dataclass, field, its spec in services/common/hookspecs.py, whether it may be left out,
    whether it also takes "module:name") of every hook, read from the fields' annotations."""
    out = []
    for owner in HOOK_OWNERS:
        for f in dataclasses.fields(owner):
            found = re.search(r"\bhookspecs\.(\w+)", str(f.type))
            if found:
                alternatives = {a.strip() for a in str(f.type).split("|")}
                optional = "None" in alternatives or f.default is not dataclasses.MISSING
                out.append(
                    (owner.__name__, f.name, getattr(hookspecs, found.group(1)), optional, "str" in alternatives)
                )
    return out


def hooks_markdown() -> str:
    """docs/hooks.md: every hook with its signature (its spec's __call__), whether it runs inside
    the caller's write (a first parameter tx), whether it may be left out, and its spec's
    docstring (`python app.py docs hooks`)."""
    lines = [
        "# Protocol hooks",
        "",
        "<!-- Generated from services/common/hookspecs.py by `python app.py docs hooks > docs/hooks.md`;"
        " tests/test_hookspecs.py fails when it is stale. -->",
        "",
        inspect.cleandoc(hookspecs.__doc__ or ""),
        "",
        "The types the signatures name: Database and Transaction are storage.db's; StudyRow,",
        "ParticipantRow, AssignmentRow and AssignmentRecord are storage.rows' (a row as storage returns",
        "it, a TypedDict with every column of its table); Path is pathlib's; those of the layers above",
        "services.common are Any to mypy:",
        "",
        # the aliases' comments say where each type lives (hookspecs' source, read as text)
        *(
            f"- {alias}: {where}"
            for alias, where in re.findall(r"^(\w+): TypeAlias = Any  # (.+)$", inspect.getsource(hookspecs), re.M)
        ),
        "",
    ]
    owner = ""
    for name, field_name, spec, optional, named in hooks():
        if name != owner:
            owner = name
            lines += [f"## {name}", ""]
        params = list(inspect.signature(spec.__call__).parameters.values())[1:]  # without self
        shown = ", ".join(f"{p.name}: {p.annotation}" for p in params)
        returns = inspect.signature(spec.__call__).return_annotation
        notes = [
            "optional" if optional else "required",
            *(["inside the caller's write"] if params and params[0].name == "tx" else []),
            *(['or "module:name"'] if named else []),
        ]
        lines += [
            f"### {name}.{field_name}",
            "",
            f"`{field_name}({shown}) -> {returns}`",
            "",
            f"{spec.__name__}: {'; '.join(notes)}.",
            "",
            inspect.cleandoc(spec.__doc__ or ""),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"
