"""The usability study's answers checked on the server: the receiver's answers, the validator's
marks and score, the surveys' Likert statements (services/usability/protocol.py registers them)."""

from __future__ import annotations

from services.participation.submissions import (
    MAX_TEXT,
    SubmissionError,
    checked_value,
    idx_map,
    number_in,
    refuse_all,
)
from services.study.texts import refusal
from storage import assignments
from storage.db import required
from storage.rows import AssignmentRow
from storage.usability import answers, exchanges
from storage.usability import corpus as usability_corpus


def likert(value, name):
    x = number_in(value, name, 1, 5, f"Please answer the statement about {name}.")
    if x != int(x):
        raise SubmissionError(f"{name} must be one of 1, 2, 3, 4, 5.")
    return int(x)


def validate_receive(database, assignment: AssignmentRow, payload) -> dict:
    ex = required(exchanges.exchange(database, assignment["exchange_id"]), "exchange of an assignment")
    qs = usability_corpus.questions(database, ex["study_id"], ex["starter_id"])
    given = idx_map(payload.get("answers"))
    unknown = set(given) - {q["idx"] for q in qs}
    if unknown:
        raise refusal(SubmissionError, "no_such_question", idx=min(unknown))
    clean, missing, parts = [], [], []
    fields: dict[str, Exception] = {}
    for q in qs:
        i = q["idx"]
        g = given.get(i, {})
        text, flag = g.get("text"), g.get("unanswerable")
        if not isinstance(text, (str, type(None))):  # a form field is text: no list, no number
            parts.append(fields.setdefault(f"answer-{i}", refusal(SubmissionError, "answer_not_text", idx=i)))
            continue
        text = (text or "").strip()
        if flag not in (None, False, True):  # a checkbox sends a boolean: "false" must not count as ticked
            parts.append(fields.setdefault(f"flag-{i}", refusal(SubmissionError, "flag_not_boolean", idx=i)))
            continue
        flag = bool(flag)
        if len(text) > MAX_TEXT:
            parts.append(
                fields.setdefault(f"answer-{i}", refusal(SubmissionError, "answer_too_long", idx=i, limit=MAX_TEXT))
            )
        elif not text and not flag:
            missing.append(i)
            fields[f"answer-{i}"] = refusal(SubmissionError, "answer_missing_here")
        clean.append({"idx": i, "text": text, "unanswerable": flag})
    if missing:  # one sentence for every unanswered question, first
        parts.insert(0, refusal(SubmissionError, "answers_missing", missing=", ".join(map(str, missing))))
    refuse_all(parts, fields)
    return {"answers": clean}


def validate_validate(database, assignment: AssignmentRow, payload) -> dict:
    parts, fields = [], {}
    score, problem = checked_value(
        number_in, payload.get("score"), "The translation score", 0, 100, refusal(SubmissionError, "score_missing")
    )
    if problem:
        parts.append(problem)
        fields["score"] = problem
    receive = required(assignments.assignment(database, int(assignment["item_id"])), "receive item of a validation")
    idxs = [x["idx"] for x in answers.answers(database, receive["id"])]
    marks_in = payload.get("marks") or {}
    if not isinstance(marks_in, dict):
        raise SubmissionError("The marks must be given per answer number.")
    extra = {int(k) for k in marks_in} - set(idxs) if all(str(k).isdigit() for k in marks_in) else {"?"}
    if extra:
        raise SubmissionError("Marks were sent for answers that do not exist.")
    marks, missing = {}, []
    for i in idxs:
        m = marks_in.get(i, marks_in.get(str(i)))
        if m is None:
            missing.append(i)
            fields[f"mark-{i}"] = "Mark this answer correct or incorrect."
        elif isinstance(m, bool) or m in (0, 1):
            marks[i] = bool(m)
        elif isinstance(m, str) and m.lower() in ("correct", "incorrect"):
            marks[i] = m.lower() == "correct"
        else:
            parts.append(fields.setdefault(f"mark-{i}", f"The mark of answer {i} must be correct or incorrect."))
    if missing:
        parts.append(f"Please mark every answer as correct or incorrect (missing: {', '.join(map(str, missing))}).")
    refuse_all(parts, fields)
    qa = sum(marks.values()) / len(marks) if marks else 0.0
    return {"score": score, "marks": marks, "qa_score": qa, "receive_assignment_id": receive["id"]}


SURVEY_DIMENSIONS = ("satisfaction", "trust", "reliance")


def validate_survey(database, assignment: AssignmentRow, payload) -> dict:
    out, missing, parts, fields = {}, [], [], {}
    for k in SURVEY_DIMENSIONS:
        value = payload.get(k)
        if value is None or (isinstance(value, str) and not value.strip()):
            missing.append(k)
            fields[k] = "Choose one of the five points."
            continue
        out[k], problem = checked_value(likert, value, k)
        if problem:
            parts.append(fields.setdefault(k, problem))
    if missing:
        parts.insert(0, f"Please answer every statement (missing: {', '.join(missing)}).")
    refuse_all(parts, fields)
    return out
