"""The four-phase usability study (paper 000) as a protocol: the sender records, the receiver
answers questions from the translation, the validator marks the answers, the sender (or a
third-person rater) takes the surveys. Registered with services/common/protocols.py; the
workflow between the phases is services/usability/workflow.py, where a leaving participant's
items go is services/usability/reassignment.py."""

from __future__ import annotations

from typing import Any

from services.common import protocols, variants
from services.common.protocols import Phase, Pool, Protocol, Role, Tab
from services.common.seeded import order_key
from services.metrics import registry as metric_registry
from services.participation.assignment import sender_design
from services.participation.items import bold_key_spans
from services.participation.submissions import SubmissionError
from services.study.texts import Voice, sqm_label, texts
from services.usability import answers, audio_intake, corpus, dropouts, export_tables, reassignment, workflow
from services.usability.admin_words import items_in_words
from services.usability.audio_intake import IntakeError, store_recording
from services.usability.recording_qc import (
    SECOND_OPINION_DEFAULTS,
    TRANSLATION_LENGTH_DEFAULTS,
    qc_asr_problems,
    second_opinion_problems,
    translation_length_problems,
)
from storage import assignments, jobs, participants, studies
from storage.db import Transaction, required
from storage.rows import AssignmentRow, ParticipantRow, StudyRow
from storage.usability import answers as answer_store
from storage.usability import corpus as usability_corpus
from storage.usability import exchanges, question_drafts, recordings

# the [usability] section's keys with their defaults (None: required)
DEFAULTS: dict[str, Any] = {
    "starters": None,
    "questions": None,
    "exchanges": "",
    "items_per_sender": 10,
    "metrics": [],
    "references": "",
    "items_per_receiver": 30,
    "items_per_validator": 30,
    "redundancy": 1,
    # exchanges a third-person rater takes (0: items_per_sender, one sender's share)
    "items_per_rater": 0,
    # false: a receiver gets at most one exchange of each starter (its questions once;
    # paper 000 section 2.5.1 assigns receivers translations at random and models the
    # receiver as a random intercept, which assumes their answer sets independent)
    "receiver_repeat_starters": False,
    # minutes an exchange waits in the pool before a receiver who had its starter may take it,
    # when no other is left for them (0: never). Without it an exchange that every receiver with
    # room has read the starter of waits until more receivers join (services/usability/plan.py)
    "receiver_repeat_after_minutes": 0,
    "max_recording_seconds": 30,
    "starter_words": [40, 60],
    # the Portuguese the receivers read: pt-PT (the paper's, in Portugal) or pt-BR
    # (services/common/variants.py: reaches the LLM prompts and the systems that take it)
    "target_variant": variants.DEFAULT,
    # a sender not seen for this many days while surveys wait counts as dropped out
    # (services/usability/dropouts.py); 0: only when the study team says so
    "dropout_after_days": 0,
    # the reference level of the analysis's corpus factor (Table 4's "Source"); "":
    # the paper's BConTrasT when a starter has it, else the first corpus in sorted order
    "corpus_reference": "",
    # the one ASR whose transcript every recording's QC checks, whatever system
    # translates it (services/usability/recording_qc.py); fields as a cascade's asr_* params
    "qc_asr": {},
    # the QC ASR's second opinion on the prompt's edge words (recording_qc.py)
    **SECOND_OPINION_DEFAULTS,
    # a translation far shorter than the transcript goes to the review queue (recording_qc.py)
    **TRANSLATION_LENGTH_DEFAULTS,
}


def sender_qc(database, study: StudyRow, rows: list[dict]) -> dict[int, str]:
    """A finished sender's recording QC in a payer's words: excluded (more than three rejected
    recordings, or by the team), or passed with the count of their recordings the team rejected
    (services/admin/usability_review.decide)."""
    rejected = recordings.rejected_counts(database, [r["id"] for r in rows])
    out = {}
    for r in rows:
        n = rejected.get(r["id"], 0)
        if r["excluded_at"]:
            out[r["id"]] = f"excluded: {r.get('excluded_reason') or 'by the study team'}"
        else:
            out[r["id"]] = f"passed ({n} recording{'s' if n != 1 else ''} rejected)" if n else "passed"
    return out


def check(us: dict) -> list[tuple[str, str]]:
    """(field, message) for every mistake in the merged [usability] section."""
    out: list[tuple[str, str]] = []

    def add(key: str, message: str) -> None:
        out.append((key, message))

    for k, lo in (
        ("items_per_sender", 1),
        ("items_per_receiver", 1),
        ("items_per_validator", 1),
        ("redundancy", 1),
        ("max_recording_seconds", 1),
        ("dropout_after_days", 0),
        ("items_per_rater", 0),
        ("receiver_repeat_after_minutes", 0),
    ):
        v = us.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            add(f"usability.{k}", f"must be an integer >= {lo}")
    if not isinstance(us.get("receiver_repeat_starters"), bool):
        add(
            "usability.receiver_repeat_starters",
            "must be true or false (false: a receiver never gets two exchanges of one starter)",
        )
    ms = us.get("metrics")
    if not isinstance(ms, list) or not all(isinstance(m, str) for m in ms):
        add("usability.metrics", "must be a list of metric names")
    else:
        for m in ms:
            if m.strip().lower() not in metric_registry.names():
                add(
                    "usability.metrics",
                    f"unknown metric '{m}' (known: {', '.join(metric_registry.names())})",
                )
    for k, m in qc_asr_problems(us.get("qc_asr")):
        add(f"usability.qc_asr{'.' + k if k else ''}", m)
    for k, m in second_opinion_problems(us) + translation_length_problems(us):
        add(f"usability.{k}", m)
    sw = us.get("starter_words")
    if not (isinstance(sw, list) and len(sw) == 2 and all(isinstance(x, int) for x in sw) and 0 < sw[0] <= sw[1]):
        add("usability.starter_words", "must be [min, max] word counts")
    if not isinstance(us.get("corpus_reference"), str):
        add("usability.corpus_reference", "must be a string (a corpus of the starters)")
    variant_problem = variants.check(us.get("target_variant"))
    if variant_problem:
        add("usability.target_variant", variant_problem)
    return out


def exchange_of(assignment: AssignmentRow) -> int:
    """The exchange id of a usability item, to store beside its answer: every record, receive,
    validate and survey item names one."""
    return required(assignment["exchange_id"], "exchange of an assignment")


def content(database, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, media_dir=None) -> dict:
    """The item of a record, receive, validate or survey phase, as the role may see it."""
    phase = assignment["phase"]
    sid = study["id"]
    ex = required(exchanges.exchange(database, assignment["exchange_id"]), "exchange of an assignment")
    qs = usability_corpus.questions(database, sid, ex["starter_id"])
    if phase == "receive":
        # Only the translation and the Portuguese questions: never source, audio or transcript.
        # (every phase after the recording is offered once the exchange is translated)
        tr = required(recordings.translation(database, ex["id"]), "translation of a translated exchange")
        words = texts(study)["receiver"]
        return {
            "translation": tr["text"],
            "questions": [{"idx": q["idx"], "pt": q["pt"]} for q in qs],
            "instruction": words["instruction"],
            "unanswerable_label": words["unanswerable"],
            "translation_heading": words["translation_heading"],
            "answer_label": words["answer"],
            "submit": words["submit"],
        }
    st = required(usability_corpus.starter(database, sid, ex["starter_id"]), "starter of an exchange")
    if phase == "record":
        words = texts(study)["record"]
        again = (assignment.get("meta") or {}).get("record_again")
        reason = (assignment.get("meta") or {}).get("reason") if again else None
        return {
            "starter_html": bold_key_spans(st["text"], st["key_spans"]),
            "instruction": words["instruction"],
            "microphone_help": words["microphone_help"],
            # a recording of it was rejected in review: the sender is told why it is back
            "record_again": words["record_again"] if again else "",
            # the reviewer's reason, where they gave one
            "record_again_reason": f"{words['record_again_reason']} {reason}" if reason else "",
            "max_seconds": study["config"]["usability"]["max_recording_seconds"],
        }
    tr = required(recordings.translation(database, ex["id"]), "translation of a translated exchange")
    if phase == "validate":
        receive = required(assignments.assignment(database, int(assignment["item_id"])), "receive item of a validation")
        # the expected answer: the reference answer of the question's accepted draft, where it has one
        expected = question_drafts.reference_answers(database, sid, ex["starter_id"])
        return {
            "source": st["text"],
            "translation": tr["text"],
            "questions": [
                {"idx": q["idx"], "en": q["en"], "pt": q["pt"], "expected": expected.get(q["idx"], "")} for q in qs
            ],
            "answers": answer_store.answers(database, receive["id"]),
            "sqm": texts(study)["sqm"],
            "flagged_help": texts(study)["validator"]["flagged"],
            "instruction": texts(study)["validator"]["instruction"],
        }
    # surveys
    rec = recordings.recording_for_exchange(database, ex["id"])
    perspective = "first" if ex["sender_id"] == participant["id"] else "third"
    survey = texts(study)["survey"]
    wording = (lambda k: survey[k]) if perspective == "first" else (lambda k: survey[f"{k}_third"])
    content = {
        "stage": "baseline" if phase == "survey_baseline" else "informed",
        "perspective": perspective,
        "source_html": bold_key_spans(st["text"], st["key_spans"]),
        "translation": tr["text"],
        "recording": rec["path_original"] if rec and perspective == "first" else None,
        "statements": {k: wording(k) for k in ("satisfaction", "trust", "reliance")},
        "heading": wording("heading"),
        "instruction": wording("instruction"),
        "likert": survey["likert"],
        "flagged": {
            k: survey[k]
            for k in (
                "flagged",
                "flagged_accepted",
                "flagged_refused",
                "outcome_correct",
                "outcome_incorrect",
                "outcome_accepted",
                "question_label",
                "answer_label",
                "score_label",
            )
        },
    }
    if phase == "survey_informed":
        outcomes = []
        for v in answer_store.validations_for_exchange(database, ex["id"]):
            ans = {x["idx"]: x for x in answer_store.answers(database, v["receive_assignment_id"])}
            outcomes.append(
                {
                    "qa_score": v["qa_score"],
                    "translation_score": v["translation_score"],
                    "label": sqm_label(v["translation_score"], study),
                    "answers": [
                        {
                            "idx": q["idx"],
                            "en": q["en"],
                            "answer": ans.get(q["idx"], {}).get("text", ""),
                            "unanswerable": bool(ans.get(q["idx"], {}).get("unanswerable")),
                            "correct": v["marks"].get(q["idx"]),
                        }
                        for q in qs
                    ],
                }
            )
        content["outcomes"] = outcomes
        content["sqm"] = [{"value": s["value"], "label": s["label"]} for s in texts(study)["sqm"]]
    return content


def intake_recording(database, study: StudyRow, assignment: AssignmentRow, payload, media_dir) -> dict:
    """The recording decoded and stored outside the line of participant actions."""
    try:
        ex = required(exchanges.exchange(database, assignment["exchange_id"]), "exchange of an assignment")
        starter = required(usability_corpus.starter(database, study["id"], ex["starter_id"]), "starter of an exchange")
        return {
            "audio": store_recording(
                payload.get("audio") or "",
                media_dir,
                study["config"]["usability"]["max_recording_seconds"],
                starter["text"],
                key=assignment["participant_id"],
                staged=True,
            )
        }
    except IntakeError as e:
        raise SubmissionError(str(e)) from e


def discard_recording(database, data) -> None:
    """The staged files of a recording its save did not take, and its content-named files when
    no row names them (a write that failed after placing them)."""
    au = data["audio"]
    audio_intake.discard(au, recordings.content_named(database, au.sha256))


def save_recording(
    tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data
) -> None:
    au = audio_intake.place(data["audio"])
    rid = recordings.insert_recording(
        tx.db, assignment["id"], exchange_of(assignment), au.sha256, au.path_original, au.path_16k, au.duration_s
    )
    jobs.enqueue(
        tx.db,
        "process_recording",
        {"recording_id": rid, "exchange_id": assignment["exchange_id"]},
        dedupe_key=f"process_recording:{rid}",
    )


def save_answers(
    tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data
) -> None:
    answer_store.insert_answers(tx.db, assignment["id"], exchange_of(assignment), data["answers"])


def save_validation(
    tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data
) -> None:
    answer_store.insert_validation(
        tx.db,
        assignment["id"],
        data["receive_assignment_id"],
        exchange_of(assignment),
        data["score"],
        data["qa_score"],
        data["marks"],
    )


def save_survey(tx: Transaction, study: StudyRow, participant: ParticipantRow, assignment: AssignmentRow, data) -> None:
    ex = required(exchanges.exchange(tx.database, assignment["exchange_id"]), "exchange of an assignment")
    perspective = "first" if ex["sender_id"] == participant["id"] else "third"
    answer_store.insert_survey(
        tx.db,
        assignment["id"],
        exchange_of(assignment),
        assignment["phase"].split("_")[1],
        perspective,
        data["satisfaction"],
        data["trust"],
        data["reliance"],
    )


def stored_recording(database, assignment: AssignmentRow) -> dict:
    return recordings.recording_for_assignment(database, assignment["id"]) or {}


def stored_answers(database, assignment: AssignmentRow) -> dict:
    return {"answers": answer_store.answers(database, assignment["id"])}


def stored_validation(database, assignment: AssignmentRow) -> dict:
    return answer_store.validation(database, assignment["id"]) or {}


def stored_survey(database, assignment: AssignmentRow) -> dict:
    return answer_store.survey(database, assignment["id"]) or {}


def receiver_total(database, participant: ParticipantRow, study: StudyRow, counts: dict[str, int]) -> int:
    return max(study["config"]["usability"]["items_per_receiver"], counts["done"] + counts["open"])


def validator_total(database, participant: ParticipantRow, study: StudyRow, counts: dict[str, int]) -> int:
    return max(study["config"]["usability"]["items_per_validator"], counts["done"] + counts["open"])


def survey_total(database, participant: ParticipantRow, study: StudyRow, counts: dict[str, int]) -> int:
    cfg = study["config"]
    if participant["role"] == "sender":
        return 2 * cfg["usability"]["items_per_sender"]
    # a rater's work comes from senders who drop out: like a receiver they wait for it (up to
    # a sender's share), rather than finishing, and being paid, at 0 of 0
    c = assignments.counts(database, participant["id"], ("survey_baseline",))
    cap = (
        workflow.capacity(cfg["usability"], "survey_baseline")
        if "usability" in cfg and participant["role"] == "rater"
        else 0
    )
    return 2 * max(cap, c["open"] + c["done"])


def waiting_message(database, participant: ParticipantRow, voice: Voice | None = None) -> str | None:
    """Why a sender's survey is not ready yet, when the reason is theirs to know (None: a
    rater's, in the common words)."""
    if participant["role"] != "sender":
        return None
    state = exchanges.sender_recording_state(database, participant["id"])
    if state["unrecorded"]:
        return (
            f"Your surveys open once your messages are recorded and translated: {state['unrecorded']} "
            "still to record on the Record tab."
        )
    if state["in_review"]:
        n = state["in_review"]
        said = "1 of your recordings waits" if n == 1 else f"{n} of your recordings wait"
        return (
            f"{said} for a check by the study team; {'its survey opens' if n == 1 else 'their surveys open'} "
            "once it is done. This page checks again by itself."
        )
    if state["processing"]:
        n = state["processing"]
        said = "1 of your recordings is" if n == 1 else f"{n} of your recordings are"
        return (
            f"{said} being checked and translated; {'its survey opens' if n == 1 else 'their surveys open'} "
            "in a moment. This page checks again by itself."
        )
    return (
        "Your next survey opens once the other participants have answered questions about your "
        "translations and a bilingual validator has checked them. This can take a while: "
        "you can come back later with the same link."
    )


def setup_sender(tx: Transaction, study: StudyRow, pid: int, group, gender, design_index: int | None = None) -> None:
    """A sender's record items: their design block's starters, each with its system."""
    cfg, sid = study["config"], study["id"]
    seed = cfg["study"]["seed"]
    us = cfg["usability"]
    index = (
        participants.next_design_index(tx.db, sid, "sender", group, gender) if design_index is None else design_index
    )
    participants.set_design_index(tx.db, pid, index)
    systems = [s["id"] for s in studies.systems(tx.database, sid) if s["config"]["assign"]]
    for starter_id, system_id in sender_design(
        usability_corpus.starters(tx.database, sid), systems, us["items_per_sender"], seed, index
    ):
        eid = exchanges.insert_exchange(tx.db, sid, starter_id, system_id, pid)
        assignments.insert_assignment(tx.db, sid, pid, "record", eid, order_key(seed, pid, eid), exchange_id=eid)
    # recordings withdrawn from a sender of this cell that no sender of it could take
    workflow.adopt_cell_orphans(tx, study, pid, group, gender)


def _pool(tab: str) -> Pool:
    """A pooled role's work, taken on `tab` (workflow.POOL_OF_ROLE names the role's phase)."""
    return Pool(tab, workflow.may_take, workflow.ready_in_pool, workflow.next_item)


PROTOCOL = protocols.register(
    Protocol(
        name="usability",
        report_section="services.report.usability:section",  # its paper's part of the study report
        jobs="services.usability.pipeline:background_jobs",  # what the worker runs for it
        # the demo enrols it from services.setup, a layer above the protocols: named, imported on use
        demo="services.setup.usability_demo:add_people",
        admin_section="tabs.admin_usability:section",  # its exchanges and the recording review
        analysis_panel="tabs.analysis_usability:panel",  # its section of the Analysis tab
        assigned_systems="senders",  # each sender's recordings go through one system
        metrics_report="services.metrics.exchange:metrics_report",  # the exchanges' metrics
        systems_report="services.usability.outputs:systems_report",  # precision, outputs, cuts
        plan="services.usability.plan:plan",  # the receivers its design needs; exchanges left waiting
        dashboard="services.usability.dashboard:dashboard",  # the recordings to review
        # seconds_per_item: the welcome's estimates (no paper gives one): reading and recording a
        # 40-60 word starter, up to two tries, and its two surveys; reading a translation and
        # answering up to 10 short questions; reading source and translation, a score and up to 10
        # marks; two surveys of someone else's message
        # a leaving participant's open items are handed on by every role (reassignment.on_leave);
        # receivers, validators and raters take their work from the pool, one item at a time
        roles=(
            Role(
                "sender",
                ("record", "survey"),
                "Sender",
                setup_sender,
                grouped=True,
                items=lambda cfg: (cfg.get("usability") or {}).get("items_per_sender", 0),
                seconds_per_item=150,
                on_leave=reassignment.on_leave,
                qc=sender_qc,
            ),
            Role(
                "receiver",
                ("receiver",),
                "Receptor",
                items=lambda cfg: (cfg.get("usability") or {}).get("items_per_receiver", 0),
                seconds_per_item=150,
                pool=_pool("receiver"),
                on_leave=reassignment.on_leave,
            ),
            Role(
                "validator",
                ("validator",),
                "Validator",
                items=lambda cfg: (cfg.get("usability") or {}).get("items_per_validator", 0),
                seconds_per_item=180,
                pool=_pool("validator"),
                on_leave=reassignment.on_leave,
            ),
            Role(
                "rater",
                ("survey",),
                "Rater",
                items=lambda cfg: (cfg.get("usability") or {}).get("items_per_sender", 0),
                seconds_per_item=60,
                pool=_pool("survey"),
                on_leave=reassignment.on_leave,
            ),
        ),
        tabs=(
            Tab("record", ("record",), "tabs.record:build", label="Record", on_submit=workflow.after_submit),
            # the receiver's page is in European Portuguese, as the paper's receivers
            Tab(
                "receiver",
                ("receive",),
                "tabs.receiver:build",
                on_submit=workflow.after_submit,
                total=receiver_total,
                lang="pt-PT",
            ),
            Tab(
                "validator",
                ("validate",),
                "tabs.validator:build",
                on_submit=workflow.after_submit,
                total=validator_total,
            ),
            Tab(
                "survey",
                ("survey_baseline", "survey_informed"),
                "tabs.survey:build",
                label="Survey",
                on_submit=workflow.after_submit,
                total=survey_total,
                waiting=waiting_message,
            ),
        ),
        phases=(
            Phase(
                "record",
                content,
                None,
                save_recording,
                stored_recording,
                intake=intake_recording,
                discard=discard_recording,
                label="recording",
                pool_taker="a new sender of the same group and gender",  # an orphaned recording item
            ),
            Phase(
                "receive",
                content,
                answers.validate_receive,
                save_answers,
                stored_answers,
                label="receiver answers",
                pool_taker="a receiver with room",
            ),
            Phase(
                "validate",
                content,
                answers.validate_validate,
                save_validation,
                stored_validation,
                label="validation",
                pool_taker="a validator with room",
            ),
            Phase(
                "survey_baseline",
                content,
                answers.validate_survey,
                save_survey,
                stored_survey,
                label="survey (baseline)",
                pool_taker="a rater with room (third-person surveys)",
            ),
            Phase(
                "survey_informed",
                content,
                answers.validate_survey,
                save_survey,
                stored_survey,
                not_handed_on="an informed survey follows the person's own baseline",
                served_last=True,  # after every baseline of the survey tab
                label="survey (informed)",
            ),
        ),
        participant_items=items_in_words,  # the admin's "A participant" page
        analyze="services.usability.cli:add_analyze",  # `app.py analyze usability`
        cli="services.setup.usability_commands:add_commands",  # `app.py starters|questions|metrics`
        defaults=DEFAULTS,
        check=check,
        load=corpus.load,
        store_corpus=corpus.store,
        count_corpus=corpus.count,
        count_collected=exchanges.collected_counts,
        forget=recordings.forget_study,
        corpus_files=("starters", "questions", "exchanges", "references"),
        export_tables=export_tables.TABLES,
        audio_metadata=export_tables.AUDIO_METADATA,  # the hf-audio format
        drop_inactive=dropouts.detect_inactive,  # senders gone quiet
        repair="services.usability.pipeline:schedule_sweep",  # the workflow's refresh, the media sweep
        questions_changed=workflow.starter_changed,
    )
)
