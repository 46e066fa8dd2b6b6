"""The semantic differential's pages in the team's words, for the admin's "A participant" page
(its spec's participant_items): the sentence and page, or the kind of page; the ratings given."""

from __future__ import annotations

from collections import defaultdict

from storage.rows import ParticipantRow
from storage.sd import participant_view as store


def items_in_words(database, participant: ParticipantRow, items: list[dict]) -> dict[int, tuple[str, str]]:
    said: dict[int, list[str]] = defaultdict(list)
    for r in store.sd_ratings(database, participant["id"]):
        if r["suitability"] is not None:
            said[r["assignment_id"]].append(f"{r['pair_id']} suitability {r['suitability']}")
        else:
            said[r["assignment_id"]].append(f"{r['pair_id']}{' (repeat)' if r['is_repeat'] else ''} {r['value']:+d}")
    out = {}
    for a in items:
        meta = a["meta"]
        if "kind" not in meta and "sentence_id" not in meta:  # not a page of sentences: said as "item <id>"
            continue
        kind = meta.get("kind", "ratings")
        if kind == "ratings":
            what = f"sentence {meta.get('sentence_id')}, page {meta.get('page')} of {meta.get('pages')}"
        else:
            what = f"{kind} page"
        out[a["id"]] = (what, "; ".join(said.get(a["id"], [])))
    return out
