"""How often recording QC flags good readings (false flags) and bad ones (true flags), by the
paper's rule alone and with the QC ASR's second opinion (services/usability/recording_qc.py),
its thresholds chosen leave one voice out.

    .venv/bin/python benchmarks/usability/qc_flags.py [--voices joe,joe-noise,espeak-en-us,...]
        [--starters N] [--from benchmarks/results/qc_flags.json] [--reuse benchmarks/results/qc_flags.json]

Demo starters are read by several voices (Piper's joe, joe with its prosody noise, espeak-ng
en-us and en-gb, espeak-ng en-us at a slower rate), after 0.4 s of silence as a participant
leaves after pressing record, and go through the intake (16 kHz mono). The study's default QC
ASR transcribes each and scores the reading's prompt against it. Readings:
- good: the whole reading; with 3 s of silence first; with a 3 s pause inside;
- bad: the first 0.5 s / 1.5 s of speech cut, the last 0.5 s / 1.5 s cut, another starter's
  reading checked against this prompt, the first word or the last word left out, the first two
  words swapped, a 3 s pause inside and then the last 0.5 s cut.
The thresholds (first and last word probability, edge cover: recording_qc.forgiven_flags) for
each voice's readings are chosen on the other voices' readings only (grid search: every bad kind
flagged at least 95% there, or as often as the paper's rule alone flags it where that is less,
the fewest good ones flagged); the
thresholds chosen on all voices are the defaults' recommendation. Cost: seconds per recording
of QC without the scoring, with it on the transcription's encoder output, and as a pass of its
own. --from recomputes the figures from a results file's readings (no model runs); --reuse runs
only --voices and takes the other voices' readings from a results file (none of them may be over
30 s, one Whisper window, whose scoring changed when long recordings got a second opinion).
Writes benchmarks/results/qc_flags.json.

--starters-file benchmarks/usability/qc_starters.csv reads starters written for the benchmark
instead of the demo's (24 requests with names, numbers, times and abbreviations, none of them
tuned on before; issue 50, point 7), each marked `split` tune or held_out: the thresholds are
then chosen on the tune starters' readings only (every voice) and the figures that count are
the held-out starters' (`held_out` in the results: per kind and per voice), so no threshold is
chosen on the readings it is scored on. Write to another --out (e.g.
benchmarks/results/qc_flags_new_texts.json).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from benchmarks.common import machine  # noqa: E402
from services.models import systems  # noqa: E402
from services.models.tts import EspeakTTS, PiperTTS  # noqa: E402
from services.usability import recording_qc  # noqa: E402
from services.usability.audio_intake import store_recording  # noqa: E402

LEAD_S = 0.4
PAUSE_S = 3.0
GOOD_KINDS = ("good", "good_silence_first", "good_pause_inside")
BAD_KINDS = (
    "cut_start_0.5s",
    "cut_start_1.5s",
    "cut_end_0.5s",
    "cut_end_1.5s",
    "other_starter",
    "first_word_left_out",
    "last_word_left_out",
    "first_two_swapped",
    "pause_then_end_cut",
)
# the thresholds tried (probabilities; finer where the edge words' probabilities bunch)
GRID = (0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
# qc_edge_min_cover tried (the share of an edge's letters the transcript must have)
COVER_GRID = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)
TARGET_FALSE_PCT, TARGET_TRUE_PCT = 5.0, 95.0
DEFAULT_KEYS = ("qc_first_word_min_p", "qc_last_word_min_p", "qc_edge_min_cover")


def voice(name: str):
    if name == "joe":
        return PiperTTS(deterministic=True)
    if name == "joe-noise":
        return PiperTTS(deterministic=False)  # Piper's prosody noise: no two readings alike
    if name.startswith("espeak-"):
        v = name.removeprefix("espeak-")
        # "-slow": 130 words a minute against espeak-ng's 175
        return EspeakTTS(v.removesuffix("-slow"), speed=130 if v.endswith("-slow") else None)
    raise SystemExit(f"unknown voice {name} (joe, joe-noise or espeak-<voice>[-slow])")


def speech(tts, text: str) -> tuple[np.ndarray, int]:
    x, rate = sf.read(io.BytesIO(tts.synthesize(text)), dtype="float32")
    if x.ndim > 1:
        x = x.mean(axis=1)
    # TTS output starts and ends with a little silence: trim it so a cut removes speech
    loud = np.flatnonzero(np.abs(x) > 0.02)
    return x[loud[0] : loud[-1] + 1], rate


def with_pause(x: np.ndarray, rate: int) -> np.ndarray:
    """x with PAUSE_S of silence at its quietest 50 ms in the middle third (between words)."""
    w = int(0.05 * rate)
    lo, hi = len(x) // 3, 2 * len(x) // 3
    energy = [float(np.abs(x[i : i + w]).mean()) for i in range(lo, hi - w, w)]
    at = lo + w * int(np.argmin(energy)) + w // 2
    return np.concatenate([x[:at], np.zeros(int(PAUSE_S * rate), np.float32), x[at:]])


def store(x: np.ndarray, rate: int, folder: Path, name: str, lead_s: float = LEAD_S):
    path = folder / f"{name}.wav"
    sf.write(
        str(path),
        np.concatenate([np.zeros(int(lead_s * rate), np.float32), x, np.zeros(int(LEAD_S * rate), np.float32)]),
        rate,
        subtype="PCM_16",
    )
    return store_recording(path, folder / "media", 60)


def transcribe(asr, x: np.ndarray, rate: int, folder: Path, name: str) -> tuple[str, float]:
    """The plain transcript (the paper's rule alone) of a reading, as the intake stores it."""
    stored = store(x, rate, folder, name)
    return asr.transcribe(stored.path_16k), stored.duration_s


def read_and_score(asr, prompt: str, x, rate, folder, name, lead_s=LEAD_S) -> dict:
    stored = store(x, rate, folder, name, lead_s)
    t0 = time.perf_counter()
    transcript, scored = asr.transcribe_scored(stored.path_16k, prompt)
    return {
        "transcript": transcript,
        "edges": recording_qc.edge_probabilities(scored),
        "audio_s": stored.duration_s,
        "qc_scored_s": round(time.perf_counter() - t0, 3),
        "path": stored.path_16k,
    }


def readings_of(asr, vname: str, starters: list[dict], folder: Path) -> list[dict]:
    tts, out, cost = voice(vname), [], []
    audio, paths = {}, {}
    for s in starters:
        text = s["text"]
        x, rate = audio[s["id"]] = speech(tts, text)
        w = text.split()
        variants = [
            ("good", x, LEAD_S),
            ("good_silence_first", x, PAUSE_S),
            ("good_pause_inside", with_pause(x, rate), LEAD_S),
        ]
        for cut in (0.5, 1.5):
            n = int(cut * rate)
            variants += [(f"cut_start_{cut}s", x[n:], LEAD_S), (f"cut_end_{cut}s", x[:-n], LEAD_S)]
        variants += [
            ("first_word_left_out", speech(tts, " ".join(w[1:]))[0], LEAD_S),
            ("last_word_left_out", speech(tts, " ".join(w[:-1]))[0], LEAD_S),
            ("first_two_swapped", speech(tts, " ".join([w[1], w[0]] + w[2:]))[0], LEAD_S),
            ("pause_then_end_cut", with_pause(x, rate)[: -int(0.5 * rate)], LEAD_S),
        ]
        for kind, part, lead in variants:
            r = read_and_score(asr, text, part, rate, folder, f"{vname}-{s['id']}-{kind}", lead)
            if kind == "good":
                paths[s["id"]] = r["path"]
                # the cost without the scoring, and the scoring as a pass of its own
                t0 = time.perf_counter()
                plain = asr.transcribe(r["path"])
                t1 = time.perf_counter()
                asr.score(r["path"], text)
                t2 = time.perf_counter()
                cost.append(
                    {
                        "plain_s": t1 - t0,
                        "scored_reused_s": r["qc_scored_s"],
                        "separate_score_s": t2 - t1,
                        "same_transcript": plain == r["transcript"],
                    }
                )
            out.append(
                {"voice": vname, "starter": s["id"], "kind": kind, **{k: v for k, v in r.items() if k != "path"}}
            )
        print(f"{vname} {s['id']}: {out[-len(variants)]['transcript'][:70]}", flush=True)
    for i, s in enumerate(starters):
        other = starters[(i + 1) % len(starters)]["id"]
        good = next(r for r in out if r["starter"] == other and r["kind"] == "good")
        scored = asr.score(paths[other], s["text"])
        out.append(
            {
                "voice": vname,
                "starter": s["id"],
                "kind": "other_starter",
                "read": other,
                "transcript": good["transcript"],
                "edges": recording_qc.edge_probabilities(scored),
                "audio_s": good["audio_s"],
            }
        )
    for r, c in zip([r for r in out if r["kind"] == "good"], cost):
        r["cost"] = c
    return out


_FEATURES: dict = {}


def _features(r: dict, prompts: dict) -> tuple[list[str], dict | None]:
    """The paper's flags and the edges' alignment evidence of a reading (they do not depend on
    the thresholds: computed once)."""
    key = (r["voice"], r["starter"], r["kind"], r["transcript"])
    if key not in _FEATURES:
        prompt = prompts[r["starter"]]
        ref, hyp = recording_qc.words(prompt), recording_qc.words(r["transcript"])
        _FEATURES[key] = (
            recording_qc.check(prompt, r["transcript"]).flags,
            recording_qc.edge_evidence(ref, hyp) if hyp else None,
        )
    return _FEATURES[key]


def flagged(
    r: dict, prompts: dict, first_p: float | None = None, last_p: float | None = None, cover: float = 0.0
) -> list[str]:
    """recording_qc.check()'s flags: the paper's rule alone without thresholds, else with the
    second opinion at these thresholds."""
    paper, evidence = _features(r, prompts)
    if first_p is None or r.get("edges") is None or evidence is None:
        return paper
    settings = {"on": True, "first_word_min_p": first_p, "last_word_min_p": last_p, "edge_min_cover": cover}
    forgiven = recording_qc.forgiven_flags(paper, r["edges"], evidence, settings)
    return [f for f in paper if f not in forgiven]


def pct(rows: list[dict], key: str) -> dict:
    hits = [bool(r[key]) for r in rows]
    return {"n": len(hits), "flagged": sum(hits), "pct": round(100 * sum(hits) / max(len(hits), 1), 1)}


def choose(rows: list[dict], prompts: dict) -> tuple[float, float, float]:
    """The (first_word_min_p, last_word_min_p, edge_min_cover) of GRID x GRID x COVER_GRID
    that flag every bad kind of rows at least TARGET_TRUE_PCT (or as many as the paper's rule
    alone does, where that is fewer: a bad reading whose transcript matches the prompt cannot
    be flagged by a rule that only removes flags) and the fewest good ones; of equals, the one
    nearest the middle of them."""
    kinds = {k: [r for r in rows if r["kind"] == k] for k in BAD_KINDS}
    kinds = {k: ks for k, ks in kinds.items() if ks}
    need = {
        k: min(TARGET_TRUE_PCT, 100 * sum(bool(flagged(r, prompts)) for r in ks) / len(ks)) for k, ks in kinds.items()
    }
    good = [r for r in rows if r["kind"] in GOOD_KINDS]
    scored = []
    for a in GRID:
        for b in GRID:
            for c in COVER_GRID:
                short = min(
                    100 * sum(bool(flagged(r, prompts, a, b, c)) for r in ks) / len(ks) - need[k]
                    for k, ks in kinds.items()
                )
                false = sum(bool(flagged(r, prompts, a, b, c)) for r in good)
                scored.append((short >= -1e-9, -false, min(short, 0.0), a, b, c))
    best = max(s[:3] for s in scored)
    ties = [(a, b, c) for ok, f, m, a, b, c in scored if (ok, f, m) == best]
    mid = [statistics.median(g.index(t[i]) for t in ties) for i, g in enumerate((GRID, GRID, COVER_GRID))]
    return min(ties, key=lambda t: sum((g.index(t[i]) - mid[i]) ** 2 for i, g in enumerate((GRID, GRID, COVER_GRID))))


def report(args, asr_name: str, starters: list[dict], readings: list[dict], seconds: float) -> dict:
    prompts = {s["id"]: s["text"] for s in starters}
    voices = sorted({r["voice"] for r in readings})
    chosen = {}
    for v in voices:
        train = [r for r in readings if r["voice"] != v]
        chosen[v] = choose(train, prompts) if train else (None, None, 0.0)
        for r in readings:
            if r["voice"] == v:
                r["flags_paper"] = flagged(r, prompts)
                r["flags_second_opinion"] = (
                    r["flags_paper"] if chosen[v][0] is None else flagged(r, prompts, *chosen[v])
                )
    all_voices = choose(readings, prompts)
    split = {s["id"]: s.get("split", "") for s in starters}
    held_out = None
    if any(split.values()):
        tune = [r for r in readings if split[r["starter"]] == "tune"]
        tuned = choose(tune, prompts)
        test = [r for r in readings if split[r["starter"]] == "held_out"]
        for r in test:
            r["flags_held_out"] = flagged(r, prompts, *tuned)
            r["flags_defaults"] = flagged(r, prompts, *(recording_qc.SECOND_OPINION_DEFAULTS[k] for k in DEFAULT_KEYS))
        held_out = {
            "thresholds_from_tune": {
                "first_word_min_p": tuned[0],
                "last_word_min_p": tuned[1],
                "edge_min_cover": tuned[2],
            },
            "starters": sorted({r["starter"] for r in test}),
            "table": {k: pct([r for r in test if r["kind"] == k], "flags_held_out") for k in GOOD_KINDS + BAD_KINDS},
            "by_voice": {
                v: {
                    "good": pct([r for r in test if r["voice"] == v and r["kind"] in GOOD_KINDS], "flags_held_out"),
                    **{
                        k: pct([r for r in test if r["voice"] == v and r["kind"] == k], "flags_held_out")
                        for k in BAD_KINDS
                    },
                }
                for v in voices
            },
            "paper_rule_good": pct([r for r in test if r["kind"] in GOOD_KINDS], "flags_paper"),
        }
        held_out["all good kinds"] = pct([r for r in test if r["kind"] in GOOD_KINDS], "flags_held_out")
        # the same held-out readings under the code's defaults (chosen on the tune starters)
        held_out["code_defaults_by_voice"] = {
            v: {
                "good": pct([r for r in test if r["voice"] == v and r["kind"] in GOOD_KINDS], "flags_defaults"),
                **{
                    k: pct([r for r in test if r["voice"] == v and r["kind"] == k], "flags_defaults") for k in BAD_KINDS
                },
            }
            for v in voices
        }
        held_out["missed_targets"] = {
            **{
                f"false flags, voice {v}": held_out["by_voice"][v]["good"]["pct"]
                for v in voices
                if held_out["by_voice"][v]["good"]["pct"] > TARGET_FALSE_PCT
            },
            **{
                f"true flags, {k}, voice {v}": held_out["by_voice"][v][k]["pct"]
                for v in voices
                for k in BAD_KINDS
                if held_out["by_voice"][v][k]["n"] and held_out["by_voice"][v][k]["pct"] < TARGET_TRUE_PCT
            },
        }

    def row(kinds):
        rs = [r for r in readings if r["kind"] in kinds]
        return {"paper_rule": pct(rs, "flags_paper"), "second_opinion_lovo": pct(rs, "flags_second_opinion")}

    table = {k: row((k,)) for k in GOOD_KINDS + BAD_KINDS}
    table["all good kinds"] = row(GOOD_KINDS)
    by_voice = {
        v: {
            k: pct([r for r in readings if r["voice"] == v and r["kind"] == k], "flags_second_opinion")
            for k in GOOD_KINDS
        }
        for v in voices
    }
    costs = [r["cost"] for r in readings if r.get("cost")]
    cost = (
        {k: round(statistics.mean(c[k] for c in costs), 2) for k in ("plain_s", "scored_reused_s", "separate_score_s")}
        if costs
        else {}
    )
    if costs:
        cost["extra_reused_s"] = round(cost["scored_reused_s"] - cost["plain_s"], 2)
        cost["n"] = len(costs)
        cost["same_transcript"] = all(c["same_transcript"] for c in costs)
    missed_targets = {
        **{
            f"false flags, {k}": table[k]["second_opinion_lovo"]["pct"]
            for k in GOOD_KINDS
            if table[k]["second_opinion_lovo"]["pct"] >= TARGET_FALSE_PCT
        },
        **{
            f"false flags, {k}, voice {v}": by_voice[v][k]["pct"]
            for v in voices
            for k in GOOD_KINDS
            if by_voice[v][k]["pct"] >= TARGET_FALSE_PCT
        },
        **{
            f"true flags, {k}": table[k]["second_opinion_lovo"]["pct"]
            for k in BAD_KINDS
            if table[k]["second_opinion_lovo"]["pct"] < TARGET_TRUE_PCT
        },
    }
    out = {
        "asr": asr_name,
        "voices": voices,
        "starters": [s["id"] for s in starters],
        "lead_silence_s": LEAD_S,
        "pause_s": PAUSE_S,
        "grid": GRID,
        "targets": {"false_flag_pct_below": TARGET_FALSE_PCT, "true_flag_pct_min": TARGET_TRUE_PCT},
        "thresholds_leave_one_voice_out": {
            v: {"first_word_min_p": a, "last_word_min_p": b, "edge_min_cover": c} for v, (a, b, c) in chosen.items()
        },
        "thresholds_all_voices": {
            "first_word_min_p": all_voices[0],
            "last_word_min_p": all_voices[1],
            "edge_min_cover": all_voices[2],
        },
        "code_defaults": {k: recording_qc.SECOND_OPINION_DEFAULTS[k] for k in DEFAULT_KEYS},
        "table": table,
        "held_out": held_out,  # --starters-file with a split: thresholds from tune, figures on held_out
        "false_flags_by_voice": by_voice,
        "missed_targets": missed_targets,
        "cost_per_recording_s": cost,
        "false_flagged": [
            {k: r.get(k) for k in ("voice", "starter", "kind", "flags_second_opinion", "edges", "transcript")}
            for r in readings
            if r["kind"] in GOOD_KINDS and r["flags_second_opinion"]
        ],
        "missed": [
            {k: r.get(k) for k in ("voice", "starter", "kind", "flags_paper", "edges", "transcript")}
            for r in readings
            if r["kind"] in BAD_KINDS and not r["flags_second_opinion"]
        ],
        "seconds": round(seconds, 1),
        "machine": getattr(args, "machine", None) or machine(),
        "readings": readings,
        "measured_at": getattr(args, "measured_at", None) or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=1))
    return out


def reused(path: str, voices: list[str], starters: list[dict]) -> list[dict]:
    """The readings of a results file's other voices, each as it was measured."""
    old = json.loads(Path(path).read_text(encoding="utf-8"))
    if set(old["starters"]) != {s["id"] for s in starters}:
        raise SystemExit(f"{path} read other starters ({', '.join(old['starters'])})")
    out = [r for r in old["readings"] if r["voice"] not in voices]
    long = [f"{r['voice']} {r['starter']} {r['kind']}" for r in out if r["audio_s"] > 30.0]
    if long:
        raise SystemExit(f"{path}: readings over 30 s are scored otherwise now, run their voices: {', '.join(long)}")
    return [{k: v for k, v in r.items() if not k.startswith("flags_")} for r in out]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--voices", default="joe,joe-noise,espeak-en-us,espeak-en-gb,espeak-en-us-slow")
    ap.add_argument("--starters", type=int, default=0, help="N starters spread over the demo's (0: all)")
    ap.add_argument("--from", dest="src", default="", help="recompute from this results file's readings")
    ap.add_argument("--reuse", default="", help="take the voices not in --voices from this results file")
    ap.add_argument(
        "--starters-file",
        default=str(ROOT / "assets" / "demo_study" / "starters.csv"),
        help="starters CSV (id, text; optional split tune|held_out), e.g. benchmarks/usability/qc_starters.csv",
    )
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "qc_flags.json"))
    args = ap.parse_args()
    with open(args.starters_file, newline="", encoding="utf-8") as f:
        starters = list(csv.DictReader(f))
    if args.src:
        old = json.loads(Path(args.src).read_text(encoding="utf-8"))
        starters = [s for s in starters if s["id"] in old["starters"]]
        args.machine, args.measured_at = old["machine"], old["measured_at"]  # where the models ran
        out = report(args, old["asr"], starters, old["readings"], old["seconds"])
    else:
        if args.starters:  # spread over the demo's domains, not the first N of one
            step = len(starters) / args.starters
            starters = [starters[int(i * step)] for i in range(args.starters)]
        asr = systems.build_asr(recording_qc.DEFAULT_QC_ASR)
        readings: list[dict] = reused(args.reuse, args.voices.split(","), starters) if args.reuse else []
        t_start = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            # load the model before anything is timed
            noise = np.random.default_rng(0).uniform(-0.3, 0.3, 16000).astype(np.float32)
            asr.transcribe(store(noise, 16000, Path(tmp), "warm-up").path_16k)
            for vname in args.voices.split(","):
                readings += readings_of(asr, vname, starters, Path(tmp))
                # the figures so far after each voice (a slow machine can stop the run and keep them)
                out = report(args, asr.name, starters, readings, time.perf_counter() - t_start)
    print(
        json.dumps(
            {
                k: out[k]
                for k in (
                    "table",
                    "thresholds_leave_one_voice_out",
                    "thresholds_all_voices",
                    "missed_targets",
                    "held_out",
                    "cost_per_recording_s",
                )
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
