"""The DA rater's items in the team's words, for the admin's "A participant" page (its spec's
participant_items): the HIT, the item's place and type, its segment and system; the score."""

from __future__ import annotations

from storage.da import participant_view as store
from storage.rows import ParticipantRow


def items_in_words(database, participant: ParticipantRow, items: list[dict]) -> dict[int, tuple[str, str]]:
    found = {r["assignment_id"]: r for r in store.da_items(database, participant["id"])}
    out = {}
    for a in items:
        d = found.get(a["id"])
        if d is None:
            out[a["id"]] = (f"HIT item {a['item_id']}", "")
            continue
        what = (
            f"HIT {d['hit']} item {d['pos']} ({a['meta'].get('modality', d['modality']) or 'text'}): "
            f"{d['type']} item, segment {d['segment_id']}, system {d['system']}"
        )
        out[a["id"]] = (what, "" if d["score"] is None else f"score {d['score']:g}")
    return out
