"""The listening test's page (services/listening/protocol.py): one item form per page, its clips as
<audio> elements (assets/js/script/listening.js marks each played to its end in the hidden field
`played`, the server names the ones missing), then the question: the ear heard (device check),
the digits typed (hearing test), or the method's scale as radio buttons with P.800's wording;
MUSHRA: the reference, then each sample with its 0-100 slider (an unmoved slider sends null).
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


def _score(v) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
        return None
    return int(v)


def _sample(k: int, clip: dict, points: list, typed: dict) -> str:
    """MUSHRA: a sample's clip and its 0-100 slider, the scale's five words under it (BS.1534-3
    Figure 1: Bad at 0-20 ... Excellent at 80-100)."""
    score = _score(typed.get(f"score-{k}"))
    words = "".join(f"<span>{plain_html(w)}</span>" for _, w in sorted(points))
    return (
        f'<li class="lt-sample">{_clip(clip)}'
        f'<div class="form-slider lt-slider"><label for="lt-score-{k}">Score {plain_html(clip.get("label", ""))} '
        f'(0-100)<output for="lt-score-{k}" aria-live="off">–</output></label>'
        f'<input type="range" id="lt-score-{k}" name="score-{k}" min="0" max="100" step="1" '
        f'value="{score if score is not None else 0}" data-click-sets{" data-moved" if score is not None else ""}>'
        f'<div class="lt-slider-words">{words}</div></div></li>'
    )


def mushra_html(c: dict, typed: dict) -> str:
    clips = c.get("clips", [])
    played = typed.get("played") if isinstance(typed.get("played"), str) else ""
    samples = "".join(_sample(k, x, c.get("points", []), typed) for k, x in enumerate(clips[1:]))
    return "".join(
        [
            '<form class="lt-item" data-kind="mushra" autocomplete="off">',
            f'<div class="instruction lt-instructions">{markdown_html(c.get("instructions", ""))}</div>',
            f'<fieldset class="lt-clips lt-reference"><legend>The reference</legend>{_clip(clips[0]) if clips else ""}'
            f'<input type="hidden" name="played" value="{_attr(played)}"></fieldset>',
            f'<fieldset class="lt-clips"><legend>{plain_html(c.get("question", ""))}</legend>'
            f'<ol class="lt-samples">{samples}</ol></fieldset>',
            '<button type="submit" class="submit-btn lg primary">Submit</button></form>',
        ]
    )


def body_html(c: dict, typed: dict | None = None) -> str:
    """The page's form; typed: a refused answer's fields, written back in (`played` too: a clip
    played to its end stays played)."""
    typed = typed or {}
    if c.get("method") == "mushra":
        return mushra_html(c, typed)
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
    out = {k: v for k, v in fields.items() if k in ("rating", "side", "digits") or k.startswith("score-")}
    raw = fields.get("played")
    try:
        out["played"] = json.loads(raw) if isinstance(raw, str) and raw.strip() else []
    except ValueError:
        out["played"] = []
    return out


def build(ctx: Ctx) -> TabUI:
    return form_tab(ctx, NAME, "Listening test", body_html, payload_of, poll_s=None)
