"""The usability study's items in the team's words, for the admin's "A participant" page (its
spec's participant_items): what each item was (the exchange, its starter and system) and the
answer (the recording and its QC, the receiver's answers, the validator's scores and marks, the
survey's ratings), one query per kind of answer."""

from __future__ import annotations

import json
from collections import defaultdict

from storage.rows import ParticipantRow
from storage.usability import participant_view as store


def items_in_words(database, participant: ParticipantRow, items: list[dict]) -> dict[int, tuple[str, str]]:
    pid = participant["id"]
    text: dict[int, str] = {}
    for r in store.recordings(database, pid):
        flags = ", ".join(json.loads(r["qc_flags"])) if r["qc_flags"] else ""
        words = f"recording {r['duration_s']:.1f} s, QC {r['qc_status']}"
        if r["wer"] is not None:
            words += f" (WER {r['wer']:.2f})"
        if flags:
            words += f"; flags: {flags}"
        if r["reviewed_by"]:
            words += f"; reviewed by {r['reviewed_by']}"
        text[r["assignment_id"]] = words
    per: dict[int, list[str]] = defaultdict(list)
    for r in store.answers(database, pid):
        per[r["assignment_id"]].append(f"Q{r['idx']}: " + ("(unanswerable)" if r["unanswerable"] else r["text"]))
    text.update({k: "; ".join(v) for k, v in per.items()})
    marks: dict[int, list[str]] = defaultdict(list)
    scores: dict[int, dict] = {}
    for r in store.validations(database, pid):
        scores[r["assignment_id"]] = r
        if r["question_idx"] is not None:
            marks[r["assignment_id"]].append(f"Q{r['question_idx']} {'correct' if r['correct'] else 'wrong'}")
    for aid, r in scores.items():
        text[aid] = f"translation {r['translation_score']:g}/100; QA {r['qa_score']:.2f}" + (
            f"; {', '.join(marks[aid])}" if marks[aid] else ""
        )
    for r in store.surveys(database, pid):
        text[r["assignment_id"]] = (
            f"satisfaction {r['satisfaction']}, trust {r['trust']}, reliance {r['reliance']}"
            f" ({r['perspective']} person)"
        )
    out = {}
    for a in items:
        if a["phase"] == "validate":
            what = (
                f"answers of receiver item {a['item_id']} on exchange {a['exchange_id']} "
                f"(starter {a['starter_id']}, system {a['system_id']})"
            )
        else:
            what = f"exchange {a['exchange_id']}: starter {a['starter_id']}, system {a['system_id']}"
        out[a["id"]] = (what, text.get(a["id"], ""))
    return out
