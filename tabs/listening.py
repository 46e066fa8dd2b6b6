"""The listening test's page (services/listening/protocol.py): one item form per page, its clips as
<audio> elements (assets/js/script/listening.js marks each played to its end in the hidden field
`played`, the server names the ones missing), then the question: the ear heard (device check),
the digits typed (hearing test), or the method's scale as radio buttons with P.800's wording.
Every text of the study is escaped; no condition is named."""

from __future__ import annotations

import html
import json

from tabs.common import Ctx, TabUI, file_url, markdown_html, plain_html
from tabs.item_form import form_tab

NAME = "listening"


def _attr(text) -> str:
    return html.escape(str(text or ""), quote=True)


def _radios(name: str, choices: list, typed: dict) -> str:
    return "".join(
        f'<label class="lt-radio"><input type="radio" name="{name}" value="{_attr(v)}"'
        f"{' checked' if str(typed.get(name)) == str(v) else ''}>"
        f" <span>{plain_html(words)}</span></label>"
        for v, words in choices
    )


def _clip(c: dict) -> str:
    key = _attr(c.get("key"))
    return (
        f'<div class="lt-clip" data-clip="{key}"><span class="lt-clip-label">{plain_html(c.get("label", ""))}</span>'
        f'<audio controls preload="auto" controlsList="nodownload noplaybackrate" data-clip="{key}"'
        f' aria-label="{_attr(c.get("label"))}" src="{_attr(file_url(c.get("src", "")))}"></audio>'
        '<span class="lt-played" aria-live="polite"></span></div>'
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The page's form; typed: a refused answer's fields, written back in (`played` too: a clip
    played to its end stays played)."""
    typed = typed or {}
    played = typed.get("played") if isinstance(typed.get("played"), str) else ""
    clips = "".join(_clip(x) for x in c.get("clips", []))
    parts = [
        f'<form class="lt-item" data-kind="{_attr(c.get("check") or c.get("method"))}" autocomplete="off">',
        f'<div class="instruction lt-instructions">{markdown_html(c.get("instructions", ""))}</div>',
        f'<fieldset class="lt-clips"><legend>Play each recording to its end</legend>{clips}'
        f'<input type="hidden" name="played" value="{_attr(played)}"></fieldset>',
    ]
    if c.get("check") == "device":
        parts.append(
            '<fieldset class="lt-scale"><legend>In which ear do you hear the tone?</legend>'
            f"{_radios('side', c.get('choices', []), typed)}</fieldset>"
        )
    elif c.get("check") == "hearing":
        digits = typed.get("digits") if isinstance(typed.get("digits"), str) else ""
        parts.append(
            '<div class="lt-digits"><label for="lt-digits">The three digits you heard</label>'
            f'<input type="text" id="lt-digits" name="digits" inputmode="numeric" maxlength="8" '
            f'autocomplete="off" value="{_attr(digits)}"></div>'
        )
    else:
        parts.append(
            f'<fieldset class="lt-scale"><legend>{plain_html(c.get("question", ""))}</legend>'
            f"{_radios('rating', c.get('points', []), typed)}</fieldset>"
        )
    parts.append('<button type="submit" class="submit-btn lg primary">Submit</button></form>')
    return "".join(parts)


def payload_of(fields: dict) -> dict:
    """The service's payload: the named fields as the form holds them (`played` as its JSON
    list of clip keys)."""
    out = {k: fields[k] for k in ("rating", "side", "digits") if k in fields}
    raw = fields.get("played")
    try:
        out["played"] = json.loads(raw) if isinstance(raw, str) and raw.strip() else []
    except ValueError:
        out["played"] = []
    return out


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, NAME, "Listening test", body_html, payload_of, poll_s=None)
