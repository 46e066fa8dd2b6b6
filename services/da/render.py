"""What a direct-assessment item shows (paper 001), rendered once.

- Text mode: the reference (grey) and the MT output (black) as one PNG, never as selectable
  text (the paper turns translations into bit-mapped images to deter the browser's
  read-aloud). The PNG carries no text chunks: the strings are only in the pixels.
- Audio mode: the MT output synthesised by services.models.tts (cached per backend, voice, language
  and text); the reference is an image too, alone in grey (paper 001, Figure 2: "the text in
  presented in the image form").

Fonts: a primary font for Latin, Greek and Cyrillic (DejaVu Sans, else Noto Sans, Liberation
Sans, the first found) and, per character, the first fallback font that has a glyph for it:
fonts named in TRADLAB_DA_FONTS (os.pathsep-separated files), then the fonts fontconfig lists
for scripts the primary lacks (CJK, Arabic, Hebrew, Devanagari, Thai, ...), then known CJK font
files under the usual font folders. A character no font covers is drawn as the primary font's
missing-glyph box; font_info() says which scripts are covered. Without any font file, Pillow's
built-in font (load_default(size=...), Latin only) is used. Debian has no CJK font by default:
`apt-get install fonts-noto-cjk` (or fonts-wqy-zenhei, fonts-droid-fallback) adds one.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import time
import unicodedata
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from services.common.media_files import atomic_write
from services.common.settings import current as current_settings
from services.models import tts

RENDER_VERSION = 1
DEFAULT_WIDTH = 900
# a phone's copy: the 900 px image scaled into a 390 px phone's 302 px showed its 24 px text at
# 8 px; at 360 px it shows at 20 px there and 18 px on a 360 px phone (the page picks it below
# 640 px of window width)
NARROW_WIDTH = 360
FONT_SIZE = 24  # px; the reference and the MT output alike
LINE_HEIGHT = 1.5  # x FONT_SIZE
PADDING = 24  # px around the text
BLOCK_GAP = 28  # px between the reference and the MT output (a thin rule in the middle)
BACKGROUND = 255
REFERENCE_GREY = 110  # 4.7:1 contrast on white (WCAG AA for body text)
CANDIDATE_BLACK = 0
RULE_GREY = 225
FONT_ENV = "TRADLAB_DA_FONTS"

FONT_DIRS = (
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "~/.local/share/fonts",
    "~/.fonts",
    "/Library/Fonts",
    "/System/Library/Fonts",
    "C:/Windows/Fonts",
)
PRIMARY_FONTS = ("DejaVuSans.ttf", "NotoSans-Regular.ttf", "LiberationSans-Regular.ttf", "Arial.ttf", "arial.ttf")
FALLBACK_FONTS = (
    "NotoSansCJK-Regular.ttc",
    "NotoSansCJKsc-Regular.otf",
    "NotoSansSC-Regular.otf",
    "NotoSansSC-Regular.ttf",
    "wqy-zenhei.ttc",
    "wqy-microhei.ttc",
    "DroidSansFallbackFull.ttf",
    "DroidSansFallback.ttf",
    "uming.ttc",
    "ipag.ttf",
    "NotoSansArabic-Regular.ttf",
    "NotoSansHebrew-Regular.ttf",
    "NotoSansDevanagari-Regular.ttf",
    "NotoSansThai-Regular.ttf",
    "PingFang.ttc",
    "msyh.ttc",
    "simsun.ttc",
)
# fontconfig languages whose scripts DejaVu Sans lacks
FC_LANGS = ("zh-cn", "zh-tw", "ja", "ko", "ar", "he", "hi", "bn", "ta", "th", "am", "km")
PROBES = {
    "Latin": "Ação Größe",
    "Cyrillic": "Привет",
    "Greek": "Καλημέρα",
    "CJK": "中文汉字日本語",
    "Hangul": "한국어",
    "Arabic": "مرحبا",
    "Hebrew": "שלום",
    "Devanagari": "नमस्ते",
    "Thai": "สวัสดี",
}
_UNMAPPED = "\U0010fffd"  # a plane-16 private-use code point: no font maps it
_CJK = re.compile(
    r"[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff]"
)

_NO_BREAK_BEFORE = set("，。、；：！？）》」』】〕〉…・ー々〜")


# -- fonts ---------------------------------------------------------------------------------
def _find_file(names) -> list[str]:
    found = []
    for name in names:
        for d in FONT_DIRS:
            hits = sorted(glob.glob(os.path.join(os.path.expanduser(d), "**", name), recursive=True))
            if hits:
                found.append(hits[0])
                break
    return found


def _fc_files() -> list[str]:
    exe = shutil.which("fc-list")
    if not exe:
        return []
    files: list[str] = []
    for lang in FC_LANGS:
        try:
            res = subprocess.run(
                [exe, "-f", "%{file}\n", f":lang={lang}:style=Regular"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return files
        files += sorted(f for f in res.stdout.splitlines() if f.strip())
    return files


class FontChain:
    """The primary font and the fallbacks, each loaded once at the render size."""

    def __init__(self, paths: list[str], size: int = FONT_SIZE):
        self.size = size
        self.paths: list[str] = []
        self.fonts: list[ImageFont.FreeTypeFont | ImageFont.ImageFont] = []
        for p in paths:
            if p in self.paths:
                continue
            try:
                f = ImageFont.truetype(p, size, index=0)
            except OSError:
                continue
            self.paths.append(p)
            self.fonts.append(f)
        self.note = ""
        if not self.fonts:
            self.fonts = [ImageFont.load_default(size=size)]
            self.paths = ["<pillow default>"]
            self.note = (
                "no font file found: Pillow's built-in font is used (Latin only); install "
                "fonts-dejavu-core (and fonts-noto-cjk for Chinese/Japanese/Korean)"
            )
        self._missing = [self._mask(f, _UNMAPPED) for f in self.fonts]

    @staticmethod
    def _mask(font, ch: str):
        m = font.getmask(ch)
        return m.size, bytes(m)

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - the chain lives as long as the process
    def index_for(self, ch: str) -> int:
        """The first font with a glyph for ch (0, the primary, when none has one)."""
        if ch.isspace() or ord(ch) < 0x20:
            return 0
        for i, f in enumerate(self.fonts):
            if self._mask(f, ch) != self._missing[i]:
                return i
        return 0

    def covers(self, text: str) -> bool:
        return all(
            ch.isspace() or any(self._mask(f, ch) != self._missing[i] for i, f in enumerate(self.fonts)) for ch in text
        )

    def runs(self, text: str) -> list[tuple[int, str]]:
        """(font index, text) runs; combining marks and joiners stay with the previous character."""
        out: list[list] = []
        for ch in text:
            if out and (unicodedata.category(ch) in ("Mn", "Me", "Cf") or ch in "\ufe0e\ufe0f"):
                i = out[-1][0]
            else:
                i = self.index_for(ch)
            if out and out[-1][0] == i:
                out[-1][1] += ch
            else:
                out.append([i, ch])
        return [(i, s) for i, s in out]

    def width(self, text: str) -> float:
        return sum(self.fonts[i].getlength(s) for i, s in self.runs(text))


def font_paths() -> list[str]:
    """Primary first, then the fallbacks, as found on this machine (searched once per process
    and value of TRADLAB_DA_FONTS)."""
    return list(_font_paths(current_settings().da_fonts))


@functools.lru_cache(maxsize=8)
def _font_paths(env: str) -> tuple[str, ...]:
    named = [p for p in env.split(os.pathsep) if p.strip()]
    primary = _find_file(PRIMARY_FONTS)[:1]
    return tuple(primary + named + _fc_files() + _find_file(FALLBACK_FONTS))


@functools.lru_cache(maxsize=8)
def _chain(paths: tuple[str, ...], size: int) -> FontChain:
    return FontChain(list(paths), size)


def font_chain(size: int = FONT_SIZE) -> FontChain:
    return _chain(tuple(font_paths()), size)


def font_info() -> dict:
    """Fonts in use and which scripts they cover (for the admin and the benchmark)."""
    ch = font_chain()
    return {
        "fonts": ch.paths,
        "note": ch.note,
        "covers": {script: ch.covers(sample) for script, sample in PROBES.items()},
    }


# -- layout --------------------------------------------------------------------------------
def _tokens(paragraph: str) -> list[tuple[str, bool]]:
    """(token, space before) pairs; CJK characters are tokens of their own (a line may break
    between any two of them)."""
    out: list[tuple[str, bool]] = []
    for m in re.finditer(r"(\s*)(\S+)", paragraph):
        space = bool(m.group(1))
        for j, piece in enumerate(p for p in re.split(f"({_CJK.pattern})", m.group(2)) if p):
            if j and piece in _NO_BREAK_BEFORE and out:
                out[-1] = (out[-1][0] + piece, out[-1][1])  # no line starts with "，" or "。"
            else:
                out.append((piece, space and j == 0))
    return out


def wrap(text: str, chain: FontChain, max_width: float) -> list[str]:
    """Greedy line breaking at spaces (and between CJK characters); a token wider than a line
    is broken anywhere. Widths add up per token (kerning across a space is ignored; 1 px spare)."""
    limit = max_width - 1
    space_w = chain.width(" ")
    lines: list[str] = []
    for paragraph in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line, line_w = "", 0.0
        for tok, space in _tokens(paragraph):
            tok_w = chain.width(tok)
            gap = space_w if space and line else 0.0
            if line_w + gap + tok_w <= limit:
                line += (" " if gap else "") + tok
                line_w += gap + tok_w
                continue
            if line:
                lines.append(line)
            line, line_w = "", 0.0
            if tok_w <= limit:
                line, line_w = tok, tok_w
                continue
            for ch in tok:  # a word wider than the line: break it anywhere
                ch_w = chain.width(ch)
                if line and line_w + ch_w > limit:
                    lines.append(line)
                    line, line_w = "", 0.0
                line += ch
                line_w += ch_w
        lines.append(line)
    while len(lines) > 1 and not lines[-1]:
        lines.pop()
    return lines


def text_image(reference: str, candidate: str, width: int = DEFAULT_WIDTH) -> bytes:
    """PNG bytes: the reference in grey above the MT output in black, wrapped to width px.
    Either may be empty (not both); the PNG has no text chunks."""
    reference, candidate = (reference or "").strip(), (candidate or "").strip()
    if not reference and not candidate:
        raise ValueError("nothing to render: the reference and the candidate are both empty")
    width = int(width)
    if width < 4 * FONT_SIZE:
        raise ValueError(f"width {width} px is too narrow (at least {4 * FONT_SIZE})")
    chain = font_chain()
    inner = width - 2 * PADDING
    lh = int(round(FONT_SIZE * LINE_HEIGHT))
    blocks = [
        (wrap(t, chain, inner), fill) for t, fill in ((reference, REFERENCE_GREY), (candidate, CANDIDATE_BLACK)) if t
    ]
    height = 2 * PADDING + sum(len(lines) * lh for lines, _ in blocks) + BLOCK_GAP * (len(blocks) - 1)
    img = Image.new("L", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    primary = chain.fonts[0]
    ascent = primary.getmetrics()[0] if isinstance(primary, ImageFont.FreeTypeFont) else FONT_SIZE
    baseline_offset = (lh - FONT_SIZE) // 2 + min(ascent, FONT_SIZE)
    y = PADDING
    for b, (lines, fill) in enumerate(blocks):
        if b:
            rule_y = y + BLOCK_GAP // 2 - 1
            draw.line([(PADDING, rule_y), (width - PADDING, rule_y)], fill=RULE_GREY, width=1)
            y += BLOCK_GAP
        for line in lines:
            x = float(PADDING)
            for i, run in chain.runs(line):
                font = chain.fonts[i]
                if isinstance(font, ImageFont.FreeTypeFont):
                    draw.text((x, y + baseline_offset), run, font=font, fill=fill, anchor="ls")
                else:
                    draw.text((x, y + baseline_offset - FONT_SIZE), run, font=font, fill=fill)
                x += font.getlength(run)
            y += lh
    buf = io.BytesIO()
    img.save(buf, "PNG", optimize=False, compress_level=6)  # no pnginfo: no tEXt/iTXt/zTXt
    return buf.getvalue()


# -- cached items --------------------------------------------------------------------------
_atomic_write = atomic_write


def image_key(reference: str, candidate: str, width: int = DEFAULT_WIDTH) -> str:
    """sha256 over what the pixels depend on: texts, width, layout version and the fonts (a CJK
    font installed later gives new images instead of the old missing-glyph boxes)."""
    blob = json.dumps(
        [RENDER_VERSION, int(width), FONT_SIZE, font_chain().paths, reference or "", candidate or ""],
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def image_path(reference: str, candidate: str, media_dir, width: int = DEFAULT_WIDTH) -> Path:
    return Path(media_dir) / "da" / f"{image_key(reference, candidate, width)}.png"


def render_text_item(reference: str, candidate: str, media_dir, width: int = DEFAULT_WIDTH) -> Path:
    """media_dir/da/<sha256>.png, rendered on the first call only (atomic write)."""
    target = image_path(reference, candidate, media_dir, width)
    if not target.is_file():
        _atomic_write(target, text_image(reference, candidate, width))
    return target


def render_item_images(reference: str, candidate: str, media_dir) -> tuple[Path, Path]:
    """The item's image for wide screens and its narrow copy for phones (each drawn once)."""
    return (
        render_text_item(reference, candidate, media_dir, DEFAULT_WIDTH),
        render_text_item(reference, candidate, media_dir, NARROW_WIDTH),
    )


def render_audio_item(candidate: str, lang: str, media_dir, backend=None, voice: str | None = None) -> Path:
    """The candidate's WAV through services.models.tts.speak (kept under media_dir/tts/, synthesised
    once per backend, voice, language and text)."""
    return tts.speak(candidate, lang, media_dir, backend=backend, voice=voice)


def _flatten(items) -> list[dict]:
    out: list[dict] = []
    for it in items:
        out.extend(_flatten(it) if isinstance(it, (list, tuple)) else [it])
    return out


def prerender(
    items: list[dict],
    lang: str,
    media_dir,
    modality: str,
    progress=None,
    backend=None,
    voice: str | None = None,
    width: int = DEFAULT_WIDTH,
) -> dict:
    """Render what a campaign shows: for "text" the reference + output images, for "audio" the
    output's audio and the reference-only images, for "both" all three.

    items: HIT items ({"candidate", "reference"}, or dataset rows with "output"), or a list of
    HITs. Each distinct image / audio text is one job; progress(done, total) after each.
    Returns {"rendered", "cached", "seconds", "total", "images", "audio"} (images: both kinds).
    """
    if modality not in ("text", "audio", "both"):
        raise ValueError(f"modality must be text, audio or both, not {modality!r}")
    rows = _flatten(items)
    texts = [(r.get("reference") or "", r["candidate"] if "candidate" in r else r["output"]) for r in rows]
    images = list(dict.fromkeys(texts)) if modality in ("text", "both") else []
    audio = list(dict.fromkeys(c for _, c in texts)) if modality in ("audio", "both") else []
    if audio:  # audio mode's reference, alone
        seen = set(images)
        images += [(r, "") for r in dict.fromkeys(r for r, _ in texts if r.strip()) if (r, "") not in seen]
    engine = None
    if audio:
        engine = backend if hasattr(backend, "synthesize") else tts.choose(lang, backend, voice)
    total = len(images) + len(audio)
    done = rendered = cached = 0
    t0 = time.perf_counter()
    for ref, cand in images:
        if image_path(ref, cand, media_dir, width).is_file():
            cached += 1
        else:
            render_text_item(ref, cand, media_dir, width)
            rendered += 1
        done += 1
        if progress:
            progress(done, total)
    for cand in audio:
        if (Path(media_dir) / "tts" / f"{tts.cache_key(engine, cand)}.wav").is_file():
            cached += 1
        else:
            render_audio_item(cand, lang, media_dir, backend=engine)
            rendered += 1
        done += 1
        if progress:
            progress(done, total)
    return {
        "rendered": rendered,
        "cached": cached,
        "seconds": round(time.perf_counter() - t0, 3),
        "total": total,
        "images": len(images),
        "audio": len(audio),
    }
