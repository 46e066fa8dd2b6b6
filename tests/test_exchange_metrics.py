"""Automatic metrics per exchange: queued when a translation exists, stored with their provenance,
and joined to the usability analysis's rows."""
from __future__ import annotations

import pytest

from services.common.jobs_worker import Worker
from services.metrics import exchange as exchange_metrics
from services.models.cache import ModelCache
from services.usability import pipeline
from storage import results

CACHE = ModelCache(device="cpu")


def test_imported_exchanges_are_scored_by_the_worker(demo_db):
    db = demo_db
    queued = db.scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'score_exchange'")
    assert queued == 12                                   # one per imported translation
    score = pipeline.handlers(db, CACHE)["score_exchange"]
    done = Worker(db, {"score_exchange": score}).run_until_idle(limit=3)
    assert [j["status"] for j in done] == ["done"] * 3
    rows = results.exchange_metric_rows(db, "demo")
    by_metric = {r["metric"] for r in rows}
    # no second human reference of the same starter: chrF/BLEU have nothing to compare with
    assert by_metric == {"e5-cosine", "backtranslation-chrf"}
    for r in rows:
        assert r["version"] and r["model"] and r["score"] is not None
    e5 = [r["score"] for r in rows if r["metric"] == "e5-cosine"]
    assert all(0.7 < s <= 1.0 for s in e5)               # human translations of the starters
    # scoring again is idempotent (the score cache answers)
    ex = rows[0]["exchange_id"]
    again = exchange_metrics.score_exchange(db, ex, CACHE)
    assert again["e5-cosine"] == pytest.approx(next(r["score"] for r in rows if r["exchange_id"] == ex
                                                    and r["metric"] == "e5-cosine"))


def test_an_unknown_metric_in_the_study_is_an_import_error(tmp_path):
    import shutil

    from conftest import DEMO
    from services.study.files import StudyValidationError, load_study

    folder = tmp_path / "s"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text().replace("items_per_sender = 4",
                                                       'items_per_sender = 4\nmetrics = ["e5-cosine", "blue"]')
    (folder / "study.toml").write_text(toml)
    with pytest.raises(StudyValidationError, match="unknown metric 'blue'"):
        load_study(folder)
