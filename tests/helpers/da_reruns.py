"""DA campaigns with a careless rater (tests/test_da_reruns.py, tests/test_finished_qc.py)."""

from __future__ import annotations

import json

from services.participation.items import get_view
from services.participation.submissions import submit
from services.setup.enrolment import add_participants
from storage.da import hits
from tests.helpers.da import careful
from tests.helpers.da import da_study as make_study

# the demo's HITs hold 2 bad_reference and 2 ask_again pairs: the smallest one-sided
# Mann-Whitney p is then 1/6, so these tests test reliability at 0.5
SMALL_HIT = {"modality": '"text"', "reliability_alpha": "0.5"}


def careless(it) -> int:
    """A rater who scores degraded copies above everything else: fails the reliability test."""
    return 95 if it["type"] == "bad_reference" else 5 + (it["pos"] % 7)


def rate(db, media, rater, how):
    while (v := get_view(db, rater.token, "da", media_dir=media)).status == "item":
        res = submit(
            db, rater.token, "da", v.item_id, {"score": how(hits.da_hit_item(db, int(v.item_id)))}, media_dir=media
        )
        assert res.saved


def held_hit(db, pid) -> int:
    return json.loads(db.scalar("SELECT meta FROM assignments WHERE participant_id = ? LIMIT 1", [pid]))["hit_id"]


def campaign_with_one_careless_rater(database, tmp_path, **settings):
    """Every HIT rated once; the rater of the last HIT is careless."""
    db, media = make_study(database, tmp_path, **{**SMALL_HIT, "keep_fast": "true", **settings})
    n_hits = len(hits.da_hits(db, "demo"))
    assert n_hits >= 2
    raters = add_participants(db, "demo", "da", n_hits)
    for r in raters[:-1]:
        rate(db, media, r, careful)
    rate(db, media, raters[-1], careless)
    return db, media, raters
