"""The semantic differential (paper 002) as a protocol: a participant rates sentences on
adjective pairs, page by page (services/sd/form.py). Registered with
services/common/protocols.py."""

from __future__ import annotations

from typing import Any

from services.common import protocols
from services.common.protocols import Phase, Protocol, Role, Tab
from services.participation.submissions import MAX_TEXT, SubmissionError, refuse_all
from services.sd import corpus, export_tables
from services.sd import form as sd_form
from services.sd.admin_words import items_in_words
from services.sd.study_analysis import qc_outcomes
from services.study.texts import texts
from storage.db import Transaction
from storage.rows import AssignmentRow, ParticipantRow, StudyRow
from storage.sd import ratings

# paper 002 (section 3.2, Table 3): 3 sentences each, 20 pairs + 2 repeats (22 scales) per
# sentence over 4 pages, the instructions in English or the German original (""): the
# pairs' language when it is de, else English), about 10 minutes (sections 3.2, 4.1); input:
# a slider per pair from -3 to +3 in seven steps (Table 3: "move the slider"), or "radio":
# seven points per pair, for labs that prefer them (the instructions follow)
DEFAULTS: dict[str, Any] = {
    "sentences": None,
    "pairs": None,
    "language": "en",
    "sentences_per_participant": 3,
    "repeats_per_sentence": 2,
    "pages_per_sentence": 4,
    "pairs_per_page": 0,
    "mode": "main",
    "instructions_language": "",
    "expected_seconds": 600,
    "input": "slider",
}


def payment_qc(database, study: StudyRow, rows: list[dict]) -> dict[int, str]:
    """Each finished rater's cleansing outcome (study_analysis.qc_outcomes, on the whole study:
    its outlier fence needs every rater)."""
    cleansed = qc_outcomes(database, study["id"])
    return {r["id"]: cleansed.get(r["id"], "no ratings") for r in rows}


def check(sd: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [sd] section."""
    out: list[tuple[str, str]] = []

    def add(key: str, message: str) -> None:
        out.append((key, message))

    for k, lo in (
        ("sentences_per_participant", 1),
        ("expected_seconds", 1),
        ("repeats_per_sentence", 0),
        ("pairs_per_page", 0),
        ("pages_per_sentence", 1),
    ):
        v = sd.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            add(f"sd.{k}", f"must be an integer >= {lo}")
    if sd.get("mode") not in ("main", "preliminary"):
        add("sd.mode", "must be main or preliminary (suitability ratings of each pair at the end)")
    if sd.get("input") not in ("slider", "radio"):
        add(
            "sd.input",
            f'must be "slider" (paper 002: one slider per pair, -3 to +3) or "radio" '
            f"(seven points per pair), got {sd.get('input')!r}",
        )
    if sd.get("instructions_language") not in ("", "en", "de"):
        add(
            "sd.instructions_language",
            'must be "en" (the paper\'s English translation), "de" (its German original) or "" '
            "(de when sd.language is de, else en)",
        )
    return out


def content(database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir=None) -> dict:
    return sd_form.page_content(database, study, assignment, texts(study)["sd"])


SD_FIELD = "pair:"  # the form field of a scale: "pair:<slot>" (tabs/sd.py)


def validate(database, assignment: AssignmentRow, payload) -> dict:
    layout = assignment["meta"]["pairs"]
    suitability = assignment["meta"].get("kind") == "suitability"
    top = 5 if suitability else 7
    given = payload.get("values") or {}
    if set(given) - {e.get("slot", e["pair_id"]) for e in layout}:
        raise SubmissionError("Values were sent for adjective pairs that are not on this page.")
    out, missing, parts, fields = [], [], [], {}
    for n, entry in enumerate(layout, start=1):
        slot = entry.get("slot", entry["pair_id"])
        v = given.get(slot)
        if v is None or v == "":
            missing.append(n)
            fields[SD_FIELD + str(slot)] = f"Scale {n} has no answer yet: rate it."  # slider or points: words for both
            continue
        try:
            pos = int(v)
        except (TypeError, ValueError):
            pos = None
        if pos is None or not 1 <= pos <= top or str(v).strip() not in {str(pos)}:
            parts.append(fields.setdefault(SD_FIELD + str(slot), f"Scale {n} must be a point from 1 to {top}."))
            continue
        if suitability:
            out.append({"pair_id": entry["pair_id"], "suitability": pos})
            continue
        # position 1 is nearest the left adjective; canonical +3 is the positive adjective
        value = (4 - pos) if entry["positive_left"] else (pos - 4)
        out.append(
            {
                "pair_id": entry["pair_id"],
                "value": value,
                "positive_left": entry["positive_left"],
                "is_repeat": bool(entry.get("repeat")),
            }
        )
    if missing:
        parts.insert(0, f"Please answer every scale (missing: {', '.join(map(str, missing))}).")
    suggestion = str(payload.get("suggestion") or "").strip()
    if len(suggestion) > MAX_TEXT:
        parts.append(fields.setdefault("suggestion", f"Your suggestions are too long (at most {MAX_TEXT} characters)."))
    refuse_all(parts, fields)
    return {"suitability": out, "suggestion": suggestion} if suitability else {"ratings": out}


def save(tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data) -> None:
    if "suitability" in data:
        ratings.insert_sd_suitability(tx.db, assignment["id"], data["suitability"], data["suggestion"])
    else:
        ratings.insert_sd_ratings(tx.db, assignment["id"], data["ratings"])


def stored(database, assignment: AssignmentRow) -> dict:
    return {"ratings": ratings.sd_ratings(database, assignment["id"])}


def setup_participant(tx: Transaction, study: StudyRow, pid: int, group, gender, design_index=None) -> None:
    sd_form.setup_queue(tx, study, pid)


PROTOCOL = protocols.register(
    Protocol(
        name="sd",
        report_section="services.report.sd:section",  # its paper's part of the study report
        analysis_panel="tabs.analysis_sd:panel",  # its section of the Analysis tab
        roles=(
            Role(
                "sd",
                ("sd",),
                "Ratings",
                setup_participant,
                items=lambda cfg: (cfg.get("sd") or {}).get("sentences_per_participant", 0),
                # paper 002 gives the time: about 10 minutes (sd.expected_seconds)
                minutes=lambda cfg: cfg["sd"]["expected_seconds"] / 60,
                qc=payment_qc,
                label="SD participant",
            ),
        ),
        # items that are instructions, not work: not counted as progress, and a submit says no "Saved."
        tabs=(
            Tab(
                "sd",
                ("sd",),
                "tabs.sd:build",
                instruction_items=(sd_form.WELCOME_ITEM, sd_form.EXAMPLE_ITEM),
                styles=("assets/css/sd.css",),  # its page's own layout (the seven points, the sliders)
            ),
        ),
        phases=(
            Phase(
                "sd",
                content,
                validate,
                save,
                stored,
                not_handed_on="an SD participant's pages are their own",
                label="SD page",
            ),
        ),
        participant_items=items_in_words,  # the admin's "A participant" page
        analyze="services.sd.cli:add_analyze",  # `app.py analyze sd`
        defaults=DEFAULTS,
        check=check,
        load=corpus.load,
        store_corpus=corpus.store,
        count_corpus=corpus.count,
        count_collected=ratings.collected_counts,
        corpus_files=("sentences", "pairs"),
        export_tables=export_tables.TABLES,
    )
)
