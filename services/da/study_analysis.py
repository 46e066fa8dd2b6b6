"""The DA analysis of a stored campaign, as the Analysis tab (and `app.py analyze da --study`)
shows it: the analysis with the study's own settings (fast_item_s, keep_fast), each rater's HIT
outcome (the reruns), paper 001's Table 1 from the imported segments, and notes wherever the
campaign departs from the paper (a failed HIT out of reruns, audio not from the configured
engine)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from services.da import analysis as da_analysis
from services.da import campaign as da_campaign
from storage import studies
from storage.da import hits
from storage.db import required

# section 2.2.2: "we used the Google Cloud Text-to-Speech (TTS) Service (GCS)"; tts_backend
# "auto" means Google when credentials are configured, so Google is what "auto" intends
PAPER_ENGINE = "google"
HIT_OUTCOME_COLUMNS = [
    "worker_id",
    "hit_id",
    "modality",
    "run",
    "p_value",
    "reliable",
    "fast",
    "median_item_s",
    "rerun",
    "decided_at",
]


PILOT_NOTE = (
    "pilot: keep_every_worker = true, so every worker is kept whatever the reliability test says "
    "(WMT's method, as `analyze da --wmt`: system and ask_again items scored, fast HITs kept, ranked by z)"
)


@dataclass
class CampaignAnalysis:
    judgments: pd.DataFrame
    result: da_analysis.DAResult
    figures: dict
    table1: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=da_analysis.TABLE1_COLUMNS))
    hit_outcomes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=HIT_OUTCOME_COLUMNS))
    notes: list[str] = field(default_factory=list)


def segments_table1(database, study_id: str) -> pd.DataFrame:
    """Paper 001's Table 1 from the study's imported DA segments."""
    segs = pd.DataFrame(hits.da_segments(database, study_id))
    return da_analysis.table1(segs) if len(segs) else pd.DataFrame(columns=da_analysis.TABLE1_COLUMNS)


def tts_notes(judgments: pd.DataFrame, da: dict) -> list[str]:
    """A line for each TTS engine that spoke judged audio items other than the one the study
    asks for (tts_backend; "auto" asks for Google, paper 001's engine)."""
    wanted = da.get("tts_backend", "auto")
    wanted = PAPER_ENGINE if wanted == "auto" else wanted
    audio = judgments[(judgments["modality"] == "audio")]
    notes = []
    for (engine, voice), g in audio.groupby(
        [audio["tts_engine"].fillna("unknown"), audio["tts_voice"].fillna("unknown")], sort=True
    ):
        if not str(engine).startswith(wanted):  # espeak is stored as espeak-ng
            notes.append(
                f"{len(g)} audio judgments were spoken by {engine} (voice {voice}), not by "
                f"{wanted}{' (paper 001 used Google Cloud TTS)' if wanted == PAPER_ENGINE else ''}"
            )
    return notes


def rerun_notes(outcomes: pd.DataFrame, reruns: int) -> list[str]:
    """A line for each (HIT, modality, run) whose last rater failed quality control once its
    reruns were spent: that HIT stays without a reliable rater's judgments."""
    notes = []
    for (hit, modality, run), g in outcomes.groupby(["hit_id", "modality", "run"], sort=True):
        if not (g["reliable"].astype(bool) & ~g["fast"].astype(bool)).any() and (~g["rerun"].astype(bool)).any():
            notes.append(
                f"HIT {hit} ({modality}, run {run}): {int(g['rerun'].sum())} reruns used (reruns = "
                f"{reruns}), no rater passed quality control; the HIT stays as it is"
            )
    return notes


def analyse(database, study_id: str, alpha: float | None = None) -> CampaignAnalysis | str:
    """The campaign's judgments, their analysis and its figures, or the message to show instead.
    alpha None (a blank field): the study's own da.reliability_alpha, the level its reruns were
    decided at (paper 001 section 2.2.3: 0.05), so the analysis and the campaign agree."""
    if alpha is not None:
        alpha = da_analysis.check_alpha(alpha)  # checked first
    df = da_campaign.judgments_frame(database, study_id) if study_id else None
    if df is None or df.empty:
        return "No DA judgments yet (pick the study above and press Show first)."
    da = required(studies.get_study(database, study_id), "study with DA judgments")["config"]["da"]
    if alpha is None:
        alpha = da_analysis.check_alpha(float(da.get("reliability_alpha", 0.05)))
    keep_every = bool(da.get("keep_every_worker", False))
    res = da_analysis.analyze(
        df,
        alpha=alpha,
        wmt=keep_every,  # a pilot keeps every worker, as `analyze da --wmt` does
        fast_item_s=float(da.get("fast_item_s", da_analysis.FAST_ITEM_S)),
        keep_fast=bool(da.get("keep_fast", False)) or keep_every,
    )
    outcomes = pd.DataFrame(hits.da_hit_outcome_rows(database, study_id), columns=HIT_OUTCOME_COLUMNS)
    notes = [PILOT_NOTE] if keep_every else []
    notes += rerun_notes(outcomes, int(da.get("reruns", 2))) + tts_notes(df, da)
    return CampaignAnalysis(df, res, da_analysis.figures(res), segments_table1(database, study_id), outcomes, notes)


def _p(p) -> str:
    return "no control pairs" if p is None else ("p < 0.001" if p < 0.001 else f"p = {p:.2g}")


def qc_outcome(outcome: dict | None, da: dict) -> str:
    """A DA rater's HIT outcome (da_hit_outcomes, decided by analysis.hit_verdict when the HIT was
    done) in the words a payer acts on: "passed (p = 0.003)", "failed reliability test
    (p = 0.41); HIT re-run", "too fast (median 1.2 s per item)"; a pilot that keeps every worker
    (da.keep_every_worker) adds "kept (pilot)" to a failed one; with keep_fast a fast HIT is no failure."""
    if outcome is None:
        return "not judged (HIT not finished)"
    s = outcome["median_item_s"]
    speed = f"too fast (median {s:.1f} s per item)" if s is not None else "too fast"
    failures = [] if outcome["reliable"] else [f"failed reliability test ({_p(outcome['p_value'])})"]
    if outcome["fast"] and not da.get("keep_fast"):
        failures.append(speed)
    if not failures:
        kept_fast = f"; {speed} but kept (keep_fast)" if outcome["fast"] else ""
        return f"passed ({_p(outcome['p_value'])}){kept_fast}"
    if da.get("keep_every_worker"):
        return "; ".join(failures) + "; kept (pilot)"
    return "; ".join(failures) + ("; HIT re-run" if outcome["rerun"] else "; HIT not re-run (reruns spent)")


def run_cli(database, study_id: str, out_dir, alpha: float | None = None) -> str:
    """`app.py analyze da --study ID --out DIR`: the campaign's analysis with its outputs, and
    table1.csv and hit_outcomes.csv beside them; returns the summary with the notes."""
    from pathlib import Path

    if not studies.get_study(database, study_id):
        raise ValueError(f"no study {study_id!r} in this database")
    done = analyse(database, study_id, alpha)
    if isinstance(done, str):
        raise ValueError(done)
    files = da_analysis.write_outputs(done.result, out_dir)
    for name, table in (("table1", done.table1), ("hit_outcomes", done.hit_outcomes)):
        path = Path(out_dir) / f"{name}.csv"
        table.to_csv(path, index=False)
        files.append(path)
    t1 = "\n".join(
        f"  {r.domain}: {r.segments} segments, {r.documents} documents, {r.mean_doc_segments:.1f} "
        f"segments per document (median {r.median_doc_segments:g}), {r.mean_doc_words:.1f} words"
        for r in done.table1.itertuples()
    )
    notes = "".join(f"\nnote: {n}" for n in done.notes)
    return (
        f"DA analysis of study {study_id}\n{da_analysis.summary(done.result)}{notes}\n"
        f"Table 1 (paper 001), segments and document length per domain:\n{t1}\n"
        f"{len(files)} files written to {out_dir}"
    )
