"""How often recording QC flags good readings (false flags) and bad ones (true flags).

    .venv/bin/python benchmarks/usability/qc_flags.py [--voices joe,espeak-en-us] [--starters N]
        [--qc-asr '{"asr": "transformers-whisper", "asr_model": "openai/whisper-large-v3"}']

Every demo starter is read by the project's TTS (Piper's joe voice, espeak-ng en-us), after
0.4 s of silence as a participant leaves after pressing record, and goes through the intake
(16 kHz mono). The study's default QC ASR (services/usability/recording_qc.DEFAULT_QC_ASR), or the one
--qc-asr gives (a study's [usability] qc_asr as JSON, e.g. Whisper large-v3 on a GPU host),
transcribes:
- the whole reading: a good recording; a flag is a false flag;
- the reading with its first 0.5 s or 1.5 s of speech cut (a late microphone), or its last
  0.5 s or 1.5 s cut (stopped too early): bad recordings;
- another starter's reading (the next one) checked against this starter's prompt: bad.
A flag on a bad recording is a true flag. Each reading is also checked with the rule before
Whisper's normaliser (jiwer lower case and punctuation only), for comparison.
Writes benchmarks/results/qc_flags.json.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import jiwer  # noqa: E402
import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from benchmarks.common import machine  # noqa: E402
from services.models import systems
from services.models.tts import EspeakTTS, PiperTTS  # noqa: E402
from services.usability import recording_qc  # noqa: E402
from services.usability.audio_intake import store_recording  # noqa: E402

LEAD_S = 0.4
CUTS_S = (0.5, 1.5)
_OLD = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(),
                      jiwer.Strip(), jiwer.ReduceToListOfListOfWords()])


def old_flagged(prompt: str, transcript: str) -> bool:
    """The rule as it was before this benchmark: jiwer's lower case and punctuation only."""
    ref, hyp = (_OLD(prompt or "") or [[]])[0], (_OLD(transcript or "") or [[]])[0]
    if not hyp:
        return True
    wer = jiwer.wer(" ".join(ref), " ".join(hyp)) if ref else 1.0
    return hyp[:3] != ref[:3] or hyp[-3:] != ref[-3:] or wer > recording_qc.MAX_WER


def voice(name: str):
    if name == "joe":
        return PiperTTS(deterministic=True)
    if name.startswith("espeak-"):
        return EspeakTTS(name.removeprefix("espeak-"))
    raise SystemExit(f"unknown voice {name} (joe or espeak-<voice>)")


def speech(tts, text: str) -> tuple[np.ndarray, int]:
    x, rate = sf.read(io.BytesIO(tts.synthesize(text)), dtype="float32")
    if x.ndim > 1:
        x = x.mean(axis=1)
    # TTS output starts and ends with a little silence: trim it so a cut removes speech
    loud = np.flatnonzero(np.abs(x) > 0.02)
    return x[loud[0]:loud[-1] + 1], rate


def transcribe(asr, x: np.ndarray, rate: int, folder: Path, name: str) -> tuple[str, float]:
    lead = np.zeros(int(LEAD_S * rate), np.float32)
    path = folder / f"{name}.wav"
    sf.write(str(path), np.concatenate([lead, x, lead]), rate, subtype="PCM_16")
    stored = store_recording(path, folder / "media", 60)
    return asr.transcribe(stored.path_16k), stored.duration_s


def report(args, asr, starters, readings, seconds) -> dict:
    prompts = {s["id"]: s["text"] for s in starters}
    for r in readings:
        qc = recording_qc.check(prompts[r["starter"]], r["transcript"])
        r.update(flags=qc.flags, wer=qc.wer, flagged_before=old_flagged(prompts[r["starter"]], r["transcript"]))

    def rate(rows, key="flags"):
        hits = [bool(r[key]) for r in rows]
        return {"n": len(hits), "flagged": sum(hits), "pct": round(100 * sum(hits) / max(len(hits), 1), 1)}

    good = [r for r in readings if r["kind"] == "good"]
    bad = [r for r in readings if r["kind"] != "good"]
    voices = sorted({r["voice"] for r in good})
    summary = {
        "false_flags": rate(good), "true_flags": rate(bad),
        "true_flags_by_kind": {k: rate([r for r in bad if r["kind"] == k]) for k in sorted({r["kind"] for r in bad})},
        "false_flags_by_voice": {v: rate([r for r in good if r["voice"] == v]) for v in voices},
        "false_flag_reasons": {f: sum(f in r["flags"] for r in good)
                               for f in recording_qc.FLAG_TEXT if any(f in r["flags"] for r in good)},
        "before_whisper_normaliser": {"false_flags": rate(good, "flagged_before"),
                                      "true_flags": rate(bad, "flagged_before")},
    }
    out = {"qc_asr": args.qc_asr, "asr": asr.name, "voices": voices,
           "starters": len(starters), "cuts_s": args.cuts, "lead_silence_s": LEAD_S,
           "targets": {"false_flag_pct_max": 5.0, "true_flag_pct_min": 100.0},
           "met": {"false_flags": summary["false_flags"]["pct"] < 5.0,
                   "true_flags": summary["true_flags"]["pct"] >= 100.0},
           "summary": summary, "false_flagged": [
               {k: r[k] for k in ("voice", "starter", "flags", "wer", "transcript")} for r in good if r["flags"]],
           "missed": [{k: r[k] for k in ("voice", "starter", "kind", "wer", "transcript")}
                      for r in bad if not r["flags"]],
           "seconds": round(seconds, 1), "machine": machine(),
           "readings": readings, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=2))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--voices", default="joe,espeak-en-us")
    ap.add_argument("--starters", type=int, default=0, help="the first N (0: all)")
    ap.add_argument("--cuts", default="0.5,1.5", help="seconds of speech cut at the start or end")
    ap.add_argument("--qc-asr", default="", help="a [usability] qc_asr table as JSON (default: the study default)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "qc_flags.json"))
    args = ap.parse_args()
    args.qc_asr = recording_qc.qc_asr_config({"qc_asr": json.loads(args.qc_asr) if args.qc_asr else {}})
    errors = recording_qc.qc_asr_problems(args.qc_asr)
    if errors:
        raise SystemExit("; ".join(f"qc_asr.{k} {m}" for k, m in errors))
    args.cuts = [float(c) for c in args.cuts.split(",") if c]
    with open(ROOT / "assets" / "demo_study" / "starters.csv", newline="", encoding="utf-8") as f:
        starters = list(csv.DictReader(f))
    starters = starters[: args.starters] if args.starters else starters
    asr = systems.build_asr(args.qc_asr)
    readings: list[dict] = []
    t_start = time.perf_counter()
    audio = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # good readings of every voice first, then the bad ones; the figures so far are written
        # after each pass (a slow machine can stop the run and keep them)
        for vname in args.voices.split(","):
            tts, whole = voice(vname), {}
            for s in starters:
                x, rate = audio[vname, s["id"]] = speech(tts, s["text"])
                whole[s["id"]], audio_s = transcribe(asr, x, rate, folder, f"{vname}-{s['id']}")
                readings.append({"voice": vname, "starter": s["id"], "kind": "good", "audio_s": audio_s,
                                 "transcript": whole[s["id"]]})
                print(f"{vname} {s['id']}: {whole[s['id']]}", flush=True)
            for i, s in enumerate(starters):
                other = starters[(i + 1) % len(starters)]["id"]
                readings.append({"voice": vname, "starter": s["id"], "kind": "other_starter",
                                 "read": other, "transcript": whole[other]})
            report(args, asr, starters, readings, time.perf_counter() - t_start)
        for vname in args.voices.split(","):
            for s in starters:
                x, rate = audio[vname, s["id"]]
                for cut in args.cuts:
                    n = int(cut * rate)
                    for kind, part in ((f"cut_start_{cut}s", x[n:]), (f"cut_end_{cut}s", x[:-n])):
                        tr, audio_s = transcribe(asr, part, rate, folder, f"{vname}-{s['id']}-{kind}")
                        readings.append({"voice": vname, "starter": s["id"], "kind": kind, "audio_s": audio_s,
                                         "transcript": tr})
                print(f"{vname} {s['id']}: cuts done", flush=True)
            out = report(args, asr, starters, readings, time.perf_counter() - t_start)
    print(json.dumps({k: out[k] for k in ("met", "summary", "false_flagged", "missed")}, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
