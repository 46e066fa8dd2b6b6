"""Direct assessment data: simulated judgments with planted system effects, the demo DA study
with other settings, and a careful rater's score."""

from __future__ import annotations

import re
import shutil
import zlib

import numpy as np
import pandas as pd

from harness.demo import DEMO
from services.setup.importer import import_study


def make_judgments(
    seed: int = 0,
    systems=None,
    n_segments: int = 30,
    workers: int = 8,
    unreliable: int = 2,
    modalities=("text",),
    runs=(1,),
    items_per_worker: int = 60,
    durations: bool = False,
) -> pd.DataFrame:
    """Workers judge random (system, segment) items; reliable ones score quality + noise and
    give bad_reference copies ~30 less and ask_again repeats about the same; unreliable ones
    score at random. Adds a duplicate system judgment and an unpaired control per worker."""
    rng = np.random.default_rng(seed)
    systems = systems or {"A": 75, "B": 60, "C": 58, "D": 40}
    names = list(systems)
    seg_effect = rng.normal(0, 8, n_segments)
    rows = []
    for m in modalities:
        for r in runs:
            shift = rng.normal(0, 5, len(names))  # run/modality specific system shifts
            for wi in range(workers):
                w = f"w{wi}"
                good = wi >= unreliable
                bias, spread = rng.normal(0, 8), rng.uniform(0.6, 1.4)
                hit = f"{m}{r}-{w}"
                pool = [(s, g) for s in range(len(names)) for g in range(n_segments)]
                picks = rng.choice(len(pool), size=min(items_per_worker, len(pool)), replace=False)

                def add(kind, s, g, x):
                    rows.append(
                        dict(
                            worker_id=w,
                            hit_id=hit,
                            modality=m,
                            system=names[s],
                            segment_id=f"s{g:03d}",
                            item_type=kind,
                            score=float(np.clip(round(x), 0, 100)),
                            run=r,
                            duration_s=float(rng.uniform(0.5, 3) if durations and wi == 0 else rng.uniform(4, 30)),
                        )
                    )

                judged = []
                for k in picks:
                    s, g = pool[k]
                    x = (
                        (50 + spread * (systems[names[s]] + shift[s] + seg_effect[g] - 50) + bias + rng.normal(0, 6))
                        if good
                        else rng.uniform(0, 100)
                    )
                    add("system", s, g, x)
                    judged.append((s, g, x))
                for s, g, x in judged[: len(judged) // 8]:
                    add("bad_reference", s, g, x - 30 + rng.normal(0, 5) if good else rng.uniform(0, 100))
                for s, g, x in judged[len(judged) // 8 : len(judged) // 4]:
                    add("ask_again", s, g, x + rng.normal(0, 3) if good else rng.uniform(0, 100))
                for s, g, x in judged[len(judged) // 4 : len(judged) // 4 + 3]:
                    add("reference", s, g, 90 + rng.normal(0, 5))
                s, g, x = judged[0]  # it has a bad_reference copy: pairs with the mean of both
                add("system", s, g, x + rng.normal(0, 4))  # a second system judgment of the same item
                taken = {(s, g) for s, g, _ in judged}
                free = next(k for k in range(len(pool)) if pool[k] not in taken)
                add("bad_reference", *pool[free], 10)  # control without an original: ignored
    return pd.DataFrame(rows)


def da_study(database, tmp_path, **settings):
    """The demo study with [da] keys set (replaced when the demo has them; TOML values as written)."""
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    head, _, rest = toml.partition("[da]\n")
    section, sep, tail = rest.partition("\n[")
    for k, v in settings.items():
        if re.search(rf"^{k} = .*$", section, flags=re.M):
            section = re.sub(rf"^{k} = .*$", f"{k} = {v}", section, flags=re.M)
        else:
            section = f"{k} = {v}\n" + section
    (folder / "study.toml").write_text(head + "[da]\n" + section + sep + tail)
    import_study(database, folder)
    return database, tmp_path / "media"


def careful(it) -> int:
    """A careful rater: bad references low, repeats like their originals, systems apart."""
    if it["type"] == "bad_reference":
        return 10
    return 50 + zlib.crc32(f"{it['system']}|{it['segment_row']}".encode()) % 40


def careful_raters(db, study: str, n: int, media) -> None:
    """n DA raters enrolled in `study`, each answering every item of their HIT carefully."""
    from services.participation.items import get_view
    from services.participation.submissions import submit
    from services.setup.enrolment import add_participants
    from storage.da import hits

    for r in add_participants(db, study, "da", n):
        while (v := get_view(db, r.token, "da", media_dir=media)).status == "item":
            submit(
                db,
                r.token,
                "da",
                v.item_id,
                {"score": careful(hits.da_hit_item(db, int(v.item_id)))},
                media_dir=media,
            )
