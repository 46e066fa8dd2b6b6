"""The semantic-differential form (paper 002): what each participant's pages hold.

Per participant, once: the adjective pairs' order and polarity (which adjective stands on the
left) are randomised and stored. Per sentence: its pairs in that order, plus
`repeats_per_sentence` pairs asked a second time at the end of the sentence (the test
condition's consistency check; same polarity), cut into pages of `pairs_per_page` scales. In
preliminary mode a last page asks how suitable each pair is (1-5) with optional suggestions.

A page's entries carry a `slot` (pair id, or pair id + REPEAT_SUFFIX for a repeat) so a
repeated pair has its own answer. Values are stored canonically: +3 = the positive adjective.
"""
from __future__ import annotations

from services.assignment import seeded_rng
from storage import queue, studies

REPEAT_SUFFIX = "~repeat"
SUITABILITY_ITEM = "suitability"


def participant_layout(pair_ids: list[str], rng) -> list[dict]:
    pairs = list(pair_ids)
    rng.shuffle(pairs)
    return [{"pair_id": p, "positive_left": rng.random() < 0.5} for p in pairs]


def sentence_entries(layout: list[dict], repeats: int, rng) -> list[dict]:
    entries = [{**e, "slot": e["pair_id"], "repeat": False} for e in layout]
    for e in rng.sample(layout, min(repeats, len(layout))):
        entries.append({**e, "slot": e["pair_id"] + REPEAT_SUFFIX, "repeat": True})
    return entries


def pages(entries: list[dict], per_page: int) -> list[list[dict]]:
    if per_page <= 0 or per_page >= len(entries):
        return [entries]
    return [entries[i:i + per_page] for i in range(0, len(entries), per_page)]


def setup_queue(db, database, study, pid: int) -> None:
    sid, cfg = study["id"], study["config"]
    sd, seed = cfg["sd"], cfg["study"]["seed"]
    rng = seeded_rng("sd", seed, pid)
    sents = studies.sd_sentences(database, sid)
    use = queue.segment_use(database, sid, "sd")
    sents.sort(key=lambda s: (use.get(f"{s['id']}#1", 0), rng.random()))
    layout = participant_layout([p["id"] for p in studies.sd_pairs(database, sid, sd["language"])], rng)
    chosen = sents[:sd["sentences_per_participant"]]
    for rank, s in enumerate(chosen):
        srng = seeded_rng("sd-repeats", seed, pid, s["id"])
        parts = pages(sentence_entries(layout, sd["repeats_per_sentence"], srng), sd["pairs_per_page"])
        for k, page in enumerate(parts, start=1):
            queue.insert_assignment(db, sid, pid, "sd", f"{s['id']}#{k}", rank + k / 1000,
                                    meta={"kind": "ratings", "sentence_id": s["id"], "page": k,
                                          "pages": len(parts), "pairs": page})
    if sd["mode"] == "preliminary":
        queue.insert_assignment(db, sid, pid, "sd", SUITABILITY_ITEM, len(chosen) + 1,
                                meta={"kind": "suitability", "pairs": layout})


def page_content(database, study, a, wording: dict) -> dict:
    meta, sid = a["meta"], study["id"]
    pairs = {q["id"]: q for q in studies.sd_pairs(database, sid, study["config"]["sd"]["language"])}
    if meta.get("kind") == "suitability":
        return {"kind": "suitability", "instruction": wording["suitability_instruction"],
                "pairs": [{"slot": e["pair_id"], "pair_id": e["pair_id"], "left": pairs[e["pair_id"]]["positive"],
                           "right": pairs[e["pair_id"]]["negative"]} for e in meta["pairs"]]}
    sent = studies.sd_sentence(database, sid, meta.get("sentence_id", a["item_id"]))
    shown = []
    for e in meta["pairs"]:
        q = pairs[e["pair_id"]]
        left, right = (q["positive"], q["negative"]) if e["positive_left"] else (q["negative"], q["positive"])
        shown.append({"slot": e.get("slot", e["pair_id"]), "pair_id": q["id"], "left": left, "right": right})
    first = meta.get("page", 1) == 1 and a["position"] < 1
    return {"kind": "ratings", "sentence": sent["text"], "pairs": shown, "instruction": wording["instruction"],
            "example": wording.get("example", "") if first else "",
            "page": meta.get("page", 1), "pages": meta.get("pages", 1)}
