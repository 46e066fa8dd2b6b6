"""Import a study folder into storage in one transaction; re-importing the same files is a no-op."""

from __future__ import annotations

import json
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from services.common import protocols
from services.participation import maintenance
from services.questions import review as question_review
from services.study import lifecycle
from services.study.files import StudyError, StudyValidationError, load_study
from storage import studies


@dataclass
class ImportResult:
    study_id: str
    status: str  # "created" | "updated" | "updated in place" | "unchanged"
    counts: dict
    # what the study's design needs to finish (each protocol's plan hook: a usability study's
    # receivers per sender cell), for the designer to read before enrolling anyone
    notes: list[str] = field(default_factory=list)
    # "updated in place": the settings changed, collected data kept (services/study/lifecycle.py)
    settings_changed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """What the import did, in one line (the CLI and the admin's import box)."""
        if self.status == "updated in place":
            n = len(self.settings_changed)
            return (
                f"study '{self.study_id}': updated {n} setting{'s' if n != 1 else ''} in place: "
                + ", ".join(self.settings_changed)
                + " (every collected answer kept)"
            )
        return f"study '{self.study_id}': {self.status} " + ", ".join(f"{k} {v}" for k, v in self.counts.items())


def prepared(folder: str | Path):
    """The study folder read and checked (load_study), with what each protocol builds from its
    checked files (Protocol.prepare: DA's and ESA's HITs): the bundle an import stores."""
    bundle = load_study(folder)
    for spec in protocols.protocols():
        if spec.prepare is not None and spec.name in bundle.config:
            spec.prepare(bundle)
    return bundle


def import_study(database, folder: str | Path, actor: str = "cli") -> ImportResult:
    bundle = prepared(folder)
    existing = studies.get_study(database, bundle.id)
    # the study's [[systems]] (none: not said), then each listed protocol's (with_protocol_counts)
    counts = {"systems": len(bundle.systems)} if bundle.systems else {}
    if existing and existing["content_hash"] == bundle.content_hash:
        question_review.adopt(database, bundle.id)  # a database from before the import adopted them
        counts = with_protocol_counts(database, bundle, counts)
        return ImportResult(bundle.id, "unchanged", counts, plan_notes(database, bundle.id))
    hashes = lifecycle.corpus_hashes(bundle)
    if existing:
        changes = lifecycle.setting_changes(existing["config"], bundle.config)
        parts = lifecycle.changed_parts(existing["corpus_hash"], bundle)
        refused = lifecycle.refusals(changes, parts)
        if not refused:  # only settings that touch no collected item: the study stays as it is
            return _update_in_place(database, bundle, changes, with_protocol_counts(database, bundle, counts), actor)
        if studies.has_participants(database, bundle.id):
            raise StudyValidationError(
                [
                    StudyError(
                        "study.toml",
                        None,
                        "study.id",
                        f"study '{bundle.id}' already exists with different content and has participants, "
                        f"so only settings that touch no collected item may change in place; {why}. "
                        "Undo that change, or give the changed study a new id (its collected data stays "
                        "with the old one)",
                    )
                    for why in refused
                ]
            )
    with database.transaction() as tx:
        db = tx.db
        if existing:  # every protocol's corpus of the study goes, a listed one's or not
            for spec in protocols.protocols():
                if spec.store_corpus is not None:
                    spec.store_corpus(tx, bundle.id, None)
        studies.replace_study(db, bundle, json.dumps(hashes), [t.name for t in protocols.tables()])
        for spec in listed(bundle):  # each protocol's corpus, into its tables
            if spec.store_corpus is not None:
                spec.store_corpus(tx, bundle.id, bundle.corpus.get(spec.name))
        counts = with_protocol_counts(database, bundle, counts)
        database.log(
            actor, "import" if not existing else "reimport", "study", bundle.id, {"hash": bundle.content_hash, **counts}
        )
        maintenance.repair(database, bundle.id)  # each protocol opens what the imported exchanges allow
    # the folder's comprehension questions are accepted drafts from now, not once a starter is
    # opened in the Questions tab: counted as accepted and exported (issue 51)
    question_review.adopt(database, bundle.id)
    return ImportResult(bundle.id, "updated" if existing else "created", counts, plan_notes(database, bundle.id))


def _update_in_place(database, bundle, changes, counts, actor: str) -> ImportResult:
    """The changed settings written over the stored ones, one audit-log row each (old -> new)."""
    with database.write() as db:
        studies.update_settings(db, bundle.id, bundle.name, bundle.config, bundle.content_hash)
        for key, old, new in changes:
            database.log(actor, "setting_changed", "study", bundle.id, {"setting": key, "old": old, "new": new})
    return ImportResult(
        bundle.id, "updated in place", counts, plan_notes(database, bundle.id), [k for k, _, _ in changes]
    )


def listed(bundle) -> list[protocols.Protocol]:
    """The registered protocols the study lists, in registration order."""
    return [spec for spec in protocols.protocols() if spec.name in bundle.config.get("study", {}).get("protocols", ())]


def with_protocol_counts(database, bundle, counts: dict) -> dict:
    """The study's own counts (systems), then each listed protocol's count of its stored
    corpus (Protocol.count_corpus); a label already shown is given as `<protocol>.<label>`."""
    out = dict(counts)
    for spec in listed(bundle):
        if spec.count_corpus is not None:
            for label, n in spec.count_corpus(database, bundle.id).items():
                out[f"{spec.name}.{label}" if label in out else label] = n
    return out


def plan_notes(database, study_id: str) -> list[str]:
    """Each protocol's plan of the study (Protocol.plan): what its design needs to finish."""
    return [line for _, plan in protocols.with_hook("plan") for line in plan(database, study_id)]


def import_zip(database, zip_path, actor: str = "admin") -> ImportResult:
    """A study folder uploaded as a .zip (the admin tab): unpacked safely, then imported."""
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as e:
        raise StudyValidationError([StudyError(Path(str(zip_path)).name, None, None, f"not a zip file ({e})")])
    with zf, tempfile.TemporaryDirectory(prefix="study-") as tmp:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        if sum(zf.getinfo(n).file_size for n in names) > 200 * 2**20:
            raise StudyValidationError([StudyError("zip", None, None, "unpacks to more than 200 MB")])
        for n in names:
            if n.startswith("/") or ".." in Path(n).parts:  # no writing outside the folder
                raise StudyValidationError([StudyError("zip", None, None, f"unsafe path {n!r}")])
        zf.extractall(tmp)
        tomls = sorted(Path(tmp).rglob("study.toml"), key=lambda p: len(p.parts))
        if not tomls:
            raise StudyValidationError([StudyError("zip", None, None, "no study.toml inside")])
        return import_study(database, tomls[0].parent, actor=actor)
