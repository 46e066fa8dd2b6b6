"""Semantic differential data: the demo SD study, a page answered, simulated ratings with a
planted factor structure and a check that a fit recovers it."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd

from harness.demo import DEMO
from services.participation.submissions import submit
from services.setup.importer import import_study

PER_GROUP = 4

GROUPS = 4

PHI = np.full((GROUPS, GROUPS), 0.3) + 0.7 * np.eye(GROUPS)


def true_loadings(rng, weak: bool = False, cross: bool = False) -> tuple[np.ndarray, list[str], list[int]]:
    """16 items, 4 per factor (loadings 0.65-0.85); optionally a weak item (0.25 on factor 1)
    and a cross-loading item (0.5 on factors 1 and 2)."""
    rows, names, groups = [], [], []
    for f in range(GROUPS):
        for j in range(PER_GROUP):
            row = np.zeros(GROUPS)
            row[f] = rng.uniform(0.65, 0.85)
            rows.append(row)
            names.append(f"f{f + 1}_{j + 1}")
            groups.append(f)
    if weak:
        rows.append(np.array([0.25, 0, 0, 0]))
        names.append("weak")
        groups.append(-1)
    if cross:
        rows.append(np.array([0.5, 0.5, 0, 0]))
        names.append("cross")
        groups.append(-1)
    return np.array(rows), names, groups


def sd_study(database, tmp_path, **settings):
    folder = tmp_path / "study"
    shutil.copytree(DEMO, folder)
    toml = (folder / "study.toml").read_text()
    for k, v in settings.items():
        line = f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}"
        if re.search(rf"^{k} = .*$", toml, flags=re.M):
            toml = re.sub(rf"^{k} = .*$", line, toml, flags=re.M)
        else:
            toml = toml.replace("[sd]\n", f"[sd]\n{line}\n")
    (folder / "study.toml").write_text(toml)
    import_study(database, folder)
    return database


def answer_page(db, tok, v, pick):
    """pick(entry) -> the displayed point (1..7) for each scale of the page."""
    values = {p["slot"]: pick(p) for p in v.content["pairs"]}
    return submit(db, tok, "sd", v.item_id, {"values": values})


def factor_data(n: int = 800, seed: int = 0, weak: bool = False, cross: bool = False) -> tuple[pd.DataFrame, list[int]]:
    rng = np.random.default_rng(seed)
    lam, names, groups = true_loadings(rng, weak, cross)
    f = rng.multivariate_normal(np.zeros(GROUPS), PHI, size=n)
    common = f @ lam.T
    unique_sd = np.sqrt(np.clip(1 - np.diag(lam @ PHI @ lam.T), 0.05, None))
    x = common + rng.normal(size=common.shape) * unique_sd
    return pd.DataFrame(x, columns=names), groups


def rating_rows(pid, duration, values: dict, repeats: dict | None = None) -> list[dict]:
    """values {(sentence, pair): v}; repeats {(sentence, pair): v or [v, ...]}."""
    rows = [
        dict(participant_id=pid, sentence_id=s, pair_id=p, value=v, is_repeat=0, duration_s=duration)
        for (s, p), v in values.items()
    ]
    for (s, p), vs in (repeats or {}).items():
        for v in vs if isinstance(vs, list) else [vs]:
            rows.append(dict(participant_id=pid, sentence_id=s, pair_id=p, value=v, is_repeat=1, duration_s=duration))
    return rows


def same_partition(loadings: pd.DataFrame, items: list[str], groups: list[int]) -> bool:
    """The items' dominant estimated factors partition them like the true groups (any order)."""
    dominant = loadings.loc[items].abs().to_numpy().argmax(axis=1)
    mapping = {}
    for d, g in zip(dominant, groups):
        if mapping.setdefault(g, d) != d:
            return False
    return len(set(mapping.values())) == len(mapping)
