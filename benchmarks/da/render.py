"""Time per DA item for what a campaign shows (paper 001): the text image and the TTS audio,
each uncached (first render) and cached (the second call finds the file).

    .venv/bin/python benchmarks/da/render.py

Items: the demo study's DA HITs (Portuguese outputs and references, controls included) for
images and espeak-ng audio; the segments' English sources for Piper (en_US-joe-medium).
Piper's first call loads the voice: reported apart as cold_first_s. Also a whole-campaign
prerender (modality both) of the demo HITs. Writes benchmarks/results/da_render.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from services.da.hits import build_hits  # noqa: E402
from services.da.render import font_info, prerender, render_audio_item, render_text_item  # noqa: E402
from services.models import tts  # noqa: E402


def stats_ms(xs: list[float]) -> dict:
    xs = sorted(x * 1000 for x in xs)
    return {
        "n": len(xs),
        "mean": round(statistics.mean(xs), 3),
        "median": round(statistics.median(xs), 3),
        "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 3),
        "max": round(xs[-1], 3),
    }


def timed(fn, *a, **k):
    t0 = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t0


def wav_s(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / w.getframerate()


def bench_images(pairs, media) -> dict:
    first, second, sizes = [], [], []
    for ref, cand in pairs:
        p, dt = timed(render_text_item, ref, cand, media)
        first.append(dt)
        sizes.append(p.stat().st_size)
        _, dt = timed(render_text_item, ref, cand, media)
        second.append(dt)
    return {
        "uncached_ms": stats_ms(first),
        "cached_ms": stats_ms(second),
        "png_bytes_mean": round(statistics.mean(sizes)),
    }


def bench_audio(texts, lang, media, backend) -> dict:
    engine = tts.choose(lang, backend)
    first, second, secs = [], [], []
    cold = None
    for i, text in enumerate(texts):
        p, dt = timed(render_audio_item, text, lang, media, backend=engine)
        if i == 0 and engine.name == "piper":
            cold = dt  # loads the voice: kept out of the uncached figures
        else:
            first.append(dt)
            secs.append(wav_s(p))
        _, dt = timed(render_audio_item, text, lang, media, backend=engine)
        second.append(dt)
    out = {
        "backend": engine.name,
        "voice": engine.voice,
        "uncached_ms": stats_ms(first),
        "cached_ms": stats_ms(second),
        "audio_s_mean": round(statistics.mean(secs), 2),
        "rtf_mean": round(sum(first) / sum(secs), 4),
    }
    if cold is not None:
        out["cold_first_s"] = round(cold, 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "da_render.json"))
    args = ap.parse_args()
    with open(ROOT / "assets" / "demo_study" / "da_segments.csv", newline="", encoding="utf-8") as f:
        segments = list(csv.DictReader(f))
    items = [{"row": i, **s} for i, s in enumerate(segments)]
    hits = build_hits(items, seed=1, hit_size=24, n_controls=4, min_gap=8)
    hit_items = [it for hit in hits for it in hit]
    pairs = list(dict.fromkeys((it["reference"], it["candidate"]) for it in hit_items))
    pt_texts = list(dict.fromkeys(it["candidate"] for it in hit_items))
    en_texts = list(dict.fromkeys(s["source"] for s in segments))
    out = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "fonts": font_info(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out["text_image"] = {"items": len(pairs), "width": 900, **bench_images(pairs, tmp / "img")}
        print("text image", json.dumps(out["text_image"]), flush=True)
        out["audio"] = {}
        for key, texts, lang, backend in (
            ("piper_en", en_texts, "en", "piper"),
            ("espeak_pt", pt_texts, "pt", "espeak"),
        ):
            try:
                out["audio"][key] = {"items": len(texts), **bench_audio(texts, lang, tmp / key, backend)}
            except Exception as e:  # a backend missing on this machine: say so, go on
                out["audio"][key] = {"error": f"{type(e).__name__}: {e}"}
            print(key, json.dumps(out["audio"][key]), flush=True)
        runs = []
        for label in ("uncached", "cached"):
            r = prerender(hit_items, "pt", tmp / "campaign", "both", backend="espeak")
            runs.append({"run": label, **r})
        out["prerender_demo_both"] = {"hits": len(hits), "hit_items": len(hit_items), "runs": runs}
        print("prerender", json.dumps(runs), flush=True)
    out["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
