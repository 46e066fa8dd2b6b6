"""The MQM taxonomy and weights: assets/mqm_taxonomy.toml (or a study's file of the same form),
loaded and checked with messages that name the file and the key.

Category names are "Category/Subcategory", or "Category" for a category without subcategories
(as WMT's MQM data writes them). A category may be for speech outputs only (audio = true), be
marked in the source (side = "source"), or force a severity (severity = "major").

Weights: one per severity, and exceptions per (category, severity): an exception names a
"Category/Subcategory" or a whole "Category"; the most specific one applies (Freitag et al. 2021:
minor Fluency/Punctuation 0.1, Non-translation 25; docs/esa-mqm.md).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from services.esa.spans import SIDES

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "assets" / "mqm_taxonomy.toml"
_TOP_KEYS = {"max_errors", "whole_segment", "severities", "weights", "aliases", "category"}
_CATEGORY_KEYS = {"name", "subcategories", "audio", "side", "severity"}
_EXCEPTION_KEYS = {"category", "severity", "weight"}


class TaxonomyError(ValueError):
    """A taxonomy or weights table refused; the message names the file and the key."""


@dataclass(frozen=True)
class Category:
    name: str
    subcategories: tuple[str, ...] = ()
    audio: bool = False
    side: str = "target"
    severity: str | None = None  # forced severity, if any

    def names(self) -> list[str]:
        return [f"{self.name}/{s}" for s in self.subcategories] or [self.name]


@dataclass(frozen=True)
class Weights:
    severity: Mapping[str, float]
    exceptions: Mapping[tuple[str, str], float] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)

    def weight(self, category: str | None, severity: str) -> float:
        """The weight of an error: the exception for (category, severity), else for (its top
        category, severity), else the severity's weight. KeyError for an unknown severity."""
        if category is not None:
            category = self.aliases.get(category, category)
            top = category.split("/", 1)[0]
            for key in ((category, severity), (top, severity)):
                if key in self.exceptions:
                    return self.exceptions[key]
        return self.severity[severity]


@dataclass(frozen=True)
class Taxonomy:
    categories: tuple[Category, ...]
    severities: tuple[str, ...]
    weights: Weights
    max_errors: int = 5
    whole_segment: str | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)
    where: str = "<taxonomy>"

    def names(self, audio: bool = False) -> list[str]:
        """The category names a span may carry; audio categories only when the output is speech."""
        return [n for c in self.categories if audio or not c.audio for n in c.names()]

    def canonical(self, name: str) -> str:
        return self.aliases.get(name, name)

    def category(self, name: str) -> Category:
        """The category (top level) a name belongs to; KeyError when unknown."""
        top = self.canonical(name).split("/", 1)[0]
        for c in self.categories:
            if c.name == top:
                return c
        raise KeyError(name)

    def with_weights(self, table: Mapping, where: str = "<study>") -> Taxonomy:
        """The taxonomy with a study's weights table (the [weights] form of the file)."""
        return replace(self, weights=_weights(table, self.severities, set(self.names(audio=True)), self.aliases, where))


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise TaxonomyError(f"{where}: must be a number at least 0, not {value!r}")
    return float(value)


def _weights(table, severities: tuple[str, ...], names: set[str], aliases: Mapping[str, str], where: str) -> Weights:
    if not isinstance(table, Mapping):
        raise TaxonomyError(f"{where}: [weights] must be a table")
    unknown = set(table) - set(severities) - {"exception"}
    if unknown:
        raise TaxonomyError(
            f"{where}: [weights] names unknown severities {', '.join(sorted(unknown))} (the severities are "
            f"{', '.join(severities)})"
        )
    missing = [s for s in severities if s not in table]
    if missing:
        raise TaxonomyError(f"{where}: [weights] gives no weight for {', '.join(missing)}")
    severity = {s: _number(table[s], f"{where}: weights.{s}") for s in severities}
    tops = {n.split("/", 1)[0] for n in names}
    exceptions: dict[tuple[str, str], float] = {}
    for i, e in enumerate(table.get("exception", [])):
        here = f"{where}: weights.exception {i + 1}"
        if not isinstance(e, Mapping) or set(e) != _EXCEPTION_KEYS:
            raise TaxonomyError(f"{here}: needs exactly category, severity and weight")
        category = aliases.get(e["category"], e["category"])
        if category not in names and category not in tops:
            raise TaxonomyError(f"{here}: unknown category {e['category']!r}")
        if e["severity"] not in severities:
            raise TaxonomyError(f"{here}: unknown severity {e['severity']!r} (one of {', '.join(severities)})")
        key = (category, e["severity"])
        if key in exceptions:
            raise TaxonomyError(f"{here}: a second weight for {category} {e['severity']}")
        exceptions[key] = _number(e["weight"], f"{here}: weight")
    return Weights(severity, exceptions, dict(aliases))


def parse_taxonomy(data: Mapping, where: str = "<taxonomy>") -> Taxonomy:
    """A Taxonomy from the parsed TOML, or a TaxonomyError naming `where` and the key."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise TaxonomyError(
            f"{where}: unknown keys {', '.join(sorted(unknown))} (known: {', '.join(sorted(_TOP_KEYS))})"
        )
    sev = data.get("severities", {}).get("names") if isinstance(data.get("severities"), Mapping) else None
    if not isinstance(sev, list) or not sev or not all(isinstance(s, str) and s for s in sev):
        raise TaxonomyError(f"{where}: [severities] names must be a list of severity names")
    if len(set(sev)) != len(sev):
        raise TaxonomyError(f"{where}: [severities] names lists a severity twice")
    severities = tuple(sev)

    raw = data.get("category")
    if not isinstance(raw, list) or not raw:
        raise TaxonomyError(f"{where}: no [[category]] tables")
    categories: list[Category] = []
    for i, c in enumerate(raw):
        here = f"{where}: category {i + 1}"
        if not isinstance(c, Mapping):
            raise TaxonomyError(f"{here}: must be a table")
        extra = set(c) - _CATEGORY_KEYS
        if extra:
            raise TaxonomyError(f"{here}: unknown keys {', '.join(sorted(extra))}")
        name = c.get("name")
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise TaxonomyError(f"{here}: name must be a non-empty text without '/', not {name!r}")
        here = f"{where}: category {name!r}"
        if any(x.name == name for x in categories):
            raise TaxonomyError(f"{here}: listed twice")
        subs = c.get("subcategories", [])
        if not isinstance(subs, list) or not all(isinstance(s, str) and s.strip() and "/" not in s for s in subs):
            raise TaxonomyError(f"{here}: subcategories must be a list of non-empty texts without '/'")
        if len(set(subs)) != len(subs):
            raise TaxonomyError(f"{here}: a subcategory is listed twice")
        audio = c.get("audio", False)
        if not isinstance(audio, bool):
            raise TaxonomyError(f"{here}: audio must be true or false")
        side = c.get("side", "target")
        if side not in SIDES:
            raise TaxonomyError(f"{here}: side must be one of {', '.join(SIDES)}, not {side!r}")
        forced = c.get("severity")
        if forced is not None and forced not in severities:
            raise TaxonomyError(f"{here}: severity {forced!r} is not one of {', '.join(severities)}")
        categories.append(Category(name, tuple(subs), audio, side, forced))

    names = {n for c in categories for n in c.names()}
    aliases = data.get("aliases", {})
    if not isinstance(aliases, Mapping):
        raise TaxonomyError(f"{where}: [aliases] must be a table")
    for alias, target in aliases.items():
        if target not in names:
            raise TaxonomyError(f"{where}: alias {alias!r} names an unknown category {target!r}")

    max_errors = data.get("max_errors", 0)
    if isinstance(max_errors, bool) or not isinstance(max_errors, int) or max_errors < 0:
        raise TaxonomyError(f"{where}: max_errors must be a whole number at least 0 (0: no cap), not {max_errors!r}")
    whole = data.get("whole_segment")
    if whole is not None and (whole not in names or "/" in whole):
        raise TaxonomyError(f"{where}: whole_segment {whole!r} must name a category without subcategories")

    if "weights" not in data:
        raise TaxonomyError(f"{where}: no [weights] table")
    weights = _weights(data["weights"], severities, names, aliases, where)
    return Taxonomy(tuple(categories), severities, weights, max_errors, whole, dict(aliases), where)


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """The taxonomy in `path` (default assets/mqm_taxonomy.toml), checked."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise TaxonomyError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise TaxonomyError(f"{path}: not valid TOML: {e}") from None
    return parse_taxonomy(data, str(path))
