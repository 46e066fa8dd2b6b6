"""DA item rendering (paper 001): the text image and the cached audio."""

from __future__ import annotations

import io
import shutil
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from services.da import render as da_render
from services.da.render import (
    PADDING,
    REFERENCE_GREY,
    RULE_GREY,
    font_chain,
    prerender,
    render_audio_item,
    render_text_item,
    text_image,
)
from services.models import tts

PT = (
    "A Câmara Municipal de Braga anunciou na segunda-feira que o seu sistema de bicicletas "
    "partilhadas vai ser alargado a doze novas estações.",
    "O conselho da cidade de Braga anunciou na segunda-feira que o seu esquema de bicicletas "
    "partilhadas vai expandir para doze novas estações.",
)
DE = ("Bitte schalten Sie das Gerät vor der Reinigung aus.", "Schalten Sie das Gerät vor dem Reinigen aus – Größe.")
RU = ("Пожалуйста, выключите устройство перед чисткой.", "Выключите прибор перед очисткой, щёлк.")
ZH = ("请在清洁前关闭设备，并让其冷却至少十分钟。", "清洁之前请关掉设备，让它冷却十分钟以上。")


def pixels(png: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(png))
    assert img.format == "PNG"
    return np.asarray(img.convert("L"))


def chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    out, i = [], 8
    while i < len(png):
        (n,) = struct.unpack(">I", png[i : i + 4])
        out.append((png[i + 4 : i + 8], png[i + 8 : i + 8 + n]))
        i += 12 + n
    return out


def split_at_rule(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inner = a[:, PADDING + 1 : a.shape[1] - PADDING - 1]
    rule = [y for y in range(a.shape[0]) if (inner[y] == RULE_GREY).all()]
    assert len(rule) == 1
    return a[: rule[0]], a[rule[0] + 1 :]


@pytest.mark.parametrize("texts", [PT, DE, RU], ids=["pt", "de", "ru"])
def test_png_of_width_with_grey_reference_and_black_output(texts):
    a = pixels(text_image(*texts))
    assert a.shape[1] == 900
    top, bottom = split_at_rule(a)
    assert top.min() == REFERENCE_GREY  # the reference: grey, never darker
    assert bottom.min() == 0  # the MT output: black
    assert (bottom == 0).sum() > 100 and (top == REFERENCE_GREY).sum() > 100


def test_width_is_respected_and_long_text_wraps():
    short = pixels(text_image("Curta.", "Curta."))
    long_ = pixels(text_image(PT[0] * 3, PT[1] * 3))
    narrow = pixels(text_image(*PT, width=400))
    assert long_.shape[0] > short.shape[0] + 100
    assert narrow.shape == (narrow.shape[0], 400) and narrow.shape[0] > pixels(text_image(*PT)).shape[0]
    for a in (long_, narrow):
        assert (a[:, -PADDING + 2 :] == 255).all()  # wrapped, not clipped at the right edge
    unbroken = pixels(text_image("x", "a" * 300, width=300))  # one "word" wider than the line
    assert (unbroken[:, -PADDING + 2 :] == 255).all() and unbroken.shape[0] > 150


def _same_length_missing(text: str) -> str:
    return "".join(" " if c.isspace() else "\U0010fffd" for c in text)


@pytest.mark.parametrize("texts", [RU, ZH], ids=["cyrillic", "cjk"])
def test_non_latin_scripts_have_glyphs(texts):
    png = text_image(*texts)
    a = pixels(png)
    assert (a < 128).sum() > 200  # ink, not a blank image
    if not font_chain().covers(texts[1]):
        # Debian has no CJK font by default: the text renders as missing-glyph boxes
        pytest.skip("no font covers this script here: apt-get install fonts-noto-cjk")
    boxes = pixels(text_image(_same_length_missing(texts[0]), _same_length_missing(texts[1])))
    assert a.shape != boxes.shape or (a != boxes).any()


def test_per_character_font_choice_and_pillow_default():
    chain = font_chain()
    assert chain.covers("Ação Größe Привет")
    assert all(i == 0 for i, _ in chain.runs("Ação Привет"))  # the primary font covers these
    bare = da_render.FontChain(["/nonexistent/font.ttf"])
    assert bare.paths == ["<pillow default>"] and "Latin only" in bare.note
    assert bare.width("Hello") > 0


def test_png_carries_no_text():
    ref, cand = "Referência secreta única", "Tradução secreta única"
    png = text_image(ref, cand)
    kinds = [k for k, _ in chunks(png)]
    assert not {b"tEXt", b"zTXt", b"iTXt"} & set(kinds)
    for s in (ref, cand, "secreta"):
        assert s.encode("utf-8") not in png and s.encode("latin-1", "ignore") not in png
    idat = zlib.decompress(b"".join(d for k, d in chunks(png) if k == b"IDAT"))
    assert b"secreta" not in idat


def test_text_item_rendered_once(tmp_path, monkeypatch):
    calls = []
    real = da_render.text_image
    monkeypatch.setattr(da_render, "text_image", lambda *a, **k: calls.append(a) or real(*a, **k))
    p1 = render_text_item(*PT, tmp_path)
    mtime = p1.stat().st_mtime_ns
    p2 = render_text_item(*PT, tmp_path)
    assert p1 == p2 and len(calls) == 1 and p2.stat().st_mtime_ns == mtime
    assert p1.parent == tmp_path / "da" and len(p1.stem) == 64 and p1.suffix == ".png"
    assert not list((tmp_path / "da").glob(".tmp-*"))
    assert render_text_item(PT[0], PT[1] + " ", tmp_path) != p1 and len(calls) == 2


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng is not installed")
def test_audio_item_cached_once(tmp_path, monkeypatch):
    p1 = render_audio_item("Olá, bom dia.", "pt", tmp_path, backend="espeak")
    assert p1.is_file() and p1.read_bytes()[:4] == b"RIFF" and p1.parent == tmp_path / "tts"

    def boom(self, text):
        raise AssertionError("synthesised again")

    monkeypatch.setattr(tts.EspeakTTS, "synthesize", boom)
    assert render_audio_item("Olá, bom dia.", "pt", tmp_path, backend="espeak") == p1


class FakeTTS:
    name, voice, lang = "fake", "v", "pt"

    def __init__(self):
        self.calls = 0

    def synthesize(self, text):
        self.calls += 1
        return tts._wav_bytes(np.zeros(160, dtype=np.int16), 16000)


def test_prerender_counts_and_progress(tmp_path):
    hit = [
        {"candidate": PT[1], "reference": PT[0]},
        {"candidate": PT[1], "reference": PT[0]},  # ask_again
        {"candidate": RU[1], "reference": RU[0]},
        {"candidate": DE[1], "reference": DE[0]},
    ]
    fake = FakeTTS()
    seen = []
    r = prerender([hit], "pt", tmp_path, "both", progress=lambda d, t: seen.append((d, t)), backend=fake)
    # 3 reference + output images (text mode), 3 reference-only images (audio mode), 3 audio
    assert (r["images"], r["audio"], r["total"], r["rendered"], r["cached"]) == (6, 3, 9, 9, 0)
    assert seen == [(i, 9) for i in range(1, 10)] and fake.calls == 3 and r["seconds"] >= 0
    r = prerender(hit, "pt", tmp_path, "both", backend=fake)
    assert (r["rendered"], r["cached"]) == (0, 9) and fake.calls == 3
    assert prerender(hit, "pt", tmp_path, "text")["total"] == 3
    assert prerender(hit, "pt", tmp_path, "audio", backend=fake)["total"] == 3 + 3
    assert da_render.image_path(PT[0], "", tmp_path).is_file()
    with pytest.raises(ValueError):
        prerender(hit, "pt", tmp_path, "video")
