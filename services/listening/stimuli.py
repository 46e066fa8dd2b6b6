"""The listening protocol's stimuli file and its listening checks' clips (docs/listening.md).

The [listening] section's stimuli file (CSV or JSONL) has one row per clip to rate: stimulus_id,
condition (the system, TTS engine or degradation the clip was made with) and audio, and
optionally reference_audio (DCR and CCR: the unprocessed clip it is compared with), engine and
voice (a TTS output's engine and voice, kept for the analysis), kind and expected. kind is
empty for a clip rated as data, `gold` for a clip of known quality (expected: its rating on the
method's scale) or `trap` for a trapping clip whose audio asks for a given answer (expected: that
answer). Every audio file is decoded at import (services/common/audio_decode.py), at most
MAX_AUDIO_S long, and copied into the media folder under its content's name (sha256), as ESA's
speech is (docs/esa.md).

The listening checks' clips are made at import, from the study's seed: a tone on one channel
per device-check item (the left or the right ear), and the digit triplets of the hearing test,
spoken by espeak-ng (services/models/tts.py), each into the media folder.
"""

from __future__ import annotations

import hashlib
import io
import math
import wave
from pathlib import Path

import numpy as np

from services.common import settings
from services.common.listening import load_scales
from services.common.media_files import atomic_write
from services.common.seeded import seeded_rng
from services.models import tts
from services.study import corpus_audio, files
from services.study.corpus_audio import AudioFile, copy_media
from storage import protocol_rows
from storage.db import Transaction

NAME = "listening"
CHECK_PHASE = f"{NAME}_check"
STUDIES, STIMULI, SCREENS, TAKERS, ANSWERS, OUTCOMES, SCORES = (
    f"{NAME}_{t}" for t in ("studies", "stimuli", "screens", "takers", "answers", "outcomes", "scores")
)
# the stimuli file's (required, optional) columns
COLUMNS = (
    ["stimulus_id", "condition", "audio"],
    ["reference_audio", "engine", "voice", "kind", "expected", "item_id"],
)
METHODS = ("acr", "dcr", "ccr", "mushra")
KINDS = ("", "gold", "trap")
MUSHRA_KINDS = ("", "anchor")
HIDDEN = "hidden_reference"  # MUSHRA: the condition of an item's reference shown again among its stimuli
MAX_AUDIO_S = 60.0  # a listening test's clip: a sentence or a few (P.808 asks for 6-12 s)
MEDIA_FOLDER = "listening"
DIGITS = "0123456789"
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
SIDES = ("left", "right")
TONE_HZ, TONE_S, RATE = 1000.0, 1.5, 16000


def read_audio(folder: Path, value: str, err, file: str, row: int, column: str) -> tuple[AudioFile, float] | None:
    """A row's audio file (services/study/corpus_audio.py): at most MAX_AUDIO_S a clip."""
    return corpus_audio.read_audio(
        folder, value, err, file, row, column, media_folder=MEDIA_FOLDER, max_s=MAX_AUDIO_S, what="a clip"
    )


def scale_values(method: str) -> list[int]:
    return [int(v) for v, _ in load_scales()[method].points]


def load(folder, cfg, systems, bundle, err) -> None:
    """The stimuli file read and checked, every field named: each audio decoded, a reference for
    DCR and CCR, a known kind, and a gold or trap clip's expected answer on the method's scale."""
    section = cfg[NAME]
    if section.get("hearing_test") is True and section.get("tts_backend") in ("espeak", "piper"):
        try:  # the hearing test's digits are spoken at import: the voice must be there
            tts.choose("en", section["tts_backend"])
        except Exception as e:
            err.add("study.toml", None, f"{NAME}.tts_backend", f"cannot speak the hearing test's digits: {e}")
    path = files.safe_file(folder, section["stimuli"], f"{NAME}.stimuli", err)
    if not path:
        return
    name = path.name
    method = section.get("method")
    values = scale_values(method) if method in METHODS else []
    seen: dict[str, int] = {}
    media: dict[str, AudioFile] = {}
    stimuli = []
    for rowno, row in files.read_rows(path, COLUMNS, err):
        if not files.require_text(err, name, rowno, row, *COLUMNS[0]):
            continue
        sid = row["stimulus_id"]
        if sid in seen:
            err.add(name, rowno, "stimulus_id", f"'{sid}' is on row {seen[sid]} too")
            continue
        seen[sid] = rowno
        kind = row.get("kind", "")
        ok = True
        if method == "mushra":
            if kind not in MUSHRA_KINDS:
                err.add(name, rowno, "kind", f"'{kind}' must be empty or anchor (method mushra)")
                ok = False
            if not row.get("item_id"):
                err.add(name, rowno, "item_id", "method mushra shows the rows of one item_id on one page")
                ok = False
            if row["condition"] == HIDDEN:
                err.add(name, rowno, "condition", f"'{HIDDEN}' is the name of the hidden reference, added by itself")
                ok = False
        elif kind not in KINDS:
            err.add(name, rowno, "kind", f"'{kind}' must be empty, gold or trap")
            ok = False
        elif row.get("item_id"):
            err.add(name, rowno, "item_id", "only method mushra groups rows into items: leave it empty")
            ok = False
        expected = None
        if kind in ("gold", "trap"):
            raw = row.get("expected", "")
            try:
                expected = int(raw)
            except ValueError:
                expected = None
            if expected is None or (values and expected not in values):
                err.add(name, rowno, "expected", f"a {kind} clip needs its expected answer, one of {values}")
                ok = False
        elif row.get("expected"):
            err.add(name, rowno, "expected", "only a gold or trap clip has an expected answer")
            ok = False
        clip = read_audio(folder, row["audio"], err, name, rowno, "audio")
        ref = None
        if method in ("dcr", "ccr", "mushra"):
            if not row.get("reference_audio"):
                err.add(name, rowno, "reference_audio", f"method {method} compares each clip with its reference")
                ok = False
            else:
                ref = read_audio(folder, row["reference_audio"], err, name, rowno, "reference_audio")
                ok = ok and ref is not None
        elif row.get("reference_audio"):
            err.add(name, rowno, "reference_audio", "method acr plays no reference: leave it empty")
            ok = False
        if clip is None or not ok:
            continue
        media[clip[0].name] = clip[0]
        if ref is not None:
            media[ref[0].name] = ref[0]
        stimuli.append(
            {
                "stimulus_id": sid,
                "group_id": row.get("item_id", "") if method == "mushra" else "",
                "condition": row["condition"],
                "kind": kind or "rating",
                "expected": expected,
                "audio": clip[0].name,
                "audio_s": clip[1],
                "reference_audio": ref[0].name if ref else "",
                "reference_s": ref[1] if ref else 0.0,
                "engine": row.get("engine", ""),
                "voice": row.get("voice", ""),
            }
        )
    if method == "mushra":
        stimuli = _mushra_items(stimuli, seen, name, err)
    if not any(s["kind"] == "rating" for s in stimuli) and not any(e.file == name for e in err.errors):
        err.add(name, None, None, "has no clip to rate (every row is a gold or trap clip)")
    bundle.corpus[NAME] = {"stimuli": stimuli, "media": sorted(media.values(), key=str)}


def _mushra_items(stimuli: list[dict], rows: dict[str, int], name: str, err) -> list[dict]:
    """MUSHRA's items: the rows of one item_id share their reference and have different
    conditions and an anchor (BS.1534-3); each item gets its hidden reference, the
    reference again as a stimulus, after its rows."""
    groups: dict[str, list[dict]] = {}
    for s in stimuli:
        groups.setdefault(s["group_id"], []).append(s)
    out = []
    for gid, rows_ in groups.items():
        first = rows[rows_[0]["stimulus_id"]]
        refs = {s["reference_audio"] for s in rows_}
        conditions = [s["condition"] for s in rows_]
        if len(refs) > 1:
            err.add(name, first, "reference_audio", f"item '{gid}' has {len(refs)} references: its rows share one")
        if len(set(conditions)) < len(conditions):
            err.add(name, first, "condition", f"item '{gid}' has a condition twice")
        if not any(s["kind"] == "anchor" for s in rows_):
            err.add(name, first, "kind", f"item '{gid}' has no anchor (a row with kind anchor; BS.1534-3)")
        out += [{**s, "kind": "rating"} if s["kind"] == "anchor" else s for s in rows_]
        ref = rows_[0]
        hidden = {**ref, "stimulus_id": f"{gid}/{HIDDEN}", "condition": HIDDEN, "engine": "", "voice": ""}
        out.append({**hidden, "audio": ref["reference_audio"], "audio_s": ref["reference_s"], "kind": "rating"})
    anchors = sorted({s["condition"] for s in stimuli if s["kind"] == "anchor"})
    for s in out:
        s["anchor"] = int(s["condition"] in anchors)
    return out


def prepare(bundle) -> None:
    """From the study's seed: the rated clips' sequence (the assignment's), the device check's
    sides and the hearing test's digit triplets (a changed seed is a changed corpus)."""
    corpus = bundle.corpus.get(NAME)
    if corpus is None:
        return
    seed, section = bundle.config["study"]["seed"], bundle.config[NAME]
    if section["method"] == "mushra":  # an item's first row stands for the item
        firsts: dict[str, int] = {}
        for i, s in enumerate(corpus["stimuli"]):
            firsts.setdefault(s["group_id"], i)
        rated = list(firsts.values())
    else:
        rated = [i for i, s in enumerate(corpus["stimuli"]) if s["kind"] == "rating"]
    seeded_rng(NAME, "sequence", seed).shuffle(rated)
    corpus["sequence"] = rated
    rng = seeded_rng(NAME, "checks", seed)
    screens = []
    if section["device_check"]:
        sides = list(SIDES)
        rng.shuffle(sides)
        screens += [{"screen": f"device-{k}", "test": "device", "expected": s} for k, s in enumerate(sides)]
    if section["hearing_test"]:
        for k in range(section["hearing_triplets"]):
            # three different digits, as a digit-triplet test's (Smits et al. 2004) triplets
            screens.append({"screen": f"digits-{k}", "test": "hearing", "expected": "".join(rng.sample(DIGITS, 3))})
    corpus["screens"] = screens


def tone(side: str) -> bytes:
    """A 16-bit stereo WAV: a 1 kHz tone on one channel only, faded in and out (10 ms)."""
    n = int(TONE_S * RATE)
    t = np.arange(n) / RATE
    ramp = np.minimum(1.0, np.minimum(t, TONE_S - t) / 0.01)
    wave_ = (0.3 * np.sin(2 * math.pi * TONE_HZ * t) * ramp * 32767).astype("<i2")
    silent = np.zeros(n, dtype="<i2")
    left, right = (wave_, silent) if side == "left" else (silent, wave_)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.column_stack([left, right]).tobytes())
    return buf.getvalue()


def wav_seconds(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / float(w.getframerate())


def screen_audio(screen: dict, media_dir: Path, backend: str) -> tuple[str, float]:
    """The check's clip in the media folder (made once: named by its content or its text), and
    its duration."""
    if screen["test"] == "device":
        data = tone(screen["expected"])
        name = f"{MEDIA_FOLDER}/{hashlib.sha256(data).hexdigest()}.wav"
        target = Path(media_dir) / name
        if not target.exists():
            atomic_write(target, data)
        return name, round(TONE_S, 3)
    text = ". ".join(DIGIT_WORDS[int(d)] for d in screen["expected"]) + "."
    path = tts.speak(text, "en", media_dir, backend=backend)
    return str(path.relative_to(media_dir)), round(wav_seconds(path), 3)


def store(tx: Transaction, study_id: str, corpus, section: dict) -> None:
    """The stimuli (the rated ones with their place in the sequence) and the checks' clips, made
    now; the stimuli's audio copied into the media folder."""
    media_dir = Path(settings.current().media_dir)
    copy_media(corpus.get("media") or [], media_dir)
    place = {i: s for s, i in enumerate(corpus["sequence"])}
    group_place = {corpus["stimuli"][i]["group_id"]: s for i, s in place.items() if corpus["stimuli"][i]["group_id"]}
    protocol_rows.insert_many(
        tx.db,
        STIMULI,
        [
            {
                "study_id": study_id,
                "item": i,
                "seq": group_place[s["group_id"]] if s["group_id"] else place.get(i),
                "anchor": 0,
                **s,
            }
            for i, s in enumerate(corpus["stimuli"])
        ],
    )
    rows = []
    for k, screen in enumerate(corpus.get("screens") or []):
        audio, seconds = screen_audio(screen, media_dir, section["tts_backend"])
        rows.append({"study_id": study_id, "place": k, **screen, "audio": audio, "audio_s": seconds})
    if rows:
        protocol_rows.insert_many(tx.db, SCREENS, rows)


def count(database, study_id: str) -> dict[str, int]:
    return {
        STIMULI: protocol_rows.count(database, STIMULI, {"study_id": study_id}),
        SCREENS: protocol_rows.count(database, SCREENS, {"study_id": study_id}),
    }
