"""A simulated full usability study (paper 000) as benchmark and test.

    .venv/bin/python benchmarks/usability/study_sim.py run [--scales 0.1,0.5,1,2] [--http 1]
    .venv/bin/python benchmarks/usability/study_sim.py one --scale 0.05      # one size, printed
    .venv/bin/python benchmarks/usability/study_sim.py pair --scales 1,2 --out F.json  # HTTP, together
    .venv/bin/python benchmarks/usability/study_sim.py measure SNAPSHOT.db [--code /tmp/old]

`run` simulates the study at each size (a fraction of the paper's: 1 = 200 starters, 174
senders in 3 groups x 2 genders with 10 starters each, 3 systems, 60 receivers and 69
validators with 30 items each, 37 raters), each in a fresh process and a fresh database in a
temporary folder, and writes benchmarks/results/study_sim.json: per action (role, tab or
phase, view | submit, and the worker's, admin's and workflow's calls) the count, p50, p95 and
max latency, the ratio of the largest size's figures to the smallest's, actions per second,
peak RSS, the end-of-run checks and the analysis of the app's own export.

The study: a generated corpus (sim_corpus.py: starters in the paper's domain x source cells
with 5-10 questions each) imported with services/setup/importer.py, participants added with
services/setup/enrolment.add_participants (senders in three waves, 10% of the receivers,
validators and raters as late joiners halfway). Simulated participants act only through
services.participation.items.get_view and services.participation.submissions.submit, as the tabs do: each
visit opens the participant's tab (a view) and submits 1-4 items in a row, each submit returning the next item;
2% of the submits are sent twice (a double click: must save nothing). The worker's model step
is simulated: after a recording is saved, services.usability.pipeline.record_outcome stores a stand-in
translation and the QC of a transcript (the starter's text, or for 5% of the readings the text
without its first three words, which QC flags); the admin reviews the flagged recordings
(services.admin.usability_review: accept, reject about 15%, never a sender's second). 21% of the
senders drop out after recording (services.usability.dropouts.drop_out); their exchanges' surveys go to
raters. Halfway one receiver with open items is deactivated and their open items reassigned
(services.admin.participants). The database is copied (storage/backup.py) halfway and at the end.

Planted effects (the answers are deterministic per item, whoever gives them): the informed
survey's latent u = 1.45 + 0.5 u_b + system (DeSTA2 0, Phi-4 +0.15, Voxtral +0.4) + 0.3 for
health + the speaker's intercept (sd 0.3) + noise (sd 0.45), each of the three Likert items an unbiased
dithered rounding of it (benchmarks/usability/analysis.py's rule); the baseline likewise around
3.3; receivers' "cannot answer" flags and validators' SQM scores and marks follow a per-system
quality. The end of each run checks: every exchange of an active or replaced (dropped-out)
sender whose recording was not rejected has answers, a validation and both surveys by one
person; the design cells are balanced (the table is printed); nothing is stored twice; a final
services.usability.workflow.refresh adds nothing; the deactivated receiver's items were done by others;
and (unless --no-analysis) `python app.py analyze usability` on the app's export of the study
(services/usability/export.exchanges_frame, the analysis tab's input, as CSV) recovers the
planted system, topic and u_b effects within their 95% CIs; the tidy export
(`python app.py export`) runs too.

`run --http SCALE` (or `one --http`) adds, halfway through the run at that size, a sample over
HTTP, not counted in the in-process figures: the app is
launched on a free loopback port against the simulation's database (TRADLAB_WORKER=0) and 16,
then 50 participants of every role at once drive the same endpoints the tabs use (/view,
/record_submit with an upload, /receiver_submit, /validator_submit, /survey_submit; see
sim_http.py), timed against a bare Gradio no-op event (benchmarks/load.py's) with the same
clients. `pair --scales 1,2 --out F` simulates the sizes at once, each on its own thread and
database, and takes their HTTP samples together halfway, round by round in turn (Rendezvous,
sim_http.http_samples): the 200% / 100% ratios within one run (no analysis).

`measure SNAPSHOT` times, on a copy of a snapshot, a fixed seeded sample of views and submits of
every role and some workflow.refresh calls, using only those three calls, so the same command
can run against another checkout: `--code DIR` (repeatable) runs it once per checkout with
PYTHONPATH=DIR (e.g. `git worktree add /tmp/old ea8cfeb`) and once on this one, and writes the
before/after figures side by side (benchmarks/results/study_sim_measure.json).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    # appended, not prepended: with PYTHONPATH=/other/checkout (measure --code) that checkout's
    # services and storage are the ones imported
    sys.path.append(str(ROOT))

from benchmarks.usability import sim_corpus  # noqa: E402
from harness.measure import percentile  # noqa: E402

try:  # where the starters are read: storage/usability/corpus.py since issue 52's corpus move
    from storage.usability import corpus as usability_corpus
except ImportError:  # an older checkout measured with --code
    from storage import studies as usability_corpus  # type: ignore[no-redef]

RESULTS = ROOT / "benchmarks" / "results"
STUDY_ID = "sim"
GROUPS = ("USW", "USB", "Hindi")
GENDERS = ("Man", "Woman")
PAPER = {
    "starters": 200,
    "senders_per_cell": 29,
    "receivers": 60,
    "validators": 69,
    "raters": 37,
    "items_per_sender": 10,
    "items_per_receiver": 30,
    "items_per_validator": 30,
}

# planted effects on the informed survey (the LMM's terms, reference DeSTA2 / everyday)
SYSTEM_FX = {"DeSTA2": 0.0, "Phi-4": 0.15, "Voxtral": 0.4}
TOPIC_FX = {"everyday": 0.0, "health": 0.3}
U_B = 0.5
INTERCEPT = 1.45
PERSON_SD = 0.3
RESID_SD = 0.45
BASELINE_MEAN, BASELINE_SD, BASELINE_PERSON_SD = 3.3, 0.55, 0.3
PLANTED = {
    "system: Phi-4": SYSTEM_FX["Phi-4"],
    "system: Voxtral": SYSTEM_FX["Voxtral"],
    "topic: health": TOPIC_FX["health"],
    "u_b": U_B,
}
# receivers and validators: a per-system quality in 0..1
QUALITY = {"DeSTA2": 0.6, "Phi-4": 0.7, "Voxtral": 0.85}

DROPOUT = 0.21  # of the senders, after recording and before their surveys
FLAG_SHARE = 0.05  # readings whose transcript misses the first three words (QC flags them)
REJECT_SHARE = 0.15  # of the flagged recordings the admin reviews
DOUBLE_SUBMIT = 0.02  # submits sent twice
LATE_SHARE = 0.10  # receivers, validators, raters joining halfway
SENDER_WAVES = (0.0, 0.2, 0.4)  # recordings done (share of all) when each third of the senders joins
MIDPOINT = 0.5  # late joiners, mid-study snapshot; the deactivation and HTTP sample follow
MAX_ROUNDS = 5000
MORE_RECEIVER_CALLS = 3  # times the lab adds receivers when the dashboard lists blocked places


# -- sizes -------------------------------------------------------------------------------------
@dataclass
class Sizes:
    scale: float
    starters: int
    senders_per_cell: int
    receivers: int
    validators: int
    raters: int
    dropouts: int
    items_per_sender: int = PAPER["items_per_sender"]
    items_per_receiver: int = PAPER["items_per_receiver"]
    items_per_validator: int = PAPER["items_per_validator"]

    @classmethod
    def at(cls, scale: float) -> "Sizes":
        per_cell = max(2, round(PAPER["senders_per_cell"] * scale))
        senders = per_cell * len(GROUPS) * len(GENDERS)
        exchanges = senders * PAPER["items_per_sender"]
        dropouts = round(DROPOUT * senders)
        # the paper's ratios; the receivers are raised to what the import says the design needs
        # (Sim.setup: services/usability/plan.py, a receiver takes one exchange of each starter)
        starters = max(20, round(PAPER["starters"] * scale))
        receivers = round(PAPER["receivers"] * scale)
        validators = max(round(PAPER["validators"] * scale), math.ceil(exchanges / PAPER["items_per_validator"]) + 1)
        raters = max(round(PAPER["raters"] * scale), dropouts, 1)
        return cls(scale, starters, per_cell, receivers, validators, raters, dropouts)

    @property
    def senders(self) -> int:
        return self.senders_per_cell * len(GROUPS) * len(GENDERS)


# -- timing ------------------------------------------------------------------------------------
def summarise(xs: list[float]) -> dict:
    return {
        "n": len(xs),
        "p50_ms": round(1000 * percentile(xs, 50), 2),
        "p95_ms": round(1000 * percentile(xs, 95), 2),
        "max_ms": round(1000 * max(xs), 2),
        "mean_ms": round(1000 * statistics.fmean(xs), 2),
        "total_s": round(sum(xs), 2),
    }


class Timer:
    def __init__(self):
        self.lat: dict[str, list[float]] = defaultdict(list)

    def __call__(self, key: str, fn, *args, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            self.lat[key].append(time.perf_counter() - t0)

    def table(self) -> dict:
        return {k: summarise(v) for k, v in sorted(self.lat.items())}


def peak_rss_mb() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"self_mb": round(own, 1), "largest_child_mb": round(kids, 1)}


# -- simulated answers -------------------------------------------------------------------------
def seeded(*parts) -> random.Random:
    from services.common.seeded import seeded_rng

    return seeded_rng("study-sim", *parts)


def likert3(latent: float, r: random.Random) -> list[int]:
    """Three 1..5 items whose mean is `latent` quantised to thirds without bias (dithered), as
    benchmarks/usability/analysis.py's _items."""
    k = min(15, max(3, math.floor(3 * latent + r.random())))
    base, rest = divmod(k, 3)
    items = [min(5, base + (rest > 0)), min(5, base + (rest > 1)), base]
    r.shuffle(items)
    return items


def write_wav(path: Path, seconds: float = 4.0, rate: int = 16000) -> Path:
    """A short real, non-silent recording: quiet lead-in, then a voiced-like tone with a
    syllable envelope (passes services/usability/audio_intake.py's checks)."""
    import numpy as np

    t = np.arange(int(seconds * rate)) / rate
    env = np.clip((t - 0.3) * 10, 0, 1) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2)
    x = (
        0.3
        * env
        * (np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t) + 0.2 * np.sin(2 * np.pi * 900 * t))
    )
    x += np.random.default_rng(0).normal(0, 0.002, len(t))
    pcm = (np.clip(x, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return path


class Answerer:
    """What a simulated participant answers for an item: deterministic per (person, item), so the
    in-process and HTTP participants, and `measure` on any checkout, give the same answers.
    Reads what it needs (an exchange's system and starter) through storage functions."""

    def __init__(self, database, seed: int, wav: Path):
        self.db, self.seed, self.wav = database, seed, wav
        self._ex: dict[int, dict] = {}
        self.baselines: dict[tuple[int, int], list[int]] = {}

    def exchange(self, exchange_id: int) -> dict:
        info = self._ex.get(exchange_id)
        if info is None:
            try:
                from storage.usability.exchanges import exchange
            except ImportError:  # a checkout from before the usability study's SQL moved to storage/usability/
                from storage.assignments import exchange  # type: ignore[no-redef]

            ex = exchange(self.db, exchange_id)
            st = usability_corpus.starter(self.db, ex["study_id"], ex["starter_id"])
            info = {
                "system": ex["system_id"],
                "domain": st["domain"],
                "text": st["text"],
                "starter": st,
                "sender_id": ex["sender_id"],
            }
            self._ex[exchange_id] = info
        return info

    def person_fx(self, pid: int, kind: str, sd: float) -> float:
        return seeded(self.seed, "person", pid, kind).gauss(0, sd)

    def stored_baseline(self, pid: int, exchange_id: int) -> list[int]:
        from storage import assignments

        try:
            from storage.usability.answers import survey
        except ImportError:  # a checkout from before the usability study's SQL moved to storage/usability/
            from storage.results import survey  # type: ignore[no-redef]

        a = assignments.find_assignment(self.db, pid, "survey_baseline", exchange_id)
        s = survey(self.db, a["id"]) if a else None
        if not s:
            raise RuntimeError(f"informed survey of exchange {exchange_id} for {pid} without a stored baseline")
        return [s["satisfaction"], s["trust"], s["reliance"]]

    def answer(self, pid: int, phase: str, item_key: str, content: dict) -> dict:
        if phase == "record":
            return {"audio": str(self.wav)}
        if phase == "receive":
            ex = int(item_key)
            q = QUALITY[self.exchange(ex)["system"]]
            r = seeded(self.seed, "receive", pid, ex)
            out = []
            for qu in content["questions"]:
                if r.random() < (1 - q) * 0.5:
                    out.append({"idx": qu["idx"], "text": "", "unanswerable": True})
                else:
                    out.append({"idx": qu["idx"], "text": f"resposta {qu['idx']}", "unanswerable": False})
            return {"answers": out}
        if phase == "validate":
            from storage import assignments

            ex = assignments.assignment(self.db, int(item_key))["exchange_id"]
            q = QUALITY[self.exchange(ex)["system"]]
            r = seeded(self.seed, "validate", pid, ex)
            tick = min(6, max(0, round(6 * q + r.gauss(0, 0.8))))
            marks = {
                a["idx"]: "correct" if r.random() < (0.3 if a["unanswerable"] else q) else "incorrect"
                for a in content["answers"]
            }
            return {"score": round(tick * 100 / 6), "marks": marks}
        if phase in ("survey_baseline", "survey_informed"):
            # seeded by the exchange, with the intercept of its speaker (the LMM's sender effect):
            # whoever answers (the sender, or a rater for a dropped-out one) gives the same answers,
            # so the analysed data do not depend on which rater the workflow picks
            ex = int(str(item_key).split(":")[-1])
            info = self.exchange(ex)
            speaker = info["sender_id"] or 0
            r = seeded(self.seed, phase, ex)
            if phase == "survey_baseline":
                latent = BASELINE_MEAN + self.person_fx(speaker, "b", BASELINE_PERSON_SD) + r.gauss(0, BASELINE_SD)
                items = likert3(latent, r)
                self.baselines[(pid, ex)] = items
            else:
                base = self.baselines.get((pid, ex)) or self.stored_baseline(pid, ex)
                latent = (
                    INTERCEPT
                    + U_B * statistics.fmean(base)
                    + SYSTEM_FX[info["system"]]
                    + TOPIC_FX[info["domain"]]
                    + self.person_fx(speaker, "u", PERSON_SD)
                    + r.gauss(0, RESID_SD)
                )
                items = likert3(latent, r)
            return dict(zip(("satisfaction", "trust", "reliance"), items))
        raise ValueError(f"no simulated answer for phase {phase}")


# -- the simulation ----------------------------------------------------------------------------
@dataclass
class Person:
    pid: int
    token: str
    role: str
    group: str | None = None
    gender: str | None = None
    tabs: tuple = ()
    tab_i: int = 0
    dropout: bool = False
    late: bool = False
    status: str = "active"  # active | dropped | deactivated | retired
    last: str = "new"  # the last view's status

    @property
    def tab(self) -> str:
        return self.tabs[self.tab_i]


ROLE_TABS = {
    "sender": ("record", "survey"),
    "receiver": ("receiver",),
    "validator": ("validator",),
    "rater": ("survey",),
}


class Sim:
    def __init__(self, workdir: Path, sizes: Sizes, seed: int = 1, http_scale: bool = False, log=print):
        self.dir, self.sizes, self.seed, self.log = Path(workdir), sizes, seed, log
        self.rng = random.Random(seed)
        self.t = Timer()
        self.people: list[Person] = []
        self.db_path = self.dir / "sim.db"
        self.media = self.dir / "media"
        self.snapshots: dict[str, str] = {}
        self.events: list[dict] = []
        self.problems: list[str] = []
        self.doubles = 0
        self.flagged: list[int] = []
        self.rejected: dict[int, int] = {}  # exchange -> sender
        self.accepted: list[int] = []
        self.dropped: list[int] = []
        self.deactivated: dict | None = None
        self.http = http_scale
        self.http_result: dict | None = None
        self.rendezvous: Rendezvous | None = None  # the sizes measured together (study_sim.py pair)
        self.submits = 0
        self.views = 0
        self.paused_s = 0.0
        self.rounds = 0
        self.more_receiver_calls = 0
        self.plan_notes: list[str] = []
        self.model_step, self.model_step_name = None, None

    # setup ---------------------------------------------------------------------------------
    def setup(self) -> None:
        from services.setup.importer import import_study
        from storage import open_database

        s = self.sizes
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in [self.db_path, *self.dir.glob("sim.db-*"), *self.dir.glob("snapshot-*.db")]:
            old.unlink(missing_ok=True)  # a fresh database every run
        for old in (self.media, self.dir / "study", self.dir / "analysis"):
            shutil.rmtree(old, ignore_errors=True)
        self.starters = sim_corpus.write_study(
            self.dir / "study",
            STUDY_ID,
            self.seed,
            s.starters,
            list(SYSTEM_FX),
            s.items_per_sender,
            s.items_per_receiver,
            s.items_per_validator,
        )
        self.db = open_database(self.db_path)
        imported = self.t("admin/import_study", import_study, self.db, self.dir / "study", actor="sim")
        # the lab reads the import's plan: at least the receivers the design needs at this many
        # senders per cell, and one more for the receiver deactivated midway
        s.receivers = max(s.receivers, self.receivers_needed() + 1)
        self.plan_notes = imported.notes
        self.wav = write_wav(self.dir / "reading.wav")
        self.answers = Answerer(self.db, self.seed, self.wav)
        from services.usability.dropouts import drop_out
        from services.usability.pipeline import record_outcome

        self.model_step, self.model_step_name = record_outcome, "services.usability.pipeline.record_outcome"
        self.drop_out = drop_out
        # who drops out: spread over the cells, the design index within a cell at random
        per_cell = {c: 0 for c in self.cells()}
        cells = list(self.cells())
        for i in range(s.dropouts):
            per_cell[cells[i % len(cells)]] += 1
        self.dropout_slots = {c: set(self.rng.sample(range(s.senders_per_cell), n)) for c, n in per_cell.items()}
        self.cell_added = {c: 0 for c in cells}
        self.waves = [round(s.senders_per_cell * (k + 1) / len(SENDER_WAVES)) for k in range(len(SENDER_WAVES))]
        self.add_senders(0)
        for role, n in (("receiver", s.receivers), ("validator", s.validators), ("rater", s.raters)):
            first = n - self.late_count(n)
            if first:
                self.add(role, first)
        self.pending = [("wave", k, SENDER_WAVES[k]) for k in range(1, len(SENDER_WAVES))]
        self.pending += [("late", None, MIDPOINT), ("snapshot", "mid", MIDPOINT), ("deactivate", None, MIDPOINT + 0.05)]
        if self.http:
            self.pending.append(("http", None, MIDPOINT + 0.1))

    def receivers_needed(self) -> int:
        """What the import's plan says for this many senders per cell (plan.design_lines)."""
        from services.usability import plan
        from storage import studies

        study = studies.get_study(self.db, STUDY_ID)
        starters = usability_corpus.starters(self.db, STUDY_ID)
        systems = [x["id"] for x in studies.systems(self.db, STUDY_ID) if x["config"]["assign"]]
        per_starter = plan.planned_exchanges(study, starters, systems, self.sizes.senders_per_cell)
        return plan.receivers_needed(per_starter, study["config"]["usability"], len(starters))

    def follow_the_dashboard(self) -> bool:
        """The study went quiet with receive places no receiver with room may take: the lab adds
        the receivers the dashboard asks for (plan.blocked; at most MORE_RECEIVER_CALLS times)."""
        from services.usability import plan
        from storage import studies

        if self.more_receiver_calls >= MORE_RECEIVER_CALLS:
            return False
        b = plan.blocked(self.db, studies.get_study(self.db, STUDY_ID))
        if b is None:
            return False
        self.more_receiver_calls += 1
        self.add("receiver", b.more_receivers, late=True)
        self.events.append(
            {"event": "more_receivers", "arg": b.more_receivers, "blocked_places": b.places, "round": self.rounds}
        )
        self.log(f"  round {self.rounds}: {b.places} receive places blocked: {b.more_receivers} more receiver(s)")
        return True

    @staticmethod
    def late_count(n: int) -> int:
        return max(1, round(LATE_SHARE * n)) if n > 1 else 0

    @staticmethod
    def cells():
        return [(g, s) for g in GROUPS for s in GENDERS]

    def add(self, role: str, n: int, group=None, gender=None, late=False) -> list[Person]:
        from services.setup.enrolment import add_participants

        t0 = time.perf_counter()
        made = self.t(
            "admin/add_participants", add_participants, self.db, STUDY_ID, role, n, group, gender, actor="sim"
        )
        # calls add more people at larger sizes: the cost per person added is the comparable figure
        self.t.lat[f"admin/add_participants per {role}"].append((time.perf_counter() - t0) / n)
        out = [Person(m.id, m.token, role, group, gender, ROLE_TABS[role], late=late) for m in made]
        self.people += out
        return out

    def add_senders(self, wave: int) -> None:
        for cell in self.cells():
            target = self.waves[wave]
            n = target - self.cell_added[cell]
            if n <= 0:
                continue
            made = self.add("sender", n, *cell, late=wave > 0)
            for k, p in enumerate(made):
                p.dropout = (self.cell_added[cell] + k) in self.dropout_slots[cell]
            self.cell_added[cell] += n

    # progress ------------------------------------------------------------------------------
    def planned_recordings(self) -> int:
        return self.sizes.senders * self.sizes.items_per_sender

    def recordings_done(self) -> int:
        return self.db.scalar(
            "SELECT COUNT(*) FROM recordings r JOIN exchanges e ON e.id = r.exchange_id WHERE e.study_id = ?",
            [STUDY_ID],
        )

    def fire_events(self, quiet: bool) -> bool:
        """Runs the due events (all of the next one's kind when the study has gone quiet)."""
        fired = False
        progress = self.recordings_done() / self.planned_recordings()
        while self.pending and (progress >= self.pending[0][2] or quiet):
            kind, arg, _ = self.pending[0]
            if kind == "deactivate" and not self.deactivate_one() and not quiet:
                break  # nobody holds open receiver items right now: try again next round
            self.pending.pop(0)
            self.events.append({"event": kind, "arg": arg, "round": self.rounds, "progress": round(progress, 3)})
            if kind == "wave":
                self.add_senders(arg)
            elif kind == "late":
                for role, n in (
                    ("receiver", self.sizes.receivers),
                    ("validator", self.sizes.validators),
                    ("rater", self.sizes.raters),
                ):
                    if self.late_count(n):
                        self.add(role, self.late_count(n), late=True)
            elif kind == "snapshot":
                self.snapshot(arg)
            elif kind == "http":
                from benchmarks.usability import sim_http

                t0 = time.perf_counter()
                if self.rendezvous is not None:
                    self.rendezvous(self)
                else:
                    self.http_result = sim_http.http_sample(self)
                self.paused_s += time.perf_counter() - t0  # not part of the in-process figures
            fired = True
            if quiet:
                break
        return fired

    def snapshot(self, name: str) -> None:
        from storage.backup import backup

        target = self.dir / f"snapshot-{name}.db"
        info = self.t("admin/snapshot", backup, self.db_path, target)
        self.snapshots[name] = str(target)
        self.log(f"  snapshot {name}: {info['bytes'] / 2**20:.1f} MB")

    def deactivate_one(self) -> bool:
        """A receiver with open items is deactivated and their open items reassigned."""
        if self.deactivated is not None:
            return True
        from services.admin.participants import deactivate, reassign_open_items
        from storage import assignments

        for p in sorted((p for p in self.people if p.role == "receiver" and p.status == "active"), key=lambda p: p.pid):
            if assignments.counts(self.db, p.pid, ("receive",))["open"] > 0:
                open_items = [a["item_id"] for a in assignments.open_assignments(self.db, p.pid)]
                self.t("admin/deactivate", deactivate, self.db, STUDY_ID, p.pid, "sim-admin")
                out = self.t("admin/reassign_open_items", reassign_open_items, self.db, STUDY_ID, p.pid, "sim-admin")
                p.status = "deactivated"
                self.deactivated = {
                    "participant": p.pid,
                    "open_items": open_items,
                    "moved": len(out.moved),
                    "waiting": len(out.waiting),
                    "dropped": len(out.dropped),
                }
                self.log(f"  deactivated receiver {p.pid}: {out.summary()}")
                return True
        return False

    # acting --------------------------------------------------------------------------------
    def visit(self, p: Person) -> int:
        """The participant opens their tab and submits 1-4 items in a row. Returns submits."""
        from services.participation.items import get_view
        from services.participation.submissions import submit

        tab = p.tab
        view = self.t(f"{p.role}/{tab}/view", get_view, self.db, p.token, tab)
        self.views += 1
        n = 0
        budget = self.rng.randint(1, 4)
        while view.status == "item" and n < budget:
            phase, key = view.phase, view.item_id
            payload = self.answers.answer(p.pid, phase, key, view.content)
            res = self.t(f"{p.role}/{phase}/submit", submit, self.db, p.token, tab, key, payload, media_dir=self.media)
            if not res.saved:
                self.problems.append(f"{p.role} {p.pid} {phase} {key}: not saved ({res.message})")
            n += 1
            self.submits += 1
            if self.rng.random() < DOUBLE_SUBMIT:
                again = self.t("double_submit", submit, self.db, p.token, tab, key, payload, media_dir=self.media)
                self.doubles += 1
                if again.saved:
                    self.problems.append(f"{p.role} {p.pid} {phase} {key}: a double submit saved again")
            if phase == "record":
                # a text given back after a rejection is "<exchange>-<attempt>" (its own QC draw)
                self.record_outcome(int(str(key).split("-")[0]), str(key))
            view = res.next
        p.last = view.status
        if view.status == "complete":
            self.finished_tab(p, view)
        return n

    def record_outcome(self, exchange_id: int, key: str = "") -> str:
        """The worker's model step, simulated: a stand-in translation, QC from a transcript."""
        from storage.usability import recordings

        rec = recordings.recording_for_exchange(self.db, exchange_id)
        info = self.answers.exchange(exchange_id)
        flagged = seeded(self.seed, "flag", key if "-" in key else exchange_id).random() < FLAG_SHARE
        transcript = " ".join(info["text"].split()[3:]) if flagged else info["text"]
        status = self.t(
            "worker/record_outcome",
            self.model_step,
            self.db,
            rec["id"],
            sim_corpus.translation(info["starter"], info["system"], exchange_id),
            transcript,
        )
        if status == "flagged":
            self.flagged.append(exchange_id)
        return status

    def finished_tab(self, p: Person, view) -> None:
        if p.role == "sender" and p.tab == "record":
            if p.dropout:
                self.drop(p)
            else:
                p.tab_i += 1
                p.last = "new"
        elif p.role == "sender":
            p.status = "retired"
        elif p.role in ("receiver", "validator"):
            p.status = "retired"
        elif p.role == "rater" and view.done >= 2 * self.sizes.items_per_sender:
            p.status = "retired"

    def drop(self, p: Person) -> None:
        p.status = "dropped"
        self.dropped.append(p.pid)
        self.t("sender/drop_out", self.drop_out, self.db, p.pid, actor="sim", reason="dropped out")

    def review(self) -> None:
        from services.admin.usability_review import decide, queue_for_review

        while True:
            rows = self.t("admin/review_queue", queue_for_review, self.db, STUDY_ID, limit=200)
            if not rows:
                return
            for r in rows:
                reject = (
                    r["sender_id"] not in self.rejected.values()
                    and seeded(self.seed, "reject", r["exchange_id"]).random() < REJECT_SHARE
                )
                out = self.t(
                    "admin/review_decide", decide, self.db, r["id"], "reject" if reject else "accept", "sim-admin"
                )
                if reject:
                    self.rejected[r["exchange_id"]] = r["sender_id"]
                if out.record_again:
                    # the text is back on the sender's record tab: a sender who had moved on to the
                    # survey tab, or finished, comes back to it (the page shows it on their next visit)
                    back = next((q for q in self.people if q.pid == r["sender_id"]), None)
                    if back is not None and back.status in ("active", "retired"):
                        back.status, back.tab_i, back.last = "active", back.tabs.index("record"), "new"
                else:
                    self.accepted.append(r["exchange_id"])

    def active(self) -> list[Person]:
        return [p for p in self.people if p.status == "active"]

    def run(self) -> None:
        t0 = time.perf_counter()
        while self.rounds < MAX_ROUNDS:
            self.rounds += 1
            people = self.active()
            self.rng.shuffle(people)
            n = 0
            for p in people:
                if self.rng.random() < (0.7 if p.last in ("item", "new") else 0.25):
                    n += self.visit(p)
            self.review()
            fired = self.fire_events(quiet=False)
            if n == 0 and not fired:
                # a quiet round: everyone still in the study looks once; then the next event, if any
                n = sum(self.visit(p) for p in self.active())
                self.review()
                if n == 0 and not self.fire_events(quiet=True) and not self.follow_the_dashboard():
                    break
            if self.rounds % 10 == 0:
                self.log(
                    f"  round {self.rounds}: {self.submits} submits, {self.views} views, "
                    f"{self.recordings_done()}/{self.planned_recordings()} recordings, "
                    f"{time.perf_counter() - t0:.0f} s"
                )
        self.wall_s = time.perf_counter() - t0 - self.paused_s


# -- end-of-run checks ---------------------------------------------------------------------------
def count_rows(db) -> dict:
    tables = [
        "assignments",
        "exchanges",
        "recordings",
        "translations",
        "answers",
        "validations",
        "validation_marks",
        "surveys",
        "participants",
    ]
    return {t: db.scalar(f"SELECT COUNT(*) FROM {t}") for t in tables}


def check_completeness(db, sim: Sim) -> tuple[dict, list[str]]:
    """Every exchange of an active or dropped-out sender, recorded and not rejected, has its answer
    sets (one per done receiver item, every question), a validation of each, and a baseline and an
    informed survey by one person: the sender, or for a dropped-out sender a rater (third person)."""
    problems: list[str] = []
    people = {
        r["id"]: r
        for r in db.query("SELECT id, role, active, excluded_at FROM participants WHERE study_id = ?", [STUDY_ID])
    }
    n_questions = {
        r["starter_id"]: r["n"]
        for r in db.query(
            "SELECT starter_id, COUNT(*) AS n FROM questions WHERE study_id = ? GROUP BY starter_id", [STUDY_ID]
        )
    }
    # an exchange once each, by its latest recording (one rejected is recorded again: issue 29)
    exchanges = db.query(
        "SELECT e.id, e.sender_id, e.starter_id, (SELECT r.qc_status FROM recordings r WHERE r.exchange_id = e.id "
        "ORDER BY r.id DESC LIMIT 1) AS qc_status FROM exchanges e WHERE e.study_id = ? AND EXISTS (SELECT 1 "
        "FROM assignments a WHERE a.exchange_id = e.id AND a.phase = 'record' AND a.status = 'done') ORDER BY e.id",
        [STUDY_ID],
    )
    receive = defaultdict(list)
    for r in db.query(
        "SELECT a.id, a.exchange_id, a.participant_id, (SELECT COUNT(*) FROM answers x WHERE "
        "x.assignment_id = a.id) AS answers, (SELECT COUNT(*) FROM validations v WHERE "
        "v.receive_assignment_id = a.id) AS validations FROM assignments a WHERE a.study_id = ? "
        "AND a.phase = 'receive' AND a.status = 'done'",
        [STUDY_ID],
    ):
        receive[r["exchange_id"]].append(r)
    surveys = defaultdict(list)
    for r in db.query(
        "SELECT s.exchange_id, s.stage, s.perspective, a.participant_id FROM surveys s "
        "JOIN assignments a ON a.id = s.assignment_id WHERE a.study_id = ?",
        [STUDY_ID],
    ):
        surveys[r["exchange_id"]].append(r)
    dropped = set(sim.dropped)
    counts = Counter()
    for e in exchanges:
        sender = people.get(e["sender_id"])
        if e["qc_status"] == "rejected":
            counts["rejected recording"] += 1
            continue
        if sender is None or sender["excluded_at"]:
            counts["sender excluded"] += 1
            continue
        kind = "dropped-out sender" if e["sender_id"] in dropped else "active sender"
        counts[kind] += 1
        where = f"exchange {e['id']} ({kind})"
        if e["qc_status"] not in ("passed", "accepted"):
            problems.append(f"{where}: recording {e['qc_status']}")
            continue
        sets = receive.get(e["id"], [])
        if not sets:
            problems.append(f"{where}: no answers")
        for s in sets:
            if s["answers"] != n_questions[e["starter_id"]]:
                problems.append(
                    f"{where}: answer set {s['id']} has {s['answers']} answers, "
                    f"{n_questions[e['starter_id']]} questions"
                )
            if s["validations"] != 1:
                problems.append(f"{where}: answer set {s['id']} has {s['validations']} validations")
        by = defaultdict(set)
        for s in surveys.get(e["id"], []):
            by[s["participant_id"]].add((s["stage"], s["perspective"]))
        complete = [pid for pid, st in by.items() if {x[0] for x in st} == {"baseline", "informed"}]
        if len(complete) != 1:
            problems.append(f"{where}: {len(complete)} people answered both surveys ({dict(by)})")
            continue
        pid = complete[0]
        if kind == "active sender" and pid != e["sender_id"]:
            problems.append(f"{where}: surveys by {pid}, not the sender {e['sender_id']}")
        if kind == "dropped-out sender" and people[pid]["role"] != "rater":
            problems.append(f"{where}: surveys by {people[pid]['role']} {pid}, not a rater")
        want = "first" if kind == "active sender" else "third"
        if {x[1] for x in by[pid]} != {want}:
            problems.append(f"{where}: perspective {sorted({x[1] for x in by[pid]})}, expected {want}")
        else:
            counts["complete"] += 1
    return dict(counts), problems


def check_stored_once(db) -> tuple[dict, list[str]]:
    """Nothing stored twice: one recording per record item and per exchange, one translation per
    exchange, one answer per question of an answer set, one validation per validator item and per
    answer set, one survey per survey item and per (exchange, stage), an item held once per phase
    (redundancy 1), no sender with the same starter twice."""
    q = {
        "recordings per record item": "SELECT assignment_id FROM recordings GROUP BY assignment_id HAVING COUNT(*) > 1",
        # an exchange recorded again after a rejection has two recordings, the first rejected
        "recordings after a passed one": "SELECT r.exchange_id FROM recordings r JOIN recordings later ON "
        "later.exchange_id = r.exchange_id AND later.id > r.id "
        "WHERE r.qc_status != 'rejected'",
        "translations per exchange": "SELECT exchange_id FROM translations GROUP BY exchange_id HAVING COUNT(*) > 1",
        "answers per question": "SELECT assignment_id FROM answers GROUP BY assignment_id, question_idx "
        "HAVING COUNT(*) > 1",
        "validations per validator item": "SELECT assignment_id FROM validations GROUP BY assignment_id "
        "HAVING COUNT(*) > 1",
        "validations per answer set": "SELECT receive_assignment_id FROM validations "
        "GROUP BY receive_assignment_id HAVING COUNT(*) > 1",
        "marks per answer": "SELECT validation_id FROM validation_marks GROUP BY validation_id, question_idx "
        "HAVING COUNT(*) > 1",
        "surveys per survey item": "SELECT assignment_id FROM surveys GROUP BY assignment_id HAVING COUNT(*) > 1",
        "surveys per exchange and stage": "SELECT exchange_id FROM surveys GROUP BY exchange_id, stage "
        "HAVING COUNT(*) > 1",
        "holders per item and phase (not withdrawn)": "SELECT item_id FROM assignments WHERE status != 'withdrawn' "
        "AND phase IN ('receive', 'validate', 'survey_baseline', "
        "'survey_informed') "
        "GROUP BY study_id, phase, item_id HAVING COUNT(*) > 1",
        "assignments per person, phase and item": "SELECT item_id FROM assignments WHERE status != 'withdrawn' "
        "GROUP BY participant_id, phase, item_id HAVING COUNT(*) > 1",
        "a sender's starter twice": "SELECT starter_id FROM exchanges WHERE sender_id IS NOT NULL "
        "GROUP BY sender_id, starter_id HAVING COUNT(*) > 1",
        "done items without their answer": "SELECT a.id FROM assignments a WHERE a.status = 'done' AND ("
        "(a.phase = 'record' AND NOT EXISTS "
        "(SELECT 1 FROM recordings r WHERE r.assignment_id = a.id)) OR "
        "(a.phase = 'receive' AND NOT EXISTS "
        "(SELECT 1 FROM answers r WHERE r.assignment_id = a.id)) OR "
        "(a.phase = 'validate' AND NOT EXISTS "
        "(SELECT 1 FROM validations r WHERE r.assignment_id = a.id)) OR "
        "(a.phase LIKE 'survey%' AND NOT EXISTS "
        "(SELECT 1 FROM surveys r WHERE r.assignment_id = a.id)))",
        "answers of items not done": "SELECT a.id FROM assignments a WHERE a.status != 'done' AND ("
        "EXISTS (SELECT 1 FROM recordings r WHERE r.assignment_id = a.id) OR "
        "EXISTS (SELECT 1 FROM answers r WHERE r.assignment_id = a.id) OR "
        "EXISTS (SELECT 1 FROM validations r WHERE r.assignment_id = a.id) OR "
        "EXISTS (SELECT 1 FROM surveys r WHERE r.assignment_id = a.id))",
    }
    found = {name: len(db.query(sql)) for name, sql in q.items()}
    return found, [f"{name}: {n}" for name, n in found.items() if n]


def balance_table(db) -> tuple[list[dict], list[str]]:
    """Per sender cell (group x gender): senders, exchanges per system and per domain x source, and
    the exchanges that reached the analysis; problems when the cells are not balanced."""
    rows = db.query(
        "SELECT p.id AS sender, p.grp, p.gender, e.starter_id, e.system_id, s.domain, s.source FROM exchanges e "
        "JOIN participants p ON p.id = e.sender_id JOIN starters s ON s.study_id = e.study_id AND s.id = e.starter_id "
        # EXISTS, not a join: an exchange recorded again (issue 29) has two record items
        "WHERE e.study_id = ? AND EXISTS (SELECT 1 FROM assignments a WHERE a.exchange_id = e.id "
        "AND a.phase = 'record' AND a.status != 'withdrawn')",
        [STUDY_ID],
    )
    systems = sorted(SYSTEM_FX)
    strata = [(d, s) for d in ("health", "everyday") for s in ("natural", "synthetic")]
    table, problems, designs = [], [], {}
    for g in GROUPS:
        for gen in GENDERS:
            mine = [r for r in rows if r["grp"] == g and r["gender"] == gen]
            row = {"group": g, "gender": gen, "senders": len({r["sender"] for r in mine}), "exchanges": len(mine)}
            row.update({f"system {s}": sum(r["system_id"] == s for r in mine) for s in systems})
            row.update({f"{d}/{s}": sum((r["domain"], r["source"]) == (d, s) for r in mine) for d, s in strata})
            table.append(row)
            designs[(g, gen)] = sorted((r["starter_id"], r["system_id"]) for r in mine)
            by_sys = [row[f"system {s}"] for s in systems]
            by_str = [row[f"{d}/{s}"] for d, s in strata]
            # services/participation/assignment.sender_design balances both over every len(strata) x len(systems)
            # senders of a cell; each sender of an incomplete cycle adds at most one to a difference
            tol = row["senders"] % (len(strata) * len(systems))
            for what, xs in (("systems", by_sys), ("domain x source", by_str)):
                if max(xs) - min(xs) > tol:
                    problems.append(f"{g}/{gen}: exchanges per {what} {xs} differ by more than {tol}")
    if len({r["senders"] for r in table}) != 1:
        problems.append(f"senders per cell differ: {[r['senders'] for r in table]}")
    if len({tuple(d) for d in designs.values()}) != 1:
        problems.append("the cells' (starter, system) designs differ (the design blocks should be shared)")
    return table, problems


def print_table(rows: list[dict], log=print) -> None:
    if not rows:
        return
    cols = list(rows[0])
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    log("  " + "  ".join(c.rjust(width[c]) for c in cols))
    for r in rows:
        log("  " + "  ".join(str(r[c]).rjust(width[c]) for c in cols))


def check_reassignment(db, sim: Sim) -> tuple[dict, list[str]]:
    if not sim.deactivated:
        return {}, ["no receiver was deactivated"]
    pid = sim.deactivated["participant"]
    problems, done_by_others = [], 0
    for item in sim.deactivated["open_items"]:
        rows = db.query(
            "SELECT participant_id, status FROM assignments WHERE study_id = ? AND phase = 'receive' AND item_id = ?",
            [STUDY_ID, item],
        )
        others = [r for r in rows if r["participant_id"] != pid and r["status"] == "done"]
        if others:
            done_by_others += 1
        else:
            problems.append(f"receiver {pid}'s open item {item} was not done by anyone else ({rows})")
    late = [p for p in sim.people if p.late and p.role in ("receiver", "validator")]
    idle = [
        p.pid
        for p in late
        if not db.scalar("SELECT COUNT(*) FROM assignments WHERE participant_id = ? AND status = 'done'", [p.pid])
    ]
    info = {
        **sim.deactivated,
        "done_by_others": done_by_others,
        "late_receivers_validators": len(late),
        "late_without_work": idle,
    }
    return info, problems


def repair_adds_nothing(db, timer: Timer) -> tuple[dict, list[str]]:
    from services.usability import workflow

    before = count_rows(db)
    open_before = db.scalar("SELECT COUNT(*) FROM assignments WHERE status = 'open'")
    timer("workflow/refresh (final repair)", workflow.refresh, db, STUDY_ID)
    after = count_rows(db)
    open_after = db.scalar("SELECT COUNT(*) FROM assignments WHERE status = 'open'")
    info = {
        "assignments_before": before["assignments"],
        "assignments_after": after["assignments"],
        "open_before": open_before,
        "open_after": open_after,
    }
    problems = [] if before == after and open_before == open_after else [f"the final refresh changed rows: {info}"]
    if open_after:
        problems.append(f"{open_after} assignments are still open at the end")
    return info, problems


def analysis(sim: Sim) -> tuple[dict, list[str]]:
    """The app's export of the study as the analysis reads it, `app.py analyze usability` on it,
    and the tidy export (`app.py export`)."""
    import pandas as pd

    from services.usability import export as usability_export

    out = sim.dir / "analysis"
    out.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "TRADLAB_DB": str(sim.db_path),
        "TRADLAB_MEDIA": str(sim.media),
        "TRADLAB_FIGURE_PNG": "0",
        "TRADLAB_WORKER": "0",
    }
    df = sim.t("analysis/exchanges_frame", usability_export.exchanges_frame, sim.db, STUDY_ID)
    csv = out / "exchanges.csv"
    df.to_csv(csv, index=False)
    info = {"rows": len(df), "perspectives": df["perspective"].value_counts().to_dict() if "perspective" in df else {}}
    problems = []
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "app.py", "analyze", "usability", str(csv), "--out", str(out / "usability")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    info["analyze_s"] = round(time.perf_counter() - t0, 2)
    if res.returncode != 0:
        return info, [f"analyze usability failed ({res.returncode}): {(res.stderr or res.stdout)[-1500:]}"]
    info["summary"] = res.stdout.strip().splitlines()[:4]
    lmm = pd.read_csv(out / "usability" / "lmm.csv").set_index("term")
    est = {}
    for term, planted in PLANTED.items():
        if term not in lmm.index:
            problems.append(f"LMM has no term {term!r} (terms: {list(lmm.index)})")
            continue
        r = lmm.loc[term]
        inside = bool(r["ci_low"] <= planted <= r["ci_high"])
        est[term] = {
            "planted": planted,
            "estimate": round(float(r["estimate"]), 3),
            "ci": [round(float(r["ci_low"]), 3), round(float(r["ci_high"]), 3)],
            "inside": inside,
        }
        if not inside:
            problems.append(
                f"{term}: planted {planted} outside the 95% CI [{r['ci_low']:.3f}, {r['ci_high']:.3f}] "
                f"(estimate {r['estimate']:.3f})"
            )
    info["effects"] = est
    info["other_terms"] = {t: round(float(lmm.loc[t, "estimate"]), 3) for t in lmm.index if t not in PLANTED}
    # the tidy export, whose tables must carry every stored survey and validation
    t0 = time.perf_counter()
    res = subprocess.run(
        [
            sys.executable,
            "app.py",
            "export",
            "--study",
            STUDY_ID,
            "--out",
            str(out / "export"),
            "--format",
            "csv",
            "--no-audio",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    info["export_s"] = round(time.perf_counter() - t0, 2)
    if res.returncode != 0:
        problems.append(f"export failed ({res.returncode}): {(res.stderr or res.stdout)[-1500:]}")
    else:
        for table in ("surveys", "validations", "answers", "recordings"):
            f = out / "export" / f"{table}.csv"
            n = len(pd.read_csv(f)) if f.exists() else None
            stored = sim.db.scalar(f"SELECT COUNT(*) FROM {table}")
            info[f"export_{table}"] = n
            if n != stored:
                problems.append(f"export {table}.csv has {n} rows, the database {stored}")
    return info, problems


class Rendezvous:
    """Simulations of several sizes, each on its own thread (study_sim.py pair), meet halfway: the
    last to arrive runs the HTTP sample of all of them together (sim_http.http_samples) while the
    others wait, then each goes on to its end and its checks. One that ends without arriving (an
    error) lets the others go on without a sample."""

    def __init__(self, n: int):
        self.n, self.arrived, self.done = n, [], False
        self.cv = threading.Condition()

    def __call__(self, sim) -> None:
        from benchmarks.usability import sim_http

        with self.cv:
            self.arrived.append(sim)
            if len(self.arrived) < self.n:
                self.cv.wait_for(lambda: self.done)
                return
        try:
            sims = sorted(self.arrived, key=lambda x: x.sizes.scale)
            for one, res in zip(sims, sim_http.http_samples(sims)):
                one.http_result = res
        finally:
            with self.cv:
                self.done = True
                self.cv.notify_all()

    def leave(self, scale: float) -> None:
        """A simulation's thread ended, whether or not it arrived."""
        with self.cv:
            if not any(s.sizes.scale == scale for s in self.arrived):
                self.done = True
                self.cv.notify_all()


def simulate(
    workdir: Path,
    scale: float = 0.05,
    seed: int = 1,
    analyse: bool = True,
    http: bool = False,
    log=print,
    rendezvous: Rendezvous | None = None,
) -> dict:
    """One simulated study at `scale` of the paper's size; returns its figures and checks."""
    sizes = Sizes.at(scale)
    sim = Sim(workdir, sizes, seed, http, log)
    sim.rendezvous = rendezvous
    t0 = time.perf_counter()
    sim.setup()
    setup_s = time.perf_counter() - t0
    log(
        f"scale {scale}: {sizes.starters} starters, {sizes.senders} senders ({sizes.dropouts} drop out), "
        f"{sizes.receivers} receivers, {sizes.validators} validators, {sizes.raters} raters; "
        f"model step: {sim.model_step_name}; dropout: services.usability.dropouts.drop_out"
    )
    sim.run()
    log(f"  done in {sim.rounds} rounds, {sim.wall_s:.1f} s: {sim.submits} submits, {sim.views} views")
    sim.snapshot("end")
    checks, problems = {}, list(sim.problems)
    for name, fn in (
        ("repair", lambda: repair_adds_nothing(sim.db, sim.t)),
        ("completeness", lambda: check_completeness(sim.db, sim)),
        ("stored_once", lambda: check_stored_once(sim.db)),
        ("reassignment", lambda: check_reassignment(sim.db, sim)),
    ):
        info, p = fn()
        checks[name] = {"info": info, "problems": p[:20], "n_problems": len(p)}
        problems += p
    table, p = balance_table(sim.db)
    checks["balance"] = {"table": table, "problems": p}
    problems += p
    log("  design cells (exchanges by system and by domain/source):")
    print_table(table, log)
    if analyse:
        info, p = analysis(sim)
        checks["analysis"] = {"info": info, "problems": p}
        problems += p
        for term, e in info.get("effects", {}).items():
            log(
                f"  {term}: planted {e['planted']}, estimate {e['estimate']} CI {e['ci']} "
                f"{'ok' if e['inside'] else 'OUTSIDE'}"
            )
    actions = sim.submits + sim.views
    result = {
        "scale": scale,
        "seed": seed,
        "sizes": sizes.__dict__ | {"senders": sizes.senders},
        "model_step": sim.model_step_name,
        "dropout_call": bool(sim.drop_out),
        "setup_s": round(setup_s, 2),
        "wall_s": round(sim.wall_s, 2),
        "rounds": sim.rounds,
        "submits": sim.submits,
        "views": sim.views,
        "double_submits": sim.doubles,
        "actions_per_s": round(actions / sim.wall_s, 1),
        "submits_per_s": round(sim.submits / sim.wall_s, 1),
        "flagged": len(sim.flagged),
        "rejected": len(sim.rejected),
        "dropped_out": len(sim.dropped),
        "events": sim.events,
        "plan": sim.plan_notes,  # what the import said the design needs (the receivers above follow it)
        "rows": count_rows(sim.db),
        "db_mb": round(sim.db_path.stat().st_size / 2**20, 2),
        "snapshots": sim.snapshots,
        "latency": sim.t.table(),
        "peak_rss": peak_rss_mb(),
        "checks": checks,
        "http": sim.http_result,
        "problems": problems[:50],
        "n_problems": len(problems),
        "ok": not problems,
    }
    return result


# -- measure: a fixed sample of calls on a copy of a snapshot -------------------------------------
SAMPLE_TABS = (
    ("sender", "record"),
    ("sender", "survey"),
    ("receiver", "receiver"),
    ("validator", "validator"),
    ("rater", "survey"),
)
TAB_PHASES = {
    "record": ("record",),
    "receiver": ("receive",),
    "validator": ("validate",),
    "survey": ("survey_baseline", "survey_informed"),
}


def measure(snapshot: Path, per_tab: int = 25, refreshes: int = 5, seed: int = 1, log=print) -> dict:
    """Times get_view, submit and workflow.refresh on a copy of `snapshot` for a seeded sample of
    participants holding open items (the same sample on every checkout: chosen by SQL on the copy
    before any call)."""
    import services
    from services.participation.items import get_view
    from services.participation.submissions import submit
    from storage import open_database
    from storage.backup import backup

    try:
        from services.usability import workflow
    except ImportError:  # a checkout from before the workflow moved into its protocol's package
        from services.participation import workflow  # type: ignore[no-redef]

    tmp = Path(tempfile.mkdtemp(prefix="study-sim-measure-"))
    try:
        backup(snapshot, tmp / "copy.db")
        db = open_database(tmp / "copy.db")
        study = db.scalar("SELECT id FROM studies ORDER BY id LIMIT 1")
        wav = write_wav(tmp / "reading.wav")
        answers = Answerer(db, seed, wav)
        r = random.Random(seed)
        sample = []
        for role, tab in SAMPLE_TABS:
            marks = ",".join("?" * len(TAB_PHASES[tab]))
            ids = [
                x["id"]
                for x in db.query(
                    f"SELECT DISTINCT p.id, p.token FROM participants p JOIN assignments a ON a.participant_id = p.id "
                    "WHERE p.study_id = ? AND p.role = ? AND p.active = 1 AND a.status = 'open' "
                    f"AND a.phase IN ({marks}) "
                    f"ORDER BY p.id",
                    [study, role, *TAB_PHASES[tab]],
                )
            ]
            sample += [(role, tab, pid) for pid in sorted(r.sample(ids, min(per_tab, len(ids))))]
        r.shuffle(sample)
        tokens = {
            x["id"]: x["token"] for x in db.query("SELECT id, token FROM participants WHERE study_id = ?", [study])
        }
        t = Timer()
        errors = []
        for k in range(refreshes):
            t("workflow/refresh", workflow.refresh, db, study)
        for role, tab, pid in sample:
            try:
                view = t(f"{role}/{tab}/view", get_view, db, tokens[pid], tab)
                if view.status != "item":
                    errors.append(f"{role} {pid} {tab}: {view.status}")
                    continue
                payload = answers.answer(pid, view.phase, view.item_id, view.content)
                res = t(
                    f"{role}/{view.phase}/submit",
                    submit,
                    db,
                    tokens[pid],
                    tab,
                    view.item_id,
                    payload,
                    media_dir=tmp / "media",
                )
                if not res.saved:
                    errors.append(f"{role} {pid} {tab}: not saved")
            except Exception as e:  # reported, not hidden: an old checkout may lack something
                errors.append(f"{role} {pid} {tab}: {type(e).__name__}: {e}")
        for k in range(refreshes):
            t("workflow/refresh", workflow.refresh, db, study)
        code = Path(services.__file__).resolve().parents[1]
        return {
            "snapshot": str(snapshot),
            "code": str(code),
            "commit": _git(code, "rev-parse", "HEAD"),
            "uncommitted_changes": bool(_git(code, "status", "--porcelain", "--untracked-files=no")),
            "participants": db.scalar("SELECT COUNT(*) FROM participants"),
            "exchanges": db.scalar("SELECT COUNT(*) FROM exchanges"),
            "sample": len(sample),
            "errors": errors[:20],
            "n_errors": len(errors),
            "latency": t.table(),
            "peak_rss": peak_rss_mb(),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _git(folder: Path, *args) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except OSError:
        return ""


def ratios(a: dict, b: dict) -> dict:
    """b / a per action present in both (p50 and p95)."""
    out = {}
    for k in sorted(set(a) & set(b)):
        out[k] = {q: round(b[k][q] / a[k][q], 2) if a[k][q] else None for q in ("p50_ms", "p95_ms")}
    return out


# -- command line ------------------------------------------------------------------------------
def _err(*a):
    print(*a, file=sys.stderr, flush=True)


def cmd_one(args) -> int:
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="study-sim-"))
    try:
        res = simulate(work, args.scale, args.seed, analyse=not args.no_analysis, http=args.http, log=_err)
        if args.keep_snapshots:
            keep = Path(args.keep_snapshots)
            keep.mkdir(parents=True, exist_ok=True)
            for name, path in list(res["snapshots"].items()):
                dest = keep / f"study_sim-{args.scale:g}-{name}.db"
                shutil.copy2(path, dest)
                res["snapshots"][name] = str(dest)
        res["machine"] = _machine()
        text = json.dumps(res, indent=2, default=str) + "\n"
        if args.out:
            Path(args.out).write_text(text)
        else:
            print(text)
        _err(f"scale {args.scale}: {'all checks passed' if res['ok'] else str(res['n_problems']) + ' problems'}")
        for p in res["problems"][:10]:
            _err("  PROBLEM:", p)
        return 0 if res["ok"] else 1
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def cmd_pair(args) -> int:
    """The sizes simulated at once, each on its own thread and database, their HTTP samples taken
    together halfway (Rendezvous): the 200% / 100% ratios within one run."""
    scales = [float(x) for x in args.scales.split(",") if x.strip()]
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="study-sim-pair-"))
    rendezvous, results = Rendezvous(len(scales)), {}

    def one(scale: float) -> None:
        try:
            results[scale] = simulate(
                work / f"{scale:g}", scale, args.seed, analyse=False, http=True,
                log=lambda *a: _err(f"[{scale:g}]", *a), rendezvous=rendezvous,
            )  # fmt: skip
        except Exception as e:  # reported in the run's result, never hidden
            results[scale] = {"scale": scale, "ok": False, "problems": [f"{type(e).__name__}: {e}"], "n_problems": 1}
        finally:
            rendezvous.leave(scale)

    try:
        threads = [threading.Thread(target=one, args=(s,)) for s in scales]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        runs = [results[s] for s in scales]
        for r in runs:
            if r.get("ok") and not r.get("http"):
                r.update(ok=False, problems=["no HTTP sample: another size ended first"], n_problems=1)
        out = {"pair": scales, "machine": _machine(), "runs": runs}
        Path(args.out).write_text(json.dumps(out, indent=2, default=str) + "\n")
        for r in runs:
            _err(f"scale {r['scale']:g}: {'all checks passed' if r['ok'] else str(r['n_problems']) + ' problems'}")
            for p in r["problems"][:10]:
                _err("  PROBLEM:", p)
        return 0 if all(r["ok"] for r in runs) else 1
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


def _machine() -> dict:
    from benchmarks.common import machine

    return machine()


def cmd_run(args) -> int:
    scales = [float(x) for x in args.scales.split(",") if x.strip()]
    runs, rc = [], 0
    with tempfile.TemporaryDirectory(prefix="study-sim-run-") as tmp:
        for s in scales:
            out = Path(tmp) / f"{s:g}.json"
            cmd = [
                sys.executable,
                __file__,
                "one",
                "--scale",
                str(s),
                "--seed",
                str(args.seed),
                "--out",
                str(out),
                "--keep-snapshots",
                args.snapshots,
            ]
            if args.analysis_scales != "all" and s not in [float(x) for x in args.analysis_scales.split(",")]:
                cmd.append("--no-analysis")
            if args.http is not None and abs(args.http - s) < 1e-9:
                cmd.append("--http")
            _err(f"== scale {s:g}: {' '.join(cmd[2:])}")
            p = subprocess.run(cmd, cwd=ROOT, timeout=args.timeout)
            rc = rc or p.returncode
            if out.exists():
                runs.append(json.loads(out.read_text()))
            else:
                runs.append({"scale": s, "ok": False, "problems": [f"the run exited {p.returncode} without results"]})
    done = [r for r in runs if "latency" in r]
    result = {
        "benchmark": "study_sim",
        "what": __doc__.split("\n\n")[0],
        "machine": _machine(),
        "planted": PLANTED,
        "runs": runs,
    }
    if len(done) >= 2:
        lo, hi = min(done, key=lambda r: r["scale"]), max(done, key=lambda r: r["scale"])
        result["ratio"] = {
            "of": f"{hi['scale']:g} / {lo['scale']:g}",
            "per_action": ratios(lo["latency"], hi["latency"]),
        }
    result["summary"] = [
        {
            "scale": r["scale"],
            "ok": r.get("ok"),
            "wall_s": r.get("wall_s"),
            "actions_per_s": r.get("actions_per_s"),
            "submits_per_s": r.get("submits_per_s"),
            "peak_rss_mb": (r.get("peak_rss") or {}).get("self_mb"),
            "n_problems": r.get("n_problems"),
        }
        for r in runs
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n")
    _err(f"wrote {args.out}")
    for s in result["summary"]:
        _err(
            f"  scale {s['scale']:g}: {s['wall_s']} s, {s['actions_per_s']} actions/s, "
            f"peak RSS {s['peak_rss_mb']} MB, "
            f"{'ok' if s['ok'] else str(s['n_problems']) + ' problems'}"
        )
    return rc


def cmd_measure(args) -> int:
    if args.code:
        # once per checkout (PYTHONPATH first), then this one; side by side
        out = {"benchmark": "study_sim measure", "snapshot": args.snapshot, "machine": _machine(), "runs": {}}
        for label, code in [*[(Path(c).name or c, c) for c in args.code], ("this checkout", str(ROOT))]:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
                tmp = f.name
            env = {**os.environ, "PYTHONPATH": code}
            cmd = [
                sys.executable,
                __file__,
                "measure",
                args.snapshot,
                "--per-tab",
                str(args.per_tab),
                "--seed",
                str(args.seed),
                "--out",
                tmp,
            ]
            _err(f"== measure with PYTHONPATH={code}")
            p = subprocess.run(cmd, cwd=ROOT, env=env, timeout=3600)
            out["runs"][label] = json.loads(Path(tmp).read_text()) if p.returncode == 0 else {"error": p.returncode}
            os.unlink(tmp)
        labels = list(out["runs"])
        base, new = out["runs"][labels[0]], out["runs"][labels[-1]]
        if "latency" in base and "latency" in new:
            out["ratio"] = {"of": f"{labels[-1]} / {labels[0]}", "per_action": ratios(base["latency"], new["latency"])}
        text = json.dumps(out, indent=2) + "\n"
    else:
        res = measure(Path(args.snapshot), args.per_tab, seed=args.seed, log=_err)
        text = json.dumps(res, indent=2) + "\n"
        for k, v in res["latency"].items():
            _err(f"  {k:32s} n {v['n']:3d}  p50 {v['p50_ms']:9.1f} ms  p95 {v['p95_ms']:9.1f} ms")
        if res["errors"]:
            _err(f"  {res['n_errors']} errors, e.g. {res['errors'][:3]}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    _err(f"wrote {args.out}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="every size in a fresh process; writes benchmarks/results/study_sim.json")
    r.add_argument("--scales", default="0.1,0.5,1,2", help="fractions of the paper's size")
    r.add_argument(
        "--analysis-scales", default="all", help="sizes whose export is analysed (comma-separated, or 'all')"
    )
    r.add_argument("--http", type=float, default=None, metavar="SCALE", help="add the HTTP sample at this size")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument(
        "--snapshots",
        default=str(Path(tempfile.gettempdir()) / "study_sim_snapshots"),
        help="where the mid-study and final database copies are kept (for `measure`)",
    )
    r.add_argument("--timeout", type=int, default=4 * 3600, help="seconds per size")
    r.add_argument("--out", default=str(RESULTS / "study_sim.json"))
    o = sub.add_parser("one", help="one size in this process (prints its JSON unless --out)")
    o.add_argument("--scale", type=float, default=0.05)
    o.add_argument("--seed", type=int, default=1)
    o.add_argument("--no-analysis", action="store_true")
    o.add_argument("--http", action="store_true", help="the HTTP sample halfway (launches the app)")
    o.add_argument("--workdir", help="keep the run's files here (default: a temporary folder, removed)")
    o.add_argument("--keep-snapshots", help="copy the snapshots to this folder")
    o.add_argument("--out")
    pr = sub.add_parser("pair", help="sizes at once, their HTTP samples taken together halfway (no analysis)")
    pr.add_argument("--scales", default="1,2", help="fractions of the paper's size")
    pr.add_argument("--seed", type=int, default=1)
    pr.add_argument("--workdir", help="keep the run's files here (default: a temporary folder, removed)")
    pr.add_argument("--out", required=True)
    m = sub.add_parser("measure", help="time a seeded sample of calls on a copy of a snapshot")
    m.add_argument("snapshot")
    m.add_argument("--per-tab", type=int, default=25, help="participants sampled per role and tab")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--code", action="append", help="another checkout to measure too (PYTHONPATH); repeatable")
    m.add_argument("--out", default=str(RESULTS / "study_sim_measure.json"))
    args = ap.parse_args(argv)
    return {"run": cmd_run, "one": cmd_one, "pair": cmd_pair, "measure": cmd_measure}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
