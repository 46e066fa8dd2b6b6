"""The semantic-differential form (paper 002): what each participant's pages hold.

Defaults follow the paper (section 3.2 and Table 3, the survey's instructions): a welcome
page with the instructions, then an example on its own page ("Auf der naechsten Seite wirst du
zunaechst ein Beispiel sehen, bevor es losgeht"), then each of the participant's 3 sentences on
4 pages ("3 Saetze auf je 4 Seiten") with 22 scales ("22 gegensaetzliche Adjektivpaare"): the
20 pairs of the final study plus 2 repeated ones, the test condition behind the Inconsistency
Score (section 3.2: "we incorporated a test condition ... based on calculating an
Inconsistency Score (IS) (Naderi, 2018) on repeated adjective pairs").

Per participant, once: the adjective pairs' order and polarity (which adjective stands on the
left) are randomised and stored. Per sentence: its pairs in that order, plus
`repeats_per_sentence` pairs asked a second time at the end of the sentence (same polarity),
chosen among the pairs that are not on the sentence's last page (a repeat never shares a page
with its first rating when there are other pages). The scales are cut into
`pages_per_sentence` pages (earlier pages take the odd scale: 22 over 4 is 6, 6, 5, 5), or
into pages of `pairs_per_page` scales when that is set (> 0). In preliminary mode a last page
asks how suitable each pair is (1-5) with optional suggestions.

The instructions are the paper's Table 3, in English or in the German original
(`instructions_language`, or the pairs' `language` when that is de); {sentences}, {pages}
and {pairs} in them are the study's numbers (3, 4 and 22 with the defaults).

A page's entries carry a `slot` (pair id, or pair id + REPEAT_SUFFIX for a repeat) so a
repeated pair has its own answer. Values are stored canonically: +3 = the positive adjective.
The welcome and example pages have no scales (an empty `pairs`): submitting them stores nothing.
"""

from __future__ import annotations

from services.common.seeded import seeded_rng
from storage import assignments
from storage.db import Transaction, required
from storage.rows import AssignmentRow, StudyRow
from storage.sd import corpus

REPEAT_SUFFIX = "~repeat"
SUITABILITY_ITEM = "suitability"
WELCOME_ITEM = "welcome"
EXAMPLE_ITEM = "example"
INSTRUCTION_LANGUAGES = ("en", "de")


def participant_layout(pair_ids: list[str], rng) -> list[dict]:
    pairs = list(pair_ids)
    rng.shuffle(pairs)
    return [{"pair_id": p, "positive_left": rng.random() < 0.5} for p in pairs]


def page_sizes(n: int, per_page: int = 0, n_pages: int = 1) -> list[int]:
    """Scales per page: pages of per_page (> 0), else n spread over n_pages pages, earlier
    pages taking the odd ones (never an empty page)."""
    if n <= 0:
        return [0]
    if per_page > 0:
        return [min(per_page, n - i) for i in range(0, n, per_page)]
    k = max(1, min(n_pages, n))
    q, r = divmod(n, k)
    return [q + 1] * r + [q] * (k - r)


def sentence_entries(layout: list[dict], repeats: int, rng, last_page_size: int | None = None) -> list[dict]:
    """The sentence's scales: the layout, then `repeats` repeated pairs (at the end). With
    last_page_size, the repeats are drawn from the pairs before the last page where there are
    enough of them."""
    entries = [{**e, "slot": e["pair_id"], "repeat": False} for e in layout]
    repeats = min(repeats, len(layout))
    pool = layout
    if last_page_size is not None and repeats:
        before_last = len(layout) + repeats - last_page_size
        if before_last >= repeats:
            pool = layout[:before_last]
    for e in rng.sample(pool, repeats):
        entries.append({**e, "slot": e["pair_id"] + REPEAT_SUFFIX, "repeat": True})
    return entries


def pages(entries: list[dict], per_page: int = 0, n_pages: int = 1) -> list[list[dict]]:
    out, i = [], 0
    for size in page_sizes(len(entries), per_page, n_pages):
        out.append(entries[i : i + size])
        i += size
    return out


def _layout_sizes(sd: dict, n_pairs: int) -> list[int]:
    repeats = min(sd.get("repeats_per_sentence", 0), n_pairs)
    return page_sizes(n_pairs + repeats, sd.get("pairs_per_page", 0), sd.get("pages_per_sentence", 1))


def setup_queue(tx: Transaction, study: StudyRow, pid: int) -> None:
    sid, cfg = study["id"], study["config"]
    sd, seed = cfg["sd"], cfg["study"]["seed"]
    rng = seeded_rng("sd", seed, pid)
    sents = corpus.sd_sentences(tx.database, sid)
    use = assignments.segment_use(tx.database, sid, "sd")
    sents.sort(key=lambda s: (use.get(f"{s['id']}#1", 0), rng.random()))
    layout = participant_layout([p["id"] for p in corpus.sd_pairs(tx.database, sid, sd["language"])], rng)
    chosen = sents[: sd["sentences_per_participant"]]
    sizes = _layout_sizes(sd, len(layout))
    # the welcome (instructions) and the example, each on its own page, before the first sentence
    assignments.insert_assignment(tx.db, sid, pid, "sd", WELCOME_ITEM, -0.002, meta={"kind": "welcome", "pairs": []})
    assignments.insert_assignment(tx.db, sid, pid, "sd", EXAMPLE_ITEM, -0.001, meta={"kind": "example", "pairs": []})
    for rank, s in enumerate(chosen):
        srng = seeded_rng("sd-repeats", seed, pid, s["id"])
        entries = sentence_entries(layout, sd["repeats_per_sentence"], srng, last_page_size=sizes[-1])
        parts = pages(entries, sd.get("pairs_per_page", 0), sd.get("pages_per_sentence", 1))
        for k, page in enumerate(parts, start=1):
            assignments.insert_assignment(
                tx.db,
                sid,
                pid,
                "sd",
                f"{s['id']}#{k}",
                rank + k / 1000,
                meta={"kind": "ratings", "sentence_id": s["id"], "page": k, "pages": len(parts), "pairs": page},
            )
    if sd["mode"] == "preliminary":
        assignments.insert_assignment(
            tx.db, sid, pid, "sd", SUITABILITY_ITEM, len(chosen) + 1, meta={"kind": "suitability", "pairs": layout}
        )


def instructions_language(sd: dict) -> str:
    """The language of the instructions: the study's setting, else the pairs' language when the
    paper has the text in it (de), else English."""
    lang = sd.get("instructions_language") or ""
    if lang:
        return lang
    language = sd.get("language") or ""
    return language if language in INSTRUCTION_LANGUAGES else "en"


def _word(wording: dict, key: str, lang: str) -> str:
    return wording.get(f"{key}_{lang}", "") if lang != "en" else wording.get(key, "")


def input_kind(sd: dict) -> str:
    """How a pair is rated: "slider" (paper 002, -3..+3) or "radio" (seven points)."""
    return "radio" if sd.get("input") == "radio" else "slider"


def _instruction_key(key: str, sd: dict) -> str:
    """The welcome's and the reminder's wording for the study's input (the slider's is Table 3's)."""
    return f"{key}_radio" if input_kind(sd) == "radio" else key


def fill(text: str, values: dict) -> str:
    """{name} placeholders replaced by values (other braces are left as they are)."""
    for k, v in values.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def instruction_values(sd: dict, n_pairs: int) -> dict:
    """The numbers the instructions name: sentences, pages per sentence and scales per sentence."""
    sizes = _layout_sizes(sd, n_pairs)
    return {"sentences": sd["sentences_per_participant"], "pages": len(sizes), "pairs": sum(sizes)}


def page_content(database, study: StudyRow, assignment: AssignmentRow, wording: dict) -> dict:
    meta, sid, sd = assignment["meta"], study["id"], study["config"]["sd"]
    pairs = {q["id"]: q for q in corpus.sd_pairs(database, sid, sd["language"])}
    lang = instructions_language(sd)
    kind = meta.get("kind")
    if kind == "welcome":
        text = fill(_word(wording, _instruction_key("welcome", sd), lang), instruction_values(sd, len(pairs)))
        return {"kind": "welcome", "instruction": text, "example": "", "pairs": [], "language": lang}
    if kind == "example":
        return {
            "kind": "example",
            "instruction": "",
            "example": _word(wording, "example", lang),
            "pairs": [],
            "language": lang,
        }
    if kind == "suitability":
        return {
            "kind": "suitability",
            "instruction": wording["suitability_instruction"],
            "pairs": [
                {
                    "slot": e["pair_id"],
                    "pair_id": e["pair_id"],
                    "left": pairs[e["pair_id"]]["positive"],
                    "right": pairs[e["pair_id"]]["negative"],
                }
                for e in meta["pairs"]
            ],
        }
    sent = required(
        corpus.sd_sentence(database, sid, meta.get("sentence_id", assignment["item_id"])), "sentence of an SD page"
    )
    shown = []
    for e in meta["pairs"]:
        q = pairs[e["pair_id"]]
        left, right = (q["positive"], q["negative"]) if e["positive_left"] else (q["negative"], q["positive"])
        shown.append({"slot": e.get("slot", e["pair_id"]), "pair_id": q["id"], "left": left, "right": right})
    return {
        "kind": "ratings",
        "sentence": sent["text"],
        "pairs": shown,
        "instruction": _word(wording, _instruction_key("instruction", sd), lang),
        "example": "",
        "page": meta.get("page", 1),
        "pages": meta.get("pages", 1),
        "language": lang,
        "input": input_kind(sd),
    }
