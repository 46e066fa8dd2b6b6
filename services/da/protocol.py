"""Direct assessment (paper 001) as a protocol: a rater judges a HIT of candidates on a 0-100
slider, one item at a time (services/da/campaign.py). Registered with
services/common/protocols.py."""

from __future__ import annotations

from typing import Any

from services.common import protocols
from services.common.protocols import Phase, Protocol, Role, Tab
from services.common.settings import Settings
from services.da import campaign as da_campaign
from services.da import corpus, export_tables
from services.da.admin_words import items_in_words
from services.da.hits import build_hits, sample_documents
from services.da.study_analysis import qc_outcome
from services.participation.submissions import SubmissionError, checked_value, number_in, refuse_all
from services.study.files import StudyError, StudyValidationError
from services.study.texts import refusal, texts
from storage.da import hits, judgments
from storage.db import Transaction, required
from storage.rows import AssignmentRow, ParticipantRow, StudyRow

# paper 001: lock_until_played false (section 2.2, Figure 2: the rater "can use audio control
# to listen" and moves the slider, nothing waits for the audio); runs: independent runs of
# the same HITs by other raters, for self-replication (section 3.2: "two independent runs")
DEFAULTS: dict[str, Any] = {
    "segments": None,
    "modality": "text",
    "hit_size": 100,
    "controls": 20,
    "min_gap": 30,
    "reference_controls": 0,
    "language": "en",
    "tts_backend": "auto",
    "lock_until_played": False,
    "runs": 1,
    # section 2.2.3: "Rejected HITs were rescheduled to obtain fresh judgments"; Ethics: HITs
    # "completed in an unrealistically short time" were rejected. reruns: fresh raters a
    # failed HIT gets (2, so a HIT has at most three tries, as reruns stay bounded); the paper
    # names no time threshold: fast_item_s is the median seconds per item below which a HIT
    # is too fast, and its judgments leave the scores unless keep_fast
    "reruns": 2,
    "fast_item_s": 2.0,
    "keep_fast": False,
    # a pilot's choice, as `analyze da --wmt` (WMT's method): every worker stays in the scores
    # whatever the reliability test says, and a failed HIT is not re-run (its judgments count)
    "keep_every_worker": False,
    # section 2.2.3: reliable when p < 0.05 (the rerun decision's test; a HIT with few
    # controls cannot reach it: with 2 bad_reference and 2 ask_again pairs p >= 1/6)
    "reliability_alpha": 0.05,
    # section 2.1: documents sampled at random within each domain for balance (Table 1: about
    # 500 segments a domain); 0: every segment of the file (the HITs hold them all)
    "segments_per_domain": 0,
}


def payment_qc(database, study: StudyRow, rows: list[dict]) -> dict[int, str]:
    """Each finished rater's stored HIT outcome (decided by analysis.hit_verdict when the HIT was
    done) in a payer's words (study_analysis.qc_outcome)."""
    found = hits.da_hit_outcomes_of(database, [r["id"] for r in rows])
    return {r["id"]: qc_outcome(found.get(r["id"]), study["config"].get("da") or {}) for r in rows}


def check(da: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [da] section."""
    out: list[tuple[str, str]] = []

    def add(key: str, message: str) -> None:
        out.append((key, message))

    if da.get("modality") not in ("text", "audio", "both"):
        add("da.modality", "must be text, audio or both")
    for k, lo in (
        ("hit_size", 2),
        ("controls", 0),
        ("min_gap", 1),
        ("reference_controls", 0),
        ("runs", 1),
        ("reruns", 0),
        ("segments_per_domain", 0),
    ):
        v = da.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            add(f"da.{k}", f"must be an integer >= {lo}")
    if all(isinstance(da.get(k), int) for k in ("hit_size", "controls", "reference_controls")):
        if da["controls"] >= da["hit_size"]:
            add("da.controls", "controls must leave room for system items in a HIT")
        if da["reference_controls"] > da["controls"]:
            add("da.reference_controls", "is a share of the controls: at most `controls`")
    if da.get("tts_backend") not in ("auto", "google", "piper", "espeak"):
        add("da.tts_backend", "must be auto, google, piper or espeak")
    if not isinstance(da.get("lock_until_played"), bool):
        add(
            "da.lock_until_played",
            "must be true (audio mode: the slider stays locked until the "
            "candidate has played to its end) or false (paper 001: not locked)",
        )
    if not isinstance(da.get("language"), str) or not da["language"].strip():
        add("da.language", "must be the language of the MT outputs (e.g. en, pt)")
    fast = da.get("fast_item_s")
    if isinstance(fast, bool) or not isinstance(fast, (int, float)) or not fast > 0:
        add(
            "da.fast_item_s",
            f"must be a number of seconds > 0 (the median seconds per item "
            f"below which a HIT is unrealistically fast), got {fast!r}",
        )
    alpha = da.get("reliability_alpha")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        add(
            "da.reliability_alpha",
            f"must be a significance level between 0 and 1 (paper 001: 0.05), got {alpha!r}",
        )
    if not isinstance(da.get("keep_fast"), bool):
        add(
            "da.keep_fast",
            "must be true (unrealistically fast HITs stay in the scores) or "
            "false (paper 001, Ethics: they are rejected)",
        )
    if not isinstance(da.get("keep_every_worker"), bool):
        add(
            "da.keep_every_worker",
            "must be true (a pilot: every worker stays in the scores, as `analyze da --wmt`) or "
            "false (paper 001: only workers who pass the reliability test)",
        )
    return out


def build_campaign(bundle) -> list[list[dict]]:
    """The study's DA HITs, seeded by the study: rebuilt identically on every import."""

    da = bundle.config["da"]
    items = [{"row": i, **s} for i, s in enumerate(bundle.corpus[corpus.NAME]["segments"])]
    if da.get("segments_per_domain"):
        if not any(it.get("domain") for it in items):
            raise StudyValidationError(
                [
                    StudyError(
                        "study.toml",
                        None,
                        "da.segments_per_domain",
                        f"samples documents per domain, but {da['segments']} has no domain column (or it is empty)",
                    )
                ]
            )
        items, _ = sample_documents(items, da["segments_per_domain"], bundle.config["study"]["seed"])
    try:
        return build_hits(
            items,
            seed=bundle.config["study"]["seed"],
            hit_size=da["hit_size"],
            n_controls=da["controls"],
            min_gap=da["min_gap"],
            reference_controls=da["reference_controls"],
        )
    except ValueError as e:
        raise StudyValidationError([StudyError("study.toml", None, "da.hit_size", str(e))]) from e


def prepare(bundle) -> None:
    if corpus.NAME in bundle.corpus:  # the segments file was read
        bundle.corpus[corpus.NAME]["hits"] = build_campaign(bundle)


def content(
    database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir
) -> dict | None:
    """The candidate (text or audio) with its reference, None while its audio is rendered."""
    out = da_campaign.item_content(database, study, assignment, media_dir or Settings.from_env().media_dir)
    if out is None:
        return None
    key = "instruction_audio" if out["modality"] == "audio" else "instruction"
    out["instruction"] = texts(study)["da"][key]
    return out


def check_answer(database, study: StudyRow, assignment: AssignmentRow, media_dir) -> None:
    try:
        da_campaign.check_judgment(database, study, assignment, media_dir)
    except da_campaign.DAError as e:
        raise SubmissionError(str(e)) from e


def validate(database, assignment: AssignmentRow, payload) -> dict:
    score, problem = checked_value(
        number_in, payload.get("score"), "The score", 0, 100, refusal(SubmissionError, "score_missing")
    )
    refuse_all([problem] if problem else [], {"score": problem} if problem else {})
    return {"score": score}


def save(tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data) -> None:
    it = required(hits.da_hit_item(tx.database, int(assignment["item_id"])), "HIT item of a DA assignment")
    judgments.insert_da_judgment(
        tx.db, assignment["id"], it["segment_row"], data["score"], it["id"], assignment["meta"]["modality"]
    )


def stored(database, assignment: AssignmentRow) -> dict:
    return judgments.da_judgment(database, assignment["id"]) or {}


def after_save(tx: Transaction, study: StudyRow, assignment: AssignmentRow) -> None:
    """The rater's last item: their HIT is judged, and rerun if it failed."""
    da_campaign.hit_completed(tx, study, assignment)


def setup_rater(tx: Transaction, study: StudyRow, pid: int, group, gender, design_index=None) -> None:
    da_campaign.assign_hit(tx, study, pid)


PROTOCOL = protocols.register(
    Protocol(
        name="da",
        report_section="services.report.da:section",  # its paper's part of the study report
        jobs="services.da.campaign:background_jobs",  # what the worker runs for it
        analysis_panel="tabs.analysis_da:panel",  # its section of the Analysis tab
        roles=(
            Role(
                "da",
                ("da",),
                "Direct assessment",
                setup_rater,
                items=lambda cfg: (cfg.get("da") or {}).get("hit_size", 0),
                seconds_per_item=10,  # the welcome's estimate: one DA segment (paper 001: 100 per HIT)
                qc=payment_qc,
                label="DA rater",
            ),
        ),
        tabs=(Tab("da", ("da",), "tabs.da:build", refusal_out_of_order="out_of_order_da"),),
        phases=(
            Phase(
                "da",
                content,
                validate,
                save,
                stored,
                check=check_answer,
                after_save=after_save,
                not_ready="Your items' audio is being prepared. This page checks again every few seconds.",
                # a leaving rater's partial HIT stops counting as held: the next rater added gets it whole
                not_handed_on="a DA HIT is rated whole by one rater: the next DA rater added gets it",
                label="DA judgment",
            ),
        ),
        participant_items=items_in_words,  # the admin's "A participant" page
        analyze="services.da.cli:add_analyze",  # `app.py analyze da`
        defaults=DEFAULTS,
        check=check,
        load=corpus.load,
        store_corpus=corpus.store,
        count_corpus=corpus.count,
        count_collected=judgments.collected_counts,
        prepare=prepare,
        corpus_files=("segments",),
        export_tables=export_tables.TABLES,
    )
)
