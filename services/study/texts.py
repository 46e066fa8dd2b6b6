"""Participant-facing wording, overridable per study folder (its own scales.toml, same keys).

- assets/scales.toml: the task wording (instructions, survey statements, DA+SQM labels).
- assets/texts/<language>.toml: what a page says around the items (progress, "Saved.",
  waiting and finishing messages, refusals), one file per language with the same keys; in
  texts()["page"][language]. A page's language is its tab's (page_language: the receiver's page
  is in European Portuguese, as the paper's receivers; the others in English).

Services word what they return with a Voice (a language and the study's overrides); a refusal
raised where the language is not known yet is made with refusal() (English, with its key) and
reworded in the page's language where it leaves the service (reword())."""

from __future__ import annotations

import functools
import string
import tomllib
from pathlib import Path
from typing import Any, Mapping, TypeVar

from services.common import protocols

ASSETS = Path(__file__).resolve().parents[2] / "assets"
TEXTS = ASSETS / "texts"
DEFAULT_LANGUAGE = "en"
# the caller's exception class, which refusal() and refusals() return
E = TypeVar("E", bound=Exception)


def page_language(tab: str) -> str:
    """The language of a tab's page, as its protocol says (the receiver's is European Portuguese)."""
    try:
        return protocols.tab(tab).lang
    except protocols.UnknownName:
        return DEFAULT_LANGUAGE


def defaults() -> dict:
    """The default wording: the assets' files and the page words each registered protocol adds."""
    return _defaults(tuple(p.name for p in protocols.protocols()))


@functools.lru_cache(maxsize=4)
def _defaults(names: tuple[str, ...]) -> dict:
    base = tomllib.loads((ASSETS / "scales.toml").read_text(encoding="utf-8"))
    base["page"] = {
        f.name.removesuffix(".toml"): tomllib.loads(f.read_text(encoding="utf-8")) for f in sorted(TEXTS.glob("*.toml"))
    }
    for name in names:
        for lang, words in protocols.protocol(name).texts.items():
            page = base["page"].setdefault(lang, {})
            for key, text in words.items():
                page.setdefault(key, text)
    return base


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def _page_problems(value) -> list[tuple[str, str]]:
    """A study's [page.<language>] tables: known languages and keys, the same {placeholders}."""
    base = defaults()["page"]
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        return [("page", f"must be tables per language: [page.{DEFAULT_LANGUAGE}], [page.pt-PT], ...")]
    out = []
    for lang, words in value.items():
        if lang not in base:
            out.append((f"page.{lang}", f"unknown language (expected {', '.join(base)})"))
            continue
        for key, v in words.items():
            where = f"page.{lang}.{key}"
            if key not in base[lang]:
                out.append((where, f"unknown key (expected {', '.join(base[lang])})"))
            elif not isinstance(v, str):
                out.append((where, "must be a str"))
            else:
                try:
                    same = placeholders(v) == placeholders(base[lang][key])
                except ValueError:
                    same = False
                if not same:
                    want = ", ".join("{" + n + "}" for n in sorted(placeholders(base[lang][key]))) or "none"
                    out.append((where, f"must use the same {{placeholders}} as the default ({want})"))
    return out


def problems(override: dict) -> list[tuple[str, str]]:
    """(key, message) for every key of a study's scales.toml that the app does not know."""
    base, out = defaults(), []
    for section, value in override.items():
        if section == "page":
            out += _page_problems(value)
        elif section not in base:
            out.append((section, f"unknown section (expected {', '.join(base)})"))
        elif isinstance(base[section], dict):
            if not isinstance(value, dict):
                out.append((section, "must be a table"))
                continue
            for key, v in value.items():
                if key not in base[section]:
                    out.append((f"{section}.{key}", f"unknown key (expected {', '.join(base[section])})"))
                elif type(v) is not type(base[section][key]):
                    out.append((f"{section}.{key}", f"must be a {type(base[section][key]).__name__}"))
                elif isinstance(v, list) and len(v) != len(base[section][key]):
                    out.append((f"{section}.{key}", f"must have {len(base[section][key])} entries"))
        elif section == "sqm":
            # a tick that is missing or not a number is the same mistake, not a failed sort
            ticks = [e.get("tick") for e in value if isinstance(e, dict)] if isinstance(value, list) else []
            numbers = [t for t in ticks if isinstance(t, (int, float))]
            if (
                len(numbers) != len(ticks)
                or sorted(numbers) != [0, 2, 4, 6]
                or any(set(e) != {"tick", "value", "label", "description"} for e in value)
            ):
                out.append(
                    ("sqm", "must be four [[sqm]] tables (tick 0, 2, 4, 6) with tick, value, label, description")
                )
    return out


def texts(study: Mapping[str, Any] | None = None) -> dict:
    """The wording a study shows: the defaults, with the study's scales.toml over them."""
    base = defaults()
    override = ((study or {}).get("config") or {}).get("texts") or {}
    if not override:
        return base
    merged = dict(base)
    for section, value in override.items():
        if section == "page":
            merged["page"] = {lang: {**words, **value.get(lang, {})} for lang, words in base["page"].items()}
        else:
            merged[section] = {**base[section], **value} if isinstance(value, dict) else value
    return merged


class Voice:
    """A page's wording in one language, the study's own over the defaults: voice(key, **values)."""

    def __init__(self, lang: str = DEFAULT_LANGUAGE, study: Mapping[str, Any] | None = None):
        self.lang, self.study = lang, study

    @property
    def words(self) -> dict:
        return texts(self.study)["page"][self.lang]

    def __call__(self, key: str, **values) -> str:
        return self.words[key].format(**{"contact": self.contact, **values})

    @property
    def contact(self) -> str:
        """ " (ADDRESS)" after "the study team" where the study gives [study] contact, else ""."""
        contact = (((self.study or {}).get("config") or {}).get("study") or {}).get("contact") or ""
        return f" ({contact})" if contact else ""

    def ready(self, n: int) -> str:
        return self("ready_one" if n == 1 else "ready_other", n=n)


def refusal(cls: type[E], key: str, **values) -> E:
    """An error whose message is the page wording `key` (in English, the study not known yet);
    reword() puts it in the page's language where it leaves the service."""
    e = cls(Voice()(key, **values))
    _mark(e, key=key, values=values)
    return e


def refusals(cls: type[E], parts: list[Exception], fields: dict[str, Exception]) -> E:
    """One error for all of a form's problems: its message is every part's, in order; `fields`
    each form field's problem as words (the parts and fields are refusal()s or plain errors)."""
    e = cls(" ".join(map(str, parts)))
    _mark(e, parts=parts, field_errors=fields, fields={f: str(x) for f, x in fields.items()})
    if len(parts) == 1 and getattr(parts[0], "key", None):  # one refusal: the page may react to its key
        _mark(e, key=getattr(parts[0], "key"), values=getattr(parts[0], "values", {}))
    return e


def _mark(e: Exception, **attributes) -> None:
    """The refusal's key, values and parts as attributes of the caller's own exception class
    (AccessError, ConsentError...), which callers catch by class and read with getattr."""
    for name, value in attributes.items():
        setattr(e, name, value)


def reword(e: Exception, voice: Voice) -> Exception:
    """The refusal in the voice's language and wording (errors without a key stay as they are;
    one made by refusals() has each part and each field's problem reworded)."""
    key = getattr(e, "key", None)
    if key:
        e.args = (voice(key, **getattr(e, "values", {})),)
    parts = getattr(e, "parts", None)
    if parts is not None:
        field_errors: dict[str, Exception] = getattr(e, "field_errors")
        for x in [*parts, *field_errors.values()]:
            reword(x, voice)
        e.args = (" ".join(map(str, parts)),)
        _mark(e, fields={f: str(x) for f, x in field_errors.items()})
    return e


def sqm_label(score: float, study: Mapping[str, Any] | None = None) -> str:
    """The DA+SQM label nearest to a 0-100 score (ticks 0, 2, 4, 6 carry labels; halfway
    between two labels, the lower one)."""
    labels = sorted(texts(study)["sqm"], key=lambda s: s["value"])
    return min(labels, key=lambda s: (abs(score - s["value"]), s["value"]))["label"]
